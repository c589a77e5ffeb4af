"""Turn the frozen dataclasses of the model into JSON-ready values and back, by their type hints.

Kept generic so a field added to the model needs no serialisation code: tuples become lists,
nested dataclasses become objects, tree nodes carry a `type` tag naming their class.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


class DecodeError(ValueError):
    """A JSON document does not fit the model; the message names the field."""


def encode(value: Any) -> Any:
    """A JSON-ready copy of a model value (dataclass, tuple, scalar)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [encode(item) for item in value]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _field_names(hint: Any) -> frozenset[str]:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return frozenset(f.name for f in dataclasses.fields(hint))
    return frozenset()


def decode(cls: type[T], data: Any, where: str = "") -> T:
    """Rebuild a dataclass of type `cls` from what `encode` produced."""
    return typing.cast(T, _decode(cls, data, where or cls.__name__))


def _decode(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) > 1 and isinstance(data, dict):
            # Several dataclasses (a lab disk's HddModel | SsdModel): the one with every key.
            fitting = [o for o in options if set(data) <= _field_names(o)]
            options = fitting or options
        return _decode(options[0], data, where)
    if origin is tuple:
        if not isinstance(data, list):
            raise DecodeError(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], item, f"{where}[{i}]") for i, item in enumerate(data))
        return tuple(
            _decode(a, item, f"{where}[{i}]")
            for i, (a, item) in enumerate(zip(args, data, strict=True))
        )
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(hint)
        kwargs = {
            f.name: _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            for f in dataclasses.fields(hint)
            if f.name in data
        }
        try:
            return hint(**kwargs)
        except TypeError as err:
            raise DecodeError(f"{where}: {err}") from None
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if hint in (int, float, str, bool) and not isinstance(data, hint):
        raise DecodeError(f"{where}: expected {hint.__name__}, got {type(data).__name__}")
    return data
