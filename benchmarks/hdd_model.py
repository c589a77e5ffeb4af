"""The modelled hard disk against its formulas, and what its server costs.

    python -m benchmarks.hdd_model [--seconds 8] [--repeats 2]

As root, on the built-in `hdd` lab (nbdkit running tuner/lab/hdd.c behind nbdfuse and a loop
device with direct I/O; docs/lab.md), with fio (libaio, direct I/O):

1. random 4 KiB reads at depth 1 over the whole disk: IOPS and mean latency against the
   model's formula, 1 / (overhead + E[seek] + T/2 + 4 KiB / rate), `--repeats` times
   (the spread is how far one landscape point repeats);
2. random 4 KiB reads at depths 1, 4, 16 and 32 (the drive's shortest-positioning-first
   queue at work);
3. sequential 1 MiB reads on the outer 256 MiB and on the inner 256 MiB against the zone rates;
   while the outer stream runs, the CPU time of the server processes (nbdkit and nbdfuse,
   from /proc/PID/stat) over the same seconds, as a share of one core;
4. that CPU share `--repeats` x 2 more times, interleaved: the servers on the one CPU the lab
   gives them (tuner/lab/nbd.py, server_cpu), and free to run on every CPU (util-linux taskset
   on all their threads), with the ratio of the means.

State goes to $IOTUNER_STATE_DIR, /tmp/iotuner-bench-hdd-state when unset; the lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path

import psutil

from benchmarks.lab_measure import fio, with_cpu

DEFAULT_STATE = "/tmp/iotuner-bench-hdd-state"
MIB = 1 << 20


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(parents=True, exist_ok=True)

    from tuner.lab import lab_session
    from tuner.lab.hdd import random_read_s, stream_mbps
    from tuner.lab.nbd import processes_using
    from tuner.lab.record import load_record, record_path
    from tuner.state import state_dir

    with lab_session("hdd") as lab:
        disk = lab.disks[0]
        from tuner.lab.hdd import HddModel

        assert isinstance(disk.model, HddModel), "the hdd lab's disk is a modelled HDD"
        record = load_record(record_path(state_dir()))
        assert record is not None
        root = f"/run/iotuner-lab/{record.lab_id}"
        shm = f"/dev/shm/iotuner-lab-{record.lab_id}"
        pids = processes_using(shm, "nbdkit") + processes_using(root, "nbdfuse")
        formula = random_read_s(disk.model, disk.size_bytes, 4096)
        print(f"modelled disk {disk.device}: {disk.model}")
        print(f"formula: random 4 KiB read at depth 1 = {formula * 1e3:.2f} ms "
              f"({1 / formula:.1f} IOPS)")  # fmt: skip
        for run in range(args.repeats):
            read = fio(disk.device, "randread", "4k", 1, args.seconds, f"--randseed={run + 1}")
            lat = read["lat_ns"]["mean"] / 1e6
            print(f"depth 1, run {run + 1}: {read['iops']:.1f} IOPS, mean latency {lat:.2f} ms,"
                  f" service/formula {lat / 1e3 / formula:.3f}")  # fmt: skip
        for depth in (4, 16, 32):
            read = fio(disk.device, "randread", "4k", depth, args.seconds)
            print(f"depth {depth}: {read['iops']:.1f} IOPS")
        span = 256 * MIB
        zones = {"outer": 0, "inner": disk.size_bytes - span}
        streams = {name: partial(fio, disk.device, "read", "1M", 4, args.seconds,
                                 f"--offset={offset}", f"--size={span}")
                   for name, offset in zones.items()}  # fmt: skip
        for name, offset in zones.items():
            model = stream_mbps(disk.model, disk.size_bytes, offset, span)
            read, used = with_cpu(pids, args.seconds, streams[name])
            mbps = read["bw_bytes"] / 1e6
            print(f"sequential 1 MiB reads, {name} 256 MiB: {mbps:.1f} MB/s (model {model:.1f}),"
                  f" server CPU {used * 100:.1f} % of one core (nbdkit + nbdfuse)")  # fmt: skip
        pinned = _cpu_list({c for pid in pids for c in psutil.Process(pid).cpu_affinity()})
        every = _cpu_list(os.sched_getaffinity(0))
        shares: dict[str, list[float]] = {"one CPU": [], "every CPU": []}
        for run in range(args.repeats * 2):
            where = "one CPU" if run % 2 == 0 else "every CPU"
            for pid in pids:
                subprocess.run(["taskset", "--all-tasks", "--cpu-list", "-p",
                                pinned if where == "one CPU" else every, str(pid)],
                               check=True, capture_output=True)  # fmt: skip
            read, used = with_cpu(pids, args.seconds, streams["outer"])
            shares[where].append(used / (read["bw_bytes"] / 1e6))
            print(f"outer stream, servers on {where} ({pinned if where == 'one CPU' else every}):"
                  f" {read['bw_bytes'] / 1e6:.1f} MB/s, server CPU {used * 100:.1f} %")  # fmt: skip
        one, free = (statistics.fmean(shares[k]) for k in ("one CPU", "every CPU"))
        rate = stream_mbps(disk.model, disk.size_bytes, zones["outer"], span)
        print(f"server CPU per 100 MB/s: on one CPU {one * 1e4:.1f} %, on every CPU"
              f" {free * 1e4:.1f} % (one / every {one / free:.3f}); at the model's outer"
              f" rate, {rate:.1f} MB/s: {one * rate * 100:.1f} % and"
              f" {free * rate * 100:.1f} %")  # fmt: skip
    return 0


def _cpu_list(cpus: set[int]) -> str:
    """CPUs as taskset's --cpu-list takes them."""
    return ",".join(str(c) for c in sorted(cpus))


if __name__ == "__main__":
    sys.exit(main())
