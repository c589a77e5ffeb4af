"""A capped random reader's ramp: long enough that the device reads the cache's size first."""

from __future__ import annotations

import pytest

from tuner.trials.flags import UNSETTLED
from tuner.trials.settle import MARGIN, needed_ramp, unsettled

MiB = 1 << 20


def test_a_ramp_that_read_the_cache_size_needs_nothing_more() -> None:
    assert needed_ramp(64 * MiB, 70 * MiB, 2.0, 40 * MiB, 1.0, MiB) is None


def test_a_short_ramp_is_lengthened_from_its_own_device_rate() -> None:
    # 16 MiB in 2 s: 8 MiB/s, so 64 MiB takes 8 s, and a margin on top.
    assert needed_ramp(64 * MiB, 16 * MiB, 2.0, 40 * MiB, 1.0, MiB) == pytest.approx(8.0 * MARGIN)


def test_without_a_ramp_the_windows_rate_is_used() -> None:
    assert needed_ramp(64 * MiB, 0, 0.0, 32 * MiB, 1.0, MiB) == pytest.approx(2.0 * MARGIN)


def test_a_reader_whose_misses_bring_only_what_it_asked_for_is_settled() -> None:
    # pread of 4 KiB without readaround: the device read 0.75 of fio's bytes (25 % hits).
    assert needed_ramp(256 * MiB, 2 * MiB, 2.0, 3 * MiB, 1.0, 4 * MiB) is None


def test_a_trial_that_read_nothing_has_nothing_to_settle() -> None:
    assert needed_ramp(64 * MiB, 0, 2.0, 0, 1.0, MiB) is None


def test_the_flag_gives_the_figures() -> None:
    flag = unsettled(64 * MiB, 16 * MiB, 2.0)
    assert flag.kind == UNSETTLED
    assert "16.0 MiB in the 2.0 s ramp" in flag.message and "64.0 MiB page cache" in flag.message
