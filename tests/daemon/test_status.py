"""`iotuner status` against a real control socket served as the daemon serves it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.daemon.serving import recording, serving
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


def test_status_json_and_event_count(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    full = state()
    handler, seen = recording({"ok": True, "state": full})
    with serving(path, handler):
        result = run("--socket", str(path), "--json", "--events", "2")
        none = run("--socket", str(path), "--events", "0")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc == {"running": True, **full, "events": full["events"][-2:]}
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
