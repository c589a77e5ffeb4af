"""The daemon's status reply checked before `iotuner status` shows it.

The reply comes over a socket that a broken daemon, or another process bound there, may fill
with anything: NaN figures, times no clock can show, lists where objects belong, strings of
megabytes. `checked_state` holds the state to the shape the daemon sends
(tuner/daemon/service.py `state`): each field's type, finite numbers, times a clock can show,
strings of at most MAX_TEXT characters and lists and tables of at most MAX_ITEMS entries. The
nesting is bounded before json.loads (tuner/daemon/control.py). Anything else is one line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from tuner.errors import IotunerError

MAX_TEXT = 4096
"""Characters one string may hold; a path or a message is far shorter."""
MAX_ITEMS = 4096
"""Entries a list or table may hold; the daemon keeps 200 events and a plan holds dozens."""
_LATEST = 2**33
"""The latest time shown (the year 2242): datetime cannot show 1e300 seconds."""


class BadState(IotunerError):
    """The daemon's reply is not a state status can show; one line, exit 1."""


Check = Callable[[Any, str], None]


def checked_state(state: object) -> dict[str, Any]:
    """`state` if it has the shape of the daemon's state, else BadState naming the field."""
    _bounded(state, "state")
    _fields(state, "state", _STATE)
    assert isinstance(state, dict)
    return state


def checked_reply(reply: Mapping[str, Any]) -> None:
    """The reply's own fields: `ok` a boolean, `error` a string; else BadState."""
    _fields(reply, "reply", {"ok": _is(bool), "error": _optional(_is(str)), "state": _any})


def _bounded(value: object, where: str) -> None:
    """Every string, list, table and number below `value` within its bound (no recursion)."""
    stack: list[tuple[object, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if len(item) > MAX_TEXT:
                raise BadState(f"{at}: a string of {len(item)} characters (at most {MAX_TEXT})")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BadState(f"{at}: {item} is not a finite number")
        elif isinstance(item, int) and not isinstance(item, bool):
            if abs(item) > 2**63:
                raise BadState(f"{at}: a whole number beyond 64 bits")
        elif isinstance(item, list | dict):
            if len(item) > MAX_ITEMS:
                raise BadState(f"{at}: {len(item)} entries (at most {MAX_ITEMS})")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, f"{at}.{k}"[:120]) for k, v in pairs)


def _fields(value: object, where: str, spec: Mapping[str, Check]) -> None:
    """`value` a table whose known fields pass their checks; absent fields are allowed (an
    older daemon), unknown ones too (a newer one)."""
    if not isinstance(value, dict):
        raise BadState(f"{where}: expected a table, not {_kind(value)}")
    for key, check in spec.items():
        if key in value:
            check(value[key], f"{where}.{key}")


def _kind(value: object) -> str:
    names = {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _any(value: Any, where: str) -> None:
    return None


def _is(*kinds: type) -> Check:
    def check(value: Any, where: str) -> None:
        # bool is an int to Python, never a number to the daemon.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise BadState(f"{where}: expected {' or '.join(_kind(k()) for k in kinds)}, "
                           f"not {_kind(value)}")  # fmt: skip

    return check


def _optional(check: Check) -> Check:
    def optional(value: Any, where: str) -> None:
        if value is not None:
            check(value, where)

    return optional


def _time(value: Any, where: str) -> None:
    _is(int, float)(value, where)
    if not 0 <= value <= _LATEST:
        raise BadState(f"{where}: {value:g} is not a time a clock can show")


def _table(spec: Mapping[str, Check]) -> Check:
    return lambda value, where: _fields(value, where, spec)


def _list_of(check: Check) -> Check:
    def each(value: Any, where: str) -> None:
        _is(list)(value, where)
        for index, item in enumerate(value):
            check(item, f"{where}.{index}")

    return each


def _values(check: Check) -> Check:
    def each(value: Any, where: str) -> None:
        _is(dict)(value, where)
        for key, item in value.items():
            check(item, f"{where}.{key}"[:120])

    return each


_SCALAR = _optional(_is(str, int, float, bool))
_NUMBER = _optional(_is(int, float))
_TEXT = _optional(_is(str))
_ENTRY = _table({"key": _TEXT, "target": _TEXT, "value": _SCALAR})
_HELD = _table({"key": _TEXT, "target": _TEXT, "expected": _SCALAR, "actual": _SCALAR,
                "ok": _optional(_is(bool)), "note": _TEXT})  # fmt: skip
_FIGURES = _table({key: _NUMBER for key in ("read_mbps", "write_mbps", "avg_request_kb",
                   "read_fraction", "util_percent", "queue_depth")})  # fmt: skip
_RETUNE = _table({"requested": _optional(_time), "started": _optional(_time),
                  "ended": _optional(_time)})  # fmt: skip
_STATE: Mapping[str, Check] = {
    "pid": _optional(_is(int)),
    "started": _optional(_time),
    "state": _TEXT,
    "config": _TEXT,
    "plan": _optional(_table({"path": _TEXT, "apply_id": _optional(_is(int, str)),
                              "workload": _TEXT, "entries": _optional(_list_of(_ENTRY))})),
    "held": _optional(_list_of(_HELD)),
    "workload": _optional(_table({"class": _TEXT, "since": _optional(_time),
                                  "devices": _optional(_values(_FIGURES))})),
    "retune": _optional(_RETUNE),
    "events": _optional(_list_of(_table({"time": _optional(_time), "kind": _TEXT,
                                         "message": _TEXT, "data": _any}))),
    "counts": _optional(_values(_NUMBER)),
}  # fmt: skip
"""The daemon's state as tuner/daemon/service.py sends it, field by field."""
