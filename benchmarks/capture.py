"""Capture fidelity and cost: an application captured, reproduced, and the reproduction
captured again, on the lab's modelled hard disk (issue 32).

    python -m benchmarks.capture [--seconds 12] [--readers 4] [--out FILE]

As root, on a lab like `hdd` (one modelled 7200 rpm disk, nbdkit) with xfs on it, in
$IOTUNER_STATE_DIR (/tmp/iotuner-bench-capture-state when unset):

1. backup: READERS large files are written and their pages dropped; `iotuner capture` (a
   subprocess) records the disk while READERS concurrent `sha256sum` processes read one file
   each; the capture's CPU time (user + system, from wait4) over its wall time is its cost;
2. the fingerprint's reproduction (`iotuner capture --reproduce`, its region the files'
   footprint) is run on the same disk by `iotuner capture --check --against`, which captures
   it: the table prints each fidelity figure (request sizes as the histograms' total
   variation distance, read share, streams, mean queue depth) of the original and the
   reproduction, and their difference (issue 32's target: each within 15 %);
3. cost at the disk's full rate: `iotuner capture` idle (the interpreter's start-up and the
   poll loop), then beside plain fio reading the disk as fast as it goes, (a) sequential
   1 MiB direct reads at depth 4, (b) sequential 4 KiB direct reads at depth 8 (the most
   requests a second the disk serves), each its CPU share of one core, whole and beyond the
   idle capture's CPU time (issue 32's target: under 2 %).

The machine may be shared: the load average is printed with the figures. The lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tuner.lab import lab_down, lab_up, parse_spec

SPEC = """\
name: capture-hdd
description: The hdd spec's modelled disk with xfs on it, for the capture benchmark.
disks:
  - name: d0
    size: 2GiB
    fs: xfs
    model: {kind: hdd, rpm: 7200, outer_mbps: 200, inner_mbps: 100, zones: 16,
            seek_track_ms: 1.0, seek_full_ms: 16, overhead_ms: 0.2, cache_kib: 4096,
            queue_depth: 32, seed: 1}
