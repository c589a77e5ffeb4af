"""`iotuner tune` for real: the lab's main job, kill -9 mid-tune, bad input.

That a finished tune leaves its device as it found it is checked on the --app-params tune
(tests/commands/test_tune_options.py): it changes the most settings.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import ctrl_c_reaches, iotuner
from tests.loopdev import loop_device

QUEUE = ("read_ahead_kb", "nr_requests", "max_sectors_kb", "scheduler")


def queue_of(name: str) -> dict[str, str]:
    return {attr: Path(f"/sys/block/{name}/queue/{attr}").read_text().strip() for attr in QUEUE}


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own lab; asserts phases and the plan, not figures
@pytest.mark.end_to_end
def test_main_job_tunes_the_lab_and_leaves_nothing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    plan = tmp_path / "plan.yaml"
    # The smallest tune: --time 1 ends the search after its first point (10 trials, not 15);
    # nothing here depends on how many it tried. That the budget bounds the search is checked
    # on the --app-params tune (tests/commands/test_tune_options.py).
    result = iotuner("tune", "--budget", "3", "--runtime", "1", "--ramp", "0", "--time", "1",
                     "--json", "--plan-out", str(plan), state=tmp_path / "state")  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    # The main job: four sequential readers on the lab's modelled hard disk.
    assert doc["workload"] == "concurrent-streams"
    assert doc["baseline"]["mbps"] > 0 and doc["best"]["mbps"] > 0
    assert doc["ci"][0] <= doc["gain"] <= doc["ci"][1]
    phases = {t["phase"] for t in doc["trials"]}
    assert {"baseline", "confirm"} <= phases
    assert 1 <= len([t for t in doc["trials"] if t["phase"] in ("initial", "search")]) <= 3
    # The lab is gone (its disk no longer a lab's; other labs may be up on a shared machine)
    # and the plan says what the tune measured.
    assert not (tmp_path / "state" / "lab.json").exists()
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    disk = [line for line in loops.splitlines() if line.startswith(f"{doc['target']}:")]
    assert not [line for line in disk if "iotuner-lab" in line], disk
    assert "source: tune" in plan.read_text()


@pytest.mark.lab
@pytest.mark.lab_parallel
def test_kill_9_mid_tune_is_rolled_back(tmp_path: Path) -> None:
    with loop_device(256) as name:
        subprocess.run(["dd", "if=/dev/urandom", f"of=/dev/{name}", "bs=1M", "count=256",
                        "status=none"], check=True)  # fmt: skip
        before = queue_of(name)
        state = tmp_path / "state"
        env = {**os.environ, "IOTUNER_STATE_DIR": str(state)}
        child = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "tune", "--target", f"/dev/{name}",
             "--budget", "20", "--runtime", "2", "--json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        try:
            _wait_for_changes(state / "state.db", child)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        rollback = iotuner("rollback", state=state)
        assert rollback.returncode == 0, rollback.stderr
        assert queue_of(name) == before


def _wait_for_changes(db: Path, child: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until the tune has journaled a change that differs from the original."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert child.poll() is None, "the tune ended before it changed anything"
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    rows = con.execute(
                        "SELECT COUNT(*) FROM changes"
                        " WHERE restored_at IS NULL AND written_at IS NOT NULL"
                    ).fetchone()
            except sqlite3.OperationalError:
                rows = None  # the file exists before the journal has made its tables
            if rows and rows[0]:
                time.sleep(0.5)
                return
        time.sleep(0.3)
    raise AssertionError("no change journaled in time")


def test_unknown_workload_and_objective_are_bad_input(tmp_path: Path) -> None:
    bad = iotuner("tune", "--objective", "speed", state=tmp_path)
    assert bad.returncode == 2 and "--objective speed" in bad.stderr
    if os.geteuid() == 0:
        bad = iotuner("tune", "--workload", "nope", state=tmp_path)
        assert bad.returncode == 2 and "unknown workload" in bad.stderr


def test_writes_to_a_device_need_destroy_data(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with loop_device(64) as name:
        result = iotuner("tune", "--target", f"/dev/{name}", "--workload", "stream-write",
                         state=tmp_path)  # fmt: skip
        assert result.returncode == 2
        assert "--destroy-data" in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [((), "modelled hard disk"), (("--workload", "disk-to-network"), "network lab")],
)
def test_a_bare_tune_says_first_what_it_tunes_and_how_to_name_a_target(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    """A bare `iotuner tune` on a production host tunes the lab, not the host: its first line
    says so and names --target (or --peer) before anything is built. Stopped with Ctrl-C as
    soon as that line is read, so no lab comes up (lab status, in its own state, shows none)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    state = tmp_path / "state"
    env = dict(os.environ, IOTUNER_STATE_DIR=str(state))
    command = [sys.executable, "-m", "tuner.cli", "tune", *args]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, preexec_fn=ctrl_c_reaches)  # fmt: skip
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=120)
    assert says in first and "not this host" in first, first
    assert ("--peer" if "network" in says else "--target") in first, first
    assert "no lab" in iotuner("lab", "status", state=state).stdout.lower()
