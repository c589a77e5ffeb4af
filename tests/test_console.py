"""The one error printer: what a user typed or a file held is printed literally, as one line.

Before issue 27 every error was printed as rich markup, so a path holding `[/]` raised
MarkupError inside the error printer (a traceback instead of the one-line refusal) and
`[red]` vanished from the message.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from probes.printable import printable
from tests.cli import iotuner
from tuner.console import print_error, print_warning

MARKUP = "a[/]b[red]c[/red][bold]d[link=x]"
"""A name holding markup: an unbalanced close, a style pair, an open style, a link."""


def _printed(show: object, message: str) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=40)
    show(message, console)  # type: ignore[operator]
    return out.getvalue()


@pytest.mark.parametrize("show", [print_error, print_warning])
@pytest.mark.parametrize(
    "message", [MARKUP, "[/]", "[", "]", "\\[x]", "[bold]" * 50, "x" * 300 + "[/]"]
)
def test_markup_in_a_message_is_printed_literally(show: object, message: str) -> None:
    text = _printed(show, message)
    stripped = _strip_sgr(text)
    assert message in stripped, repr(text)
    assert stripped.count("\n") == 1  # one line, however long (soft wrap)


@pytest.mark.parametrize("show", [print_error, print_warning])
def test_control_characters_in_a_message_never_reach_the_terminal(show: object) -> None:
    text = _printed(show, "evil\x1b[2J\x1b]0;title\x07\u009b31m\r\x08\u202eback\nline")
    body = _strip_sgr(text)
    assert body.count("\n") == 1
    for control in ("\x1b", "\x07", "\u009b", "\r", "\x08", "\u202e"):
        assert control not in body, repr(body)
    assert "evil" in body and "back" in body and "line" in body


def test_printable_keeps_lines_only_when_asked() -> None:
    assert printable("a\tb\nc\x1bd") == "a\ufffdb\ufffdc\ufffdd"
    assert printable("a\tb\nc\x1bd", lines=True) == "a\tb\nc\ufffdd"
    assert printable("sda [mq-deadline] none ü ✓") == "sda [mq-deadline] none ü ✓"


def _strip_sgr(text: str) -> str:
    """The printer's own colour sequences removed: what is left is the message's text."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --- through the command line: every command's errors reach the one printer ----------------


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("probe", "--root", f"/nonexistent/{MARKUP}"), 2),
        (("advise", "--root", f"/nonexistent/{MARKUP}"), 2),
        (("apply", f"/nonexistent/{MARKUP}.yaml"), 2),
        (("verify", f"/nonexistent/{MARKUP}.yaml"), 2),
        (("rules", "show", MARKUP), 2),
        (("status", "--socket", f"/nonexistent/{MARKUP}"), 1),
        (("daemon", "--check-config", "--config", f"/nonexistent/{MARKUP}"), 2),
        (("report", "--out", f"/nonexistent/{MARKUP}/r.html"), 2),
        (("lab", "up", MARKUP), 2),
        (("tune", "--target", f"/nonexistent/{MARKUP}", "--budget", "3"), 2),
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else str(v),
)
def test_a_name_holding_markup_is_one_literal_line(args: tuple[str, ...], code: int) -> None:
    result = iotuner(*args, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr[-600:]
    assert result.returncode == code, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("iotuner: ")
    assert MARKUP in result.stderr, result.stderr


def test_advise_workload_holding_markup(tmp_path: Path) -> None:
    result = iotuner("advise", "--root", str(tmp_path), "--workload", MARKUP, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr[-600:]
    assert result.returncode == 2, result.stderr
    assert MARKUP in result.stderr and result.stderr.count("\n") == 1, result.stderr
