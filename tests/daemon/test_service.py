"""`iotuner daemon` as a user runs it: a real process on real loop devices and the lab.

Each test starts the daemon as `python -m tuner.cli daemon --config FILE` with a private state
directory, a notify socket standing in for systemd, and asks it things through `iotuner
status`. The issue's list: a setting reset behind its back comes back; a disk added to a known
class gets the plan; SIGTERM in the middle of a trial leaves the original values (and kill -9
of everything, then a new start, does too); a non-root client is refused; a broken config is
refused at start with file, line and reason, and on SIGHUP the running daemon keeps its own.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.loops import Loops
from tests.daemon.plans import HELD, SIZE_MB, apply, block_plan, queue, set_queue
from tests.nobody import run_as_nobody
from tuner.tunables.journal import Journal

# Parallel-safe: each daemon has its own state directory, socket, loop devices in a private
# directory (the class it holds) or lab, and asserts events, not figures.
pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]

REPO = Path(__file__).resolve().parents[2]


def wait_for(what: str, check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll `check` until it returns something true; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


@dataclass
class Running:
    """A daemon process and what it was given."""

    proc: subprocess.Popen[str]
    config: Path
    socket: Path
    env: dict[str, str]
    notify: socket.socket
    notes: list[str] = field(default_factory=list)

    def status(self, *args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
        """`iotuner status --socket S ARGS` in a process of its own."""
        return subprocess.run(
            [sys.executable, "-m", "tuner.cli", "status", "--socket", str(self.socket), *args],
            env=self.env, capture_output=True, text=True, timeout=30, user=user, cwd="/",
        )  # fmt: skip

    def state(self) -> dict[str, Any]:
        """The daemon's state as `iotuner status --json` gives it."""
        done = self.status("--json", "--events", "50")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def events(self, kind: str) -> list[dict[str, Any]]:
        """Recent events of one kind."""
        return [e for e in self.state()["events"] if e["kind"] == kind]

    def notified(self, timeout: float = 10.0) -> list[str]:
        """Every sd_notify line received so far (waiting up to `timeout` for the first)."""
        self.notify.settimeout(timeout)
        try:
            while True:
                self.notes += self.notify.recv(4096).decode().split("\n")
                self.notify.settimeout(0.05)
        except (TimeoutError, BlockingIOError):
            pass
        return self.notes

    def stop(self, signo: int = signal.SIGTERM, timeout: float = 120) -> int:
        """Send `signo` and wait for the exit code."""
        self.proc.send_signal(signo)
        return self.proc.wait(timeout=timeout)


@pytest.fixture
def journal_path(state: Path) -> Path:
    state.mkdir(mode=0o700, exist_ok=True)
    return state / "state.db"


@pytest.fixture
def start(tmp_path: Path, state: Path, loops: Loops) -> Iterator[Callable[..., Running]]:
    """Start a daemon with a config made of `sections` (TOML text); stopped after the test.

    It asks for `loops` so that the daemon is stopped before the loop devices are put back:
    a daemon still holding its plan would write it again between the reset and the detach,
    and the next test to get that loop number would find mq-deadline and 4092 KB on it.
    """
    started: list[Running] = []

    def run(sections: str = "", watchdog_s: float = 2.0, socket_dir: Path | None = None) -> Running:
        sock = (socket_dir or tmp_path) / f"d{len(started)}.sock"
        config = tmp_path / f"iotuner-{len(started)}.toml"
        config.write_text(f'[daemon]\nsocket = "{sock}"\ndrift_interval = 1.0\n{sections}')
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify_path = tmp_path / f"notify-{len(started)}"
        notify.bind(str(notify_path))
        env = {**os.environ, "IOTUNER_STATE_DIR": str(state), "NOTIFY_SOCKET": str(notify_path),
               "WATCHDOG_USEC": str(int(watchdog_s * 1e6)), "PYTHONPATH": str(REPO)}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "daemon", "--config", str(config)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        env.pop("WATCHDOG_USEC")
        running = Running(proc, config, sock, env, notify)
        started.append(running)
        wait_for("READY=1", lambda: "READY=1" in running.notified(30) or proc.poll() is not None,
                 timeout=60)  # fmt: skip
        assert proc.poll() is None, proc.communicate()[1]
        return running

    yield run
    for running in started:
        if running.proc.poll() is None:
            running.stop(signal.SIGKILL)
        running.notify.close()


@pytest.fixture
def disk(loops: Loops) -> str:
    return loops.attach(loops.directory(), SIZE_MB)


