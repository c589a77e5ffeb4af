"""The probes' warnings, summarised for people: one line per kind, not one per file.

A capture whose gatherer skipped the virtual block devices warns once per device
("sys/block/loop0: dangling link (...)" for 24 devices); people need to know that it happened
and where, once. `iotuner probe --json` keeps every warning as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DETAIL = re.compile(r"\s*\([^()]*\)$")
_SHOWN = 6


@dataclass(frozen=True)
class WarningGroup:
    """Warnings that say the same of several paths differing in one component, or one warning."""

    text: str  # the path with the differing component as '*' and the message, or the warning
    names: tuple[str, ...] = ()  # what stood for '*', in order; empty for a single warning

    def line(self) -> str:
        """'sys/block/*: dangling link, 24 times (loop0, loop1, ... ram15)'."""
        if not self.names:
            return self.text
        names = list(self.names)
        shown = names if len(names) <= _SHOWN else [*names[: _SHOWN - 1], "...", names[-1]]
        return f"{self.text}, {len(names)} times ({', '.join(shown)})"


def summarise(warnings: tuple[str, ...] | list[str]) -> list[WarningGroup]:
    """Group warnings that differ only in one path component and a detail in parentheses,
    in the order their first warning came; each joins the largest group it can (on a tie,
    the one naming the attribute: "sys/bus/pci/devices/*/vendor")."""
    unique = list(dict.fromkeys(warnings))
    keys = {w: [k for index in (-2, -1) if (k := _key(w, index)) is not None] for w in unique}
    sizes: dict[str, int] = {}
    for candidates in keys.values():
        for text, _ in candidates:
            sizes[text] = sizes.get(text, 0) + 1
    members: dict[str, list[tuple[str, str]]] = {}
    for warning in unique:
        best = max(keys[warning], key=lambda key: sizes[key[0]], default=None)
        text, name = best if best is not None and sizes[best[0]] >= 2 else (warning, "")
        members.setdefault(text, []).append((warning, name))
    return [
        WarningGroup(text, tuple(name for _, name in group))
        if len(group) >= 2
        else WarningGroup(group[0][0])
        for text, group in members.items()
    ]


def _key(warning: str, index: int) -> tuple[str, str] | None:
    """('sys/block/*: dangling link', 'loop0') for component `index` of the warning's path;
    None when the warning names no path that deep."""
    path, sep, message = warning.partition(": ")
    parts = path.split("/")
    if not sep or " " in path or len(parts) < 1 - index:
        return None
    name = parts[index]
    parts[index] = "*"
    return f"{'/'.join(parts)}: {_DETAIL.sub('', message) or message}", name
