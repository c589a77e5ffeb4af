"""`iotuner verify PLAN`: does this host hold what the plan says, live and in its files?"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from tuner.apply.compose import render_for_verify
from tuner.console import output_console, plain
from tuner.errors import BadInput
from tuner.plan import read_plan
from tuner.recovery import journal_path
from tuner.verify.run import Outcome, Verification
from tuner.verify.run import verify as run_verification


def verify(
    plan: Annotated[Path, typer.Argument(help="The plan file (written by tune or advise).")],
    conf_root: Annotated[
        Path, typer.Option(help="The root the managed files live under (as apply's).")
    ] = Path("/"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    keep: Annotated[
        Path | None,
        typer.Option(
            help="Keep the generated testinfra suite and its JUnit XML in this directory."
        ),
    ] = None,
) -> None:
    """Check live values and managed files against a plan with a generated testinfra suite.

    Exit codes: 0 every check passed, 1 a check failed, 2 bad input (an unreadable plan, an
    entry naming an unknown tunable, a missing device, a value the kernel refuses).
    """
    if not conf_root.is_dir():
        raise BadInput(f"--conf-root {conf_root}: not a directory")
    if keep is not None and keep.exists() and not keep.is_dir():
        raise BadInput(f"--keep {keep}: not a directory")
    loaded = read_plan(plan)
    rendered = render_for_verify(loaded, str(plan), database=journal_path(), root=Path("/"),
                                 conf_root=conf_root)  # fmt: skip
    result = run_verification(rendered, title=f"plan {plan}", keep=keep)
    if as_json:
        sys.stdout.write(json.dumps(document(result, str(plan)), indent=2) + "\n")
    else:
        console = output_console()
        console.print(render_checks(result))
        failed = len(result.failures())
        total = len(result.checks)
        summary = f"{total - failed} of {total} checks passed"
        console.print(summary, style="bold red" if failed else None, highlight=False)
        if keep is not None:
            console.print(f"suite kept in {keep}", style="dim", highlight=False, markup=False)
    if not result.passed:
        raise typer.Exit(1)


def _by_check(result: Verification) -> dict[str, list[Outcome]]:
    found: dict[str, list[Outcome]] = {}
    for outcome in result.outcomes:
        found.setdefault(outcome.check, []).append(outcome)
    return found


def render_checks(result: Verification) -> Table:
    """The checks as a table: what, where, what should be there, and the verdict."""
    table = Table(title="verification", title_justify="left")
    # Paths are the point of a failure line: wrapped whole, never cut with an ellipsis.
    table.add_column("check", overflow="fold")
    table.add_column("expected")
    table.add_column("result", overflow="fold")
    outcomes = _by_check(result)
    for check in result.checks:
        ran = outcomes.get(check.id, [])
        if not ran:
            verdict = Text("not run", style="red")
        elif all(o.passed for o in ran):
            verdict = Text("ok", style="green")
        else:
            # The messages name the plan's keys, targets and values: text, never markup.
            verdict = Text("FAILED", style="red") + " " + plain("; ".join(
                _without_title(o.message, check.title) for o in ran if not o.passed
            ))  # fmt: skip
        table.add_row(plain(check.title), plain(check.expected), verdict)
    return table


def _without_title(message: str, title: str) -> str:
    """The failure line without the check's name, which its row already shows."""
    return message.removeprefix(f"{title}: ")


def document(result: Verification, plan: str) -> dict[str, Any]:
    """The `iotuner verify --json` document."""
    outcomes = _by_check(result)
    checks = []
    for check in result.checks:
        ran = outcomes.get(check.id, [])
        checks.append(
            {
                "id": check.id,
                "kind": check.kind,
                "check": check.title,
                "expected": check.expected,
                "paths": [r.path for r in check.reads] if check.kind == "live" else [check.id],
                "passed": bool(ran) and all(o.passed for o in ran),
                "messages": [o.message for o in ran if not o.passed]
                or ([] if ran else ["not run"]),
            }
        )
    return {
        "plan": plan,
        "passed": result.passed,
        "failed": sum(1 for c in checks if not c["passed"]),
        "checks": checks,
    }
