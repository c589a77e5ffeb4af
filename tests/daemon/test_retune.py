"""The daemon's advise and bounded re-tune: real `python -m tuner.cli` children, driven the way
the daemon's loop drives them (select on fileno(), poll(now)), on the lab's single-disk."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.loopdev import loop_device, need_root
from tuner.daemon.child import spawn
from tuner.daemon.config import OnlineSection, RetuneSection
from tuner.daemon.events import Event
from tuner.daemon.retune import PLAN_NAME, Retune
from tuner.daemon.workload import WorkloadWatch
from tuner.lab.session import lab_session

FINGERPRINT = Path(__file__).resolve().parents[1] / "fixtures" / "daemon" / "fingerprint-a1.json"
QUEUE = ("read_ahead_kb", "nr_requests", "max_sectors_kb", "scheduler")


def queue_of(name: str) -> dict[str, str]:
    return {attr: Path(f"/sys/block/{name}/queue/{attr}").read_text().strip() for attr in QUEUE}


def config(target: str, **changes: object) -> RetuneSection:
    """A tiny re-tune: budget 3, 1 s trials, --time 1 (one search trial), 60 MB a trial."""
    values: dict[str, object] = dict(enabled=True, target=target, budget=3, runtime=1.0,
                                     max_seconds=1.0, idle_util_percent=10.0, idle_seconds=1.0,
                                     io_cap_mb=60, apply=False)  # fmt: skip
    values.update(changes)
    return RetuneSection(**values)  # type: ignore[arg-type]


def drive(
    retune: Retune, until: Callable[[list[Event]], bool], timeout: float,
    idle: Callable[[], float | None] = lambda: None,
) -> list[Event]:  # fmt: skip
    """The daemon's loop in small: wait on the child's stdout (or 0.2 s), then poll."""
    events: list[Event] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        fd = retune.fileno()
        if fd is None:
            time.sleep(0.2)
        else:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                selector.select(0.5)
        events += retune.poll(time.time(), idle())
        if until(events):
            return events
    raise AssertionError(f"timed out; events so far: {[e.message for e in events]}")


def finished(events: list[Event]) -> bool:
    return any(e.data.get("state") in ("finished", "stopped", "failed", "busy") for e in events)


# -- requests that are refused, without a child --------------------------------------------


def test_what_cannot_run_is_refused_with_an_event(tmp_path: Path) -> None:
    retune = Retune(tmp_path)
    # "mixed" is a class the watcher reports only if the rule base had such a profile.
    (refused,) = retune.start("mixed", config("/dev/null"), ["sdx"])
    assert "no mixed profile" in refused.message and refused.data["ok"] is False
    (refused,) = retune.start("stream-read", config(""), ["sdx"])
    assert "retune.target is not set" in refused.message
    (refused,) = retune.start("stream-write", config("/dev/null"), ["sdx"])
    assert "must be a directory" in refused.message
    (refused,) = retune.start("random-write", config("/dev/null"), ["sdx"])
    assert "must be a directory" in refused.message
    (skipped,) = retune.advise("mixed")
    assert skipped.kind == "advise" and skipped.data["ok"] is False
    assert retune.state() is None and retune.fileno() is None


def test_one_retune_at_a_time_and_a_waiting_one_takes_the_newest_workload(tmp_path: Path) -> None:
    retune = Retune(tmp_path)
    (waiting,) = retune.start("stream-read", config(str(tmp_path)), ["sdx"])
    assert waiting.kind == "retune" and waiting.data["state"] == "waiting-idle"
    (again,) = retune.start("stream-read", config(str(tmp_path)), ["sdx"])
    assert "already waiting" in again.message
    (moved,) = retune.start("random-read", config(str(tmp_path)), ["sdx"])
    assert "now for random-read (was stream-read)" in moved.message
    assert retune.poll(time.time(), 0.5) == []  # not idle long enough: nothing starts
    state = retune.state()
    assert state is not None and state["state"] == "waiting-idle"
    assert state["workload"] == "random-read" and state["idle_seconds"] == 0.5
    (dropped,) = retune.terminate()
    assert dropped.data["state"] == "cancelled" and retune.fileno() is None


def test_a_capture_that_writes_needs_a_directory_and_a_warm_start_searches_nothing(
    tmp_path: Path,
) -> None:
    retune = Retune(tmp_path)
    writing = tmp_path / "writes.json"
    doc = json.loads(FINGERPRINT.read_text())
    doc["devices"][0]["read_share"] = doc["devices"][0]["read_request_share"] = 0.5
    writing.write_text(json.dumps(doc))
    (refused,) = retune.start("captured", config("/dev/null"), ["sdx"], capture=writing)
    assert "its reproduction writes" in refused.message
    (waiting,) = retune.start("captured", config(str(tmp_path)), ["sdx"], capture=writing)
    assert waiting.data["state"] == "waiting-idle"
    retune.terminate()
    remembered = {"memory_id": "ab12cd34ef56ab78", "distance": 0.02, "remembered_gain": 1.1}
    (kept,) = retune.warm("captured", config(str(tmp_path)), ["sdx"], None, remembered)
    assert kept.data["warm_start"] is True and kept.data["trials"] == 0
    assert "no search" in kept.message and "kept the settings in force" in kept.message
    plan = "entries: []\n"
    (waits,) = retune.warm("captured", config(str(tmp_path)), ["sdx"], plan, remembered)
    assert "retune.apply is off" in waits.message and retune.fileno() is None
    assert (tmp_path / PLAN_NAME).read_text() == plan
    last = retune.state()
    assert (
        last is not None and last["warm_start"] is True and last["memory_id"] == "ab12cd34ef56ab78"
    )


# -- advise ----------------------------------------------------------------------------------


def test_advise_reports_the_findings_of_a_real_child(tmp_path: Path) -> None:
    retune = Retune(tmp_path)
    assert retune.advise("random-read") == []
    assert retune.fileno() is not None, "the child's stdout is there to select on"
    events = drive(retune, lambda found: any(e.kind == "advise" for e in found), 60)
    (advised,) = [e for e in events if e.kind == "advise"]
    assert advised.message.startswith("advise for random-read: ")
    assert advised.data["workload"] == "random-read"
    assert set(advised.data["counts"]) <= {"critical", "warning", "info"}
    assert len(advised.data["rules"]) == min(sum(advised.data["counts"].values()), 10)
    assert retune.fileno() is None


# -- the child's life ------------------------------------------------------------------------


def test_a_child_gets_sigterm_when_the_daemon_dies(tmp_path: Path) -> None:
    """A stand-in `python` that sleeps, started by spawn() in a process that then exits."""
    sleeper = tmp_path / "python"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    parent = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from tuner.daemon.child import spawn; "
         f"c = spawn('tune', 'w', [], Path({str(tmp_path / 'err')!r}), 60, {str(sleeper)!r}); "
         "print(c.proc.pid)"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    pid = int(parent.stdout)
    end = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < end:
        status = Path(f"/proc/{pid}/stat").read_text().split()
        if status[2] == "Z":  # reaped by init soon; a zombie has already ended
            break
        time.sleep(0.05)
    alive = (
        Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    )
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the orphaned child kept running"


def test_the_child_shares_the_daemons_process_group(tmp_path: Path) -> None:
    # A terminal's Ctrl-C goes to the whole foreground group: the child hears it too.
    child = spawn("advise", "w", ["--version"], tmp_path / "err", 30, sys.executable)
    try:
        assert os.getpgid(child.proc.pid) == os.getpgid(0)
        end = time.monotonic() + 30
        while not child.reap() and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        child.stop(10, "test")  # only if it is still running
    assert child.code == 0 and child.out.startswith(b"iotuner")


# -- on the lab ------------------------------------------------------------------------------


# Its own lab (random id) in its own state directory; the idle gate watches that lab's disk
# alone, which no other test reads; it asserts counts and an interval's order, no rate.
@pytest.mark.lab
@pytest.mark.lab_parallel
def test_retune_waits_for_idle_runs_and_reports_its_figures(state: Path) -> None:
    """~40 s: 10 trials (3 baseline, 1 search trial within --time 1, 3 rounds of 2 to
    confirm), each after the 1 s idle sample of --idle-below; slower on a loaded machine."""
    need_root()
    with lab_session("single-disk") as lab:
        name = lab.disks[0].device.removeprefix("/dev/")
        before = queue_of(name)
        watch = WorkloadWatch([name], 0.5, 60.0)
        retune = Retune()
        (asked,) = retune.start("stream-read", config(lab.disks[0].device), [name],
                                watch.idle_seconds)  # fmt: skip
        assert asked.data["state"] == "waiting-idle"
        watch.sample(time.time())
        assert retune.poll(time.time()) == [], "no idle interval measured yet"
        state_now = retune.state()
        assert state_now is not None and state_now["state"] == "waiting-idle"
        # The watch's samples (every 0.5 s) find the lab disk idle; after 1 s the tune starts.
        started: list[Event] = []
        end = time.monotonic() + 10
        while not started and time.monotonic() < end:
            time.sleep(0.5)
            watch.sample(time.time())
            started = retune.poll(time.time())
        (running,) = started
        assert running.data["state"] == "running" and retune.busy()
        assert retune.fileno() is not None
        events = drive(retune, finished, 240)
        after = queue_of(name)
    (done,) = [e for e in events if finished([e])]
    assert done.kind == "retune" and done.data["state"] == "finished", done.message
    data = done.data
    assert data["baseline_mbps"] > 0 and data["best_mbps"] > 0
    assert data["ci"][0] <= data["gain"] <= data["ci"][1]
    assert data["trials"] == 10 and data["applied"] is False
    assert data["why"] and "not applied" in done.message
    assert (state / PLAN_NAME).exists()
    assert after == before, "the tune put every setting back"
    last = retune.state()
    assert last is not None and last["state"] == "finished" and not retune.busy()


def test_an_online_retune_starts_at_once_on_a_busy_device_and_reports_its_figures(
    state: Path,
) -> None:
    """~15 s: `tune --online` with 2 s slices for at most 10 s, fio reading the device."""
    need_root()
    with loop_device() as name:
        before = queue_of(name)
        load = subprocess.Popen(
            ["fio", "--name=busy", f"--filename=/dev/{name}", "--rw=read", "--bs=1M",
             "--direct=1", "--time_based", "--runtime=120", "--output=/dev/null"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            retune = Retune()
            online = OnlineSection(device=name, slice=2.0, max_seconds=10.0, max_worse=4.0)
            # No target, no idle window: the devices are busy, and that is what it measures.
            events = retune.start("stream-read", config(""), [name], lambda _: 0.0, online=online)
            (running,) = events
            assert running.data["state"] == "running" and running.data["online"] is True
            assert "--online" in " ".join(str(a) for a in retune._child.proc.args)  # type: ignore[union-attr]
            events = drive(retune, finished, 120)
        finally:
            load.terminate()
            load.wait()
        after = queue_of(name)
    (done,) = [e for e in events if finished([e])]
    assert done.data["state"] == "finished", done.message
    assert done.data["online"] is True and done.data["applied"] is False
    assert done.data["seconds"] <= 10.0 + 2.0
    if done.data["kept"]:
        assert done.data["ci"][0] > 1.0 and "kept block." in done.message
    else:
        assert after == before and "kept the settings found" in done.message
