"""Command-line values checked as the input they are: a typer `parser=` for each kind.

A BadInput raised while click converts a value reaches `tuner.cli.main`, which prints it as
one line and exits 2, the same as any other bad input. An empty path is refused (Path("")
would be the current directory); numbers must be finite and within what the option means.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from tuner.errors import BadInput


def path_value(name: str) -> Callable[[str], Path]:
    """A parser for option `name` taking a path: BadInput for "" or a control character."""

    def parse(text: str) -> Path:
        if isinstance(text, Path):  # a default, already a Path
            return text
        if text == "":
            raise BadInput(f"{name}: an empty path (write . for the current directory)")
        if not text.isprintable():
            raise BadInput(f"{name} {text[:60]!r}: a path with a control character")
        return Path(text)

    return parse


def number_value(name: str, low: float, high: float) -> Callable[[str], float]:
    """A parser for option `name` taking a finite number within [low, high]."""

    def parse(text: str) -> float:
        if isinstance(text, float | int):  # a default
            return float(text)
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and low <= number <= high):
            raise BadInput(f"{name} {text[:40]}: expected a number from {low:g} to {high:g}")
        return number

    return parse
