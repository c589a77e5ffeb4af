"""`iotuner history`: what was applied when, from the state database."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tuner.recovery import journal_path


def history(
    as_json: Annotated[bool, typer.Option("--json", help="Print the applies as JSON.")] = False,
) -> None:
    """List every apply, newest first: when, its plan, what it wrote, and whether it is in place."""
    records = []
    if journal_path().exists():
        from tuner.apply.changeset import history as read_history
        from tuner.journal import Journal

        with Journal(journal_path()) as journal:
            records = read_history(journal)
    if as_json:
        doc = {"applies": [dataclasses.asdict(r) for r in records]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not records:
        typer.echo("nothing applied yet")
        return
    table = Table(title="iotuner applies (newest first; `iotuner rollback --to ID` returns to one)")
    for column in ("id", "applied", "status", "plan", "entries", "files written"):
        table.add_column(column)
    for r in records:
        # A path is the user's to name, "[red]" and all: shown as text, never as markup.
        plan = escape(f"{r.plan_path}\n{r.source or '?'} / {r.workload or '-'} / {r.host or '?'}")
        status = r.status if r.rolled_back_at is None else f"rolled back {r.rolled_back_at[:19]}"
        table.add_row(str(r.id), r.created[:19].replace("T", " "), status, plan,
                      str(r.entries), escape("\n".join(r.files)) or "-")  # fmt: skip
    Console().print(table)