"""
FILE_MIB = 192
FIDELITY = ("request sizes (histogram)", "read share (bytes)", "streams", "queue depth (mean)")


def _cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner.cli", *args], capture_output=True,
                          text=True, check=False, **kw)  # fmt: skip


def _drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _captured(device: str, seconds: float, out: Path, during: Any) -> dict[str, float]:
    """`iotuner capture` on `device` while `during()` runs (started once the capture records);
    returns its CPU seconds, wall seconds and CPU share of one core."""
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "tuner.cli", "capture", "--device", device,
                              "--seconds", str(seconds), "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    instance = Path(f"/sys/kernel/tracing/instances/iotuner-{child.pid}/events")
    while not instance.is_dir() and child.poll() is None:
        time.sleep(0.02)
    recording = time.monotonic()
    worker = threading.Thread(target=during)
    worker.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    worker.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        assert child.stderr is not None
        raise SystemExit(f"capture failed: {child.stderr.read().strip()}")
    cpu = usage.ru_utime + usage.ru_stime
    # The interpreter's start-up is not the capture's: counted all the same (an upper bound).
    return {"cpu_s": cpu, "wall_s": wall, "recording_s": time.monotonic() - recording,
            "core_share": cpu / wall}  # fmt: skip


def _busiest(path: Path) -> dict[str, Any]:
    devices = json.loads(path.read_text())["devices"]
    return max(devices, key=lambda d: d["bytes"])


def backup_row(device: str, mount: str, readers: int, seconds: float, work: Path) -> dict[str, Any]:
    """Concurrent sha256sum readers captured, reproduced and checked."""
    files = [Path(mount, f"backup-{i}.dat") for i in range(readers)]
    for f in files:
        subprocess.run(["dd", "if=/dev/urandom", f"of={f}", "bs=1M", f"count={FILE_MIB}",
                        "status=none", "conv=fsync"], check=True)  # fmt: skip
    _drop_caches()
    original = work / "backup.json"

    def backup() -> None:
        procs = [subprocess.Popen(["timeout", str(seconds - 2), "sha256sum", str(f)],
                                  stdout=subprocess.DEVNULL) for f in files]  # fmt: skip
        for p in procs:
            p.wait()

    cost = _captured(device, seconds, original, backup)
    job = work / "backup.fio"
    footprint = _busiest(original)["footprint_bytes"]
    done = _cli("capture", "--reproduce", str(original), "--region", str(footprint),
                "--out", str(job))  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    _drop_caches()
    check = _cli("capture", "--check", str(job), "--device", device, "--seconds",
                 str(seconds - 2), "--against", str(original), "--json")  # fmt: skip
    if check.returncode != 0:
        raise SystemExit(check.stderr)
    for f in files:
        f.unlink()
    return {"row": f"backup: {readers} x sha256sum", "cost": cost, "job": job.read_text(),
            **json.loads(check.stdout)}  # fmt: skip


def cost_rows(device: str, seconds: float, work: Path) -> list[dict[str, Any]]:
    """The capture's CPU share beside plain fio at the disk's full rate."""
    rows = [{"row": "idle (start-up and polling only)", "cost": _captured(device, seconds,
             work / "idle.json", lambda: None), "iops": 0.0, "mbps": 0.0, "events": 0}]  # fmt: skip
    for name, bs, depth in (("1 MiB sequential reads, depth 4", "1m", 4),
                            ("4 KiB sequential reads, depth 8", "4k", 8)):  # fmt: skip

        def fio(bs: str = bs, depth: int = depth) -> None:
            subprocess.run(["fio", "--name=full", f"--filename={device}", "--readonly",
                            "--direct=1", "--ioengine=libaio", f"--bs={bs}",
                            f"--iodepth={depth}", "--rw=read", "--size=1G",
                            f"--runtime={seconds - 2}", "--time_based",
                            "--output=/dev/null"], check=True)  # fmt: skip

        out = work / f"cost-{bs}.json"
        cost = _captured(device, seconds, out, fio)
        dev = _busiest(out)
        rows.append({"row": name, "cost": cost, "iops": dev["iops"], "mbps": dev["mbps"],
                     "events": json.loads(out.read_text())["events"]})  # fmt: skip
    return rows


def main() -> None:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("IOTUNER_STATE_DIR", "/tmp/iotuner-bench-capture-state")
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(mode=0o700, exist_ok=True)
    lab = lab_up(parse_spec(SPEC, "capture benchmark", "capture-hdd"))
    try:
        device = lab.disks[0].device
        assert lab.mountpoint is not None
        with tempfile.TemporaryDirectory(prefix="iotuner-bench-capture-") as tmp:
            backup = backup_row(device, lab.mountpoint, args.readers, args.seconds, Path(tmp))
            costs = cost_rows(device, args.seconds, Path(tmp))
    finally:
        lab_down()
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (a shared machine)")
    print(f"\n{backup['row']}: fidelity {backup['fidelity']:.1%} (target 15 %)")
    print(f"{'statistic':28} {'original':>12} {'reproduction':>13} {'difference':>11}")
    for row in backup["rows"]:
        if row["name"] in FIDELITY or row["name"] in ("requests/s", "MB/s", "sequential share"):
            a, b = row["original"], row["reproduction"]
            print(
                f"{row['name']:28} {'-' if a is None else f'{a:.4g}':>12} "
                f"{'-' if b is None else f'{b:.4g}':>13} {row['difference']:>10.1%}"
            )
    print("\nreproduction:\n" + backup["job"])
    print(
        f"{'capture cost beside':34} {'req/s':>8} {'MB/s':>7} {'CPU s':>6} {'wall s':>7} "
        f"{'of a core':>9}"
    )
    for row in [{"row": backup["row"], "iops": None, "mbps": None, "cost": backup["cost"]},
                *costs]:  # fmt: skip
        c = row["cost"]
        rate = "-" if row["iops"] is None else f"{row['iops']:.0f}"
        mbps = "-" if row["mbps"] is None else f"{row['mbps']:.0f}"
        print(
            f"{row['row']:34} {rate:>8} {mbps:>7} {c['cpu_s']:6.2f} {c['wall_s']:7.1f} "
            f"{c['core_share']:9.2%}"
        )
    if args.out:
        args.out.write_text(json.dumps({"backup": backup, "costs": costs, "load": load}, indent=1))


if __name__ == "__main__":
    main()
