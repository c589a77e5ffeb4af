"""Filling a rule's evidence and recommendation templates with a target's facts, for people.

`{fact}` prints the fact as people read it (2000.0 -> 2000, True -> yes, unknown -> ?). Two
formats make sentences read right whatever the numbers: `{size_bytes:size}` prints a byte
count as "2.4 GiB", and `{hdd_count:count rotating disk}` prints "1 rotating disk" or
"3 rotating disks".
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from tuner.units import human_bytes

_COUNT = "count "


class TemplateError(ValueError):
    """A template that cannot be filled: bad braces or an unknown format."""


def fields(template: str) -> set[str]:
    """The fact names a template uses; TemplateError for bad braces or an unknown format."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise TemplateError(str(err)) from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if conversion:
            raise TemplateError(f"{{{name}!{conversion}}}: conversions are not supported")
        if spec and spec != "size" and not (spec.startswith(_COUNT) and spec[len(_COUNT) :]):
            raise TemplateError(
                f"{{{name}:{spec}}}: unknown format (use {{{name}:size}} or {{{name}:count NOUN}})"
            )
    return {name for _, name, _, _ in parsed if name}


def fill(template: str, facts: Mapping[str, Any]) -> str:
    """The template with every `{fact}` replaced; an unknown fact prints as '?'."""
    return _Filler().vformat(template, (), facts)


def printable(value: Any) -> str:
    """A fact as people read it in evidence: 2000.0 -> 2000, 1.3333 -> 1.33, 0.06123 -> 0.0612
    (three significant figures below 1, so a measured 61 Mbit/s is not "0.06 Gb/s"),
    True -> yes."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}".rstrip("0")
    return str(value)


def plural(noun: str, count: Any) -> str:
    """'disk' -> 'disks' unless count is 1; the last word takes the plural."""
    if count == 1:
        return noun
    return noun + ("es" if noun.endswith(("s", "x", "sh", "ch")) else "s")


class _Filler(string.Formatter):
    def get_value(self, key: int | str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(str(key))

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "size":
            is_count = isinstance(value, int) and not isinstance(value, bool)
            return human_bytes(value) if is_count else printable(value)
        if format_spec.startswith(_COUNT):
            return f"{printable(value)} {plural(format_spec[len(_COUNT) :], value)}"
        return printable(value)
