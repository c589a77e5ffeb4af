"""`iotuner history`: what was applied when, from the state database."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from tuner.errors import IotunerError
from tuner.recovery import journal_path


def history(
    as_json: Annotated[bool, typer.Option("--json", help="Print the applies as JSON.")] = False,
) -> None:
    """List the plans in force, then every apply, newest first: when, its plan, what it
    wrote, and whether it is in place.

    Times are local. Exit codes: 0 listed (also when nothing was applied yet), 1 the state
    database cannot be read.
    """
    from tuner.apply.compose import NOTHING, in_force_document, in_force_lines, read_in_force

    records = []
    in_force = NOTHING
    if journal_path().exists():
        from tuner.apply.changeset import history as read_history
        from tuner.tunables.journal import Journal

        try:
            with Journal(journal_path()) as journal:
                records = read_history(journal)
            in_force = read_in_force(journal_path())
        except sqlite3.DatabaseError as err:
            raise IotunerError(
                f"{journal_path()}: cannot read the state database ({err})"
            ) from None
    if as_json:
        doc = {
            "plans_in_force": in_force_document(in_force),
            "applies": [dataclasses.asdict(r) for r in records],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not records:
        typer.echo("nothing applied yet")
        return
    # A list, not a table: plan paths and written files print whole, however long.
    console = Console()
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
        for path in r.files:
            console.print(f"    wrote {path}", soft_wrap=True, highlight=False, markup=False)


def clock(stamp: str) -> str:
    """An ISO 8601 time from the journal (UTC) as local 'YYYY-MM-DD HH:MM:SS'."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
