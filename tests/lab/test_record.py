"""The lab record: durable, atomic, and read back as it was written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.errors import IotunerError
from tuner.lab.record import LabRecord, Step, load_record


def test_round_trip(tmp_path: Path) -> None:
    record = LabRecord(tmp_path / "lab.json", "single-disk", "single-disk", "abcd1234")
    step = record.intend(Step("loop", "/dev/shm/iotuner-lab-abcd1234/d0.img", label="d0"))
    assert load_record(record.path) == record  # the intent is on disk before the step runs
    record.finish(step, device="/dev/loop9", detail={"found": {"read_ahead_kb": "128"}})
    loaded = load_record(record.path)
    assert loaded is not None
    assert loaded.steps == [step]
    assert loaded.steps[0].done
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]  # no temporary left
    record.remove()
    assert load_record(record.path) is None


@pytest.mark.parametrize("text", ["{", '{"steps": []}', '{"steps": [{"x": 1}]}'])
def test_unreadable(tmp_path: Path, text: str) -> None:
    path = tmp_path / "lab.json"
    path.write_text(text)
    with pytest.raises(IotunerError, match=r"lab\.json: (unreadable|malformed) lab record"):
        load_record(path)
