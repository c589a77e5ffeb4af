"""The claims benchmark: when a row holds, and its TuneD side: applied as an iotuner plan, so
what it replaces on the host comes back with `iotuner rollback`, also after the run is killed
while TuneD's settings are in place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.claims import RowResult, table
from tests.cli import iotuner
from tests.loopdev import loop_device

VM = Path("/proc/sys/vm")
KILLED_INSIDE = """
import sys, time
from pathlib import Path
from benchmarks.claims import tuned_profile
with tuned_profile(sys.argv[1], Path(sys.argv[2])):
    print("in", flush=True)
    time.sleep(60)
"""


def thresholds() -> tuple[str, str]:
    """The host's writeback ratios."""
    ratio, background = (
        (VM / n).read_text().strip() for n in ("dirty_ratio", "dirty_background_ratio")
    )
    return ratio, background


def test_a_plan_measured_below_the_defaults_fails_but_a_kept_row_is_the_rows_noise() -> None:
    same = [65.0, 65.5, 65.1], [65.3, 56.4, 65.3]
    kept = RowResult("raid5-sync-writes", "IOPS", defaults=same[0], planned=same[1])
    worse = RowResult(
        "raid5-sync-writes", "IOPS", chosen=True, claimed=1.02, ci=(0.99, 1.05),
        changes=["block.nr_requests=16"], defaults=same[0], planned=same[1],
    )  # fmt: skip
    assert kept.holds and kept.never_worse
    assert not worse.holds and worse.never_worse is False
    lines = table([kept, worse]).splitlines()
    assert "| kept | yes |" in lines[2]
    assert "| NO | **NO**: the plan measured x0.956 of the defaults: worse |" in lines[3]
    noisy = RowResult("r", "IOPS", defaults=[100.0], planned=[85.0])
    assert not noisy.holds and noisy.never_worse  # more than 10 % apart: still fails


@pytest.mark.lab
def test_a_killed_run_leaves_tuneds_settings_journaled_and_rollback_puts_them_back(
    tmp_path: Path,
) -> None:
    """What the next run starts with (`iotuner rollback`) puts back what a kill -9 inside
    TuneD's settings left on the host."""
    state = tmp_path / "state"
    before = thresholds()
    with loop_device() as name:
        ra = Path("/sys/block", name, "queue/read_ahead_kb")
        ra.write_text("128")
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED_INSIDE, f"/dev/{name}", str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ | {"IOTUNER_STATE_DIR": str(state)},
        )
        try:
            assert child.stdout is not None and child.stdout.readline() == "in\n"
            assert thresholds() == ("40", "10") and ra.read_text().strip() == "4096"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        try:
            assert thresholds() == ("40", "10")  # nothing ran the finally
        finally:
            done = iotuner("rollback", state=state)
        assert done.returncode == 0, done.stderr
        assert thresholds() == before
        assert ra.read_text().strip() == "128"
