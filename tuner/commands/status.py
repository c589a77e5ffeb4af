"""`iotuner status`: ask the running daemon what it holds, sees and did, over its socket."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probes.printable import printable
from tuner.apply.compose import NOTHING, InForce, in_force_document, in_force_lines, read_in_force
from tuner.console import output_console, plain
from tuner.errors import IotunerError
from tuner.recovery import journal_path


def status(
    socket_path: Annotated[
        Path | None,
        typer.Option(
            "--socket",
            help="The daemon's control socket (default: daemon.socket in the configuration).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="The daemon's configuration (default: /etc/iotuner/iotuner.toml)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    events: Annotated[
        int, typer.Option("--events", help="How many recent events to show.", min=0)
    ] = 10,
) -> None:
    """Show the plans in force (from the journal of applies), then the daemon's state, the
    plan it holds, drift, the live workload and recent events.

    Exit codes: 0 the daemon answered; 1 no daemon answered on the socket (not running,
    a stale socket, not root, no answer in time: the line names the socket; with --json,
    stdout holds {"running": false, "socket", "error"}); 2 bad input (a configuration file
    that is missing or wrong).
    """
    from tuner.daemon.config import load_config
    from tuner.daemon.control import request
    from tuner.daemon.status_reply import BadState, checked_reply, checked_state

    path = socket_path if socket_path is not None else load_config(config).daemon.socket
    in_force = _in_force()
    if not as_json:
        # From the journal, so it is shown also when no daemon runs.
        for line in in_force_lines(in_force):
            Console().print(line, highlight=False, markup=False, soft_wrap=True)
    try:
        reply = request(path, {"cmd": "status", "events": events})
        try:
            checked_reply(reply)
            if reply.get("ok") is True and "state" in reply:
                state = checked_state(reply["state"])
        except BadState as err:
            raise BadState(f"the daemon at {path} sent a reply status cannot show: {err}") from None
        if reply.get("ok") is not True:
            raise IotunerError(f"the daemon at {path}: {reply.get('error') or 'request refused'}")
        if "state" not in reply:
            raise IotunerError(f"the daemon at {path} sent no state")
    except IotunerError as err:
        if as_json:  # a script asking for JSON gets JSON, also when no daemon answered
            doc = {"running": False, "socket": str(path), "error": str(err),
                   "plans_in_force": in_force_document(in_force)}  # fmt: skip
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        raise
    recent = state.get("events") or []
    state = {**state, "events": recent[-events:] if events else []}
    if as_json:
        doc = {"running": True, **state, "plans_in_force": in_force_document(in_force)}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    show(state, output_console())


def _in_force() -> InForce:
    """The plans in force per the journal (read-only); none when it cannot be read."""
    try:
        return read_in_force(journal_path())
    except IotunerError:
        return NOTHING


def show(state: dict[str, Any], console: Console) -> None:
    """The state as people read it: a headline, then one section per part."""
    console.print(_headline(state))
    _plan(state.get("plan"), console)
    _held(state.get("held") or [], console)
    _workload(state.get("workload"), console)
    _retune(state.get("retune"), console)
    _follow(state.get("follow"), console)
    _events(state.get("events") or [], console)


def _headline(state: dict[str, Any]) -> Text:
    colour = {"holding": "green", "retuning": "yellow", "waiting-idle": "cyan", "no-plan": "red"}
    name = str(state.get("state", "?"))
    line = Text("iotuner daemon  ")
    line.append(printable(name), style=f"bold {colour.get(name, 'white')}")
    line.append(f"  pid {state.get('pid', '?')}")
    started = state.get("started")
    if isinstance(started, int | float):
        line.append(f"  up {_duration(time.time() - started)}")
    line.append(printable(f"  config {state.get('config') or '(defaults)'}"))
    return line


def _plan(plan: Any, console: Console) -> None:
    if not isinstance(plan, dict):
        console.print("plan      [red]none held[/] (nothing applied yet, or no plan configured)")
        return
    apply_id = plan.get("apply_id")
    applied = apply_id if apply_id is not None else "-"
    line = f"plan      {plan.get('path') or '?'}  apply {applied}"
    console.print(plain(f"{line}  workload {plan.get('workload') or '-'}"), highlight=False)
    entries = [e for e in plan.get("entries") or [] if isinstance(e, dict)]
    if entries:
        table = Table(box=None, padding=(0, 2), show_header=False)
        for entry in entries:
            table.add_row(
                "", _t(entry.get("key")), _t(f"on {entry.get('target', '?')}"),
                _t(entry.get("value")),
            )  # fmt: skip
        console.print(table)


def _held(held: list[Any], console: Console) -> None:
    settings = [h for h in held if isinstance(h, dict)]
    if not settings:
        return
    drifted = sum(1 for h in settings if not h.get("ok"))
    title = f"held settings: {len(settings)}, " + (
        f"[red]{drifted} drifted[/]" if drifted else "[green]all in place[/]"
    )
    table = Table(title=title, title_justify="left", box=None, padding=(0, 2))
    notes = any(h.get("note") for h in settings)  # why a setting is not held, when known
    for column in ("setting", "target", "expected", "actual", "", *(["note"] if notes else [])):
        table.add_column(column)
    for h in settings:
        verdict = "[green]OK[/]" if h.get("ok") else "[bold red]DRIFT[/]"
        cells: list[str | Text] = [_t(h.get(k)) for k in ("key", "target", "expected", "actual")]
        cells.append(verdict)
        if notes:
            cells.append(plain(h.get("note") or ""))
        table.add_row(*cells)
    console.print(table)


def _workload(workload: Any, console: Console) -> None:
    if not isinstance(workload, dict):
        console.print("workload  not watched")
        return
    since = workload.get("since")
    when = f"  since {_clock(since)}" if isinstance(since, int | float) else ""
    line = f"workload  {workload.get('class') or 'unknown'}{when}"
    console.print(plain(line), highlight=False)
    devices = workload.get("devices") or {}
    if not isinstance(devices, dict) or not devices:
        return
    table = Table(box=None, padding=(0, 2))
    columns = (("device", None), ("read MB/s", "read_mbps"), ("write MB/s", "write_mbps"),
               ("avg req KB", "avg_request_kb"), ("reads %", "read_fraction"),
               ("util %", "util_percent"), ("queue", "queue_depth"))  # fmt: skip
    for title, _ in columns:
        table.add_column(title, justify="left" if title == "device" else "right")
    for name, sample in sorted(devices.items()):
        sample = sample if isinstance(sample, dict) else {}
        cells: list[str | Text] = [_t(name)]
        for _, key in columns[1:]:
            value = sample.get(key) if key else None
            if key == "read_fraction" and isinstance(value, int | float):
                value = value * 100
            cells.append(f"{value:.1f}" if isinstance(value, int | float) else "-")
        table.add_row(*cells)
    console.print(table)


def _retune(retune: Any, console: Console) -> None:
    if not isinstance(retune, dict) or not retune:
        console.print("retune    none")
        return
    parts = [f"{k} {_scalar(k, v)}" for k, v in retune.items()
             if v is not None and not isinstance(v, dict | list)]  # fmt: skip
    console.print(plain(f"retune    {'  '.join(parts)}"), highlight=False)


def _follow(follow: Any, console: Console) -> None:
    """One line when the daemon follows the workload ([follow]): its counters, captures and
    warm starts, and the last capture's nearest remembered workload."""
    if not isinstance(follow, dict):
        return
    parts = [f"{k.replace('_', ' ')} {_scalar(k, follow.get(k))}"
             for k in ("captures", "warm_starts") if follow.get(k) is not None]  # fmt: skip
    counters = follow.get("counters")
    if isinstance(counters, dict):
        parts += [f"{k.replace('_', ' ')} {_scalar(k, v)}" for k, v in counters.items()]
    last = follow.get("last")
    if isinstance(last, dict) and last.get("distance") is not None:
        parts.append(f"nearest {_scalar('distance', last['distance'])}")
    console.print(plain(f"follow    {'  '.join(parts)}"), highlight=False)


