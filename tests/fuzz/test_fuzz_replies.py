"""Fuzzing the daemon's replies to `status`: generated JSON served on a Unix socket.

A raw server (tests/daemon/serving.answering) sends each reply as it is; `iotuner status` shows
it (exit 0) or refuses it in one line (exit 1), within the time limit, and no control character
it carried reaches the terminal. Inputs that once failed are in tests/fuzz/corpus/replies/.
"""

from __future__ import annotations

import contextlib
import copy
import json
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from probes.printable import has_controls
from tests.daemon.serving import answering
from tests.daemon.test_status import state
from tests.fuzz.common import FUZZ, corpus, note, within
from tuner.cli import app
from tuner.errors import IotunerError

_json = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 1e300, -1.0, 2**33]),
        st.text(max_size=20), st.sampled_from(["[/]", "[red]x", "\x1b[2J", "a\nb", "x" * 5000]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a good state a value can be swapped for another."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


_GOOD = {"ok": True, "state": state()}
_PLACES = _paths(_GOOD)[1:]


def _swapped(changes: list[tuple[tuple[Any, ...], Any]]) -> bytes:
    doc = copy.deepcopy(_GOOD)
    for place, value in changes:
        here: Any = doc
        for step in place[:-1]:
            if not isinstance(here, dict | list):
                break
            try:
                here = here[step]
            except (KeyError, IndexError, TypeError):
                break
        else:
            if isinstance(here, dict | list):
                with contextlib.suppress(IndexError, TypeError):
                    here[place[-1]] = value
    return json.dumps(doc).encode() + b"\n"


_mutated = st.lists(st.tuples(st.sampled_from(_PLACES), _json), min_size=1, max_size=4).map(
    _swapped
)
_whole = _json.map(lambda doc: json.dumps({"ok": True, "state": doc}).encode() + b"\n")
_nested = st.builds(
    lambda depth, opener: b'{"ok": true, "state": ' + opener * depth + b"\n",
    st.integers(0, 50_000),
    st.sampled_from([b"[", b'{"a":']),
)
_reply = st.one_of(_mutated, _whole, _nested, st.binary(max_size=200).map(lambda b: b + b"\n"))


def handles(reply: bytes) -> None:
    """Shown (exit 0) or refused in one line (exit 1); no control character on the terminal."""
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-") as folder:
        path = Path(folder) / "iotuner.sock"
        with answering(path, reply), within():
            result = CliRunner().invoke(app, ["status", "--socket", str(path)],
                                        env={"COLUMNS": "120"})  # fmt: skip
    error = result.exception
    if error is not None and not isinstance(error, SystemExit):
        shown = "".join(traceback.format_exception(error))
        assert isinstance(error, IotunerError), shown
        assert result.exit_code == 1 and "\n" not in str(error), shown
        note("refused")
        return
    assert result.exit_code == 0, result.output
    assert not has_controls(result.output, lines=True), repr(result.output[:400])
    note("shown")


@FUZZ
@given(_reply)
def test_generated_replies(reply: bytes) -> None:
    handles(reply)


@pytest.mark.parametrize("path", corpus("replies"), ids=lambda p: p.name)
def test_replies_that_once_failed(path: Path) -> None:
    handles(path.read_bytes())
