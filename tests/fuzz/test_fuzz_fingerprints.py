"""Fuzzing fingerprints read back (`capture --reproduce`, `--against`, `tune --capture`):
a recorded fingerprint with values replaced, keys added or removed, or any JSON at all. The
reader must accept it (and then the reproduction be written) or refuse it in one line (BadInput,
exit 2); never a traceback, never more than the time limit."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.capture.samples import collect
from tests.fuzz.common import FUZZ, note, refused_well, within
from tuner.capture.fingerprint import load
from tuner.capture.reproduce import job_text
from tuner.errors import BadInput

_SAMPLE = dict(collect("random-mix")[1].data)
_leaf = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70), st.none(),
    st.booleans(), st.text(max_size=40), st.sampled_from(["4096", "../x", "\n", "x" * 300]),
)  # fmt: skip
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


@st.composite
def _fingerprint(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(_json)
    doc = copy.deepcopy(_SAMPLE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        where = doc
        for key in path[:-1]:
            where = where[key]
        if draw(st.booleans()) and isinstance(where, dict):
            where.pop(path[-1], None)
        else:
            where[path[-1]] = draw(_json)
    return doc


@FUZZ
@given(_fingerprint())
def test_a_hostile_fingerprint_is_read_or_refused_in_one_line(
    tmp_path_factory: Any, doc: Any
) -> None:
    path = Path(tmp_path_factory.mktemp("fp")) / "fp.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    with within():
        try:
            found = load(path)
        except BadInput as err:
            refused_well(err)
            note("refused")
            return
        try:
            text = job_text(found, 1 << 30)
        except BadInput as err:  # nothing to reproduce: a capture that saw no request
            refused_well(err)
            note("nothing to reproduce")
            return
    assert text.isascii() and "[capture]" in text
    note("accepted")
