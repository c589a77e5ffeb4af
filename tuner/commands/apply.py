"""`iotuner apply PLAN`: put a plan on this host, persistently and live, through Ansible.

The plan is validated here first (every entry against the host), so bad input exits 2 before
ansible-playbook starts; then the iotuner_apply role runs on localhost (tuner/apply/runner.py)
and its result is shown as one row per managed file and live value (docs/apply.md).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tuner.errors import BadInput, IotunerError

if TYPE_CHECKING:
    from tuner.apply.outcome import Outcome
    from tuner.apply.runner import TaskResult

_STYLES = {"changed": "green", "would change": "yellow", "failed": "bold red",
           "undone": "magenta", "not reached": "dim"}  # fmt: skip


def apply(
    plan: Annotated[Path, typer.Argument(help="A plan file (`advise` or `tune --plan-out`).")],
    check: Annotated[
        bool, typer.Option("--check", help="Show what would change; change nothing.")
    ] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Also show each change to a file or value.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    conf_root: Annotated[
        Path,
        typer.Option(
            "--conf-root", help="Write the managed files below this directory instead of /."
        ),
    ] = Path("/"),
) -> None:
    """Apply a plan: udev rules, a sysctl.d file and a boot unit, and the live values at once.

    Everything is journaled first; a failed task puts the host back as it was, and
    `iotuner rollback` undoes a finished apply. Exit codes: 0 applied (or nothing to change,
    or --check found nothing wrong), 1 a task failed (the host is as before) or
    ansible-playbook is missing, 2 bad input (an unknown tunable, a device that is not here,
    a value the kernel refuses: nothing is applied).
    """
    if not conf_root.is_dir():
        raise BadInput(f"--conf-root {conf_root}: not a directory")
    _validate(plan, conf_root)
    if not check and os.geteuid() != 0:
        raise BadInput("apply writes /sys, /proc/sys and /etc: run it as root (or use --check)")
    from tuner.apply.outcome import outcome
    from tuner.apply.runner import run_apply

    run = run_apply(plan, check=check, diff=diff, conf_root=conf_root)
    result = outcome(run, check=check)
    diffs = list(_diffs(run.tasks, check)) if diff else []
    if as_json:
        doc = {
            "plan": str(plan),
            "check": check,
            "conf_root": str(conf_root),
            **dataclasses.asdict(result),
            "diffs": [{"name": name, "diff": text} for name, text in diffs],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _show(Console(), plan, result, diffs, check)
    if result.error is not None:
        raise IotunerError(result.error)


def _validate(plan: Path, conf_root: Path) -> None:
    """Read and render the plan in-process: BadInput names the entry, before Ansible runs."""
    from tuner.apply.render import render
    from tuner.plan import read_plan

    render(read_plan(plan), plan_path=str(plan), conf_root=conf_root.resolve())


def _show(console: Console, plan: Path, result: Outcome, diffs: list[tuple[str, str]],
          check: bool) -> None:  # fmt: skip
    title = f"iotuner apply {plan}" + (" (check mode: nothing is changed)" if check else "")
    table = Table(title=title, title_justify="left")
    table.add_column("setting / file", overflow="fold")
    for column in ("target", "before -> after", "result"):
        table.add_column(column)
    for row in result.rows:
        change = row.before if row.before == row.after else f"{row.before} -> {row.after}"
        table.add_row(row.name, row.target, change,
                      Text(row.status, style=_STYLES.get(row.status, "")))  # fmt: skip
    console.print(table)
    for name, text in diffs:
        if not text.startswith("--- "):
            console.print(Text(f"--- {name}", style="bold"))
        for line in text.splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(Text(line, style=style), soft_wrap=True)
    for recap in result.recap:
        console.print(recap.line(), style="dim", highlight=False)
    console.print(_summary(result), highlight=False)


def _summary(result: Outcome) -> str:
    """The last line: what happened, and how to undo it."""
    if result.status == "checked":
        if not result.pending:
            return "check mode: the host already holds this plan"
        return f"check mode: {result.pending} file(s) or value(s) would change; nothing was written"
    if result.status == "applied":
        return f"applied as change set {result.apply_id}: `iotuner rollback` undoes it"
    if result.status == "unchanged":
        return "nothing to change: the host already holds this plan"
    if result.status == "rolled back":
        return "a task failed: every change of this run was put back"
    if result.undo_problems:
        return "a task failed and the rollback is incomplete: " + "; ".join(result.undo_problems)
    return "a task failed"


def _diffs(tasks: Iterable[TaskResult], check: bool) -> Iterator[tuple[str, str]]:
    """(name, unified diff) of every change ansible reported with --diff."""
    for task in tasks:
        if check and task.action == "iotuner_plan":
            # Check mode cannot run copy into a directory that does not exist yet: the whole
            # file would be new, so its diff is its content.
            for f in task.data.get("files", []):
                if f.get("dir_missing") and f.get("content") is not None:
                    yield f["path"], _diff_text({"before": "", "after": f["content"],
                                                 "before_header": f["path"],
                                                 "after_header": f["path"]})  # fmt: skip
        if not task.changed or task.skipped:
            continue
        name = task.item or task.task
        for part in task.diff:
            text = _diff_text(part)
            if text:
                yield name, text


def _diff_text(part: Mapping[str, Any]) -> str:
    before, after = part.get("before", ""), part.get("after", "")
    if isinstance(before, Mapping) or isinstance(after, Mapping):
        # ansible.builtin.file: {"path": ..., "state": "absent"} -> {"state": "link", ...}
        b = before.get("state", "") if isinstance(before, Mapping) else ""
        a = after.get("state", "") if isinstance(after, Mapping) else ""
        return f"-{b}\n+{a}\n" if a != b else ""
    if not isinstance(before, str) or not isinstance(after, str) or before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        str(part.get("before_header", "before")), str(part.get("after_header", "after")),
    )  # fmt: skip
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
