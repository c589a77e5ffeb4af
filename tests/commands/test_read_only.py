"""Read-only commands never write: a killed run's changes are reported, not restored.

The killed run is a real child process (tests/journal_child.py) that changed a fixture host
and died without restoring; each command below then runs with that journal.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.commands.test_rollback import ORIGINAL, SETTINGS, values
from tests.sysfs_tree import SysTree
from tests.tunables.test_journal import child


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under `root` with the hash of its bytes (symlinks by their target)."""
    seen = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            seen[rel] = "-> " + str(path.readlink())
        elif path.is_file():
            seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def open_changes(state: Path) -> int:
    """Changes in the journal neither restored nor kept, read without writing."""
    db = sqlite3.connect(f"file:{state / 'state.db'}?mode=ro", uri=True)
    try:
        query = "SELECT count(*) FROM changes WHERE restored_at IS NULL AND kept_at IS NULL"
        return int(db.execute(query).fetchone()[0])
    finally:
        db.close()


def read_only_commands(root: Path) -> list[tuple[str, ...]]:
    """Every command that only reads, and --help of every command (writers' included)."""
    return [
        ("probe", "--root", str(root), "--json"),
        ("advise", "--root", str(root)),
        ("report", "--root", str(root), "--out", str(root.parent / "report.html")),
        ("history",),
        ("status",),
        ("verify", str(root / "no-such-plan.yaml")),
        ("rules", "list"),
        ("lab", "status"),
        ("--help",),
        ("probe", "--help"),
        ("tune", "--help"),
        ("apply", "--help"),
        ("sweep", "--help"),
        ("lab", "up", "--help"),
        ("rollback", "--help"),
    ]


def test_read_only_commands_leave_a_killed_run_alone(state: Path, host: SysTree) -> None:
    child(host.root, "exit", *SETTINGS).wait()
    before = tree_hash(host.root)
    for args in read_only_commands(host.root):
        result = iotuner(*args, state=state)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        assert tree_hash(host.root) == before, f"`iotuner {' '.join(args)}` wrote the host"
        assert open_changes(state) == 2, f"`iotuner {' '.join(args)}` closed the journal"
        if args == ("--help",):
            continue  # click prints the top-level help before any command is chosen
        notes = [line for line in result.stderr.splitlines() if "killed" in line]
        assert len(notes) == 1, (args, result.stderr)
        assert notes[0] == (
            "warning: a killed iotuner left 2 value(s) and 0 apply(s) changed; "
            "`iotuner rollback` (or the next `tune`/`apply`) restores them"
        )
    rolled = iotuner("rollback", state=state)
    assert rolled.returncode == 0, rolled.stderr
    assert values(host) == ORIGINAL
    assert open_changes(state) == 0
    assert "killed" not in iotuner("history", state=state).stderr


@pytest.mark.parametrize("command", [("rules", "list", "--json")])
def test_a_read_only_command_leaves_no_state_behind(state: Path, command: tuple[str, ...]) -> None:
    # No journal: nothing to say and no state directory created.
    result = iotuner(*command, state=state)
    assert result.returncode == 0 and result.stderr == ""
    assert not state.exists()
