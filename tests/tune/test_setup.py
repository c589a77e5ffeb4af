"""The tune's starting point: application parameters as the workload spells them for fio."""

from __future__ import annotations

from pathlib import Path

from tuner.rulebase import load_rule_base
from tuner.rules.model import Workload
from tuner.search.space import APP, SearchSpace, app_dimensions
from tuner.tunables.access import Tunables
from tuner.tune.setup import current_point

SPACE = SearchSpace(tuple(app_dimensions()))


def app_point(fio: dict[str, object], tmp_path: Path) -> dict[str, object]:
    point = current_point(SPACE, Tunables(tmp_path), Workload("w", "", dict(fio)))
    return {key: value for (key, target), value in point.items() if target == APP}


def test_fio_spellings_become_the_dimensions_units(tmp_path: Path) -> None:
    stream = load_rule_base().workload("stream-read")
    assert stream is not None and stream.fio["bs"] == "16k"
    assert app_point(stream.fio, tmp_path) == {"bs": 16384, "iodepth": 1, "numjobs": 1, "direct": 0}
    # A --fio-job gives every value as text.
    job = {"bs": "1M", "iodepth": "16", "numjobs": "2", "direct": "1"}
    assert app_point(job, tmp_path) == {"bs": 1 << 20, "iodepth": 16, "numjobs": 2, "direct": 1}


def test_absent_or_ranged_values_start_from_fios_defaults(tmp_path: Path) -> None:
    assert app_point({"bs": "4k-64k", "direct": "true"}, tmp_path) == {
        "bs": 4096, "iodepth": 1, "numjobs": 1, "direct": 1
    }  # fmt: skip
