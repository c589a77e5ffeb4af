"""The modelled flash drive against its formulas, and what its server costs.

    python -m benchmarks.ssd_model [--seconds 4] [--repeats 2]

As root, on a lab of two modelled flash drives (nbdkit running tuner/lab/ssd.c behind nbdfuse
and a loop device with direct I/O; docs/lab.md): `d0` with the built-in `ssd`'s model, and `z`,
a drive with no latency (1 us, no route allowance) whose depth-1 latency is the route's own
(loop, FUSE, nbdfuse, socket). With fio (libaio, direct I/O), side by side in one run:

1. the route: random 4 KiB reads at depth 1 on `z`, `--repeats` times;
2. random 4 KiB reads at depth 1 on `d0` against 1 / (read_us + 4 KiB / mbps), `--repeats`
   times (the spread is how far one point repeats);
3. random 4 KiB reads at depths 2, 4 (the channels) and 8 against min(depth, channels) x that;
4. sequential 1 MiB reads at depth 4 against the interface cap; with 3 and 4, the CPU time of
   the server processes (nbdkit and nbdfuse, from /proc/PID/stat) as a share of one core;
5. random 4 KiB writes at depth 1 before and after 300 MiB written (past the 256 MiB OP area)
   against write_us and write_us x gc_factor.

State goes to $IOTUNER_STATE_DIR, /tmp/iotuner-bench-ssd-state when unset; the lab is torn
down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

from benchmarks.lab_measure import fio, with_cpu

DEFAULT_STATE = "/tmp/iotuner-bench-ssd-state"
SPEC = """
name: ssd-bench
disks:
  - {name: d0, size: 4GiB, model: {kind: ssd}}
  - {name: z, size: 256MiB, model: {kind: ssd, read_us: 1, write_us: 1, mbps: 10000,
                                    channels: 16, route_us: 0}}
"""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(parents=True, exist_ok=True)

    from tuner.lab import lab_down, lab_up, load_spec, parse_spec
    from tuner.lab.nbd import processes_using
    from tuner.lab.record import load_record, record_path
    from tuner.lab.ssd import SsdModel, iops, service_s
    from tuner.state import state_dir

    seconds = args.seconds
    lab = lab_up(parse_spec(SPEC, "ssd-bench", "ssd-bench"))
    try:
        disk, route = lab.disk("d0"), lab.disk("z").device
        model = disk.model
        assert isinstance(model, SsdModel) and model == load_spec("ssd").disks[0].model
        record = load_record(record_path(state_dir()))
        assert record is not None
        pids = processes_using(f"/dev/shm/iotuner-lab-{record.lab_id}", "nbdkit")
        pids += processes_using(f"/run/iotuner-lab/{record.lab_id}", "nbdfuse")
        print(f"modelled flash drive {disk.device}: {model}")
        for run in range(args.repeats):
            read = fio(route, "randread", "4k", 1, seconds, f"--randseed={run + 1}")
            print(f"route (no-latency drive), depth 1, run {run + 1}: "
                  f"{read['lat_ns']['mean'] / 1e3:.0f} us per command")  # fmt: skip
        formula = iops(model, 4096, 1)
        print(f"formula: random 4 KiB read at depth 1 = {service_s(model, 4096) * 1e3:.3f} ms "
              f"({formula:.1f} IOPS); the model answers {model.route_us:g} us early")  # fmt: skip
        for run in range(args.repeats):
            read = fio(disk.device, "randread", "4k", 1, seconds, f"--randseed={run + 1}")
            print(f"depth 1, run {run + 1}: {read['iops']:.1f} IOPS, mean latency "
                  f"{read['lat_ns']['mean'] / 1e6:.3f} ms, measured/formula "
                  f"{read['iops'] / formula:.3f}")  # fmt: skip
        for depth in (2, model.channels, 2 * model.channels):
            read, cpu = with_cpu(
                pids, seconds, partial(fio, disk.device, "randread", "4k", depth, seconds)
            )
            want = iops(model, 4096, depth)
            ratio = read["iops"] / want
            print(f"depth {depth}: {read['iops']:.1f} IOPS (formula {want:.1f}, ratio "
                  f"{ratio:.3f}), server CPU {cpu * 100:.1f} % of one core")  # fmt: skip
        read, cpu = with_cpu(pids, seconds, lambda: fio(disk.device, "read", "1M", 4, seconds))
        mbps = read["bw_bytes"] / 1e6
        print(f"1 MiB reads, depth 4: {mbps:.1f} MB/s (cap {model.mbps:g}, ratio "
              f"{mbps / model.mbps:.3f}), server CPU {cpu * 100:.1f} % of one core")  # fmt: skip
        fresh = fio(disk.device, "randwrite", "4k", 1, seconds)
        fio(disk.device, "write", "1M", 4, 1, "--size=300M", "--ramp_time=0")
        worn = fio(disk.device, "randwrite", "4k", 1, seconds)
        for name, write, past in (("fresh", fresh, False), ("past the OP area", worn, True)):
            want = iops(model, 4096, 1, write=True, past_op=past)
            print(f"4 KiB writes, depth 1, {name}: {write['iops']:.1f} IOPS (formula "
                  f"{want:.1f}, ratio {write['iops'] / want:.3f})")  # fmt: skip
        slower = worn["lat_ns"]["mean"] / fresh["lat_ns"]["mean"]
        formula_slower = service_s(model, 4096, True, True) / service_s(model, 4096, True)
        print(f"writes past the OP area: x{slower:.2f} slower (formula x{formula_slower:.2f})")
    finally:
        lab_down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
