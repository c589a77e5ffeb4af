"""Probe speed and memory on a synthetic host: 1,000 disks, 40 controllers, 200 PCI functions.

    python -m benchmarks.probe [--repeat 5] [--disks 1000]

Each measurement runs in a fresh process (so peak RSS is the probe's own), interleaved with an
import-only process measured the same way, and the medians are printed side by side with the
targets from the issue (probe under 1 s wall, under 100 MB peak).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic_host import Shape, build

TARGET_SECONDS = 1.0
TARGET_MB = 100.0

_CHILD = """
import json, resource, sys, time
from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.topology.model import BlockDevice, PciFunction
start = time.perf_counter()
topology = None if sys.argv[1] == "-" else probe_host(HostFS(sys.argv[1]))
seconds = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "disks": 0 if topology is None else sum(
        1 for b in topology.of_type(BlockDevice) if b.partition is None),
    "pci": 0 if topology is None else len(topology.of_type(PciFunction)),
    "warnings": 0 if topology is None else len(topology.warnings),
}))
"""


def _child(root: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, root], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def _command(root: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tuner.cli", "probe", "--root", root, "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    """Build the synthetic host, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--disks", type=int, default=1000)
    args = parser.parse_args()
    shape = Shape(disks=args.disks)
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        root = str(build(Path(tmp) / "host", shape))
        probes, baselines, commands = [], [], []
        for _ in range(args.repeat):
            probes.append(_child(root))
            baselines.append(_child("-"))
            commands.append(_command(root))
    seconds = statistics.median(p["seconds"] for p in probes)
    peak = statistics.median(p["peak_mb"] for p in probes)
    base = statistics.median(b["peak_mb"] for b in baselines)
    last = probes[-1]
    print(
        f"synthetic host: {last['disks']:.0f} disks (+1 partition each), "
        f"{shape.controllers} controllers, {last['pci']:.0f} PCI functions, "
        f"{last['warnings']:.0f} warnings; median of {args.repeat} runs"
    )
    rows = [
        (
            "probe_host wall time",
            f"{seconds:.3f} s",
            f"{TARGET_SECONDS:.1f} s",
            seconds / TARGET_SECONDS,
        ),
        ("peak RSS, probing process", f"{peak:.1f} MB", f"{TARGET_MB:.0f} MB", peak / TARGET_MB),
        ("peak RSS, same process without probing", f"{base:.1f} MB", "", base / TARGET_MB),
        ("`iotuner probe --json` end to end", f"{statistics.median(commands):.3f} s", "", None),
    ]
    print(f"{'measure':<42}{'value':>12}{'target':>10}{'ratio':>8}")
    for name, value, target, ratio in rows:
        print(f"{name:<42}{value:>12}{target:>10}{'' if ratio is None else f'{ratio:.2f}':>8}")


if __name__ == "__main__":
    main()
