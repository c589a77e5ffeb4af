"""`iotuner status` against a real control socket served as the daemon serves it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.daemon.serving import answering, recording, serving
from tests.daemon.test_metrics import STATE as METRICS_STATE
from tuner.cli import app
from tuner.daemon.control import DaemonUnreachable

REPO = Path(__file__).resolve().parents[2]


def state() -> dict[str, Any]:
    """A daemon's state: holding a plan, one setting drifted, a few events."""
    now = time.time()
    doc = copy.deepcopy(METRICS_STATE)
    doc["started"] = now - 3725
    doc["plan"]["entries"] = [
        {"key": "block.read_ahead_kb", "target": "loop7", "value": 4096},
        {"key": "block.scheduler", "target": "loop7", "value": "mq-deadline"},
    ]
    # What sysfs shows for a scheduler: brackets that must print as they are, not as markup.
    doc["held"][1]["actual"] = "[none] mq-deadline"
    doc["held"][1]["note"] = "reset by a udev change event"
    doc["events"] = [
        {"time": now - 60 * i, "kind": kind, "message": message, "data": {}}
        for i, (kind, message) in reversed(list(enumerate([
            ("drift", "block.scheduler on loop7 was [none], put back mq-deadline"),
            ("hotplug", "loop8 added: plan applied"),
            ("start", "daemon started"),
        ])))
    ]  # fmt: skip
    return doc


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["status", *args], catch_exceptions=True,
                              env={"COLUMNS": "160"})  # fmt: skip


