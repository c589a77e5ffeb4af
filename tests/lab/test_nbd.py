"""Where a modelled disk's servers run: one CPU per disk, from the last CPU down."""

from __future__ import annotations

import os

from tuner.lab.nbd import server_cpu


def test_disks_take_the_cpus_from_the_last_down_and_wrap_round() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    taken = [server_cpu(i) for i in range(2 * len(cpus))]
    assert taken == (cpus[::-1]) * 2
