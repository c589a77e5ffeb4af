"""The shared pieces of the modelled lab against their formulas: a RAID-5 set, a bus shared by
three hard disks, and the half-power point of one hard disk; what the servers cost.

    python -m benchmarks.raid_model [--seconds 4] [--repeats 2]

As root, with fio (libaio, direct I/O), one lab after another (docs/lab.md):

1. `raid5` (tuner/lab/raid.c): random 4 KiB reads at depth 1 against one member's random read;
   random 4 KiB writes at depth 1 against E[max(R1, R2)] + T (raid.py's `small_write_s`), and
   their member commands per request from the plugin's stats (4: read data and parity, write
   both); aligned full-stripe (192 KiB) writes at depth 4 and theirs (4 writes, no read),
   `--repeats` times;
2. `three-hdds-one-bus`: 1 MiB reads at depth 4 on the outer 256 MiB of 1, 2 and 3 disks
   against min(n x the stream's rate, the bus), mean latency, and the CPU time of the six
   server processes (nbdkit and nbdfuse, from /proc/PID/stat) while three stream;
3. a 15,000 rpm drive (80-40 MB/s, 0.5-6 ms seeks, as in tests/lab/test_curves.py): random
   reads of 32 to 512 KiB at depth 1 against the formula, and the request size where they
   reach half the media rate against (overhead + E[seek] + T/2) x E[rate]; its point lies
   below 512 KiB, the largest piece a request reaches the model in.

State goes to $IOTUNER_STATE_DIR, /tmp/iotuner-bench-raid-state when unset; each lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

from benchmarks.lab_measure import fio, with_cpu

DEFAULT_STATE = "/tmp/iotuner-bench-raid-state"
SPAN = 256 << 20
KIB = 1 << 10
FAST_HDD = """
name: fast-hdd
disks:
  - {name: d0, size: 1GiB, model: {kind: hdd, rpm: 15000, outer_mbps: 80, inner_mbps: 40,
                                   seek_track_ms: 0.5, seek_full_ms: 6}}
"""


def streams(devices: list[str], seconds: float) -> tuple[float, float]:
    """Total MB/s and mean latency (ms): 1 MiB direct reads at depth 4, one job per device."""
    cmd = [
        "fio", "--output-format=json", "--ramp_time=1", f"--runtime={seconds:g}",
        "--time_based", "--group_reporting", "--rw=read", "--bs=1M", "--iodepth=4",
        "--ioengine=libaio", "--direct=1", f"--size={SPAN}",
    ]  # fmt: skip
    for index, device in enumerate(devices):
        cmd += [f"--name=j{index}", f"--filename={device}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    read = json.loads(done.stdout)["jobs"][0]["read"]
    return read["bw_bytes"] / 1e6, read["lat_ns"]["mean"] / 1e6


def server_pids(state: str) -> list[int]:
    """The nbdkit and nbdfuse processes of the lab recorded in `state`."""
    from tuner.lab.nbd import processes_using
    from tuner.lab.record import load_record, record_path

    record = load_record(record_path(Path(state)))
    assert record is not None
    shm, run = f"/dev/shm/iotuner-lab-{record.lab_id}", f"/run/iotuner-lab/{record.lab_id}"
    return processes_using(shm, "nbdkit") + processes_using(run, "nbdfuse")


def raid5(seconds: float, repeats: int, state: str) -> None:
    """Part 1: the RAID-5 set's reads, small writes and full-stripe writes."""
    from tuner.lab import lab_session
    from tuner.lab.raid import RaidModel, random_read_s, read_stats, small_write_s
    from tuner.lab.record import load_record, record_path

    with lab_session("raid5") as lab:
        disk = lab.disks[0]
        model = disk.model
        assert isinstance(model, RaidModel)
        record = load_record(record_path(Path(state)))
        assert record is not None
        stats = Path(f"/dev/shm/iotuner-lab-{record.lab_id}/{disk.name}.stats")
        read_f = random_read_s(model, disk.size_bytes, 4096)
        write_f = small_write_s(model, disk.size_bytes, 4096)
        stripe = f"{model.full_stripe_bytes // KIB}k"
        print(f"raid5 {disk.device}: {model.members} members, {model.stripe_kib} KiB unit; "
              f"formula: 4 KiB read {read_f * 1e3:.2f} ms, "
              f"4 KiB write {write_f * 1e3:.2f} ms")  # fmt: skip
        for run in range(repeats):
            read = fio(disk.device, "randread", "4k", 1, seconds, f"--randseed={run + 1}")
            lat = read["lat_ns"]["mean"] / 1e9
            print(f"  run {run + 1}: random 4 KiB reads {read['iops']:.1f} IOPS, "
                  f"{lat * 1e3:.2f} ms, measured/formula {lat / read_f:.3f}")  # fmt: skip
            before = read_stats(stats)
            write = fio(disk.device, "randwrite", "4k", 1, seconds, f"--randseed={run + 1}")
            cost = read_stats(stats) - before
            lat = write["lat_ns"]["mean"] / 1e9
            per = cost.member_commands / max(cost.write_requests, 1)
            print(f"  run {run + 1}: random 4 KiB writes {write['iops']:.1f} IOPS, "
                  f"{lat * 1e3:.2f} ms, measured/formula {lat / write_f:.3f}; {per:.2f} member "
                  f"commands per write ({sum(cost.member_reads)} reads, "
                  f"{sum(cost.member_writes)} writes for {cost.write_requests})")  # fmt: skip
            before = read_stats(stats)
            full = fio(disk.device, "write", stripe, 4, seconds)
            cost = read_stats(stats) - before
            per = cost.member_commands / max(cost.write_requests, 1)
            print(f"  run {run + 1}: {stripe} full-stripe writes at depth 4: "
                  f"{full['bw_bytes'] / 1e6:.1f} MB/s, {per:.2f} member commands per write, "
                  f"{sum(cost.member_reads)} reads, {cost.whole_stripes} whole stripes of "
                  f"{cost.write_requests} writes")  # fmt: skip


