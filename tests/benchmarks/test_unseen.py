"""The unseen benchmark: what a draw's row counts as holding, and its CI slice, two drawn
pairs per run from tests/fixtures/unseen_seeds.py measured end to end."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks.unseen import Draw, Plan, holds_under_load, run_draws, summary, table
from tests.fixtures.unseen_seeds import HARD, KNOWN_FAILING, SLICE_TOO_SHORT


def draw(plan: list[float], defaults: list[float], **kw: object) -> Draw:
    made = Draw(7, "hdd", "kernel", "random-readers", "x", **kw)  # type: ignore[arg-type]
    made.samples.update(plan=plan, defaults=defaults, tuned=[10.0], grid=[10.0])
    return made


def test_a_kept_draw_holds_and_a_worse_plan_fails_with_its_seed() -> None:
    kept = draw([10.0, 10.1], [10.0, 9.9])
    worse = draw([9.0, 9.1], [10.0, 10.0], chosen=True, claimed=1.2, ci=(1.1, 1.3))
    assert kept.failures() == [] and holds_under_load(kept) == []
    assert worse.failures()[0].startswith("worse: x0.905")
    assert "claim x1.200, measured x0.905" in worse.failures()
    assert holds_under_load(worse) == [
        "worse in every round: x0.900, x0.910",
        "claim 1.100-1.300 outside the rounds' 0.900-0.910 by more than 10%",
    ]
    lines = table([kept, worse]).splitlines()
    assert lines[2].endswith("| yes |") and "**NO**: worse: x0.905" in lines[3]
    text = summary([kept, worse])
    assert "never below 0.98 x the defaults: 1 of 2" in text
    assert "failing seeds: 7" in text


def test_a_refused_tune_is_measured_and_fails_with_what_it_left() -> None:
    refused = draw([10.0, 10.0], [10.0, 10.0], refused="trial 1: device moved 500% ...")
    refused.samples["grid"] = [20.0, 20.0]
    assert refused.failures() == [
        "tune refused: trial 1: device moved 500% ...",
        "x0.500 of the grid's best",
    ]


def test_one_bad_round_under_load_is_not_worse() -> None:
    """Under load one round can fall; never worse holds if any round reached 0.98."""
    noisy = draw([8.0, 10.2], [10.0, 10.0], chosen=True, claimed=1.02, ci=(0.99, 1.05))
    assert holds_under_load(noisy) == []


def todays_seeds() -> list[object]:
    """Two of the hard seeds the slice can judge (not SLICE_TOO_SHORT), a different pair each
    day (IOTUNER_UNSEEN_SEEDS overrides); a seed known to fail is expected to (strict: once it
    holds, it must leave KNOWN_FAILING)."""
    if os.environ.get("IOTUNER_UNSEEN_SEEDS"):
        seeds = [int(s) for s in os.environ["IOTUNER_UNSEEN_SEEDS"].split(",")]
    else:
        ordered = sorted(set(HARD) - set(SLICE_TOO_SHORT))
        day = int(time.time() // 86400)
        seeds = [ordered[(2 * day) % len(ordered)], ordered[(2 * day + 1) % len(ordered)]]
    return [
        pytest.param(seed, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[seed]))
        if seed in KNOWN_FAILING
        else seed
        for seed in seeds
    ]


QUICK = Plan(rounds=2, runtime_s=5.0, ramp_s=2.0, budget=4, quick=True,
             sides=("defaults", "plan"), time_s=120.0)  # fmt: skip
"""`python -m benchmarks.unseen --quick`'s lengths (its main: 2 rounds of 5 s runs after 2 s of
ramp), measuring the defaults and the plan only, at budget 4, not the quick mode's 8, and the
whole tune bounded by `--time 120`: seed 11's tune took 434 s at budget 8 and 391 s at 4
(2026-11-28, load average 8-13), where a user who gives `--time` is promised its bound; a tune
that cannot confirm within it keeps the defaults, which the slice then holds to never worse. A
failing seed replays as the slice ran it with `--quick --budget 4 --time 120 --seeds N`."""


@pytest.mark.lab
@pytest.mark.end_to_end
@pytest.mark.parametrize("seed", todays_seeds())
def test_a_hard_draw_holds_under_load(state: object, seed: int) -> None:
    """One drawn pair end to end (two a run): lab up, `iotuner tune` (budget 4), then the
    defaults and the plan interleaved under plain fio or iperf3, two rounds of 5 s runs after
    2 s, caches dropped: the quick mode's lengths (QUICK). Asserts what a tolerance under load
    holds: never worse than the defaults in every round, the claim's interval within 10 % of
    the rounds' gains. 5-10 minutes a draw on the shared VM at load average 5-12 (2026-11-28:
    seed 5 282 s, seed 11 597 s, its tune 391 s of it; at 3 s runs 315 and 296 s, at budget 8
    344 and 636 s): the slowest tests here, for they alone judge the tune on environments
    nobody chose. Not shorter: a draw's time is its data set laid out through the drawn disk
    (seed 11: 1188 MiB at 36 MB/s, 33 s), the tune (bounded by --time 120; seed 11's took 211 s
    of its 323 s at load average 10-18, 2026-11-28 17:06, so the bound is overrun under load)
    and 2 rounds of 2 sides (the fewest that interleave) of the quick mode's runs, which 3 s
    runs after 1 s already made too short to judge one hard seed (SLICE_TOO_SHORT).
    """
    print(f"unseen seed {seed}: {HARD.get(seed, '')}")
    (drawn,) = run_draws([seed], QUICK)
    print(table([drawn]))
    assert holds_under_load(drawn) == [], (
        f"replay: python -m benchmarks.unseen --quick --budget 4 --time 120 --seeds {seed}"
    )
