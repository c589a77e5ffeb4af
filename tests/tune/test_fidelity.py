"""Screen short, decide long, through the real search loop over a synthetic landscape.

The landscape is tests/search/synthetic.py's readahead bell. At the screen length a trial sees
only part of a setting's effect (the square root of its gain: a readahead window not yet
consumed, a transient), at the decide length all of it, as the main job's readers did (x1.57 in
3 s runs, x1.90 in 10 s ones). Only the trial is synthetic: optimiser, plan, confirmation and
the disagreement report are the tune's own.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import time

import pytest

from tests.search.synthetic import CURRENT, RA, RECOMMENDED, SPACE, true_mbps
from tuner.search.fidelity import TrialLength
from tuner.search.space import Point
from tuner.trials.trial import TrialResult
from tuner.tune.progress import TrialProgress
from tuner.tune.session import PointTrial, Search, SizedRunner, TuneConfig

SHORT = TuneConfig(budget=8, seed=3, runtime_s=3.0, ramp_s=1.0, decide_runtime_s=6.0,
                   decide_ramp_s=2.0)  # fmt: skip


def transient(seed: int, cv: float = 0.01, full: bool = False) -> SizedRunner:
    """Trials whose figure at 4 s or less shows the square root of the point's gain over the
    current settings (all of it with `full`), 1 % noise."""
    rng = random.Random(seed)
    base = true_mbps(CURRENT)

    def run(point: Point, length: TrialLength) -> PointTrial:
        gain = true_mbps(point) / base
        seen = gain if full or length.seconds > 4 else math.sqrt(gain)
        mbps = base * seen * math.exp(rng.gauss(0.0, cv))
        return PointTrial(TrialResult(mbps, mbps * 64, 1000.0, 1, 1, length.seconds), dict(point))

    return run


def never(point: Point) -> PointTrial:
    raise AssertionError("a search given a sized runner runs every trial through it")


def search(
    config: TuneConfig, sized: SizedRunner, progress: list[TrialProgress] | None = None
) -> Search:
    heard = progress if progress is not None else []
    return Search("/dev/loop0", "stream-read", SPACE, config, never, sized=sized,
                  on_progress=heard.append)  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_the_claim_is_the_decide_length_figures(seed: int) -> None:
    result = search(SHORT, transient(seed)).run(dict(CURRENT), [RECOMMENDED])
    lengths = {t.phase: set() for t in result.trials}
    for t in result.trials:
        lengths[t.phase].add(t.length_s)
    assert lengths["confirm"] == {8.0}
    assert all(lengths[phase] == {4.0} for phase in lengths if not phase.startswith("confirm"))
    assert result.chosen
    # The gain claimed is the ratio of the confirmation trials' means: the long figures.
    best = [t.mbps for t in result.confirmed(result.best_settings)]
    base = [t.mbps for t in result.confirmed(result.baseline_settings)]
    assert result.gain == pytest.approx(statistics.fmean(best) / statistics.fmean(base))
    truth = true_mbps(result.best_settings) / true_mbps(CURRENT)
    assert result.gain == pytest.approx(truth, rel=0.05)  # not its square root
    assert result.screen == TrialLength(1.0, 3.0, "--ramp and --runtime")
    assert result.decide == TrialLength(2.0, 6.0, "the decide length")


def test_a_candidate_whose_short_and_long_gains_differ_is_reported() -> None:
    result = search(SHORT, transient(0)).run(dict(CURRENT), [RECOMMENDED])
    assert result.disagreements, "the transient hides half of every gain: beyond 1 % noise"
    for settings, differs in result.disagreements:
        screened = [t for t in result.trials if t.phase in ("initial", "search")
                    and t.settings == settings]  # fmt: skip
        # A candidate the search measured as it is is held against its trials, one it never
        # measured (rounded, simplified) against what its model of short trials expected.
        assert differs.by == ("trials" if screened else "model")
        if screened:
            assert differs.decided == pytest.approx(differs.screened**2, rel=0.06)


def test_a_gain_that_holds_at_both_lengths_is_not_reported() -> None:
    """Not where a search trial measured the candidate. A candidate it never measured as it
    is is held against its model's figure, which carries the model's own error too (4.6 %
    here, beyond the 1 % trials' allowance): reported, and said to be the model's."""
    result = search(SHORT, transient(0, full=True)).run(dict(CURRENT), [RECOMMENDED])
    assert result.chosen
    assert [d.by for _, d in result.disagreements] in ([], ["model"])


class Clock:
    """time.monotonic for a tune whose trials are instant: each trial advances it by its
    length and half a second of overhead, as if it had run."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def running(self, sized: SizedRunner) -> SizedRunner:
        def run(point: Point, length: TrialLength) -> PointTrial:
            self.now += length.seconds + 0.5
            return sized(point, length)

        return run


def test_a_tight_bound_shortens_the_decide_length_and_confirms_fewer_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """80 s for 4 s screening and 8 s decide trials, each 0.5 s more: after the baseline
    (13.5 s) two points at 8.5 s a trial (51 s) would leave the search less than its four
    trials (the rule's point and three space-filling ones), so the decide length shrinks to
    about 6.9 s, and the tune ends within the bound."""
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    config = dataclasses.replace(SHORT, time_s=80.0, started=clock())
    result = search(config, clock.running(transient(1))).run(dict(CURRENT), [RECOMMENDED])
    confirm = [t for t in result.trials if t.phase == "confirm"]
    assert result.decide is not None and 6.0 < result.decide.seconds < 8.0, result.budget
    assert {t.length_s for t in confirm} == {result.decide.seconds}
    assert len({tuple(sorted(t.settings.items())) for t in confirm}) == 2
    assert "2 points at" in result.budget
    assert clock.now - 1000.0 <= 80.0


def test_progress_counts_every_trial_and_ends_with_nothing_left() -> None:
    heard: list[TrialProgress] = []
    result = search(SHORT, transient(2), heard).run(dict(CURRENT), [RECOMMENDED])
    assert [p.number for p in heard] == list(range(1, len(result.trials) + 1))
    assert all(p.total >= p.number for p in heard)
    assert (heard[-1].total, heard[-1].left_s) == (len(result.trials), 0.0)
    assert [p.length.seconds for p in heard] == [t.length_s for t in result.trials]
    # Before anything is measured the estimate already counts the plan's trials: the
    # baseline's 3, the budget's 8 and 3 rounds of 4 points.
    assert heard[0].total == 1 + 2 + 8 + 12
    assert RA in result.best_settings
