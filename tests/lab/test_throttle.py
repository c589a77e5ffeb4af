"""Throttle rules as the kernel files hold them: v1 live (lab), v2's io.max on a fixture file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.lab import system, throttle


def test_v2_io_max_format(tmp_path: Path) -> None:
    # A kernel's io.max merges what is written; a plain file keeps the last line, which is
    # enough to check what iotuner writes and how it reads it back.
    caps = throttle.Caps(read_bps=100_000_000, write_bps=90_000_000, read_iops=200)
    throttle.set_caps(str(tmp_path), "7:3", caps)
    assert (tmp_path / "io.max").read_text() == (
        "7:3 rbps=100000000 wbps=90000000 riops=200 wiops=max"
    )
    assert throttle.read_caps(str(tmp_path), "7:3") == caps
    assert throttle.read_caps(str(tmp_path), "7:4") == throttle.Caps()
    throttle.clear_caps(str(tmp_path), "7:3")
    assert throttle.read_caps(str(tmp_path), "7:3") == throttle.Caps()


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device's rules, read back before it is freed
def test_v1_rules_set_read_and_cleared(tmp_path: Path) -> None:
    backing = tmp_path / "t.img"
    system.sparse(backing, 64 << 20)
    device = system.loop_attach(backing, direct_io=False)
    majmin = system.majmin(device)
    try:
        assert throttle.backend() == "v1"
        caps = throttle.Caps(50_000_000, 40_000_000, 300, 0)
        throttle.set_caps("v1", majmin, caps)
        assert throttle.read_caps("v1", majmin) == caps
        throttle.clear_caps("v1", majmin)
        # Read while the device is still this test's: once freed, its number is anyone's.
        assert throttle.read_caps("v1", majmin) == throttle.Caps()
    finally:
        throttle.clear_caps("v1", majmin)
        system.loop_detach(device)