def test_status_shows_the_state(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    handler, seen = recording({"ok": True, "state": state()})
    with serving(path, handler):
        result = run("--socket", str(path))
    assert result.exit_code == 0, result.output
    out = result.output
    assert seen == [{"cmd": "status", "events": 10}]
    assert "holding" in out and "pid 4242" in out and "up 1h 02m" in out
    assert "/root/plan.yaml" in out and "apply 3" in out and "workload stream-read" in out
    assert "block.read_ahead_kb" in out and "on loop7" in out and "4096" in out
    assert "held settings: 3, 1 drifted" in out
    assert "[none] mq-deadline" in out and "DRIFT" in out and out.count("OK") >= 2
    assert "workload  stream-read" in out
    assert "loop7" in out and "100.0" in out and "97.0" in out and "42.0" in out
    assert "reset by a udev change event" in out
    assert "retune    none" in out
    assert "was [none], put back mq-deadline" in out and "loop8 added" in out


def test_status_json_and_event_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "iotuner.sock"
    full = state()
    handler, seen = recording({"ok": True, "state": full})
    with serving(path, handler):
        result = run("--socket", str(path), "--json", "--events", "2")
        none = run("--socket", str(path), "--events", "0")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    # No apply journaled in this state directory: no plan in force (tests/apply/test_compose.py).
    assert doc == {"running": True, **full, "events": full["events"][-2:], "plans_in_force": []}
    assert seen[0] == {"cmd": "status", "events": 2}
    assert none.exit_code == 0 and "recent events" not in none.output


def test_status_finds_the_socket_in_the_config(tmp_path: Path) -> None:
    path = tmp_path / "ctl.sock"
    config = tmp_path / "iotuner.toml"
    config.write_text(f'[daemon]\nsocket = "{path}"\n')
    with serving(path, recording({"ok": True, "state": state()})[0]):
        result = run("--config", str(config), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pid"] == 4242


def test_a_retune_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    doc = state()
    doc["state"] = "retuning"
    doc["retune"] = {"state": "running", "step": "tune", "workload": "random-read",
                     "target": "/srv/scratch", "started": time.time(), "pid": 99,
                     "gain": 1.23456, "ci": [1.1, 1.3], "entries": []}  # fmt: skip
    with serving(path, recording({"ok": True, "state": doc})[0]):
        result = run("--socket", str(path))
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("retune"))
    assert "state running" in line and "step tune" in line and "target /srv/scratch" in line
    assert "gain 1.235" in line and "ci" not in line.split()


def test_a_refusal_from_the_daemon_is_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    with serving(path, recording({"ok": False, "error": "unknown command"})[0]):
        result = run("--socket", str(path))
    assert result.exit_code == 1
    assert f"the daemon at {path}: unknown command" in str(result.exception)


def test_no_daemon(tmp_path: Path) -> None:
    result = run("--socket", str(tmp_path / "none.sock"))
    assert isinstance(result.exception, DaemonUnreachable)


def command(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: its own process, its stderr and exit code."""
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "status", *args],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def test_exit_codes_and_one_line_messages(tmp_path: Path) -> None:
    missing = tmp_path / "none.sock"
    unreachable = command("--socket", str(missing))
    assert unreachable.returncode == 1
    assert unreachable.stderr == (
        f"iotuner: no iotuner daemon at {missing}: the socket does not exist "
        "(is `iotuner daemon` running?)\n"
    )
    bad = tmp_path / "bad.toml"
    bad.write_text('[daemon]\nsocket = "relative.sock"\n')
    broken = command("--config", str(bad))
    assert broken.returncode == 2
    assert broken.stderr == (
        f"iotuner: {bad}:2: daemon.socket: must be an absolute path, not 'relative.sock'\n"
    )
    gone = command("--config", str(tmp_path / "nope.toml"))
    assert gone.returncode == 2 and "no such configuration file" in gone.stderr
    assert command("--events", "-1").returncode == 2


def test_json_without_a_daemon_still_prints_json(tmp_path: Path) -> None:
    missing = tmp_path / "none.sock"
    result = command("--socket", str(missing), "--json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["running"] is False and doc["socket"] == str(missing)
    assert "the socket does not exist" in doc["error"] and "socket does not exist" in result.stderr


# --- a reply iotuner cannot trust (issue 27): checked, never a traceback ---------------------


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _with(path: str, value: Any) -> bytes:
    """A whole good reply with the value at `path` (dotted; a number indexes a list) replaced."""
    doc: Any = {"ok": True, "state": state()}
    *parents, last = path.split(".")
    here = doc
    for part in parents:
        here = here[int(part)] if isinstance(here, list) else here[part]
    if isinstance(here, list):
        here[int(last)] = value
    else:
        here[last] = value
    return json.dumps(doc).encode() + b"\n"


HOSTILE_REPLIES = {
    "nested-reply": ('{"ok": true, "state": ' + _nested(100_000) + "}\n").encode(),
    "nested-state": _with("state.events.0.data", json.loads(_nested(31))),
    "nan-started": _with("state.started", float("nan")),
    "infinite-since": _with("state.workload.since", float("inf")),
    "nan-figure": _with("state.workload.devices.loop7.read_mbps", float("nan")),
    "huge-int-figure": _with("state.workload.devices.loop7.read_mbps", 10**400),
    "event-time-beyond-clocks": _with("state.events.0.time", 1e300),
    "retune-time-beyond-clocks": _with("state.retune", {"state": "done", "ended": -1e300}),
    "events-a-number": _with("state.events", 7),
    "held-a-number": _with("state.held", 3),
    "entries-a-number": _with("state.plan.entries", 5),
    "devices-a-list": _with("state.workload.devices", [1, 2]),
    "device-figures-a-string": _with("state.workload.devices.loop7", "fast"),
    "ok-a-list": b'{"ok": [1], "state": {}}\n',
    "error-a-dict": b'{"ok": false, "error": {"a": [1, 2]}}\n',
    "state-a-list": b'{"ok": true, "state": [1, 2]}\n',
    "reply-a-list": b"[1, 2, 3]\n",
    "bare-nan": b'{"ok": true, "state": {"started": NaN}}\n',
    "long-string": _with("state.config", "x" * 100_000),
    "many-events": _with("state.events", [{"time": 1, "kind": "k", "message": "m"}] * 20_000),
}


@pytest.mark.parametrize("reply", HOSTILE_REPLIES.values(), ids=HOSTILE_REPLIES.keys())
def test_a_reply_that_is_not_a_state_is_one_line(tmp_path: Path, reply: bytes) -> None:
    path = tmp_path / "iotuner.sock"
    with answering(path, reply):
        started = time.monotonic()
        result = command("--socket", str(path))
        as_json = command("--socket", str(path), "--json")
    assert time.monotonic() - started < 30
    assert "Traceback" not in result.stderr, result.stderr[-800:]
    assert result.returncode == 1, result.stdout[-400:] + result.stderr[-400:]
    assert result.stderr.startswith(f"iotuner: the daemon at {path}"), result.stderr[:400]
    assert result.stderr.count("\n") == 1 and len(result.stderr) < 400, result.stderr[:600]
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["running"] is False


def test_control_characters_in_a_reply_never_reach_the_terminal(tmp_path: Path) -> None:
    doc = state()
    doc["config"] = "/etc/x\x1b]0;owned\x07.toml"
    doc["plan"]["path"] = "/root/p\x1b[2J.yaml"
    doc["held"][0]["note"] = "note\u009b31m\rforged"
    doc["events"][0]["message"] = "evil\x1b[31m\nforged line"
    doc["events"][0]["kind"] = "k\x1b[5m"
    doc["workload"]["class"] = "read\x08\x08\x08\u202ewrite"
    path = tmp_path / "iotuner.sock"
    with serving(path, recording({"ok": True, "state": doc})[0]):
        result = command("--socket", str(path))
    assert result.returncode == 0, result.stderr
    for control in ("\x1b", "\x07", "\u009b", "\r", "\x08", "\u202e"):
        assert control not in result.stdout, repr(control)
    assert not any(line.startswith("forged") for line in result.stdout.splitlines())
