"""A setting only a command shows (`ethtool -g eth0`): the generated suite runs the command
through testinfra and compares one field, on this VM's real eth0 (read only)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuner.tunables.nic_ring import RingRx
from tuner.tunables.sysroot import SysRoot
from tuner.verify.run import run_suite
from tuner.verify.suite import Check, suite_source


@pytest.mark.live
def test_the_suite_reads_a_ring_through_ethtool() -> None:
    if shutil.which("ethtool") is None or not Path("/sys/class/net/eth0").exists():
        pytest.skip("needs ethtool and an eth0")
    sys = SysRoot("/")
    now = RingRx().read(sys, "eth0")

    def check(expected: int) -> Check:
        reads = RingRx().verify_reads(sys, "eth0", expected)
        return Check("nic.ring_rx@eth0", "live", "nic.ring_rx on eth0", str(expected), reads)

    (good,) = run_suite(suite_source((check(int(now)),)))
    assert good.passed, good.message
    (bad,) = run_suite(suite_source((check(int(now) + 1),)))
    assert not bad.passed
    assert f"ethtool -g eth0 shows RX {now}, expected {int(now) + 1}" in bad.message