def test_a_setting_reset_behind_its_back_is_restored_and_reported(
    start: Callable[..., Running], disk: str, journal_path: Path, tmp_path: Path
) -> None:
    apply(journal_path, block_plan(disk), tmp_path)
    daemon = start()
    notes = daemon.notified()
    assert "READY=1" in notes and any(n.startswith("STATUS=holding: 3 setting") for n in notes)
    state = daemon.state()
    assert state["state"] == "holding" and state["plan"]["apply_id"] == 1
    assert all(h["ok"] for h in state["held"]) and len(state["held"]) == 3

    set_queue(disk, "read_ahead_kb", 128)
    wait_for("the readahead restored", lambda: queue(disk) == HELD, timeout=5)
    drift = wait_for("a drift event", lambda: daemon.events("drift"))
    assert f"{disk}: block.read_ahead_kb read 128, plan holds 4092: restored" in drift[0]["message"]
    assert "another process" in drift[0]["message"]
    shown = daemon.status()
    assert shown.returncode == 0 and "holding" in shown.stdout and "read 128" in shown.stdout

    # The watchdog is fed at half its interval (2 s here) while the daemon is idle: twice
    # within 2.5 s, waited for rather than slept.
    wait_for("two watchdog pings", lambda: daemon.notified().count("WATCHDOG=1") >= 2, 2.5)
    assert daemon.stop() == 0
    assert "STOPPING=1" in daemon.notified()
    assert not daemon.socket.exists(), "the socket goes with the daemon"


def test_a_disk_added_to_a_known_class_gets_the_plan(
    start: Callable[..., Running], loops: Loops, disk: str, journal_path: Path, tmp_path: Path
) -> None:
    apply(journal_path, block_plan(disk), tmp_path)
    daemon = start()
    directory = Path(loops.dirs[0])
    added = loops.attach(directory, SIZE_MB)
    wait_for(f"{added} given the plan", lambda: queue(added) == HELD, timeout=10)
    hotplug = wait_for("a hotplug event", lambda: daemon.events("hotplug"))
    assert added in hotplug[-1]["message"] and disk in hotplug[-1]["message"]
    held = {(h["key"], h["target"]) for h in daemon.state()["held"]}
    assert ("block.read_ahead_kb", added) in held, "the new disk is held from now on"
    stranger = loops.attach(loops.directory(), SIZE_MB)  # same size, another "bus"
    time.sleep(1.5)
    assert queue(stranger)["read_ahead_kb"] != "4092"


def test_sighup_with_a_broken_config_keeps_the_running_one(
    start: Callable[..., Running], disk: str, journal_path: Path, tmp_path: Path
) -> None:
    apply(journal_path, block_plan(disk), tmp_path)
    daemon = start()
    good = daemon.config.read_text()
    daemon.config.write_text(good + "\n[retune]\nbudget = 1\n")
    daemon.proc.send_signal(signal.SIGHUP)
    error = wait_for("the refusal", lambda: [e for e in daemon.events("error")
                                             if "reload refused" in e["message"]])  # fmt: skip
    line = len(good.splitlines()) + 3
    assert f"{daemon.config}:{line}: retune.budget" in error[0]["message"]
    assert daemon.proc.poll() is None
    assert "RELOADING=1" in daemon.notified()
    # Still holding with the old config: a drift is restored within its 1 s interval.
    set_queue(disk, "read_ahead_kb", 256)
    wait_for("the readahead restored", lambda: queue(disk) == HELD, timeout=5)

    daemon.config.write_text(good.replace("drift_interval = 1.0", "drift_interval = 30.0"))
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for("the reload", lambda: daemon.events("config"))
    assert daemon.stop() == 0


