"""The per-device dirty limit's record and restore, on a fixture tree shaped like
/sys/class/bdi (the real one is set and restored in tests/lab/test_network.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.lab import dirty
from tuner.lab.record import Step
from tuner.lab.system import LabError


def bdi_tree(tmp_path: Path, **values: str) -> Path:
    device = tmp_path / "7:3"
    device.mkdir()
    for key, value in {"strict_limit": "0", "max_ratio": "100", "max_bytes": "4894539776",
                       **values}.items():  # fmt: skip
        (device / key).write_text(value + "\n")
    return tmp_path


def test_limit_is_a_quarter_second_of_writes_at_least_a_mib() -> None:
    assert dirty.limit_bytes(10) == 2_500_000
    assert dirty.limit_bytes(1) == 1 << 20


def test_undo_writes_back_what_was_found(tmp_path: Path) -> None:
    bdi = bdi_tree(tmp_path, strict_limit="1", max_ratio="0")  # as the lab left it
    step = Step("dirty", "7:3", label="dst",
                detail={"found": {"strict_limit": "0", "max_ratio": "100"}})  # fmt: skip
    assert dirty.present(step, bdi)
    assert dirty.undo(step, bdi) == ["dirty limit on 7:3 (dst)"]
    assert (bdi / "7:3" / "strict_limit").read_text() == "0"
    assert (bdi / "7:3" / "max_ratio").read_text() == "100"
    assert not dirty.present(step, bdi)


def test_undo_prefers_the_fine_ratio(tmp_path: Path) -> None:
    bdi = bdi_tree(tmp_path, strict_limit="1", max_ratio_fine="0")
    found = {"strict_limit": "0", "max_ratio": "12", "max_ratio_fine": "125000"}
    dirty.undo(Step("dirty", "7:3", detail={"found": found}), bdi)
    assert (bdi / "7:3" / "max_ratio_fine").read_text() == "125000"


def test_undo_of_a_device_gone_or_never_limited_is_a_no_op(tmp_path: Path) -> None:
    assert dirty.undo(Step("dirty", "7:9", detail={"found": {"max_ratio": "1"}}), tmp_path) == []
    bdi = bdi_tree(tmp_path)
    assert dirty.undo(Step("dirty", "7:3"), bdi) == []  # recorded, killed before it read


def test_refuses_a_target_that_is_not_a_device_number(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="not a device number"):
        dirty.undo(Step("dirty", "../../etc", detail={"found": {"max_ratio": "1"}}), tmp_path)
