"""Hostile YAML built in the test: alias bombs ("billion laughs") and deep nesting.

A bomb is a mapping of `levels` keys, each a list holding the previous key's anchor `width`
times: a few hundred bytes that expand to width**levels nodes. PyYAML shares the aliased
object, so loading is quick; whatever walks the result walks every expanded node.
"""

from __future__ import annotations

MAX_WIDTH = 900
"""Lists stay under the 1000 items a plan's `measured` allows: the walk, not a list, is hit."""


def alias_bomb(width: int, levels: int = 7, indent: str = "", name: str = "l") -> str:
    """The bomb's YAML lines, each prefixed by `indent` (to sit under a key of a document)."""
    lines = [f"{indent}{name}0: &{name}0 [{', '.join(['1'] * width)}]"]
    for level in range(1, levels):
        refs = ", ".join([f"*{name}{level - 1}"] * width)
        lines.append(f"{indent}{name}{level}: &{name}{level} [{refs}]")
    return "\n".join(lines) + "\n"


def sized_bomb(size: int, levels: int = 7, indent: str = "") -> str:
    """The widest bomb of `levels` levels (up to MAX_WIDTH, then longer anchor names) that
    fits in `size` bytes."""
    width, name = 2, "l"
    while width < MAX_WIDTH and len(alias_bomb(width + 1, levels, indent, name)) <= size:
        width += 1
    while len(alias_bomb(width, levels, indent, name + "x")) <= size:
        name += "x"
    return alias_bomb(width, levels, indent, name)


def deep_nesting(depth: int) -> str:
    """`depth` flow sequences, one inside the next: `[[[...]]]`."""
    return "[" * depth + "]" * depth