def bus(seconds: float, state: str) -> None:
    """Part 2: three disks on one bus, and the servers' CPU while all three stream."""
    from tuner.lab import lab_session
    from tuner.lab.hdd import HddModel, stream_mbps

    with lab_session("three-hdds-one-bus") as lab:
        disk, rate = lab.disks[0], lab.buses[0].read_mbps
        assert isinstance(disk.model, HddModel)
        alone = stream_mbps(disk.model, disk.size_bytes, 0, SPAN)
        devices = [d.device for d in lab.disks]
        pids = server_pids(state)
        for n in (1, 2, 3):
            (mbps, lat), used = with_cpu(pids, seconds, partial(streams, devices[:n], seconds))
            want = min(n * alone, rate)
            print(f"bus {rate:g} MB/s, {n} disk(s) streaming: {mbps:.1f} MB/s, model "
                  f"{want:.1f}, measured/model {mbps / want:.3f}, mean latency {lat:.1f} ms, "
                  f"servers' CPU {used * 100:.1f} % of one core")  # fmt: skip


def half_power(seconds: float) -> None:
    """Part 3: the hard disk's throughput against request size at depth 1."""
    from tuner.lab import lab_down, lab_up, parse_spec
    from tuner.lab.hdd import HddModel, half_power_bytes, mean_rate, random_read_mbps

    lab = lab_up(parse_spec(FAST_HDD, "fast-hdd", "fast-hdd"))
    try:
        disk = lab.disks[0]
        assert isinstance(disk.model, HddModel)
        half = mean_rate(disk.model, disk.size_bytes) / 2e6
        points = []
        for kib in (32, 128, 256, 384, 512):
            got = fio(disk.device, "randread", f"{kib}k", 1, seconds)["bw_bytes"] / 1e6
            want = random_read_mbps(disk.model, disk.size_bytes, kib * KIB)
            points.append((kib * KIB, got))
            print(f"15k rpm drive, random {kib} KiB reads, depth 1: {got:.1f} MB/s, "
                  f"formula {want:.1f}, measured/formula {got / want:.3f}")  # fmt: skip
        formula = half_power_bytes(disk.model, disk.size_bytes)
        for (s0, m0), (s1, m1) in itertools.pairwise(points):
            if m0 < half <= m1:
                share = (half - m0) / (m1 - m0)
                measured = math.exp(math.log(s0) + share * math.log(s1 / s0))
                ratio = measured / formula
                print(f"half-power point ({half:.1f} MB/s): {measured / KIB:.0f} KiB, formula "
                      f"{formula / KIB:.0f} KiB, measured/formula {ratio:.3f}")  # fmt: skip
    finally:
        lab_down()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    state = os.environ["IOTUNER_STATE_DIR"]
    Path(state).mkdir(parents=True, exist_ok=True)
    raid5(args.seconds, args.repeats, state)
    bus(args.seconds, state)
    half_power(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
