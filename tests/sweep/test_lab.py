"""The sweep on the lab's single disk (100 MB/s, 200 IOPS), whose answer is known in advance.

At 200 IOPS a request of s bytes reads 200 x s B/s, so half of the 100 MB/s plateau (50 MB/s)
needs 250 KB: the first step of the default grid to reach it is 256 KiB (52 MB/s). The IOPS
ceiling holds at any queue depth, so depth 4 has the same half-power point.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli import iotuner
from tuner.lab.session import lab_session
from tuner.sweep.grid import DEFAULT_SIZES, size_label

pytestmark = pytest.mark.lab
EXPECTED = 262144


def within_one_step(size: int | None) -> bool:
    index = DEFAULT_SIZES.index(EXPECTED)
    return size in DEFAULT_SIZES[index - 1 : index + 2]


def test_single_disk_half_power_point(state: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (a lab disk)")
    with lab_session("single-disk") as lab:
        device = lab.disks[0].device
        done = iotuner("sweep", device, "--depths", "1,4", "--runtime", "1", "--json",
                       state=state, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    rows = {row["depth"]: row for row in doc["by_depth"]}
    for depth, row in rows.items():
        cells = ", ".join(
            f"{size_label(c['size'])} {c['mbps']:.1f}" for c in doc["cells"] if c["depth"] == depth
        )
        print(
            f"\nsingle-disk sweep, depth {depth}: {cells} MB/s; half power "
            f"{size_label(row['half_power_size'])}, stops growing "
            f"{size_label(row['stops_growing_size'])} ({doc['seconds']} s for the grid)"
        )
        assert within_one_step(row["half_power_size"]), row
        assert row["plateau_mbps"] == pytest.approx(100, rel=0.10)
        assert row["stops_growing_size"] in (1 << 20, 4 << 20)
