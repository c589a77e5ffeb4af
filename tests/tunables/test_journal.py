"""The journal: durable originals, live and dead sessions, recovery, and killed processes.

Processes that change settings are real child processes (tests/journal_child.py) that die the
way a tune can: SIGKILL, SIGTERM, Ctrl-C, or an exit without restoring.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.fixtures.journal_v1 import write_journal_v1
from tests.journal_child import parse
from tests.loopdev import attached_as, backing_file, loop_device
from tests.netns import host_sysctl, network_namespace, sysctl_in
from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import attach, detach
from tuner.process import process_start_time
from tuner.tunables.access import Tunables
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal, Session, recover

FIXTURE_SETTINGS = ("block.read_ahead_kb=loop3=4096", "vm.dirty_ratio=host=40",
                    "block.scheduler=loop3=mq-deadline")  # fmt: skip


def child(
    root: Path | str, mode: str, *settings: str, netns: str | None = None
) -> subprocess.Popen[str]:
    """Start tests/journal_child.py (inside network namespace `netns`, if given) and wait
    until it has applied its settings."""
    inside = [] if netns is None else ["ip", "netns", "exec", netns]
    proc = subprocess.Popen(
        [*inside, sys.executable, "-m", "tests.journal_child", str(root), mode, *settings],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "applied":
        proc.kill()
        raise AssertionError(f"child did not apply: {line!r} {proc.communicate()[1]}")
    return proc


def engine_factory(journal: Journal):  # type: ignore[no-untyped-def]
    return lambda root: TunableEngine(root, journal)


def read_all(root: Path | str, settings: tuple[str, ...]) -> list[object]:
    tunables = Tunables(root)
    return [tunables.read(*word.split("=")[:2]) for word in settings]


# -- the database ----------------------------------------------------------------------------


def test_database_is_durable_and_private(state: Path) -> None:
    with Journal() as journal:
        assert journal.path == state / "state.db"
        assert journal.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert journal.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (state / "state.db").stat().st_mode & 0o777 == 0o600


def test_path_can_be_given(tmp_path: Path) -> None:
    with Journal(tmp_path / "elsewhere" / "j.db") as journal:
        journal.session("/")
    assert (tmp_path / "elsewhere" / "j.db").exists()


def test_one_session_per_process_and_root(state: Path) -> None:
    with Journal(command="iotuner tune") as journal:
        first = journal.session("/")
        assert journal.session("/") == first
        assert journal.session("/srv/capture") != first
        (live, _) = journal.sessions()
        assert (live.pid, live.command, live.root) == (os.getpid(), "iotuner tune", "/")
        assert live.start_time == process_start_time(os.getpid())
        assert journal.is_alive(live)


def test_a_reused_pid_is_not_the_session(state: Path) -> None:
    with Journal() as journal:
        live = journal.sessions()[0] if journal.sessions() else None
        assert live is None
        me = Session(1, os.getpid(), process_start_time(os.getpid()), None, "/", "x", "", None)
        assert journal.is_alive(me)
        # Same pid, another start time: the pid was reused by this process.
        assert not journal.is_alive(Session(1, os.getpid(), 1, None, "/", "x", "", None))
        assert not journal.is_alive(Session(1, os.getpid(), me.start_time, "other-boot", "/",
                                            "x", "", None))  # fmt: skip


def test_dead_and_zombie_processes_are_gone() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    started = process_start_time(proc.pid)
    assert started is not None
    proc.kill()
    time.sleep(0.2)  # killed but not reaped: a zombie
    assert process_start_time(proc.pid) is None
    proc.wait()
    assert process_start_time(proc.pid) is None


# -- originals before the change -------------------------------------------------------------


def test_originals_are_committed_before_the_values_change(state: Path, host: SysTree) -> None:
    """While the child sleeps after applying, another connection sees every original."""
    before = read_all(host.root, FIXTURE_SETTINGS)
    proc = child(host.root, "sleep", *FIXTURE_SETTINGS)
    try:
        db = sqlite3.connect(state / "state.db")
        rows = db.execute("SELECT key, original, written_at FROM changes ORDER BY seq").fetchall()
        db.close()
    finally:
        proc.kill()
        proc.wait()
    # In apply order: the scheduler first, readahead last (tuner.tunables.table.apply_rank).
    assert [row[0] for row in rows] == ["block.scheduler", "vm.dirty_ratio", "block.read_ahead_kb"]
    assert sorted(row[1] for row in rows) == sorted(f"{v!r}".replace("'", '"') for v in before)
    assert all(row[2] for row in rows)


# -- recovery --------------------------------------------------------------------------------


def test_recover_restores_dead_sessions_newest_first(state: Path, host: SysTree) -> None:
    before = read_all(host.root, FIXTURE_SETTINGS)
    child(host.root, "exit", *FIXTURE_SETTINGS).wait()
    child(host.root, "exit", "block.read_ahead_kb=loop3=8192").wait()
    assert read_all(host.root, FIXTURE_SETTINGS)[0] == 8192
    with Journal() as journal:
        results = recover(engine_factory(journal), journal)
        assert [r.outcome for r in results] == ["restored"] * 4
        assert [r.change.id for r in results] == sorted(
            (r.change.id for r in results), reverse=True
        )
        assert journal.open_changes() == []
        assert recover(engine_factory(journal), journal) == []
    assert read_all(host.root, FIXTURE_SETTINGS) == before


def test_recover_leaves_live_sessions_alone(state: Path, host: SysTree) -> None:
    proc = child(host.root, "sleep", *FIXTURE_SETTINGS)
    try:
        with Journal() as journal:
            assert recover(engine_factory(journal), journal) == []
            assert len(journal.open_changes()) == 3
            taken = recover(engine_factory(journal), journal, include_live=True)
            assert [r.outcome for r in taken] == ["restored"] * 3
    finally:
        proc.kill()
        proc.wait()


def test_changes_of_an_earlier_boot_are_dropped_unwritten(state: Path, host: SysTree) -> None:
    child(host.root, "exit", "block.read_ahead_kb=loop3=4096").wait()
    with Journal() as journal:
        journal.db.execute("UPDATE sessions SET boot_id = 'an-earlier-boot'")
        (result,) = recover(engine_factory(journal), journal)
        assert result.outcome == "reboot"
    assert Tunables(host.root).read("block.read_ahead_kb", "loop3") == 4096


def test_a_vanished_device_is_closed_and_a_refusal_kept_open(state: Path, host: SysTree) -> None:
    child(host.root, "exit", "block.read_ahead_kb=loop3=4096", "vm.dirty_ratio=host=40").wait()
    os.rename(host.root / "sys/block/loop3", host.root / "sys/block/loop3.gone")
    ratio = host.root / "proc/sys/vm/dirty_ratio"
    if subprocess.run(["chattr", "+i", str(ratio)], capture_output=True).returncode != 0:
        pytest.skip("needs chattr +i to make a write fail")
    try:
        with Journal() as journal:
            results = {r.change.key: r for r in recover(engine_factory(journal), journal)}
            assert results["block.read_ahead_kb"].outcome == "gone"
            assert "no such block device" in results["block.read_ahead_kb"].message
            assert results["vm.dirty_ratio"].outcome == "failed"
            assert "not permitted here" in results["vm.dirty_ratio"].message
            assert [c.key for c in journal.open_changes()] == ["vm.dirty_ratio"]
    finally:
        subprocess.run(["chattr", "-i", str(ratio)], check=True)
    with Journal() as journal:
        assert [r.outcome for r in recover(engine_factory(journal), journal)] == ["restored"]
    assert Tunables(host.root).read("vm.dirty_ratio", "host") == 20


def test_a_device_whose_name_another_took_after_kill_9_is_left_to_it(
    state: Path, host: SysTree
) -> None:
    """The tune died; loop3 was detached and someone attached their own file as loop3. The
    next command writes nothing onto it, says so in one line, and closes the change."""
    attach(host, "loop3", 12)
    child(host.root, "exit", "block.read_ahead_kb=loop3=4096", "vm.dirty_ratio=host=40").wait()
    detach(host, "loop3", 13)
    attach(host, "loop3", 14, backing="/srv/someone-else.img")
    result = iotuner("lab", "down", state=state)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "iotuner: dropped block.read_ahead_kb on loop3: the device was replaced since the "
        "change (diskseq 12 then, 14 now): left as it is",
        "iotuner: restored vm.dirty_ratio on host to 20 (left by session 1)",
    ]
    tunables = Tunables(host.root)
    assert tunables.read("block.read_ahead_kb", "loop3") == 4096, "the new device's own"
    assert tunables.read("vm.dirty_ratio", "host") == 20
    with Journal() as journal:
        assert journal.open_changes() == []
        assert [c.outcome for c in journal.changes(1)] == ["restored", "gone"]


def test_rollback_of_a_replaced_device_says_so_and_is_no_failure(
    state: Path, host: SysTree
) -> None:
    attach(host, "loop3", 12)
    child(host.root, "exit", "block.nomerges=loop3=2").wait()
    attach(host, "loop3", 15)
    result = iotuner("rollback", state=state)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "dropped block.nomerges on loop3: the device was replaced since the change "
        "(diskseq 12 then, 15 now): left as it is"
    ]
    assert Tunables(host.root).read("block.nomerges", "loop3") == 2


# -- a journal an older iotuner wrote ----------------------------------------------------------


def test_a_schema_1_journal_gains_the_columns_and_still_rolls_back(
    state: Path, host: SysTree
) -> None:
    """Written before diskseq and namespaces were kept: its changes restore by name, as they
    did."""
    attach(host, "loop3", 12)
    tunables = Tunables(host.root)
    tunables.write("block.read_ahead_kb", "loop3", 4096)
    tunables.write("vm.dirty_ratio", "host", 40)
    left = [("block.read_ahead_kb", "loop3", 128, 4096), ("vm.dirty_ratio", "host", 20, 40)]
    write_journal_v1(state / "state.db", host.root, left)
    result = iotuner("rollback", "--json", state=state)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(c["key"], c["outcome"]) for c in doc["changes"]] == [
        ("vm.dirty_ratio", "restored"), ("block.read_ahead_kb", "restored")]  # fmt: skip
    assert tunables.read("block.read_ahead_kb", "loop3") == 128
    assert tunables.read("vm.dirty_ratio", "host") == 20
    db = sqlite3.connect(state / "state.db")
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 3
        assert db.execute("SELECT diskseq, netns FROM changes").fetchall() == [
            (None, None), (None, None)]  # fmt: skip
    finally:
        db.close()
    # Opened again (as every command does): nothing to add, nothing refused.
    with Journal() as journal:
        assert len(journal.changes(1)) == 2


def test_a_newer_journals_version_is_not_lowered(state: Path) -> None:
    with Journal() as journal:
        journal.db.execute("PRAGMA user_version=7")
    with Journal() as journal:
        assert journal.db.execute("PRAGMA user_version").fetchone()[0] == 7


# -- killed on a real loop device ------------------------------------------------------------


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device() as name:
        yield name


def loop_settings(loop: str) -> tuple[str, ...]:
    return (f"block.read_ahead_kb={loop}=4096", f"block.scheduler={loop}=mq-deadline",
            f"block.nr_requests={loop}=64")  # fmt: skip


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device and journal; values, no figure or time
def test_kill_9_then_rollback_puts_every_value_back(state: Path, loop: str) -> None:
    settings = loop_settings(loop)
    before = read_all("/", settings)
    proc = child("/", "sleep", *settings)
    assert read_all("/", settings) == [4096, "mq-deadline", 64]
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert read_all("/", settings) == [4096, "mq-deadline", 64], "nothing restored them yet"
    result = iotuner("rollback")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("restored ") == 3
    assert read_all("/", settings) == before


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device and journal; values, no figure or time
@pytest.mark.parametrize("after_s", [0.05, 0.2, 0.5])
def test_kill_9_in_the_middle_of_trials(state: Path, loop: str, after_s: float) -> None:
    """A tune applies and restores over and over; wherever SIGKILL lands, rollback recovers."""
    settings = loop_settings(loop)
    before = read_all("/", settings)
    proc = child("/", "trials", *settings)
    time.sleep(after_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result = iotuner("rollback", "--json")
    assert result.returncode == 0, result.stderr
    assert read_all("/", settings) == before


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own loop device and journal; values, no figure or time
@pytest.mark.parametrize(("signo", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_restore_by_themselves(
    state: Path, loop: str, signo: int, code: int
) -> None:
    settings = loop_settings(loop)
    before = read_all("/", settings)
    proc = child("/", "signals", *settings)
    proc.send_signal(signo)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert stderr.strip() == f"iotuner: {signal.Signals(signo).name}, restored 3 setting(s)"
    assert read_all("/", settings) == before
    with Journal() as journal:
        assert journal.open_changes() == []


# -- a loop device's name taken by another file ---------------------------------------------

REPLACED = "the device was replaced since the change"


def replaced_lines(loop: str, keys: tuple[str, ...], then: int) -> list[str]:
    """The lines a restore says, one per value it left to the new device."""
    now = int(Path(f"/sys/block/{loop}/diskseq").read_text())
    return [f"{key} on {loop}: {REPLACED} (diskseq {then} then, {now} now): left as it is"
            for key in keys]  # fmt: skip


def need_diskseq(loop: str) -> int:
    """The loop device's diskseq; skip on a kernel before 5.15, which has none."""
    path = Path(f"/sys/block/{loop}/diskseq")
    if not path.exists():
        pytest.skip("needs Linux 5.15 or later (/sys/block/NAME/diskseq)")
    return int(path.read_text())


