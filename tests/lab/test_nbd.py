"""Where a modelled disk's servers run (one CPU per disk, from the last CPU down), and a
server that is not installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuner.lab.nbd import server_cpu, start
from tuner.lab.network import NEEDS
from tuner.lab.system import LabError


def test_disks_take_the_cpus_from_the_last_down_and_wrap_round() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    taken = [server_cpu(i) for i in range(2 * len(cpus))]
    assert taken == (cpus[::-1]) * 2


def test_a_server_not_installed_is_named_with_the_packages(tmp_path: Path) -> None:
    cmd = ["iotuner-no-such-server", "--unix", str(tmp_path / "s")]
    with pytest.raises(LabError, match=r"^iotuner-no-such-server: iotuner-no-such-server not "
                       r"found \(modelled disks need .*util-linux; scripts/setup"):  # fmt: skip
        start(cmd, tmp_path / "log", tmp_path / "pid", "iotuner-no-such-server", cpu=0)
    assert not (tmp_path / "log").exists()  # refused before anything ran


def test_another_lab_part_names_what_it_needs(tmp_path: Path) -> None:
    """The network's delay line is started here too: its refusal names its own packages."""
    cmd = ["iotuner-no-such-relay", str(tmp_path / "pid")]
    with pytest.raises(LabError, match=r"^delayline: iotuner-no-such-relay not found \(the lab "
                       r"network needs iproute2.*; scripts/setup installs them\)$"):  # fmt: skip
        start(cmd, tmp_path / "log", tmp_path / "pid", "delayline", needs=NEEDS)