def test_a_broken_config_is_refused_at_start_with_file_line_and_reason(
    tmp_path: Path, state: Path
) -> None:
    config = tmp_path / "iotuner.toml"
    config.write_text('[daemon]\ndrift_interval = "often"\n')
    done = subprocess.run([sys.executable, "-m", "tuner.cli", "daemon", "--config", str(config)],
                          env={**os.environ, "IOTUNER_STATE_DIR": str(state)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert f"{config}:2: daemon.drift_interval" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not state.exists(), "nothing was created"


def test_a_client_that_is_not_root_is_refused(
    start: Callable[..., Running], disk: str, journal_path: Path, tmp_path: Path
) -> None:
    apply(journal_path, block_plan(disk), tmp_path)
    daemon = start()
    assert daemon.socket.stat().st_mode & 0o777 == 0o600
    import tuner.commands.status
    import tuner.daemon.control  # noqa: F401

    code, said = run_as_nobody("status", "--socket", str(daemon.socket))
    assert code == 1, said
    assert "only root" in said and str(daemon.socket) in said
    assert daemon.status().returncode == 0, "root still gets in"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become nobody")
def test_a_stranger_refused_by_uid_is_an_event_of_the_daemon(
    start: Callable[..., Running],
) -> None:
    from tests.daemon.test_control import finish, request_as_nobody

    where = Path(tempfile.mkdtemp(prefix="iotuner-svc-"))
    try:
        where.chmod(0o755)
        daemon = start(socket_dir=where)
        daemon.socket.chmod(0o666)  # an admin's mistake: the uid check holds, and is reported
        pid, fd = request_as_nobody(daemon.socket)
        code, message = finish(pid, fd)
        assert code == 1, message
        refused = wait_for("the refusal as an event", lambda: [
            e for e in daemon.events("error") if f"refused pid {pid}" in e["message"]
        ])  # fmt: skip
        assert refused[0]["data"]["uid"] == pwd.getpwnam("nobody").pw_uid
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _trialling(journal_path: Path, daemon_pid: int) -> bool:
    """True while a live process other than the daemon has values changed for a trial."""
    with Journal(journal_path) as journal:
        sessions = {s.id: s for s in journal.sessions()}
        return any(
            sessions[c.session].pid != daemon_pid and journal.is_alive(sessions[c.session])
            for c in journal.open_changes()
            if c.written_at is not None
        )


@pytest.fixture
def lab_disk(state: Path) -> Iterator[str]:
    """The lab's single-disk (throttled: trials take their full runtime)."""
    from tuner.lab.session import lab_session

    with lab_session("single-disk") as lab:
        yield lab.disks[0].device.removeprefix("/dev/")


RETUNE = """
[workload]
sample_interval = 0.5
window = 1.0
[retune]
enabled = true
target = "/dev/{disk}"
budget = 3
runtime = 2.0
max_seconds = 120.0
idle_seconds = 0.5
"""


@pytest.mark.parametrize("how", ["sigterm", "kill-everything"])
def test_a_trial_in_progress_leaves_the_original_values(
    how: str, start: Callable[..., Running], lab_disk: str, journal_path: Path, tmp_path: Path
) -> None:
    """SIGTERM: the daemon stops the tune, which restores, then exits 0. kill -9 of the
    daemon and its tune together (a crash, an OOM kill of the unit): the next start does."""
    apply(journal_path, block_plan(lab_disk), tmp_path)
    daemon = start(RETUNE.format(disk=lab_disk))
    asked = daemon.status("--json")  # the daemon answers before the re-tune is asked
    assert asked.returncode == 0
    from tuner.daemon.control import request

    reply = request(daemon.socket, {"cmd": "retune", "workload": "stream-read"})
    assert reply["ok"], reply
    # The baseline's trials change nothing: wait for a search trial that changed the disk.
    wait_for("a trial that changed the disk",
             lambda: queue(lab_disk) != HELD and _trialling(journal_path, daemon.proc.pid),
             timeout=120)  # fmt: skip
    if how == "sigterm":
        assert daemon.stop() == 0
        assert queue(lab_disk) == HELD
        stops = [line for line in daemon.proc.communicate()[1].splitlines() if "retune" in line]
        # The tune child's own last words: the trial's settings, put back on SIGTERM.
        said = [re.search(r"SIGTERM, restored (\d+) setting", line) for line in stops]
        assert any(m and int(m.group(1)) >= 1 for m in said), stops
        return
    import psutil

    everything = [psutil.Process(daemon.proc.pid)]
    everything += everything[0].children(recursive=True)  # the tune and its fio
    for proc in everything:
        proc.kill()
    daemon.proc.wait(timeout=30)
    assert queue(lab_disk) != HELD, "nothing restored by a killed process"
    again = start()
    wait_for("the values back", lambda: queue(lab_disk) == HELD, timeout=10)
    restored = [e for e in again.events("start") if "restored" in e["message"]]
    assert restored, again.events("start")
    assert again.stop() == 0


WATCH = """
[workload]
sample_interval = 0.5
window = 1.5
"""


def test_a_sustained_workload_is_classified_and_advised_on(
    start: Callable[..., Running], disk: str, journal_path: Path, tmp_path: Path
) -> None:
    apply(journal_path, block_plan(disk), tmp_path)
    daemon = start(WATCH)
    subprocess.run(
        ["fio", "--name=db", f"--filename=/dev/{disk}", "--rw=randread", "--bs=4k",
         "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based", "--runtime=4",
         "--output-format=json"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    seen = wait_for("the workload class", lambda: daemon.events("workload"), timeout=10)
    assert seen[-1]["data"]["workload"] == "random-read", seen
    assert daemon.state()["workload"]["class"] == "random-read"
    advised = wait_for("advise's findings", lambda: daemon.events("advise"), timeout=60)
    assert "random-read" in advised[-1]["message"]
    assert not daemon.events("retune"), "re-tuning is off by default"
