"""The scaling trials' fio job, and what they refuse before fio starts."""

from __future__ import annotations

import pytest

from tuner.bottleneck import Component, Group, run_scaling
from tuner.bottleneck.scaling import device_path, job_text
from tuner.errors import BadInput


def test_the_job_reads_each_device_directly_and_never_writes() -> None:
    text = job_text(["/dev/loop2", "/dev/disk/by-path/pci-0000:00:05.0"], runtime_s=3)
    lines = text.splitlines()
    assert "rw=read" in lines and "direct=1" in lines and "iodepth=8" in lines
    assert "runtime=3000ms" in lines and "time_based=1" in lines
    assert [line for line in lines if line.startswith("filename=")] == [
        "filename=/dev/loop2",
        "filename=/dev/disk/by-path/pci-0000\\:00\\:05.0",
    ]
    assert not any(word in text for word in ("write", "trim", "rw=rw", "verify"))


def test_device_paths() -> None:
    assert device_path("nvme0n1") == "/dev/nvme0n1"
    assert device_path("cciss!c0d0") == "/dev/cciss/c0d0"


def test_something_not_a_block_device_is_refused_before_fio() -> None:
    group = Group(Component("x", "bus", "x"), ("null", "zero"))
    with pytest.raises(BadInput, match="not a block device"):
        run_scaling(group, runtime_s=1)
