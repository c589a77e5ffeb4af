"""Flagged trials never win: a search over a landscape with a page-cache trap.

The landscape is tests/search/synthetic.py's (a readahead bell peaking at 4096 KB), with a trap:
above 16 MiB of readahead the "device" serves the trial from memory, so fio reports ten times
the peak and the trial is flagged `page cache`, as the mmap reader's trials were when a huge
readahead pulled the whole file in (issue 16: x432 claimed, 0.04 x measured). The search runs
through the real Tune loop (optimiser, guards, confirmation); only the trial is synthetic.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.search.synthetic import CURRENT, RA, RECOMMENDED, SPACE, true_mbps
from tests.sysfs_tree import SysTree
from tuner.rules.model import Workload
from tuner.search.optimizer import SkoptOptimizer
from tuner.search.space import Point
from tuner.trials.flags import CUT_SHORT, DATA_SET, PAGE_CACHE, READAHEAD, Flag
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult
from tuner.tunables.engine import TunableEngine
from tuner.tune import guards
from tuner.tune.session import PointTrial, Tune, TuneConfig

TRAP_KB = 16384
STREAM = Workload("stream-read", "", {"rw": "read", "bs": "16k"})
TARGET = TrialTarget(path="/dev/loop0", devices=("loop0",), size_bytes=1 << 30, writable=False)


CACHED = Flag(PAGE_CACHE, "device moved 9% of fio's bytes: page cache")


def landscape(seed: int, trap: Flag | None = CACHED) -> Callable[[Point], PointTrial]:
    """Trials of the synthetic landscape, 1 % noise; above TRAP_KB of readahead `trap`'s
    flag with ten times the peak's figure."""
    rng = random.Random(seed)

    def run(point: Point) -> PointTrial:
        mbps = true_mbps(point) * (1 + rng.gauss(0, 0.01))
        flags: tuple[Flag, ...] = ()
        if trap is not None and int(point[RA]) > TRAP_KB:
            mbps, flags = mbps * 10, (trap,)
        result = TrialResult(mbps, mbps * 64, 1000.0, 1, 1, 0.1, flags)
        return PointTrial(result, dict(point))

    return run


def tune(tree: SysTree, runner: Callable[[Point], PointTrial], budget: int = 12) -> Tune:
    engine = TunableEngine(tree.root, None)  # the runner applies nothing
    config = TuneConfig(budget=budget, seed=3, baseline_repeats=3, confirm_rounds=3)
    return Tune(TARGET, STREAM, SPACE, engine, config, runner=runner)


@pytest.mark.parametrize("seed", range(4))
def test_a_trial_served_from_memory_never_wins(tree: SysTree, seed: int) -> None:
    """The trap region is tried (the rules' own hypotheses start near it), reported as set
    aside, told no better than the worst honest trial, and never confirmed."""
    start = {**RECOMMENDED, RA: 32768}  # a rule's "at least" pushed into the trap
    result = tune(tree, landscape(seed)).run(dict(CURRENT), [start])
    trapped = [t for t in result.trials if int(t.settings[RA]) > TRAP_KB]
    assert trapped, "the search never tried the trap: the test shows nothing"
    assert all(t.set_aside for t in trapped)
    assert result.chosen
    assert int(result.best_settings[RA]) <= TRAP_KB
    assert {t.number for t in result.set_aside()} == {t.number for t in trapped}
    assert all(t.told == guards.PENALISE for t in trapped if t.phase in ("initial", "search"))
    assert not [t for t in result.trials if t.phase == "confirm" and t.set_aside]
    # The recommendation's confirmed gain is the honest landscape's, not the trap's x10.
    assert 1.5 < result.gain < 6


def test_penalised_trials_are_told_the_worst_honest_value(
    tree: SysTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[Point, float]] = []
    real_tell = SkoptOptimizer.tell

    def spy(self: SkoptOptimizer, point: Point, value: float) -> None:
        told.append((dict(point), value))
        real_tell(self, point, value)

    monkeypatch.setattr(SkoptOptimizer, "tell", spy)
    tune(tree, landscape(0), budget=6).run(dict(CURRENT), [{RA: 32768}])
    checked = 0
    for i, (point, value) in enumerate(told):
        if int(point[RA]) > TRAP_KB:
            honest = [v for p, v in told[:i] if int(p[RA]) <= TRAP_KB]
            assert value == max(honest), "no better than the worst honest trial so far"
            checked += 1
    assert checked >= 1


