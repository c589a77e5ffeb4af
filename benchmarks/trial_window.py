"""Where a disk trial's measured window lies: fio's report time against where its I/O ran.

    python -m benchmarks.trial_window [--rounds 20] [--hogs 4]

As root. On a loop device over a /dev/shm file, three kinds of trial in turn (A, B, C, A, ...),
each judged by the page-cache guard over two windows placed on the same 20 ms device samples
(paired, so the machine's noise is the same for both):

- `in-ramp`: a direct 4 KiB random reader (libaio, depth 2) capped at 60 MB, which it reads
  within its 1 s ramp;
- `past-ramp`: the same paced at 30,000 IOPS and capped at 160 MB: it ends about 0.3 s after
  its ramp;
- `cached`: a buffered 1 MiB reader re-reading a 16 MiB region from its cache (invalidate=0):
  the guard's true positive, which must stay flagged.

The `report` window is the runtime before fio's report time (`timestamp_ms`), the placement
before issue 31's fix; `trial` is run_trial's (tuner/trials/trial.py, measured_window). It
prints, per kind, how many trials each window flagged `page cache` and the device's bytes over
fio's (minimum and median). Trials whose window is under MIN_WINDOW_S are not compared, as in
run_trial. `--hogs` python busy loops run beside it to load the CPUs, as a shared CI machine
does; the load average is printed. The loop device and its file are removed at the end, also
on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tuner.trials import pagecache
from tuner.trials.diskstats import Counters, Sampler
from tuner.trials.fio import job_text, parse_result, run_fio
from tuner.trials.flags import PAGE_CACHE
from tuner.trials.trial import MIN_WINDOW_S, measured_window, ramp_left_out

RAMP_S, RUNTIME_S = 1.0, 2.0
DIRECT = {"rw": "randread", "ioengine": "libaio", "direct": "1", "bs": "4k", "iodepth": "2"}
# kind: (fio options, I/O cap in bytes or None, region)
KINDS: dict[str, tuple[dict[str, Any], int | None, int]] = {
    "in-ramp": (DIRECT, 60_000_000, 256 << 20),
    "past-ramp": ({**DIRECT, "rate_iops": "30000"}, 160_000_000, 256 << 20),
    "cached": ({"rw": "read", "bs": "1M", "invalidate": 0}, None, 16 << 20),
}


def one(device: str, kind: str) -> dict[str, float] | None:
    """Device bytes over fio's in each window, or None when the window is too short."""
    options, cap, region = KINDS[kind]
    io_size = None if cap is None else cap // 4096 * 4096
    name = device.removeprefix("/dev/")
    text = job_text(options, runtime_s=RUNTIME_S, ramp_s=RAMP_S, filename=device,
                    region_bytes=region, title=kind, io_size=io_size)  # fmt: skip
    pagecache.prepare(True, device)
    with Sampler([name]) as sampler:
        doc = run_fio(text, timeout_s=60, what=device, devices=(name,))
    fio = parse_result(doc)
    if fio.runtime_s < MIN_WINDOW_S:
        return None
    stamp = doc["timestamp_ms"] / 1000
    left_out = ramp_left_out(options, RAMP_S, fio, io_size)
    windows = {
        "report": (max(stamp - fio.runtime_s, sampler.times[0]), min(stamp, sampler.times[-1])),
        "trial": measured_window(doc, fio.runtime_s, sampler, left_out, (name,), reads_only=True),
    }
    return {
        which: sampler.between(start, end, [name]).read_bytes / fio.read_bytes
        for which, (start, end) in windows.items()
    }


def flagged(ratio: float, kind: str) -> bool:
    """The page-cache guard's verdict on a device/fio ratio."""
    flag = pagecache.compare(Counters(1_000_000, 0), Counters(round(ratio * 1_000_000), 0),
                             sequential=kind == "cached")  # fmt: skip
    return flag is not None and flag.kind == PAGE_CACHE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=4)
    args = parser.parse_args()
    backing = Path(f"/dev/shm/iotuner-bench-window-{uuid.uuid4().hex[:8]}.img")
    backing.write_bytes(b"")
    os.truncate(backing, 256 << 20)
    hogs: list[subprocess.Popen[bytes]] = []
    device = None
    try:
        device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        loop = "while True: pass"
        hogs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(args.hogs)]
        ratios: dict[str, dict[str, list[float]]] = {k: {"report": [], "trial": []} for k in KINDS}
        for _ in range(args.rounds):
            for kind in KINDS:
                got = one(device, kind)
                for which, ratio in (got or {}).items():
                    ratios[kind][which].append(ratio)
        load = os.getloadavg()
        for kind, by in ratios.items():
            for which, values in by.items():
                if values:
                    print(f"{kind:9} {which:6} {len(values):3} trials, flagged page cache "
                          f"{sum(flagged(r, kind) for r in values):3}; device/fio min "
                          f"{min(values):.3f} median {statistics.median(values):.3f}")  # fmt: skip
        print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (shared machine)")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        if device is not None:
            subprocess.run(["losetup", "-d", device], check=False)
        backing.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
