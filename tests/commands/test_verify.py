"""`iotuner verify`'s table: what the plan names is shown as it is written."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tests.cli import iotuner
from tests.test_plan import PLAN_HEAD
from tests.yaml_bombs import sized_bomb
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


def test_a_plan_of_yaml_aliases_is_refused_in_one_line(tmp_path: Path) -> None:
    # 2 KB of aliases kept verify checking for 23 s; 38 KB never finished (issue 27).
    head = PLAN_HEAD + "measured:\n"
    plan = tmp_path / "plan.yaml"
    plan.write_text(head + sized_bomb(38_000 - len(head), indent="  "))
    run = iotuner("verify", str(plan), timeout=20)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "refused (more than" in run.stderr
