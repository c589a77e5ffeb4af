"""The tune memory: fingerprints captured on a loop device (A: 4 KiB random reads 8 deep at
5,000/s, twice; B: 1 MiB sequential reads 2 deep at 400/s; fixtures/daemon),
the distance and reuse decision, the bound, a changed host, and hostile or corrupt files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tuner.capture import fingerprint as fp
from tuner.daemon.tune_memory import FILE_NAME, TuneMemory, check_record
from tuner.errors import BadInput

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "daemon"
HOST = "ab" * 16
FIGURES = {"gain": 1.12, "ci": [1.04, 1.2], "trials": 10, "entries": 2}
PLAN = "entries:\n  - key: block.loopX.read_ahead_kb\n    value: 512\n"


def printed(name: str) -> fp.Fingerprint:
    return fp.load(FIXTURES / f"fingerprint-{name}.json")


def memory(tmp_path: Path, limit: int = 16, host: str = HOST) -> TuneMemory:
    return TuneMemory(tmp_path, limit, host)


def test_a_returning_workload_is_found_and_another_is_not(tmp_path: Path) -> None:
    kept = memory(tmp_path).remember(printed("a1"), PLAN, FIGURES)
    # A captured again seconds later is A, though its depth went from 5.6 to 0.5 under load.
    record, gap, said = memory(tmp_path).nearest(printed("a2"), 0.15)
    assert record is not None and record.id == kept.id and record.plan == PLAN and said == []
    assert gap is not None and gap < 0.1
    # B (1 MiB sequential, 2 deep) is not, and the distance says how far it is.
    record, gap, _ = memory(tmp_path).nearest(printed("b"), 0.15)
    assert record is None and gap is not None and gap > 0.4
    assert oct((tmp_path / FILE_NAME).stat().st_mode & 0o777) == "0o600"


def test_the_oldest_record_goes_past_the_bound(tmp_path: Path) -> None:
    small = memory(tmp_path, limit=2)
    first = small.remember(printed("a1"), None, FIGURES)
    small.remember(printed("b"), PLAN, FIGURES)
    small.remember(printed("a2"), PLAN, FIGURES)
    records, _ = small.load()
    assert len(records) == 2 and first.id not in {r.id for r in records}


def test_a_changed_host_forgets(tmp_path: Path) -> None:
    memory(tmp_path).remember(printed("a1"), PLAN, FIGURES)
    other = memory(tmp_path, host="cd" * 16)  # another kernel, or other disks
    record, gap, said = other.nearest(printed("a2"), 0.05)
    assert record is None and gap is None
    assert said == ["tune memory: 1 record(s) made on another host or kernel ignored "
                    "(the hardware or kernel changed)"]  # fmt: skip


def stored(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / FILE_NAME).read_text())  # type: ignore[no-any-return]


def rewrite(tmp_path: Path, doc: object) -> None:
    (tmp_path / FILE_NAME).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda r: r.update(plan=1), "plan: expected null or a plan"),
        (lambda r: r.update(gain=-1), "gain: -1 is out of range"),
        (lambda r: r.update(ci=[1.0]), "ci: expected two numbers"),
        (lambda r: r.update(extra="x\ny"), "'extra' is not a memory field"),
        (lambda r: r.pop("host"), "host: missing"),
        (lambda r: r.update(id="../../etc"), "id: expected hexadecimal digits"),
        (lambda r: r["fingerprint"].update(version=2), "version 2, this iotuner compares"),
        (lambda r: r["fingerprint"]["devices"][0].update(read_share=7), "out of range"),
        (lambda r: r.update(plan="x" * (65 * 1024)), "at most 65536 bytes"),
    ],
)
def test_a_hostile_record_is_refused_in_one_line_and_the_rest_kept(
    tmp_path: Path, spoil: Any, reason: str
) -> None:
    mem = memory(tmp_path)
    mem.remember(printed("a1"), PLAN, FIGURES)
    good = mem.remember(printed("b"), None, FIGURES)
    doc = stored(tmp_path)
    spoil(doc["entries"][0])
    rewrite(tmp_path, doc)
    records, said = mem.load()
    assert [r.id for r in records] == [good.id]
    (line,) = said
    assert "\n" not in line and reason in line, line
    assert line.startswith(f"tune memory record refused and ignored: {tmp_path / FILE_NAME}: ")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not JSON"),
        (b'{"schema": "iotuner-tune-memory", "version": 1, "entries": [NaN]}', "not JSON"),
        (b'{"schema": "iotuner-tune-memory", "version": 9, "entries": []}', "version 9"),
        (b"[1, 2]", "not an iotuner-tune-memory document"),
        (b"[" * 100_000, "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_corrupt_memory_file_is_refused_in_one_line(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    (tmp_path / FILE_NAME).write_bytes(content)
    record, gap, said = memory(tmp_path).nearest(printed("a1"), 0.05)
    assert record is None and gap is None
    (line,) = said
    assert line.startswith("tune memory refused: ") and "\n" not in line
    assert reason in line, line
    # The next tune is remembered over it: the memory is usable again.
    memory(tmp_path).remember(printed("a1"), PLAN, FIGURES)
    assert len(memory(tmp_path).load()[0]) == 1


def test_a_fifo_or_a_huge_file_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / FILE_NAME)
    _, said = memory(tmp_path).load()
    assert said == [f"tune memory refused: {tmp_path / FILE_NAME}: not a regular file"]
    (tmp_path / FILE_NAME).unlink()
    with (tmp_path / FILE_NAME).open("wb") as f:
        f.truncate(1 << 30)  # sparse: a gigabyte that is never read
    _, said = memory(tmp_path).load()
    assert "larger than" in said[0]


def test_what_is_written_is_what_is_read() -> None:
    with pytest.raises(BadInput, match="expected an object"):
        check_record([], "r")
