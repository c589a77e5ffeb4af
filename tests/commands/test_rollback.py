"""`iotuner rollback` and the recovery every command starts with, as users run them.

The sessions to roll back are real child processes (tests/journal_child.py) that changed a
fixture host and died, or still run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.sysfs_tree import SysTree
from tests.tunables.test_journal import child
from tuner.tunables.access import Tunables

SETTINGS = ("block.read_ahead_kb=loop3=4096", "net.ipv4.tcp_rmem=host=4096 87380 16777216")


def values(host: SysTree) -> list[object]:
    tunables = Tunables(host.root)
    return [
        tunables.read("block.read_ahead_kb", "loop3"),
        tunables.read("net.ipv4.tcp_rmem", "host"),
    ]


ORIGINAL = [128, (4096, 131072, 6291456)]


def test_nothing_to_roll_back(state: Path) -> None:
    result = iotuner("rollback", state=state)
    assert (result.returncode, result.stdout.strip()) == (0, "nothing to roll back")
    assert not state.exists(), "no journal: nothing created"
    doc = json.loads(iotuner("rollback", "--json", state=state).stdout)
    assert doc == {"changes": [], "applies": [], "restored": 0, "failed": 0,
                   "left_running": []}  # fmt: skip


def test_rollback_restores_a_dead_session(state: Path, host: SysTree) -> None:
    child(host.root, "exit", *SETTINGS).wait()
    assert values(host) == [4096, (4096, 87380, 16777216)]
    result = iotuner("rollback", "--json", state=state)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["restored"] == 2 and doc["failed"] == 0
    # Newest first; readahead was written last (apply_rank), so it is put back first.
    assert [(c["key"], c["original"], c["outcome"]) for c in doc["changes"]] == [
        ("block.read_ahead_kb", 128, "restored"),
        ("net.ipv4.tcp_rmem", [4096, 131072, 6291456], "restored"),
    ]
    assert doc["changes"][0]["command"] == "journal_child exit"
    assert values(host) == ORIGINAL
    assert iotuner("rollback", state=state).stdout.strip() == "nothing to roll back"


def test_live_sessions_need_all_and_yes(state: Path, host: SysTree) -> None:
    proc = child(host.root, "sleep", *SETTINGS)
    try:
        plain = iotuner("rollback", state=state)
        assert plain.returncode == 0
        assert f"pid {proc.pid} still runs" in plain.stdout
        assert values(host) == [4096, (4096, 87380, 16777216)]
        refused = iotuner("rollback", "--all", state=state)
        assert refused.returncode == 2
        assert f"pid {proc.pid} (journal_child sleep)" in refused.stderr
        assert "add --yes to confirm" in refused.stderr
        done = iotuner("rollback", "--all", "--yes", "--json", state=state)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["restored"] == 2
        assert values(host) == ORIGINAL
    finally:
        proc.kill()
        proc.wait()


def test_a_failed_restore_exits_1_and_stays_open(state: Path, host: SysTree) -> None:
    child(host.root, "exit", *SETTINGS).wait()
    rmem = host.root / "proc/sys/net/ipv4/tcp_rmem"
    if subprocess.run(["chattr", "+i", str(rmem)], capture_output=True).returncode != 0:
        pytest.skip("needs chattr +i to make a write fail")
    try:
        result = iotuner("rollback", state=state)
    finally:
        subprocess.run(["chattr", "-i", str(rmem)], check=True)
    assert result.returncode == 1
    assert "FAILED net.ipv4.tcp_rmem on host: not permitted here (EPERM writing " \
        "/proc/sys/net/ipv4/tcp_rmem)" in result.stdout  # fmt: skip
    assert "1 value(s) or file(s) could not be restored" in result.stderr
    again = iotuner("rollback", state=state)
    assert again.returncode == 0 and "restored net.ipv4.tcp_rmem" in again.stdout
    assert values(host) == ORIGINAL


def test_every_command_that_changes_the_host_recovers_first(state: Path, host: SysTree) -> None:
    # Read-only commands only report what is left: tests/commands/test_read_only.py.
    child(host.root, "exit", *SETTINGS).wait()
    result = iotuner("tune", "--workload", "no-such-workload", state=state)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[:2] == [
        "iotuner: restored block.read_ahead_kb on loop3 to 128 (left by session 1)",
        "iotuner: restored net.ipv4.tcp_rmem on host to 4096 131072 6291456 (left by session 1)",
    ]
    assert values(host) == ORIGINAL
    assert iotuner("rules", "list", "--json", state=state).stderr == ""


def test_no_journal_means_no_state_directory(state: Path) -> None:
    assert iotuner("rules", "list", "--json", state=state).returncode == 0
    assert not state.exists()
