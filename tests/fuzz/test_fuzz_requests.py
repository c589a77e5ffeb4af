"""Fuzzing the control socket: generated request lines to a real ControlServer in its loop.

Every line gets one JSON reply within the time a client is given, the handler only ever sees
requests of REQUESTS with their own fields, and the server goes on serving.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.daemon.serving import serving
from tests.fuzz.common import FUZZ, corpus, note
from tuner.daemon.control import CLIENT_SECONDS, MAX_REQUEST, check_request

_FIELDS = ["events", "workload", "cmd", "extra", ""]
_field_value = st.recursive(
    st.one_of(
        st.integers(-(2**70), 2**70),
        st.sampled_from([0, 10, 1000, 1001]),
        st.booleans(),
        st.none(),
        st.floats(),
        st.text(max_size=30),
        st.sampled_from(["stream-read", "x\ny", "[red]", "{{ x }}", "a" * 200]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_structured = st.fixed_dictionaries(
    {"cmd": st.one_of(st.sampled_from(["status", "reload", "retune", "stop", ""]), _field_value)},
    optional={name: _field_value for name in _FIELDS[:2]} | {"extra": _field_value},
).map(lambda doc: json.dumps(doc).encode() + b"\n")
_nested = st.builds(
    lambda depth, opener, tail: opener * depth + (b"]" if opener == b"[" else b"}") * tail + b"\n",
    st.integers(0, 40_000),
    st.sampled_from([b"[", b'{"a":']),
    st.integers(0, 5),
)
_padded = st.integers(MAX_REQUEST - 100, MAX_REQUEST + 70_000).map(
    lambda size: json.dumps({"cmd": "status", "pad": "x" * size}).encode() + b"\n"
)
_plausible = st.one_of(
    st.just({"cmd": "status"}),
    st.integers(-5, 1005).map(lambda n: {"cmd": "status", "events": n}),
    st.just({"cmd": "reload"}),
    st.sampled_from(["stream-read", "random-read", "fio-job:scan.fio", "x y", "x\ny"]).map(
        lambda w: {"cmd": "retune", "workload": w}
    ),
).map(lambda doc: json.dumps(doc).encode() + b"\n")
_request = st.one_of(
    _plausible, _structured, _nested, _padded, st.binary(max_size=2000),
    st.binary(max_size=200).map(lambda b: b + b"\n"),
)  # fmt: skip


class Served:
    """A ControlServer in a selectors loop thread, and what its handler was asked."""

    def __init__(self, path: Path, seen: list[dict[str, Any]]) -> None:
        self.path, self.seen = path, seen


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    seen: list[dict[str, Any]] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"ok": True}

    path = tmp_path_factory.mktemp("fuzz-control") / "iotuner.sock"
    with serving(path, handler):
        yield Served(path, seen)


def exchange(path: Path, data: bytes) -> bytes:
    """Send `data`, end the write side, read the reply to EOF."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CLIENT_SECONDS + 2)
        sock.connect(str(path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def handles(served: Served, data: bytes) -> None:
    """One JSON reply line within the client's time; the handler sees only valid requests."""
    before = len(served.seen)
    started = time.monotonic()
    reply = exchange(served.path, data)
    assert time.monotonic() - started < CLIENT_SECONDS + 1.5
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1, reply[:200]
    doc = json.loads(reply)
    assert isinstance(doc, dict) and isinstance(doc.get("ok"), bool), doc
    if not doc["ok"]:
        assert isinstance(doc["error"], str) and "\n" not in doc["error"]
        note("refused")
    else:
        note("answered")
    for request in served.seen[before:]:
        assert check_request(request) is None, request
    assert any(t.name == "control-loop" and t.is_alive() for t in threading.enumerate())


@FUZZ
@given(_request)
def test_generated_requests(served: Served, data: bytes) -> None:
    handles(served, data)


@pytest.mark.parametrize("path", corpus("requests"), ids=lambda p: p.name)
def test_requests_that_once_failed(served: Served, path: Path) -> None:
    handles(served, path.read_bytes())
