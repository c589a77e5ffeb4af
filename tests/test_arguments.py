"""Command-line values as input (tuner/arguments.py): one line and exit 2, never a traceback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.commands.test_advise import one_line_exit_2
from tuner.arguments import number_value, path_value
from tuner.errors import BadInput


def test_paths() -> None:
    parse = path_value("--root")
    assert parse("/") == Path("/") and parse(".") == Path(".")
    for text, why in (("", "--root: an empty path"), ("a\nb", "a path with a control")):
        with pytest.raises(BadInput, match=why):
            parse(text)


def test_numbers() -> None:
    parse = number_value("--link-gbps", 0.001, 100_000)
    assert parse("10") == 10.0 and parse("1e3") == 1000.0
    for text in ("inf", "-inf", "nan", "0", "1e9", "ten", ""):
        with pytest.raises(BadInput, match=f"--link-gbps {text}: expected a number from"):
            parse(text)
    assert math.isfinite(parse("100000"))


def test_probe_and_report_paths_cannot_be_empty() -> None:
    assert "--root: an empty path" in one_line_exit_2(iotuner("probe", "--root", ""))
    assert "--root: an empty path" in one_line_exit_2(iotuner("report", "--root", ""))
    assert "--out: an empty path" in one_line_exit_2(iotuner("report", "--out", ""))
