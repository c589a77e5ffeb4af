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
   on all their threads), with the ratio of the means;
5. four buffered readers, 16 KiB at a time, each in its own quarter of the disk, at
   read_ahead_kb 128 and 4096 (interleaved, `--repeats` times each) against the media rate
   and one readahead window per seek and half a turn;
6. on a 15,000 rpm drive slowed to 80-40 MB/s (FAST_HDD, tests/lab/test_curves.py's), random
   reads of 32-512 KiB at depths 1 and 4 against the formula, and the size where the depth-1
   curve crosses half the mean media rate against the formula's half-power point.

Rows 5 and 6 hold the figures tests/lab/test_curves.py held to the formula before issue 31 (the
test now holds their orderings and ratios): they need a quiet machine.

State goes to $IOTUNER_STATE_DIR, /tmp/iotuner-bench-hdd-state when unset; the lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import psutil

from benchmarks.lab_measure import fio, with_cpu

DEFAULT_STATE = "/tmp/iotuner-bench-hdd-state"
KIB, MIB = 1 << 10, 1 << 20
SIZES_KIB = (32, 128, 256, 512)
# tests/lab/test_curves.py's drive: its half-power point (341 KiB) lies below 512 KiB, the
# largest piece FUSE hands the model.
FAST_HDD = (
    "disks: [{name: d0, size: 1GiB, model: {kind: hdd, rpm: 15000, outer_mbps: 80,"
    " inner_mbps: 40, seek_track_ms: 0.5, seek_full_ms: 6}}]"
)


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
        _readahead_streams(disk, args)
    _request_sizes(args)
    return 0


def _readahead_streams(disk: Any, args: argparse.Namespace) -> None:
    """Row 5: four buffered streams, 128 KiB against 4 MiB readahead, against the model."""
    from benchmarks.lab_measure import fio_group
    from tuner.lab.hdd import stream_mbps

    model = disk.model
    media = stream_mbps(model, disk.size_bytes, 0, disk.size_bytes)
    region = disk.size_bytes // 4
    seek = model.seek_track_ms + (model.seek_full_ms - model.seek_track_ms) * math.sqrt(0.25)
    positioning = (model.overhead_ms + seek) / 1e3 + model.rotation_s / 2
    jobs = [[f"--filename={disk.device}", f"--offset={i * region}"] for i in range(4)]
    queue = Path(f"/sys/block/{Path(disk.device).name}/queue/read_ahead_kb")
    found = queue.read_text().strip()
    try:
        for _ in range(args.repeats):
            for kb in (128, 4096):
                queue.write_text(str(kb))
                read = fio_group(jobs, args.seconds, "--rw=read", "--bs=16k", "--ioengine=psync",
                                 "--direct=0", f"--size={region}", "--invalidate=1")  # fmt: skip
                mbps = read["bw_bytes"] / 1e6
                floor = kb * KIB / (positioning + kb * KIB / (media * 1e6)) / 1e6
                print(f"4 buffered streams, read_ahead_kb {kb}: {mbps:.1f} MB/s, "
                      f"{mbps / media:.3f} of the media rate {media:.1f}; "
                      f"x {mbps / floor:.2f} one window per seek ({floor:.1f})")  # fmt: skip
    finally:
        queue.write_text(found)


def _request_sizes(args: argparse.Namespace) -> None:
    """Row 6: the request-size curve of FAST_HDD at depths 1 and 4 against the formula."""
    from tuner.lab import lab_down, lab_up, parse_spec
    from tuner.lab.hdd import HddModel, half_power_bytes, mean_rate, random_read_mbps

    lab = lab_up(parse_spec(FAST_HDD, "fast-hdd", "fast-hdd"))
    try:
        disk = lab.disks[0]
        assert isinstance(disk.model, HddModel)
        sizes = [k * KIB for k in SIZES_KIB]
        formula = [random_read_mbps(disk.model, disk.size_bytes, s) for s in sizes]
        half = mean_rate(disk.model, disk.size_bytes) / 2e6
        expected = half_power_bytes(disk.model, disk.size_bytes)
        print("formula at depth 1, " + ", ".join(f"{k} KiB {m:.1f}"
              for k, m in zip(SIZES_KIB, formula, strict=True)) + " MB/s; half power "
              f"{expected / KIB:.0f} KiB at {half:.1f} MB/s")  # fmt: skip
        for _ in range(args.repeats):
            curves: dict[int, list[float]] = {1: [], 4: []}
            for k in SIZES_KIB:
                for depth in (1, 4):
                    read = fio(disk.device, "randread", f"{k}k", depth, args.seconds)
                    curves[depth].append(read["bw_bytes"] / 1e6)
            share = [m / f for m, f in zip(curves[1], formula, strict=True)]
            measured = _half_power(sizes, curves[1], half)
            print("random reads, depth 1: " + ", ".join(f"{m:.1f}" for m in curves[1])
                  + " MB/s (measured/formula " + ", ".join(f"{r:.3f}" for r in share)
                  + "); depth 4: " + ", ".join(f"{m:.1f}" for m in curves[4])
                  + f" MB/s; half power {measured / KIB:.0f} KiB, x {measured / expected:.2f}"
                  " the formula's")  # fmt: skip
    finally:
        lab_down()


def _half_power(sizes: list[int], mbps: list[float], half: float) -> float:
    """The request size where the measured curve crosses `half`, interpolated in log(size);
    nan when it does not cross it."""
    for (s0, m0), (s1, m1) in itertools.pairwise(zip(sizes, mbps, strict=True)):
        if m0 < half <= m1:
            share = (half - m0) / (m1 - m0)
            return math.exp(math.log(s0) + share * (math.log(s1) - math.log(s0)))
    return math.nan


def _cpu_list(cpus: set[int]) -> str:
    """CPUs as taskset's --cpu-list takes them."""
    return ",".join(str(c) for c in sorted(cpus))


if __name__ == "__main__":
    sys.exit(main())
