"""`iotuner history`: what was applied when, from the state database."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tuner.console import output_console
from tuner.errors import IotunerError
from tuner.recovery import journal_path

if TYPE_CHECKING:
    from tuner.apply.applied import ValueChange


def history(
    as_json: Annotated[bool, typer.Option("--json", help="Print the applies as JSON.")] = False,
) -> None:
    """List the plans in force, then every apply, newest first: when, its plan, each value it
    set (key, target, old and new), the files it wrote, and whether it is in place.

    Times are local. Exit codes: 0 listed (also when nothing was applied yet), 1 the state
    database cannot be read.
    """
    from tuner.apply.compose import NOTHING, in_force_document, in_force_lines, read_in_force

    records = []
    values: dict[int, list[ValueChange]] = {}
    in_force = NOTHING
    if journal_path().exists():
        from tuner.apply.applied import applied_values
        from tuner.apply.changeset import history as read_history
        from tuner.tunables.journal import Journal

        try:
            with Journal(journal_path()) as journal:
                records = read_history(journal)
                values = {r.id: applied_values(journal, r.id) for r in records}
            in_force = read_in_force(journal_path())
        except sqlite3.DatabaseError as err:
            raise IotunerError(
                f"{journal_path()}: cannot read the state database ({err})"
            ) from None
    if as_json:
        doc = {
            "plans_in_force": in_force_document(in_force),
            "applies": [
                {**dataclasses.asdict(r), "values": [dataclasses.asdict(v) for v in values[r.id]]}
                for r in records
            ],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not records:
        typer.echo("nothing applied yet")
        return
    from tuner.apply.applied import shown

    # A list, not a table: plan paths and written files print whole, however long.
    console = output_console()
    for line in in_force_lines(in_force):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    console.print(
        f"iotuner applies, newest first ({len(records)}); times are local; "
        "`iotuner rollback --to ID` undoes every apply after ID",
        style="bold",
        highlight=False,
    )
    for r in records:
        status = r.status if r.rolled_back_at is None else f"rolled back {clock(r.rolled_back_at)}"
        head = Text.assemble((f"#{r.id}", "bold"), f"  {clock(r.created)}  ", (status, "cyan"))
        console.print(head, soft_wrap=True, highlight=False)
        origin = f"from {r.source or '?'}, workload {r.workload or '-'}, host {r.host or '?'}"
        entries = f"{r.entries} {'entry' if r.entries == 1 else 'entries'}"
        for line in (f"plan {r.plan_path}", f"{origin}, {entries}"):
            console.print("    " + line, soft_wrap=True, highlight=False, markup=False)
        for v in values[r.id]:
            # Key, target, old and new on one line: what `rollback` would put back, and from what.
            line = f"    set {v.key} on {v.target}: {shown(v.old)} -> {shown(v.new)}"
            console.print(line, soft_wrap=True, highlight=False, markup=False)
        for path in r.files:
            console.print(f"    wrote {path}", soft_wrap=True, highlight=False, markup=False)


def clock(stamp: str) -> str:
    """An ISO 8601 time from the journal (UTC) as local 'YYYY-MM-DD HH:MM:SS'."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
