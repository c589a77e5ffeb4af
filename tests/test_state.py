"""The state directory is iotuner's own: one anybody else can write is refused (issue 17).

root's next `iotuner history` used to recover from whatever state.db it found, so a state.db
planted in a shared directory (IOTUNER_STATE_DIR pointing there) made root write an
attacker's file. The directory, its ancestors and the database are checked before use.
"""

from __future__ import annotations

import os
import pwd
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cli import iotuner
from tuner.errors import BadInput
from tuner.state import UntrustedState, state_dir, trusted_file
from tuner.tunables.journal import Journal


def nobody() -> int:
    if os.geteuid() != 0:
        pytest.skip("needs root to give files to another user")
    return pwd.getpwnam("nobody").pw_uid


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def planted_journal(state: Path, victim: Path) -> None:
    """A state.db whose pending apply 'restores' `victim` with an attacker's bytes."""
    state.mkdir(exist_ok=True)
    with Journal(state / "state.db", command="planted") as journal:
        session = journal.session("/", pid=dead_pid())
        journal.db.executescript(
            "CREATE TABLE IF NOT EXISTS applies (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " session INTEGER, plan TEXT, plan_path TEXT, host TEXT, source TEXT,"
            " workload TEXT, entries INTEGER, root TEXT, status TEXT, created TEXT,"
            " finished TEXT, rolled_back_at TEXT);"
            "CREATE TABLE IF NOT EXISTS apply_files (apply INTEGER, seq INTEGER, path TEXT,"
            " existed INTEGER, content BLOB, mode INTEGER, uid INTEGER, gid INTEGER, link TEXT,"
            " wanted INTEGER, PRIMARY KEY (apply, seq));"
        )
        journal.db.execute(
            "INSERT INTO applies (session, plan, plan_path, entries, root, status, created)"
            " VALUES (?, 'p', 'p.yaml', 0, '/', 'pending', 'now')",
            (session,),
        )
        journal.db.execute(
            "INSERT INTO apply_files VALUES (1, 0, ?, 1, ?, 420, 0, 0, NULL, 1)",
            (str(victim), b"attacker's bytes\n"),
        )


def test_a_state_directory_another_user_owns_is_refused(tmp_path: Path) -> None:
    uid = nobody()
    state, victim = tmp_path / "shared", tmp_path / "victim"
    victim.write_text("root's own\n")
    planted_journal(state, victim)
    for path in (state, state / "state.db"):
        os.chown(path, uid, -1)
    done = iotuner("history", state=state)
    assert victim.read_text() == "root's own\n", "nothing recovered from a planted journal"
    assert done.returncode == 2, done.stderr
    assert f"{state}: owned by uid {uid}" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # the recovery warning, then the error


def test_a_state_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    with pytest.raises(UntrustedState, match="writable by others"):
        Journal(state / "state.db")
    assert not (state / "state.db").exists()


def test_a_planted_database_is_refused_even_in_our_directory(tmp_path: Path) -> None:
    uid = nobody()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = state / "state.db"
    sqlite3.connect(db).close()
    os.chown(db, uid, -1)
    with pytest.raises(UntrustedState, match=f"owned by uid {uid}"):
        Journal(db)
    os.chown(db, 0, -1)
    db.chmod(0o666)
    with pytest.raises(UntrustedState, match="writable by others"):
        trusted_file(db)
    db.unlink()
    db.symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(UntrustedState, match="not a regular file"):
        Journal(db)


def test_an_ancestor_others_may_write_is_refused_unless_sticky(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could rename our directory away and put theirs in its place
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(shared / "state"))
    with pytest.raises(UntrustedState, match=f"{shared}: writable by others"):
        state_dir()
    shared.chmod(0o1777)  # sticky, as /tmp: entries are their owners' to rename
    assert state_dir() == shared / "state"
    assert (shared / "state").stat().st_mode & 0o777 == 0o700


def test_untrusted_state_is_bad_input() -> None:
    assert issubclass(UntrustedState, BadInput)


def test_restored_values_are_checked_as_new_ones(host, state: Path) -> None:  # type: ignore[no-untyped-def]
    from tuner.tunables.access import Saved, Tunables
    from tuner.tunables.engine import TunableEngine
    from tuner.tunables.journal import recover

    before = Tunables(host.root).read("block.read_ahead_kb", "loop3")
    with Journal() as journal:
        session = journal.session(host.root, pid=dead_pid())
        journal.record(session, [
            ("block.read_ahead_kb", "loop3", Saved(10**30), 4096),
            ("block.scheduler", "loop3", Saved("none\nmq-deadline"), "none"),
        ])  # fmt: skip
        results = recover(lambda root: TunableEngine(root, journal), journal)
    assert [r.outcome for r in results] == ["failed", "failed"]
    assert "exceeds 4294967295" in results[1].message
    assert Tunables(host.root).read("block.read_ahead_kb", "loop3") == before


def test_undo_restores_only_the_files_apply_manages(tmp_path: Path) -> None:
    from tuner.apply.changeset import SavedFile, restore_file

    victim = tmp_path / "etc" / "shadow"
    with pytest.raises(PermissionError, match="not a file iotuner apply manages"):
        restore_file(SavedFile(str(victim), True, b"x", 0o644, 0, 0, None))
    assert not victim.exists()