@pytest.mark.lab
def test_restore_leaves_a_loop_device_attached_again_to_its_new_file(
    state: Path, loop: str
) -> None:
    """A trial's device is detached and another file attached under its name (as another
    process's `losetup` would): the restore writes nothing onto it and says why."""
    settings = loop_settings(loop)
    then = need_diskseq(loop)
    with Journal() as journal:
        engine = TunableEngine(Path("/"), journal)
        engine.apply(dict(parse(settings)))
        subprocess.run(["losetup", "--detach", f"/dev/{loop}"], check=True)
        with attached_as(loop):
            # A loop device keeps its queue from one file to the next: the new one runs
            # with the trial's values, and they are its user's business now.
            assert read_all("/", settings) == [4096, "mq-deadline", 64]
            assert engine.restore() == []
            assert engine.replaced == replaced_lines(
                loop, ("block.read_ahead_kb", "block.nr_requests", "block.scheduler"), then
            )
            assert read_all("/", settings) == [4096, "mq-deadline", 64]
            assert journal.open_changes() == []


@pytest.mark.lab
def test_kill_9_then_a_new_file_under_the_name_then_rollback_writes_nothing(
    state: Path, loop: str
) -> None:
    settings = loop_settings(loop)
    then = need_diskseq(loop)
    proc = child("/", "sleep", *settings)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    subprocess.run(["losetup", "--detach", f"/dev/{loop}"], check=True)
    with attached_as(loop):
        result = iotuner("rollback", state=state)
        assert result.returncode == 0, result.stderr
        keys = ("block.read_ahead_kb", "block.nr_requests", "block.scheduler")
        assert result.stdout.splitlines() == [
            f"dropped {line}" for line in replaced_lines(loop, keys, then)
        ]
        assert read_all("/", settings) == [4096, "mq-deadline", 64]
        again = iotuner("rollback", state=state)
        assert (again.returncode, again.stdout.strip()) == (0, "nothing to roll back")


