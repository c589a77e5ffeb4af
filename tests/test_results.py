"""tuner/results.py: the saved result documents `iotuner report` draws."""

from __future__ import annotations

from pathlib import Path

from probes.identity import live_identity
from tuner.results import MEASURED_ON, load_result, result_path, save_result


def test_save_then_load_round_trips_with_the_host_it_was_measured_on(state: Path) -> None:
    doc = {"groups": [{"devices": ["loop4"], "mbps": 99.5}]}
    path = save_result("bottleneck", doc)
    assert path == state / "results" / "bottleneck.json" == result_path("bottleneck")
    here = live_identity().document()
    loaded = load_result("bottleneck") or {}
    assert {k: v for k, v in loaded.items() if k != "origin"} == {**doc, MEASURED_ON: here}
    assert here["hostname"] and here["kernel"]
    save_result("bottleneck", {"groups": []})  # the last document wins
    assert (load_result("bottleneck") or {})["groups"] == []
    assert [p.name for p in path.parent.iterdir()] == ["bottleneck.json"]  # no temp file left


def test_missing_or_broken_result_is_none(state: Path) -> None:
    assert load_result("sweep") is None
    assert not state.exists()  # reading creates nothing
    save_result("sweep", {})
    result_path("sweep").write_text("{not json")
    assert load_result("sweep") is None
    result_path("sweep").write_text("[1, 2]")
    assert load_result("sweep") is None


def test_a_hostile_result_file_is_none(state: Path) -> None:
    # Nesting was a RecursionError out of `report` (issue 27); a huge file is not read whole.
    save_result("sweep", {})
    result_path("sweep").write_text("[" * 100_000 + "]" * 100_000)
    assert load_result("sweep") is None
    result_path("sweep").write_bytes(b'{"a": "\xff"}')
    assert load_result("sweep") is None
    with result_path("sweep").open("w") as f:
        f.write('{"pad": "' + "x" * (16 << 20) + '"}')
    assert load_result("sweep") is None


def test_a_saved_result_says_when_by_which_command_and_on_what(state: Path) -> None:
    """Issue 30: results carried no time and no origin, so a lab tune looked like this host's."""
    import datetime as dt

    from tuner.results import ORIGIN

    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    save_result("sweep", {"cells": []}, devices=["sdb"])
    made = (load_result("sweep") or {})[ORIGIN]
    assert before <= dt.datetime.fromisoformat(made["saved_at"]) <= dt.datetime.now(dt.UTC)
    assert made["command"].split()[0] == "iotuner" and made["devices"] == ["sdb"]
    assert made["lab"] is False  # no lab is up in this state directory
    save_result("tune", {"trials": []}, lab=True)
    assert (load_result("tune") or {})[ORIGIN]["lab"] is True
