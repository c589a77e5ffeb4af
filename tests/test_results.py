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
    assert load_result("bottleneck") == {**doc, MEASURED_ON: here}
    assert here["hostname"] and here["kernel"]
    save_result("bottleneck", {"groups": []})  # the last document wins
    assert load_result("bottleneck") == {"groups": [], MEASURED_ON: here}
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