def test_a_flagged_baseline_stops_the_tune_naming_the_remedy(tree: SysTree) -> None:
    def cached(point: Point) -> PointTrial:
        flag = Flag(PAGE_CACHE, "device moved 12% of fio's bytes: page cache")
        return PointTrial(TrialResult(900.0, 1.0, None, 1, 1, 0.1, (flag,)), dict(point))

    session = tune(tree, cached)
    with pytest.raises(guards.Unmeasurable) as err:
        session.run(dict(CURRENT), [])
    message = str(err.value)
    assert message.startswith("the baseline cannot be measured honestly (trial 1: device")
    assert "--cache-memory" in message and "\n" not in message
    assert err.value.exit_code == 1
    assert len(session.records) == 1, "nothing measured after the flagged baseline"


def test_a_trial_the_io_cap_cut_short_is_kept_as_measured() -> None:
    """Its figure is fio's bytes over fio's own time: the device's, over a shorter window."""
    short = Flag(CUT_SHORT, "the I/O cap ended it after 0.19 s of the 1 s runtime")
    assert guards.policy([short]) is None
    assert guards.disqualifying([short]) == ()
    guards.check_baseline([short], 1)  # the baseline may be capped too: no exception


def test_each_kind_has_a_policy_and_a_remedy() -> None:
    for kind in guards.POLICY:
        assert kind in guards.HINTS
    assert guards.policy([Flag(READAHEAD, "x")]) == guards.PENALISE
    assert guards.policy([Flag(DATA_SET, "x")]) == guards.SKIP
    assert guards.policy([Flag(READAHEAD, "x"), Flag(DATA_SET, "y")]) == guards.SKIP
    assert guards.policy([]) is None
    assert guards.penalty([-4.0, -3.0, -5.0]) == -3.0


def test_a_skipped_point_is_not_told_and_not_asked_again(tree: SysTree) -> None:
    data_set = Flag(DATA_SET, "data set 4.0 MiB read through in 0.1 s: too small to measure")
    result = tune(tree, landscape(2, trap=data_set), budget=8).run(dict(CURRENT), [{RA: 32768}])
    trapped = [t for t in result.trials if int(t.settings[RA]) > TRAP_KB]
    assert trapped and all(t.told == guards.SKIP for t in trapped if t.phase != "confirm")
    keys = [tuple(sorted(t.settings.items())) for t in result.trials if t.phase == "search"]
    assert len(keys) == len(set(keys))
    assert int(result.best_settings[RA]) <= TRAP_KB


def test_result_document_lists_what_was_set_aside(tree: SysTree, tmp_path: Path) -> None:
    from tuner.tune.result import result_document

    result = tune(tree, landscape(0), budget=6).run(dict(CURRENT), [{RA: 32768}])
    doc = result_document(result)
    assert doc["set_aside"] and doc["set_aside"][0]["reason"].endswith("page cache")
    assert {"number", "phase", "reason", "told"} <= set(doc["set_aside"][0])
    assert doc["unit"] == "MB/s" and doc["objective"] == "throughput"


def test_trials_start_from_the_ramp_the_baseline_needed_to_settle(tree: SysTree) -> None:
    """A capped random reader's baseline settles its cache in 9.5 s of ramp; the trials after
    it start there instead of each running twice to find out (tuner/trials/settle.py)."""
    honest = landscape(0, trap=None)

    def settling(point: Point) -> PointTrial:
        done = honest(point)
        ramp = 9.5 if point == CURRENT else 4.0
        return PointTrial(dataclasses.replace(done.result, ramp_s=ramp), done.had)

    session = tune(tree, settling, budget=2)
    session.run(dict(CURRENT), [])
    assert session.ramp_s == 9.5


def test_an_unsettled_point_never_wins_and_the_document_says_how_long_trials_ran(
    tree: SysTree,
) -> None:
    """Above TRAP_KB the trials reach their ceiling with the throughput still climbing (ten
    times the peak, a transient): never told, never recommended; every trial's length, window
    and whether it settled are in --json."""
    from tuner.trials.steady import unsettled, window_bounds
    from tuner.tune.result import result_document

    length = window_bounds(3.0, 1.0)
    trap = unsettled(length, length.ceiling_s)
    run = landscape(4, trap=trap)

    def timed(point: Point) -> PointTrial:
        done = run(point)
        settled = not done.result.flags
        measured = 4.2 if settled else length.ceiling_s
        result = dataclasses.replace(done.result, measured_s=measured, settled=settled,
                                     length=length)  # fmt: skip
        return PointTrial(result, done.had)

    result = tune(tree, timed, budget=8).run(dict(CURRENT), [{RA: 32768}])
    assert int(result.best_settings[RA]) <= TRAP_KB
    trapped = [t for t in result.trials if int(t.settings[RA]) > TRAP_KB]
    assert trapped and all(t.set_aside and t.settled is False for t in trapped)
    doc = result_document(result)
    first = doc["trials"][0]
    assert (first["measured_s"], first["settled"]) == (4.2, True)
    assert first["length"] == "3.0-8.0 s after a 1.0 s ramp (floor: --runtime 3 s)"
