"""Confirmation over a transient baseline: a buffered sequential reader whose window closed
with much of its bytes still read ahead (tuner/search/confirm.py, transient_ceiling).

The figures are recorded: unseen seed 5 (RAID-0 of three 5400 rpm drives behind a 216 MB/s
controller, badly tuned: kyber, 64 MiB readahead, 32 KiB requests, nr_requests 8; four
buffered readers of 2 MiB), `iotuner tune --budget 4` on 2026-11-28 12:38 UTC, its
confirmation trials 8-16 (6 s windows). On the same lab, 40 s of plain fio at the start
settings got 0.79 MB/s while the device moved 202 MB (5.05 MB/s, steady every 5 s): the
readers' 512 MiB of windows take 100 s to fill, so a 6 s window sees none of the steady
state, and 3 s windows of plain fio measured the start anywhere from 0.7 to 66 MB/s.
"""

from __future__ import annotations

import itertools
import math

from tuner.search.confirm import Sample, confirm, transient_ceiling
from tuner.search.space import Point

START: Point = {("block.read_ahead_kb", "loop5"): 65536}
PLAN: Point = {("block.read_ahead_kb", "loop5"): 728}
OTHER: Point = {("block.read_ahead_kb", "loop5"): 376}
MB = 1_000_000
STEADY_DEVICE_MBPS = 202 / 40  # the start's device rate over 40 s of plain fio
# (MB/s, seconds of window, device bytes per fio byte) of trials 8-16, and each point's
# streams' read-ahead allowance: 2 windows x 4 streams x its readahead.
TRIALS = {
    65536: [(1.23, 13.64, 5.06), (1.77, 8.28, 2.789), (1.86, 7.91, 2.858)],
    728: [(77.16, 7.12, 1.018), (70.94, 12.15, 1.012), (81.61, 7.97, 1.014)],
    376: [(78.13, 6.92, 1.01), (78.82, 6.89, 1.01), (77.21, 6.93, 1.008)],
}


def recorded(with_ceiling: bool):  # type: ignore[no-untyped-def]
    """measure(point): trials 8-16 in their order, as the session's samples; a re-measure of a
    figure outside its point's others (confirm's recheck) takes the point's figures again
    from its first: the transient repeats."""
    taken = {kb: itertools.cycle(runs) for kb, runs in TRIALS.items()}

    def measure(point: Point) -> Sample:
        kb = int(point[("block.read_ahead_kb", "loop5")])
        mbps, seconds, amplification = next(taken[kb])
        fio = int(mbps * MB * seconds)
        ceiling = transient_ceiling(mbps, fio, int(fio * amplification), 2 * 4 * kb * 1024)
        return Sample(mbps, ceiling=ceiling if with_ceiling else None)

    return measure


def test_a_transient_start_is_claimed_at_least_from_its_ceiling_not_its_figure() -> None:
    """The old claim (every sample steady) was x47 (95 % x24-x96) where the steady state,
    the plan's 77 MB/s over the start's 5.05 MB/s of device rate, is x15: three times too
    high, and an interval that never held the truth. Over the ceilings it is at least x14,
    within 10 % below the steady state, and said to be a lower bound."""
    old = confirm(recorded(with_ceiling=False), START, [PLAN, OTHER])
    assert old.gain > 40 and old.ci_low > 20 and not old.at_least
    steady = old.best_score / STEADY_DEVICE_MBPS
    assert old.ci_low > 1.3 * steady  # the old interval did not hold the steady state

    new = confirm(recorded(with_ceiling=True), START, [PLAN, OTHER])
    assert new.chosen and new.at_least
    assert new.best_point in (PLAN, OTHER)
    assert 0.9 * steady <= new.gain <= steady
    assert new.ci_low < new.gain < new.ci_high < 1.5 * steady
    assert math.isclose(new.baseline_score, old.baseline_score)  # the figures stay as measured


def test_a_steady_window_or_another_workload_has_no_ceiling() -> None:
    """The plan's window (1.8 % beyond fio's bytes, 5.7 MiB of windows) is steady; a random
    reader (no read-ahead allowance) is charged its extra bytes as its real cost."""
    assert transient_ceiling(77.16, 549 * MB, int(549 * MB * 1.018), 8 * 728 * 1024) is None
    assert transient_ceiling(1.23, 16 * MB, 80 * MB, 0) is None
    assert transient_ceiling(1.23, 0, 80 * MB, 512 << 20) is None
    # Credited only up to what the streams may hold ahead: more is waste, flagged elsewhere.
    assert transient_ceiling(2.0, 10 * MB, 100 * MB, 20 * MB) == 2.0 * 30 / 10