@pytest.mark.lab
def test_kill_9_then_a_detach_then_rollback_puts_the_free_devices_values_back(
    state: Path, loop: str
) -> None:
    """Detached and not attached again: nobody's, and its next user takes its queue as it is
    left, so it gets back what was found (as before diskseq was kept)."""
    settings = loop_settings(loop)
    need_diskseq(loop)
    before = read_all("/", settings)
    proc = child("/", "sleep", *settings)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    subprocess.run(["losetup", "--detach", f"/dev/{loop}"], check=True)
    result = iotuner("rollback", state=state)
    if backing_file(loop) is not None:
        # Another process's `losetup -f` took the freed name first: the rollback left it
        # alone (as the tests above show), and there is nothing here to measure.
        pytest.skip(f"{loop} was taken by another process: {result.stdout.strip()}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("restored ") == 3, result.stdout
    assert read_all("/", settings) == before


# -- killed while a network namespace's sysctl is changed --------------------------------------


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace and journal; the host's value only read
def test_kill_9_then_rollback_puts_a_namespace_value_back(state: Path) -> None:
    """The journal keeps the netns:NAME target; rollback enters the namespace again."""
    key = "net.ipv4.tcp_rmem"
    with network_namespace() as name:
        before = sysctl_in(name, key)
        host_before = host_sysctl(key)
        proc = child("/", "sleep", f"{key}=netns:{name}=4096 87380 174760")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
        assert sysctl_in(name, key) == "4096 87380 174760", "nothing restored it yet"
        result = iotuner("rollback")
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("restored ") == 1
        assert sysctl_in(name, key) == before
        assert host_sysctl(key) == host_before


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace and journal; the host's value only read
def test_rollback_from_another_namespace_leaves_both_alone(state: Path) -> None:
    """A tune run inside a namespace journals its "host" keys under target host: a rollback
    run from the host (or any other namespace) must not write them there. From the namespace
    the change was made in, it restores."""
    key = "net.ipv4.tcp_wmem"
    with network_namespace() as name:
        before, host_before = sysctl_in(name, key), host_sysctl(key)
        proc = child("/", "sleep", f"{key}=host=4096 16384 131072", netns=name)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
        assert sysctl_in(name, key) == "4096 16384 131072"
        result = iotuner("rollback")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"left {key} on host: another network namespace than "
                                        "the change was made in (id "), result.stdout  # fmt: skip
        assert result.stdout.rstrip().endswith("left for a rollback from there")
        assert host_sysctl(key) == host_before, "the host got the namespace's original"
        assert sysctl_in(name, key) == "4096 16384 131072"
        # Left open, not closed as gone: the namespace it belongs to is still there.
        result = iotuner("rollback", netns=name)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("restored ") == 1, result.stdout
        assert sysctl_in(name, key) == before
        assert host_sysctl(key) == host_before


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace and journal
def test_a_namespace_made_again_under_its_name_is_not_the_one_changed(state: Path) -> None:
    """`ip netns delete` and `add` of the same name give a new namespace with the kernel's
    defaults: the old one's original is not written into it."""
    key = "net.ipv4.tcp_rmem"
    with network_namespace() as name:
        child("/", "exit", f"{key}=netns:{name}=4096 87380 174760").wait()
        subprocess.run(["ip", "netns", "delete", name], check=True, timeout=10)
        subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
        subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", f"{key}=4096 4096 8192"],
                       check=True, timeout=10)  # fmt: skip
        result = iotuner("rollback")
        assert result.returncode == 0, result.stderr
        dropped = f"dropped {key} on netns:{name}: another network namespace than the change"
        assert result.stdout.startswith(dropped), result.stdout
        assert sysctl_in(name, key) == "4096 4096 8192"
        assert iotuner("rollback").stdout.strip() == "nothing to roll back"


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own namespace and journal
def test_a_namespace_deleted_after_kill_9_is_closed_as_gone(state: Path) -> None:
    """Deleting the namespace took its value with it: nothing is left to restore."""
    with network_namespace() as name:
        child("/", "exit", f"net.ipv4.tcp_wmem=netns:{name}=4096 16384 131072").wait()
    with Journal() as journal:
        (result,) = recover(engine_factory(journal), journal)
        assert result.outcome == "gone"
        assert "the network namespace the change was made in" in result.message
        assert "is gone: left as it is" in result.message
        assert journal.open_changes() == []
