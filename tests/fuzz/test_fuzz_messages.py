"""Fuzzing error messages that carry markup: generated names through the one error printer and
through the command line's arguments.

A message holding `[`, `]`, `[/]`, `[red]`, a backslash or a control character is printed as
its text: no MarkupError, no lost brackets, no control character on the terminal, one line.
Inputs that once failed are in tests/fuzz/corpus/messages/ (one name per file).
"""

from __future__ import annotations

import io
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from probes.printable import has_controls, printable
from tests.fuzz.common import FUZZ, corpus, note, within
from tuner.console import print_error, print_warning

_PIECES = ["[", "]", "[/]", "[red]", "[/red]", "[bold]", "[link=x]", "\\", "\\[", "[/", "/",
           "x", " ", ":", "%s", "{}", "\x1b[31m", "\x1b]0;t\x07", "\r", "\n", "\x08", "\u009b",
           "\u202e", "\t", "ü", "✓", "\ufffd"]  # fmt: skip
_name = st.one_of(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join),
    st.text(min_size=1, max_size=40),
)
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def shown(message: str) -> None:
    """Printed by both printers: the message's printable text, on one line."""
    for show in (print_error, print_warning):
        out = io.StringIO()
        console = Console(file=out, force_terminal=True, color_system="standard", width=60)
        with within():
            show(message, console)
        text = _SGR.sub("", out.getvalue())
        assert text.count("\n") == 1 and text.endswith("\n"), repr(text)
        assert printable(message) in text, repr(text)
        assert not has_controls(text.removesuffix("\n")), repr(text)


@FUZZ
@given(_name)
def test_generated_messages_are_printed_as_text(message: str) -> None:
    shown(message)
    note("printed")


_COMMANDS = [
    ("probe", "--root", "/nonexistent/{}"),
    ("advise", "--root", "/nonexistent/{}"),
    ("apply", "/nonexistent/{}.yaml"),
    ("rules", "show", "--", "{}"),  # "--": a name such as -0 is not an option
]


def refused(args: list[str]) -> None:
    """`iotuner ARGS` in this process, through main(): a one-line refusal, exit 2."""
    from tuner.cli import main

    old = sys.argv
    sys.argv = ["iotuner", *args]
    captured = io.StringIO()
    try:
        with (
            within(),
            redirect_stdout(io.StringIO()),
            redirect_stderr(captured),
            pytest.raises(SystemExit) as stopped,
        ):
            main()
    finally:
        sys.argv = old
    err = captured.getvalue()
    assert "Traceback" not in err, err[-800:]
    assert stopped.value.code == 2, (args, err)
    assert err.startswith("iotuner: ") and err.count("\n") == 1, repr(err)
    assert not has_controls(err.removesuffix("\n")), repr(err)


@FUZZ
@given(st.sampled_from(_COMMANDS), _name.filter(lambda n: "\x00" not in n))  # argv holds no NUL
def test_generated_arguments_are_refused_in_one_line(command: tuple[str, ...], name: str) -> None:
    refused([part.format(name) for part in command])
    note("refused")


@pytest.mark.parametrize("path", corpus("messages"), ids=lambda p: p.name)
def test_messages_that_once_failed(path: Path) -> None:
    name = path.read_text(encoding="utf-8").removesuffix("\n")
    shown(name)
    for command in _COMMANDS:
        refused([part.format(name) for part in command])