def _scalar(key: str, value: Any) -> str:
    """A re-tune figure: times as clock times, numbers to four digits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key in ("requested", "started", "ended"):
        return _clock(value)
    return f"{value:.4g}"


def _events(events: list[Any], console: Console) -> None:
    shown = [e for e in events if isinstance(e, dict)]
    if not shown:
        return
    table = Table(title="recent events", title_justify="left", box=None, padding=(0, 2))
    for column in ("time", "kind", "message"):
        table.add_column(column)
    for e in shown:
        kind = str(e.get("kind", "?"))
        when = e.get("time")
        table.add_row(
            _clock(when) if isinstance(when, int | float) else "?",
            Text(printable(kind), style="red" if kind == "error" else ""),
            _t(e.get("message", "")),
        )
    console.print(table)


def _t(value: Any) -> Text:
    """A value as plain text: a scheduler list such as "[mq-deadline] none" is not markup, and
    no control character the daemon sent reaches the terminal."""
    return plain("?" if value is None else value)


def _clock(when: float) -> str:
    """Local time; the date too unless it is today."""
    moment = datetime.fromtimestamp(when)
    today = moment.date() == datetime.now().date()
    return moment.strftime("%H:%M:%S" if today else "%Y-%m-%d %H:%M:%S")


def _duration(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
