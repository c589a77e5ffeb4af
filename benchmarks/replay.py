"""Replay fidelity: a two-group workload captured with its trace, replayed by fio from
iotuner's iolog (`iotuner capture --replay-trace`), and the replay captured and compared.

1. lab: one of the `hdd` spec's modelled 7200 rpm disks (nbdkit), no file system;
2. the workload, `--seconds` long: a paced direct random reader of 4 and 16 KiB two deep (a
   database's backends) beside a buffered 8 KiB appender calling fdatasync every 4 writes (its
   WAL writer), captured by `iotuner capture --trace`;
3. the trace replayed on the same disk at speed 1 and at speed 2 (fio's replay_time_scale),
   each captured and compared with the original (`--against`): issue 32's fidelity figures
   (request sizes, read share, queue depth; streams are 0 for random I/O) and the rate, which
   the speed should scale.

The machine may be shared: the load average is printed with the figures. The lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tuner.lab import lab_down, lab_up, parse_spec
from tuner.lab.system import LabError

SPEC = """\
name: replay-hdd
description: The hdd spec's modelled disk, no file system, for the replay benchmark.
disks:
  - name: d0
    size: 2GiB
    model: {kind: hdd, rpm: 7200, outer_mbps: 200, inner_mbps: 100, zones: 16,
            seek_track_ms: 1.0, seek_full_ms: 16, overhead_ms: 0.2, cache_kib: 4096,
            queue_depth: 32, seed: 1}
"""
SHOWN = ("request sizes (histogram)", "read share (bytes)", "queue depth (mean)", "streams",
         "writes per flush", "requests/s", "MB/s", "sequential share")  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner.cli", *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


def _requests(path: Path) -> int:
    devices = json.loads(path.read_text())["devices"]
    return int(max(devices, key=lambda d: d["bytes"])["requests"])


def workload(device: str, seconds: float) -> list[str]:
    """The two-group fio command on `device`."""
    return ["fio", "--output=/dev/null", f"--filename={device}", "--time_based",
            f"--runtime={seconds:g}", "--startdelay=1",
            "--name=reader", "--ioengine=libaio", "--direct=1", "--rw=randread",
            "--bssplit=4k/70:16k/30", "--iodepth=2", "--rate_iops=60", "--size=1536M",
            "--name=appender", "--ioengine=psync", "--rw=write", "--bs=8k", "--fdatasync=4",
            "--offset=1600M", "--size=256M", "--rate=512k"]  # fmt: skip


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="Keep the traces and fingerprints here.")
    args = parser.parse_args()
    os.environ.setdefault("IOTUNER_STATE_DIR", "/tmp/iotuner-bench-replay-state")
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(mode=0o700, exist_ok=True)
    lab = lab_up(parse_spec(SPEC, "replay benchmark", "replay-hdd"))
    results: dict[str, Any] = {}
    try:
        device = lab.disks[0].device
        with tempfile.TemporaryDirectory(prefix="iotuner-bench-replay-") as tmp:
            original, trace = Path(tmp, "original.json"), Path(tmp, "original.trace")
            worker = threading.Thread(
                target=subprocess.run, args=(workload(device, args.seconds),),
                kwargs={"check": True},
            )  # fmt: skip
            worker.start()
            done = _cli("capture", "--device", device, "--seconds", str(args.seconds + 1.5),
                        "--out", str(original), "--trace", str(trace))  # fmt: skip
            worker.join()
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            for speed in ("1", "2"):
                began = time.monotonic()
                again = Path(tmp, f"replay-{speed}.json")
                check = _cli("capture", "--replay-trace", str(trace), "--device", device,
                             "--against", str(original), "--destroy-data", "--speed", speed,
                             "--out", str(again), "--trace", str(again.with_suffix(".trace")),
                             "--json")  # fmt: skip
                if check.returncode != 0:
                    raise SystemExit(check.stderr)
                results[speed] = {**json.loads(check.stdout), "wall_s": time.monotonic() - began,
                                  "requests": _requests(again)}  # fmt: skip
            results["original"] = {"requests": _requests(original)}
            if args.keep is not None:
                shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    finally:
        for _ in range(5):
            try:
                lab_down()
                break
            except LabError as err:
                print(f"lab down: {err}; again in 2 s", file=sys.stderr)
                time.sleep(2)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (a shared machine)")
    rows = {speed: {r["name"]: r for r in results[speed]["rows"]} for speed in ("1", "2")}
    print(f"{'statistic':28} {'original':>10} {'speed 1':>10} {'diff':>7} {'speed 2':>10} "
          f"{'diff':>7}")  # fmt: skip
    for name in SHOWN:
        a, b = rows["1"][name], rows["2"][name]

        def num(v: float | None) -> str:
            return "-" if v is None else f"{v:.4g}"

        def diff(v: float | None) -> str:
            return "-" if v is None else f"{v:.1%}"

        print(f"{name:28} {num(a['original']):>10} {num(a['reproduction']):>10} "
              f"{diff(a['difference']):>7} {num(b['reproduction']):>10} "
              f"{diff(b['difference']):>7}")  # fmt: skip
    print(f"original: {results['original']['requests']} requests")
    for speed in ("1", "2"):
        doc = results[speed]
        print(f"speed {speed}: fidelity {doc['fidelity']:.1%}, {doc['requests']} requests, "
              f"replay wall {doc['wall_s']:.1f} s")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"results": results, "load": load}, indent=1))


if __name__ == "__main__":
    main()
