"""Recorded landscapes: grids, recording, saving, and replaying noisy trials."""

from __future__ import annotations

import random
from pathlib import Path

from tests.search.synthetic import (
    CURRENT,
    NR,
    RA,
    RECOMMENDED,
    SCHED,
    SPACE,
    noisy_trial,
    true_mbps,
)
from tuner.search.optimizer import RandomOptimizer, SkoptOptimizer
from tuner.search.replay import (
    Landscape,
    grid_points,
    replay_objective,
    run_search,
    trials_to_reach,
)
from tuner.search.space import Dimension, SearchSpace, point_key


def small_landscape(repeats: int = 3) -> Landscape:
    return Landscape.record(
        SPACE, grid_points(SPACE, 5), noisy_trial(random.Random(1)), repeats, {"spec": "synth"}
    )


def test_grid_points_take_every_choice_and_collapse_repaired_duplicates() -> None:
    grid = grid_points(SPACE, 5)
    assert len({point_key(p) for p in grid}) == len(grid)
    assert {p[SCHED] for p in grid} == {"mq-deadline", "kyber", "none", "bfq"}
    assert sorted({p[RA] for p in grid}) == [128, 608, 2896, 13776, 65536]
    # nr_requests 4..1024 on five levels, but scheduler none caps 256 and 1024 at 128.
    assert len(grid) == 5 * 5 * 3 + 5 * 4
    assert all(int(p[NR]) <= 128 for p in grid if p[SCHED] == "none")
    explicit = grid_points(SPACE, {RA: [128, 4096]})
    assert sorted({p[RA] for p in explicit}) == [128, 4096]


def test_record_measures_in_passes_and_saves_and_loads(tmp_path: Path) -> None:
    order: list[int] = []

    def measure(point):  # type: ignore[no-untyped-def]
        order.append(int(point[RA]))
        return true_mbps(point)

    points = [CURRENT, {**CURRENT, RA: 4096}]
    landscape = Landscape.record(SPACE, points, measure, repeats=2)
    assert order == [128, 4096, 128, 4096]
    path = tmp_path / "landscape.json"
    small = small_landscape()
    small.save(path)
    again = Landscape.load(path)
    assert again == small
    assert again.meta == {"spec": "synth"}
    assert landscape.optimum()[0][RA] == 4096


def test_replay_snaps_to_the_nearest_grid_point_and_draws_a_repeat() -> None:
    landscape = small_landscape()
    sample = replay_objective(landscape, random.Random(3))
    off_grid = {RA: 2200, NR: 70, SCHED: "mq-deadline"}
    nearest = landscape.points[landscape.nearest(off_grid)]
    assert (nearest[RA], nearest[NR]) == (2896, 64)
    draws = {sample(off_grid) for _ in range(30)}
    assert draws <= set(landscape.samples[landscape.nearest(off_grid)])
    assert len(draws) > 1  # the noise is replayed, not averaged away
    first = replay_objective(landscape, random.Random(9))
    second = replay_objective(landscape, random.Random(9))
    assert [first(off_grid) for _ in range(5)] == [second(off_grid) for _ in range(5)]


def test_run_search_against_a_replay_counts_trials_to_reach_a_target() -> None:
    landscape = small_landscape()
    optimum = landscape.optimum()[1]
    asked = run_search(
        RandomOptimizer(SPACE, 0, [CURRENT]), replay_objective(landscape, random.Random(0)), 40
    )
    assert asked[0] == SPACE.snap(CURRENT)
    assert len({point_key(p) for p in asked}) == 40
    reached = trials_to_reach(asked, landscape.mean, 0.5 * optimum)
    assert reached is not None and 1 <= reached <= 40
    assert trials_to_reach(asked[:1], landscape.mean, optimum) is None


def test_run_search_tells_the_baseline_first_and_never_asks_it_again() -> None:
    landscape = small_landscape()
    replayed = replay_objective(landscape, random.Random(0))
    measured: list[dict[tuple[str, str], object]] = []

    def sample(point):  # type: ignore[no-untyped-def]
        measured.append(point)
        return replayed(point)

    baseline = SPACE.snap(CURRENT)
    asked = run_search(SkoptOptimizer(SPACE, 0, [CURRENT, RECOMMENDED]), sample, 6,
                       baseline=baseline)  # fmt: skip
    # The baseline is the first of the six points, measured three times and told; the first
    # point asked is the recommendation, and the baseline is never asked again.
    assert len(asked) == 6 and asked[0] == baseline
    assert measured[:3] == [baseline] * 3 and len(measured) == 8
    assert asked[1] == SPACE.complete(RECOMMENDED, baseline)
    assert all(point_key(p) != point_key(baseline) for p in asked[1:])


def test_a_saved_landscape_keeps_where_scheduler_parameters_rest(tmp_path: Path) -> None:
    # Without `resting`, a loaded space leaves bfq's slice_idle where the optimiser drew it on
    # a point that chooses mq-deadline, and the replay snaps such points elsewhere than the
    # run's own replay did (hdd-streams: 2 of 20 seeds in the run, 8 of 20 from its file).
    device = SCHED[1]
    idle = ("block.bfq_slice_idle", device)
    space = SearchSpace(
        (*SPACE.dimensions, Dimension("block.bfq_slice_idle", device, "int", 0, 32)),
        SPACE.none_depth,
        {idle: 8},
    )
    point = {**CURRENT, idle: 8}
    landscape = Landscape(space, (point,), ((100.0,),))
    path = tmp_path / "landscape.json"
    landscape.save(path)
    again = Landscape.load(path)
    assert again.space.resting == {idle: 8}
    assert again.space.repair({**point, SCHED: "mq-deadline", idle: 30})[idle] == 8
