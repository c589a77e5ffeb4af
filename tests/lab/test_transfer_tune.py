"""`iotuner tune --workload disk-to-network` on a path with Linux 2.6's buffers at both ends:
what a user notices. The transfer crawls at the old windows, the explanation names the
receiver's window as the cap and says how far to raise it, the tune brings the path near its
rate, and both ends hold their own settings again afterwards, also after kill -9 and
`iotuner rollback`.

The path is tests/short_path.py's (200 Mbit/s, 20 ms): the same window cap as the built-in
`wan-old-buffers` (100 ms), where trials sized by the path (issue 28) made this file's first
test take 4 minutes (245 s in CI); at 20 ms the probe takes 2 s and each trial 2 s.
benchmarks/transfer_tune.py runs the full tune on the long path.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.lab.conftest import snapshot
from tests.netns import sysctl_in
from tests.short_path import (
    OLD_RMEM,
    OLD_WMEM,
    PATH_ADDS_MS,
    RATE_MBIT,
    RTT_MS,
    bdp_bytes,
    short_path_spec,
)

pytestmark = pytest.mark.lab

OLD = {"net.ipv4.tcp_rmem": OLD_RMEM, "net.ipv4.tcp_wmem": OLD_WMEM}


def ends(state: Path) -> list[str]:
    return [s.target for s in snapshot(state).steps
            if s.kind == "netns" and s.label in ("sender", "receiver")]  # fmt: skip


def held(state: Path) -> dict[str, dict[str, str]]:
    return {ns: {key: sysctl_in(ns, key) for key in OLD} for ns in ends(state)}


@pytest.mark.end_to_end
def test_a_transfer_tune_lifts_the_window_cap_and_restores_both_ends(state: Path) -> None:
    """The transfer tune end to end, 3 search trials: 45-66 s on the shared VM at load average
    8-13 (245 s in CI on the 100 ms path, 302 s and a timeout here): a 2 s probe, 15 trials
    of 2 s with the baseline and the confirmation, and the parts measured twice for the
    explanation."""
    assert iotuner("lab", "up", str(short_path_spec(state.parent))).returncode == 0
    before = held(state)
    assert all(found == OLD for found in before.values())
    done = iotuner("tune", "--workload", "disk-to-network", "--budget", "3", "--runtime", "1",
                   "--ramp", "1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    explained = doc["transfer"]
    print(f"\ntransfer tune: {doc['baseline']['score']} -> {doc['best']['score']} Mbit/s in "
          f"{doc['seconds']} s; cap before {explained['cap']} ({explained['why']}); after "
          f"{explained['after_cap']}")  # fmt: skip
    assert doc["unit"] == "Mbit/s"
    # The old windows hold it near window / RTT: 40.7 Mbit/s of 200 (2026-11-28).
    assert doc["baseline"]["score"] < 0.3 * RATE_MBIT
    # The window no longer caps it: the path does (after_cap below). The figure is then the
    # path's under a 3-trial budget: 191.2 Mbit/s on this path (2026-11-28, load average 13);
    # on wan-old-buffers 191.3 in the transfer benchmark, 173.3 in a full suite run.
    assert doc["chosen"] and doc["best"]["score"] >= 0.8 * RATE_MBIT
    assert explained["cap"] == "receiver-window"
    assert explained["lift"][0].startswith("raise the receiver's net.ipv4.tcp_rmem max (174760)")
    # The product at the RTT measured: the spec's, plus what the path adds to the delay line.
    needed = explained["needed_window_bytes"]
    assert 0.98 * bdp_bytes() <= needed <= bdp_bytes() * (RTT_MS + PATH_ADDS_MS) / RTT_MS
    assert explained["after_cap"] == "path"
    changed = {c["key"]: c["value"] for c in doc["changes"]}
    # The receiver's window was the cap: its max rose, min and default as they were.
    rmem = changed["net.ipv4.tcp_rmem"]
    assert rmem[:2] == [4096, 87380] and rmem[2] > 174760
    # The trials changed both ends; the tune put back what each held.
    assert held(state) == before
    assert iotuner("lab", "down").returncode == 0


@pytest.mark.lab_parallel
def test_kill_9_mid_tune_then_rollback_restores_both_ends(state: Path) -> None:
    assert iotuner("lab", "up", str(short_path_spec(state.parent))).returncode == 0
    before = held(state)
    child = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "tune", "--workload", "disk-to-network",
         "--budget", "20", "--runtime", "2", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while held(state) == before:  # until a trial's buffers are in place
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    rollback = iotuner("rollback")
    assert rollback.returncode == 0, rollback.stderr
    assert held(state) == before
    assert iotuner("lab", "down").returncode == 0


@pytest.mark.lab_parallel
def test_options_of_fio_trials_are_refused_in_one_line(state: Path) -> None:
    bad = iotuner("tune", "--workload", "disk-to-network", "--io-cap", "10")
    assert bad.returncode == 2
    assert "--io-cap" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    plan = iotuner("tune", "--workload", "disk-to-network", "--plan-out",
                   str(state.parent / "p.yaml"))  # fmt: skip
    assert plan.returncode == 2 and "the lab's namespaces are gone" in plan.stderr
    assert not (state / "lab.json").exists()  # refused before any lab came up
