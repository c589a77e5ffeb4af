"""Fingerprints of the recorded trace_pipe texts in tests/fixtures/capture/.

Each text was recorded by `iotuner capture --trace` on a 512 MiB loop device (7,11) while fio
ran on it: random-mix.txt a paced random 75/25 read/write mix of 4k/16k/64k direct requests
at depth 4; buffered-streams.txt two buffered sequential readers of 16 KiB, 128 MiB apart;
fdatasync.txt a buffered writer of 8 KiB calling fdatasync every 4 writes on ext4.
"""

from __future__ import annotations

from pathlib import Path

from tuner.capture.fingerprint import Fingerprint
from tuner.capture.session import Collector, Device

FIXTURES = Path(__file__).parents[1] / "fixtures" / "capture"
LOOP = Device(name="loop11", major=7, minor=11, size_bytes=512 << 20, kind="ssd")


def collect(name: str, seconds: float = 2.0) -> tuple[Collector, Fingerprint]:
    """The collector fed the recorded text `name` (random-mix...), and its fingerprint."""
    collector = Collector([LOOP])
    for line in (FIXTURES / f"{name}.txt").read_text().splitlines():
        collector.line(line)
    return collector, collector.fingerprint(seconds, where=name)
