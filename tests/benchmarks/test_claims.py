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

from benchmarks.claims import (
    ROWS,
    WARM_RAMP_S,
    ClaimRow,
    Plan,
    RowResult,
    memory_cgroup,
    oom_kills,
    plain_fio,
    ramp_s,
    table,
)
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


def row(name: str) -> ClaimRow:
    """The claims row of that name."""
    return next(r for r in ROWS if r.name == name)


def test_the_cgroup_holds_productions_cache_and_fio_beside_it_whatever_its_jobs() -> None:
    """fio's twelve stream jobs used 6-7 MiB together (memory.stat's total_rss, 2026-11-29):
    at 8 MiB a job the twelve-stream row's cgroup held 150 MiB of page cache for production's
    64, and the plan's readahead measured x2.46 there against its x1.91 claim."""
    for name in ("hdd-streams-6", "hdd-streams-12", "hdd5400-streams-3", "mmap-random"):
        claim = row(name)
        assert claim.cache_memory is not None
        assert claim.cgroup_limit == claim.cache_memory + 16 * 2**20, name


def test_a_side_killed_for_memory_measures_nothing_and_says_so() -> None:
    """Twelve streams with TuneD's 4 MiB readahead lock more pages under I/O than production's
    64 MiB hold, and the cgroup kills fio: that side measures 0, never a ratio of infinity."""
    tuned_killed = RowResult(
        "hdd-streams-12", "MB/s", chosen=True, claimed=1.91, ci=(1.73, 2.12),
        changes=["block.read_ahead_kb=1656"], defaults=[38.1, 38.7, 38.4],
        planned=[75.9, 70.9, 72.0], tuned=[0.0, 0.0, 0.0],
    )  # fmt: skip
    assert tuned_killed.holds and tuned_killed.versus_tuned is None
    assert "| TuneD's killed for memory |" in table([tuned_killed]).splitlines()[2]
    defaults_killed = RowResult("drawn", "MB/s", chosen=True, defaults=[0.0, 0.0],
                                planned=[50.0, 51.0])  # fmt: skip
    assert defaults_killed.measured is None and not defaults_killed.holds
    assert "the defaults were killed for memory" in table([defaults_killed])


def test_a_process_the_cgroup_kills_is_counted(tmp_path: Path) -> None:
    """The benchmark tells a run its cgroup killed from any other failure by the cgroup's own
    count (memory.oom_control), not by the signal: a 16 MiB cgroup and a process touching
    64 MiB."""
    with memory_cgroup(16 << 20) as cgroup:
        assert cgroup is not None and oom_kills(cgroup) == 0
        done = subprocess.run(
            ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh",
             sys.executable, "-c", "b = bytearray(64 << 20)"],
            capture_output=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0
        assert oom_kills(cgroup) == 1
    assert oom_kills(None) == 0


def test_only_a_random_reader_in_a_cache_gets_the_ramp_that_turns_its_cache_over() -> None:
    plan = Plan()
    assert ramp_s(row("mmap-random"), plan) == WARM_RAMP_S
    assert ramp_s(row("pread-random"), plan) == WARM_RAMP_S
    # Six streams at 90 MB/s read 15 MB/s each: 16 s of ramp and 10 s of window passed the end
    # of their 341 MiB slices, and each started over (a seek, a window grown again from its
    # start, the device's cache invalidated by fio), which the user's one-pass job never does.
    for name in ("hdd-streams-6", "hdd-streams-12", "hdd5400-streams-3", "hdd-concurrent-streams"):
        assert ramp_s(row(name), plan) == plan.ramp_s, name
    assert ramp_s(row("stream-write"), plan) is None


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


@pytest.fixture
def journal_rolled_back(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A state directory whose journal `iotuner rollback` replays at teardown, whatever the
    test did: registered before anything is applied, so a failure between TuneD's apply and
    the test's own rollback (a check, the child dying before it says "in") cannot leave
    vm.dirty_ratio at 40 with the journal in a tmp directory a later pytest run deletes."""
    state = tmp_path / "state"
    request.addfinalizer(lambda: iotuner("rollback", state=state))
    return state


@pytest.mark.lab
def test_a_killed_run_leaves_tuneds_settings_journaled_and_rollback_puts_them_back(
    tmp_path: Path, journal_rolled_back: Path
) -> None:
    """What the next run starts with (`iotuner rollback`) puts back what a kill -9 inside
    TuneD's settings left on the host."""
    state = journal_rolled_back
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
        assert thresholds() == ("40", "10")  # nothing ran the finally
        done = iotuner("rollback", state=state)
        assert done.returncode == 0, done.stderr
        assert thresholds() == before
        assert ra.read_text().strip() == "128"


def test_a_job_over_many_files_runs_one_pass_not_time_based(tmp_path: Path) -> None:
    """fio 3.33 spins with time_based, ramp_time and file_service_type=random together (unseen
    draw 25's warm run, 235 s past its layout): plain fio over many files stops after one pass
    or the runtime, as the trials' own jobs do, and still reports what it read."""
    job_text = (
        "[small]\nrw=read\nbs=4k\nfilesize=4k\nnrfiles=64\nfile_service_type=random\n"
        f"openfiles=16\nioengine=psync\ndirect=0\ndirectory={tmp_path}\n"
    )
    claim = ClaimRow("small-files", "", job_text, "mnt")
    assert claim.many_files and not row("hdd-streams-6").many_files
    job = tmp_path / "small.fio"
    job.write_text(job_text)
    figure = plain_fio(job, Plan(runtime_s=2.0, ramp_s=0.5), claim, None, "MB/s")
    assert figure > 0
