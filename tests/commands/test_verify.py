"""`iotuner verify`'s table: what the plan names is shown as it is written."""

from __future__ import annotations

import io

from rich.console import Console

from tuner.commands.verify import render_checks
from tuner.verify.run import Outcome, Verification
from tuner.verify.suite import Check


def test_checks_holding_markup_are_shown_as_text() -> None:
    # A plan's keys, targets and values reach the table: `[/]` was a MarkupError, and a
    # scheduler's "[mq-deadline]" lost its brackets (issue 27).
    checks = (
        Check(id="a", kind="file", title="/etc/[/]x.conf", expected="[bold]present"),
        Check(id="b", kind="live", title="block.scheduler on sda", expected="[mq-deadline]"),
        Check(id="c", kind="live", title="never ran [red]", expected="x"),
    )
    outcomes = (
        Outcome("a", "localhost", True),
        Outcome("b", "localhost", False, "block.scheduler on sda: read [none] mq-deadline"),
    )
    out = io.StringIO()
    Console(file=out, width=200).print(render_checks(Verification(checks, outcomes)))
    text = out.getvalue()
    assert "/etc/[/]x.conf" in text and "[bold]present" in text and "ok" in text
    assert "[mq-deadline]" in text and "FAILED" in text and "read [none] mq-deadline" in text
    assert "never ran [red]" in text and "not run" in text
