"""`iotuner rollback`: put back what iotuner changed.

First what dead sessions left (a tune killed with SIGKILL, a power cut, an apply interrupted
half way); `--all` also takes what running iotuner processes changed, after `--yes`. Then the
applies: without `--to`, the latest apply still in place and the daemon's re-applies since;
with `--to ID`, every apply after ID, newest first (`--to 0`: all of them). `iotuner history`
lists the ids.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Annotated, Any

import typer

from tuner.errors import BadInput, IotunerError
from tuner.recovery import journal_path


def rollback(
    all_sessions: Annotated[
        bool,
        typer.Option("--all", help="Also restore what running iotuner processes changed."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm --all.")] = False,
    to: Annotated[
        int | None,
        typer.Option(
            "--to", min=0, help="Undo every apply after this id (see `iotuner history`); 0: all."
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Show what rollback would put back; write nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")] = False,
) -> None:
    """Restore every journaled original still changed (exit 1 if any could not be).

    With --check, lists what it would put back (each value with the value it would restore,
    each file restored or removed) and writes nothing.

    Exit codes: 0 everything put back (or nothing to put back; with --check, listed), 1 a value
    or file could not be restored, 2 bad input (an unknown --to, --all without --yes).
    """
    path = journal_path()
    if check:
        _check(all_sessions, to, as_json)
        return
    if not path.exists():
        if to:
            raise BadInput(f"--to {to}: no apply has been journaled here ({path} is missing)")
        _report([], {}, [], [], as_json)
        return
    from tuner.apply import changeset
    from tuner.apply.lock import changes_lock
    from tuner.tunables.engine import TunableEngine
    from tuner.tunables.journal import Journal, recover

    with changes_lock(), Journal(path) as journal:
        sessions = {s.id: s for s in journal.sessions()}
        open_sessions = {c.session for c in journal.open_changes()}
        live = [
            s
            for s in sessions.values()
            if s.id in open_sessions and s.pid != os.getpid() and journal.is_alive(s)
        ]
        if all_sessions and live and not yes:
            who = ", ".join(f"pid {s.pid} ({s.command})" for s in live)
            raise BadInput(
                f"--all also restores what running processes changed ({who}); add --yes to confirm"
            )
        results = recover(
            lambda root: TunableEngine(root, journal), journal, include_live=all_sessions
        )
        left = [] if all_sessions else live
        rows = [_row(r, sessions) for r in results]
        applies: list[dict[str, Any]] = [
            {"id": None, "problems": [line]} for line in changeset.recover_pending(journal)
        ]
        applies += [
            {"id": record.id, "problems": changeset.undo(journal, record.id)}
            for record in _applies_to_undo(changeset.history(journal), to)
        ]
    failures = [r["message"] for r in rows if r["failed"]]
    failures += [p for a in applies if a["id"] is not None for p in a["problems"]]
    _report(rows, {s.id: s.pid for s in left}, applies, failures, as_json)
    if failures:
        raise IotunerError(f"{len(failures)} value(s) or file(s) could not be restored")


def _check(all_sessions: bool, to: int | None, as_json: bool) -> None:
    """What rollback would do, read from the journal: nothing is locked, restored or marked."""
    from tuner.apply import changeset
    from tuner.apply.applied import applied_files, applied_values, interrupted, shown
    from tuner.tunables.journal import Journal

    changes: list[dict[str, Any]] = []
    applies: list[dict[str, Any]] = []
    if journal_path().exists():
        with Journal(journal_path()) as journal:
            sessions = {s.id: s for s in journal.sessions()}
            dead = {i for i, s in sessions.items() if not journal.is_alive(s)}
            changes = [
                {"session": c.session, "key": c.key, "target": c.target,
                 "original": _plain(c.saved.original)}
                for c in journal.open_changes()
                if all_sessions or c.session in dead
            ]  # fmt: skip
            records = changeset.history(journal)
            ids = interrupted(journal, dead) + [r.id for r in _applies_to_undo(records, to)]
            for apply_id in ids:
                applies.append({
                    "id": apply_id,
                    "values": [dataclasses.asdict(v) for v in applied_values(journal, apply_id)],
                    "files": [dataclasses.asdict(f) for f in applied_files(journal, apply_id)],
                })  # fmt: skip
    if as_json:
        doc = {"check": True, "changes": changes, "applies": applies}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not changes and not applies:
        typer.echo("nothing to roll back")
    for c in changes:
        typer.echo(f"would restore {c['key']} on {c['target']} = {shown(c['original'])}"
                   f"  (session {c['session']}, left by a process that is gone)")  # fmt: skip
    for a in applies:
        typer.echo(f"would roll back apply {a['id']}:")
        for v in a["values"]:
            typer.echo(f"  {v['key']} on {v['target']}: {shown(v['new'])} -> {shown(v['old'])}")
        for f in a["files"]:
            typer.echo(f"  {'restore' if f['existed'] else 'remove'} {f['path']}")
    typer.echo("(--check: nothing was written)")


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _applies_to_undo(records: list[Any], to: int | None) -> list[Any]:
    """Newest first: the latest apply in place, or every one in place after `to`."""
    # The plan module stands on every setting's rules; only an undo of applies reads it.
    from tuner.plan import DAEMON_SOURCE

    in_place = [r for r in records if r.status == "applied"]
    if to is None:
        # The daemon's own sets (drift re-applied, a new disk given the plan) belong to the
        # apply they hold: undoing that apply undoes them too, newest first.
        users = [r for r in in_place if r.source != DAEMON_SOURCE]
        if not users:
            return in_place[:1]
        return [r for r in in_place if r.id >= users[0].id]
    if to and all(r.id != to for r in records):
        raise BadInput(f"--to {to}: no such apply (`iotuner history` lists them)")
    return [r for r in in_place if r.id > to]


def _row(result: Any, sessions: dict[int, Any]) -> dict[str, Any]:
    change, session = result.change, sessions[result.change.session]
    original = change.saved.original
    return {
        "session": change.session,
        "pid": session.pid,
        "command": session.command,
        "key": change.key,
        "target": change.target,
        "original": list(original) if isinstance(original, tuple) else original,
        "outcome": result.outcome,
        "message": result.message,
        "failed": result.outcome == "failed",
    }


def _report(
    rows: list[dict[str, Any]],
    live: dict[int, int],
    applies: list[dict[str, Any]],
    failures: list[str],
    as_json: bool,
) -> None:
    if as_json:
        doc = {
            "changes": rows,
            "applies": [a for a in applies if a["id"] is not None],
            "restored": sum(1 for r in rows if r["outcome"] == "restored"),
            "failed": len(failures),
            "left_running": [{"session": s, "pid": p} for s, p in live.items()],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not rows and not applies:
        typer.echo("nothing to roll back")
    for row in rows:
        typer.echo(_line(row))
    for done in applies:
        if done["id"] is None:
            typer.echo(done["problems"][0])
            continue
        typer.echo(f"rolled back apply {done['id']}: files and live values as they were before it")
        for problem in done["problems"]:
            typer.echo(f"FAILED {problem}")
    for session, pid in live.items():
        typer.echo(f"left session {session} alone: pid {pid} still runs (--all --yes takes it)")


def _line(row: dict[str, Any]) -> str:
    what = f"{row['key']} on {row['target']}"
    value = row["original"]
    shown = " ".join(map(str, value)) if isinstance(value, list) else str(value)
    if row["outcome"] == "restored":
        return f"restored {what} = {shown}  (session {row['session']}, pid {row['pid']})"
    if row["outcome"] == "reboot":
        return f"dropped {what}: changed before the last reboot (session {row['session']})"
    if row["outcome"] == "gone":
        return f"dropped {row['message']}"
    if row["outcome"] == "elsewhere":
        return f"left {row['message']}"
    return f"FAILED {row['message']}"
