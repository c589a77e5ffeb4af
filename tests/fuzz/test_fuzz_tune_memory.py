"""Fuzzing the daemon's tune memory read back (tune-memory.json in the state directory): a
stored record with one value replaced, a key added or removed, or any JSON at all. Every record
is kept (checked) or refused in one line and the rest kept; never a traceback."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, note, within
from tuner.capture.fingerprint import load
from tuner.daemon.tune_memory import FILE_NAME, TuneMemory

_HOST = "ab" * 16
_FIGURES = {"gain": 1.1, "ci": [1.02, 1.2], "trials": 10, "entries": 1}
_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "daemon" / "fingerprint-a1.json"
_leaf = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**70), 2**70), st.none(),
    st.booleans(), st.text(max_size=40), st.sampled_from(["../x", "\n", "ab" * 8, "x" * 300]),
)  # fmt: skip
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _stored() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        TuneMemory(Path(folder), 4, _HOST).remember(load(_FIXTURE), "entries: []\n", _FIGURES)
        return json.loads((Path(folder) / FILE_NAME).read_text())  # type: ignore[no-any-return]


_DOC = _stored()
_KEYS = sorted(_DOC["entries"][0])


def reads_back(doc: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / FILE_NAME).write_text(json.dumps(doc))
        with within():
            records, said = TuneMemory(Path(folder), 4, _HOST).load()
    assert all("\n" not in line and "\r" not in line for line in said), said
    note("kept" if records else "refused")


@FUZZ
@given(st.sampled_from(_KEYS), _json, st.booleans())
def test_a_record_with_one_field_spoiled(key: str, value: object, drop: bool) -> None:
    doc = copy.deepcopy(_DOC)
    record = doc["entries"][0]
    if drop:
        record.pop(key)
    else:
        record[key] = value
    reads_back(doc)


@FUZZ
@given(_json)
def test_any_json_at_all(value: object) -> None:
    reads_back(value)
    reads_back({"schema": "iotuner-tune-memory", "version": 1, "entries": [value]})
