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
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tuner.apply.lock import changes_lock
from tuner.console import output_console
from tuner.errors import BadInput, IotunerError
from tuner.extras import require
from tuner.recovery import journal_path
from tuner.trials.faults import TrialFault

if TYPE_CHECKING:
    from tuner.apply.outcome import Outcome
    from tuner.apply.runner import PlaybookRun, TaskResult
    from tuner.plan import Plan

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
    replace_all: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Apply this plan alone: the plans in force are dropped, not kept beside it.",
        ),
    ] = False,
    conf_root: Annotated[
        Path,
        typer.Option(
            "--conf-root", help="Write the managed files below this directory instead of /."
        ),
    ] = Path("/"),
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Run the plan's workload before and after; roll back if it got worse.",
        ),
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(
            help="With --measure: a device or directory to measure on (default: the plan's)."
        ),
    ] = None,
    destroy_data: Annotated[
        str | None,
        typer.Option(
            metavar="DEVICE",
            help="With --measure: the device a write workload may overwrite; only it is "
            "written, and a plan or --target naming another device is refused.",
        ),
    ] = None,
    repeats: Annotated[
        int, typer.Option(help="With --measure: trials before and after.", min=2)
    ] = 3,
    runtime: Annotated[
        float, typer.Option(help="With --measure: seconds measured per trial.", min=1)
    ] = 4.0,
    ramp: Annotated[
        float,
        typer.Option(
            help="With --measure: seconds each trial runs before it is measured.", min=0, max=60
        ),
    ] = 1.0,
) -> None:
    """Apply a plan: udev rules, a sysctl.d file and a boot unit, and the live values at once.

    Plans compose: what is in force is the union of the plans applied (a later entry for the
    same key and target wins), and `iotuner status` lists them; --replace applies this one
    alone.

    Everything is journaled first; a failed task puts the host back as it was, and
    `iotuner rollback` undoes a finished apply. With --measure the plan's workload runs before
    and after, and an apply that made it worse by more than the noise is rolled back.
    Exit codes: 0 applied (or nothing to change, or --check found nothing wrong), 1 a task
    failed (the host is as before), ansible-playbook is missing, --measure found it worse
    and rolled it back, or a --measure trial met a fault of the device (an I/O error, the
    device gone: one line; nothing applied, or the apply rolled back), 2 bad input (an
    unknown tunable, a device that is not here, a value the kernel refuses: nothing is
    applied).
    """
    if not conf_root.is_dir():
        raise BadInput(f"--conf-root {conf_root}: not a directory")
    if measure and check:
        raise BadInput("--measure applies for real to measure the result; drop --check")
    if destroy_data is not None and not measure:
        raise BadInput(f"--destroy-data {destroy_data}: only --measure writes to a device")
    if measure:
        # Its statistics are the search's (scipy): known missing before anything is applied.
        require("tune", "apply --measure")
    parsed = _validate(plan, conf_root, replace_all)
    if not check and os.geteuid() != 0:
        raise BadInput("apply writes /sys, /proc/sys and /etc: run it as root (or use --check)")
    from tuner.apply.outcome import outcome
    from tuner.apply.runner import run_apply

    def run_once() -> tuple[PlaybookRun, Outcome]:
        run = run_apply(plan, check=check, diff=diff, conf_root=conf_root,
                        replace_all=replace_all)  # fmt: skip
        return run, outcome(run, check=check)

    with ExitStack() as held:
        if not check:
            # The daemon does not re-apply the plan it holds while another one goes on.
            held.enter_context(changes_lock())
        run, result, measured = _run(parsed, target, run_once, measure, repeats, runtime,
                                     ramp, destroy_data)  # fmt: skip
    diffs = list(_diffs(run.tasks, check)) if diff else []
    if as_json:
        doc = {
            "plan": str(plan),
            "check": check,
            "conf_root": str(conf_root),
            **dataclasses.asdict(result),
            "diffs": [{"name": name, "diff": text} for name, text in diffs],
            "measure": measured,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _show(output_console(), plan, result, diffs, check)
        if measured is not None:
            output_console().print(_measured_line(measured), highlight=False, markup=False)
    if result.error is not None:
        raise IotunerError(result.error)
    if measured is not None and measured["rolled_back"]:
        raise IotunerError(
            f"{measured['workload']} got worse (x{measured['ratio']:.3f}, 95 % CI "
            f"{measured['ci'][0]:.3f}-{measured['ci'][1]:.3f}): the apply was rolled back"
        )


def _run(
    parsed: Plan,
    target: str | None,
    run_once: Callable[[], tuple[PlaybookRun, Outcome]],
    measure: bool,
    repeats: int,
    runtime: float,
    ramp: float,
    destroy_data: str | None,
) -> tuple[PlaybookRun, Outcome, dict[str, Any] | None]:
    """Apply once, or with --measure: measure, apply, measure, roll back if worse."""
    if not measure:
        run, result = run_once()
        return run, result, None
    from tuner.apply.measure import MeasureConfig, measured_apply, measurement_document

    config = MeasureConfig(repeats=repeats, runtime_s=runtime, ramp_s=ramp)
    try:
        done = measured_apply(parsed, target, lambda: _applied(run_once()),
                              _undo_latest, config=config,
                              destroy_data=destroy_data)  # fmt: skip
    except TrialFault as fault:
        # A fault before the apply: nothing was applied; after it: measured_apply rolled the
        # apply back (an apply whose effect could not be measured is not kept).
        done_so_far = "nothing applied" if fault.phase == "before" else "the apply rolled back"
        raise fault.reported("apply --measure", done_so_far) from None
    (run, result), verdict = done.applied, done.measurement
    return run, result, {**measurement_document(verdict), "rolled_back": done.rolled_back}


def _applied(done: tuple[PlaybookRun, Outcome]) -> tuple[PlaybookRun, Outcome]:
    """An apply whose task failed is not measured: it is already undone."""
    if done[1].error is not None:
        raise IotunerError(done[1].error)
    return done


def _undo_latest() -> None:
    """Roll back the apply just made (the newest one in place)."""
    from tuner.apply import changeset
    from tuner.recovery import journal_path
    from tuner.tunables.journal import Journal

    with Journal(journal_path()) as journal:
        latest = [r for r in changeset.history(journal) if r.status == "applied"][:1]
        problems = [p for r in latest for p in changeset.undo(journal, r.id)]
    if problems:
        raise IotunerError("rollback after --measure incomplete: " + "; ".join(problems))


def _measured_line(m: dict[str, Any]) -> str:
    ci = f"95 % CI {m['ci'][0]:.3f}-{m['ci'][1]:.3f}"
    verdict = "worse: rolled back" if m["rolled_back"] else "kept"
    return (
        f"measured {m['workload']} on {m['target']}: {m['baseline']['mbps']:.1f} -> "
        f"{m['after']['mbps']:.1f} MB/s, x{m['ratio']:.3f} ({ci}): {verdict}"
    )


def _validate(plan: Path, conf_root: Path, replace_all: bool) -> Plan:
    """Read and render the plan in-process, with the plans in force unless `replace_all`:
    BadInput names the entry, before Ansible runs."""
    from tuner.apply.compose import render_composed
    from tuner.plan import read_plan

    parsed = read_plan(plan)
    render_composed(plan, database=journal_path(), conf_root=conf_root.resolve(),
                    replace_all=replace_all)  # fmt: skip
    return parsed


def _show(console: Console, plan: Path, result: Outcome, diffs: list[tuple[str, str]],
          check: bool) -> None:  # fmt: skip
    title = f"iotuner apply {plan}" + (" (check mode: nothing is changed)" if check else "")
    table = Table(title=Text(title), title_justify="left")
    table.add_column("setting / file", overflow="fold")
    for column in ("target", "before -> after", "result"):
        table.add_column(column)
    for row in result.rows:
        change = row.before if row.before == row.after else f"{row.before} -> {row.after}"
        # Cells as Text, not markup: a file's path or a value read from the host is shown as is.
        table.add_row(Text(row.name), Text(row.target), Text(str(change)),
                      Text(row.status, style=_STYLES.get(row.status, "")))  # fmt: skip
    console.print(table)
    for name, text in diffs:
        if not text.startswith("--- "):
            console.print(Text(f"--- {name}", style="bold"))
        for line in text.splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(Text(line, style=style), soft_wrap=True)
    for recap in result.recap:
        console.print(recap.line(), style="dim", highlight=False, markup=False)
    console.print(_summary(result), highlight=False, markup=False)


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
