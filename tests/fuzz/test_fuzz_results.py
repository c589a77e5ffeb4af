"""Fuzzing the saved results `iotuner report` reads: hostile `bottleneck`, `sweep` and `tune`
documents through the readers (tuner/report/data.py) and the figures drawn from them.

A saved result is a file in the state directory like any other: whatever it holds, the
readers give only finite numbers within bounds, grids iotuner could draw and short texts,
and every figure renders; never a traceback, never more than the time limit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, corpus, note, within
from tests.report.samples import bottleneck_doc, sweep_doc, tune_doc
from tuner.report.data import MAX_AXIS, MAX_TEXT, scaling_curves, sweep_grids, tune_run
from tuner.report.figures import (
    convergence_figure,
    png_data_uri,
    scaling_figure,
    sweep_figure,
)

_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 10**400, 4096, 1 << 62, True]),
)  # fmt: skip
_leaf = st.one_of(_numbers, st.text(max_size=30), st.none(), st.sampled_from(["[/]", "x" * 500]))
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_SAMPLES = {"bottleneck": bottleneck_doc, "sweep": sweep_doc, "tune": tune_doc}


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `doc`."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


@st.composite
def _result(draw: st.DrawFn) -> tuple[str, Any]:
    """A sample document with a few values replaced, or a big grid, or anything at all."""
    name = draw(st.sampled_from(sorted(_SAMPLES)))
    how = draw(st.sampled_from(["mutated", "mutated", "mutated", "grid", "anything"]))
    note(f"result: {how}")
    if how == "anything":
        return name, draw(_json)
    doc = _SAMPLES[name]()
    if how == "grid":
        side = draw(st.integers(1, 300))
        doc = {"device": "sda", "cells": [{"size": 4096 * (s + 1), "depth": d + 1, "mbps": 1.0}
                                          for s in range(side) for d in range(side)]}  # fmt: skip
        return "sweep", doc
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        *parents, last = path
        holder = doc
        for key in parents:
            holder = holder[key]
        holder[last] = draw(_json)
    return name, doc


def handled(name: str, doc: Any) -> None:
    """Read within bounds and drawn, or left out; nothing raised, nothing slow."""
    with within():
        source = doc if isinstance(doc, dict) else None
        if name == "bottleneck":
            for curve in scaling_curves(source):
                assert all(math.isfinite(r) for _, r in curve.points), curve
                assert len(curve.title) <= 3 * MAX_TEXT + 20
                png_data_uri(scaling_figure(curve))
        elif name == "sweep":
            for grid in sweep_grids(source):
                assert len(grid.sizes) <= MAX_AXIS and len(grid.depths) <= MAX_AXIS
                assert min(grid.sizes) > 0 and min(grid.depths) > 0
                assert all(v is None or math.isfinite(v) for row in grid.mbps for v in row)
                png_data_uri(sweep_figure(grid))
        else:
            run = tune_run(source)
            if run is not None:
                assert all(math.isfinite(mbps) for _, _, mbps in run.trials)
                assert len(run.target) <= MAX_TEXT and len(run.stop_reason) <= MAX_TEXT
                png_data_uri(convergence_figure(run))
    note("drawn or left out")


@FUZZ
@given(_result())
def test_generated_results_are_read_within_bounds(result: tuple[str, Any]) -> None:
    handled(*result)


@pytest.mark.parametrize("path", corpus("results"), ids=lambda p: p.name)
def test_results_that_once_failed(path: Path) -> None:
    # Each file is named <bottleneck|sweep|tune>-<what>.json.
    handled(path.name.split("-", 1)[0], json.loads(path.read_text()))
