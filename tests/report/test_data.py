"""Reading saved results into what the report draws, leniently."""

from __future__ import annotations

import math

from tests.report.samples import bottleneck_doc, sweep_doc, tune_doc
from tuner.report.data import best_so_far, scaling_curves, sweep_grids, tune_run
from tuner.report.figures import size_label


def test_scaling_curve_from_bottleneck_document() -> None:
    (curve,) = scaling_curves(bottleneck_doc())
    assert curve.component == "loop3"
    assert curve.title == "loop4, loop5, loop6 on bus loop3"
    assert curve.devices == ("loop4", "loop5", "loop6")
    assert curve.points == ((1, 99.5), (2, 198.0), (3, 251.0))
    assert curve.expected == ((1, 99.6), (2, 199.2), (3, 298.8))
    assert (curve.plateau_mbps, curve.expected_mbps, curve.plateau_from) == (251.0, 298.9, 3)
    assert curve.verdict is not None and "share bus loop3" in curve.verdict


def test_an_uncapped_group_has_no_plateau() -> None:
    doc = bottleneck_doc()
    doc["groups"][0]["plateau"]["capped"] = False
    (curve,) = scaling_curves(doc)
    assert curve.plateau_mbps is None and curve.expected_mbps == 298.9


def test_scaling_points_may_name_the_busy_devices() -> None:
    group = {
        "bus": {"name": "loop3"},
        "curve": [
            {"devices": ["loop4"], "total_mbps": 100},
            {"devices": ["loop4", "loop5"], "total_mbps": 150},
        ],
    }
    (curve,) = scaling_curves({"groups": [group]})
    assert curve.component == "loop3"
    assert curve.points == ((1, 100.0), (2, 150.0))


def test_nothing_drawable_gives_nothing() -> None:
    assert scaling_curves(None) == []
    assert scaling_curves({"groups": [{"devices": ["a"]}], "other": 1}) == []
    assert sweep_grids({"device": "loop4"}) == []
    assert tune_run({"trials": []}) is None


def test_sweep_grid_by_depth_and_size() -> None:
    (grid,) = sweep_grids(sweep_doc())
    assert grid.device == "loop4"
    assert grid.sizes[0] == 4096 and grid.sizes[-1] == 4 << 20
    assert grid.depths == (1, 2, 4, 8)
    assert grid.mbps[0][0] == round(200 * 4096 / 1e6, 1)  # depth 1, 4 KiB: IOPS-bound
    assert grid.mbps[-1][-1] == 100.0
    assert (grid.half_power_size, grid.half_power_depth) == (262144, 1)


def test_tune_run_and_best_so_far() -> None:
    run = tune_run(tune_doc())
    assert run is not None
    assert [n for n, _, _ in run.trials] == list(range(1, 9))
    assert run.baseline_settings == {"block.read_ahead_kb (loop4)": 128}
    assert run.best_settings == {"block.read_ahead_kb (loop4)": 4096}
    assert run.chosen and run.ci == (1.52, 1.63)
    assert run.left_out == {"block.scheduler (loop4)": "kyber"}
    assert best_so_far([3.0, 1.0, 5.0, 4.0]) == [3.0, 3.0, 5.0, 5.0]


def test_size_labels_like_fio() -> None:
    assert [size_label(s) for s in (512, 4096, 262144, 4 << 20)] == ["512", "4K", "256K", "4M"]


# -- hostile saved results (issue 27): drawn within bounds or left out, never a traceback --------


def test_nan_and_huge_numbers_in_a_sweep_are_left_out() -> None:
    doc = sweep_doc()
    doc["cells"] += [{"size": math.nan, "depth": 1, "mbps": 5.0},
                     {"size": 4096, "depth": math.inf, "mbps": 5.0},
                     {"size": 10**400, "depth": 1, "mbps": 5.0},
                     {"size": 4096, "depth": 1, "mbps": math.nan},
                     {"size": -4096, "depth": 0, "mbps": 1.0}]  # fmt: skip
    (grid,) = sweep_grids(doc)
    assert grid.sizes == (4096, 16384, 65536, 262144, 1048576, 4194304)
    assert grid.depths == (1, 2, 4, 8)
    assert all(v is None or math.isfinite(v) for row in grid.mbps for v in row)


def test_a_300_by_300_grid_is_not_drawn() -> None:
    cells = [{"size": 4096 * (s + 1), "depth": d + 1, "mbps": 1.0}
             for s in range(300) for d in range(300)]  # fmt: skip
    assert sweep_grids({"device": "sda", "cells": cells}) == []


def test_a_tune_with_hostile_figures_keeps_its_sound_trials() -> None:
    doc = tune_doc()
    doc["trials"] += [{"number": 99, "phase": "x", "mbps": math.nan},
                      {"number": math.inf, "mbps": 1.0}, {"number": 10**400, "mbps": 1.0},
                      {"number": 100, "phase": "p" * 10_000, "mbps": 1.0}]  # fmt: skip
    doc["ci"] = ["a", "b"]
    doc["target"] = "t" * 10_000
    run = tune_run(doc)
    assert run is not None and run.ci is None and len(run.target) <= 200
    assert all(math.isfinite(mbps) and len(phase) <= 200 for _, phase, mbps in run.trials)
    assert run.trials[-1][0] == 100
