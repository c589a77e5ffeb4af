"""A buffered reader whose data set production cannot cache runs in a memory cgroup: its page
cache stays under the limit, read from the cgroup itself, and the cgroup is gone afterwards."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.trials.conftest import Loops
from tuner.rules.model import Workload
from tuner.trials import TrialTarget, dataset, run_trial
from tuner.trials import trial as trial_module
from tuner.trials.dataset import CacheModel
from tuner.trials.flags import OUT_OF_MEMORY
from tuner.trials.memcap import PREFIX, MemoryCap, backend
from tuner.tune.guards import SKIP, policy

pytestmark = pytest.mark.lab
MiB = 1 << 20
# invalidate=0: an application keeps what it cached (fio would drop the file's pages at each
# pass); 64 KiB reads fill a cache in well under the 2 s trial on a busy machine.
RANDOM = Workload("db", "", {"rw": "randread", "bs": "64k", "ioengine": "psync", "direct": 0,
                             "invalidate": 0}, region={"size": "256m"})  # fmt: skip


def data_file(loops: Loops, size: int) -> Path:
    point = loops.mkfs_mount(loops.loop(size + 64 * MiB))
    path = point / "db.dat"
    subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={size // MiB}",
                    "oflag=direct", "status=none"], check=True)  # fmt: skip
    return path


def cached_bytes(path: Path) -> int:
    """The file's bytes in the page cache now (util-linux fincore)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return int(out.split()[0])


class CgroupWatch:
    """Samples, from outside iotuner, the file pages and limit of this process's trial
    cgroups while they exist."""

    def __init__(self) -> None:
        found = backend()
        assert found is not None and found[0] == 1, "the lab VMs have cgroup v1 memory"
        self.root = found[1]
        self.seen: dict[str, tuple[int, int]] = {}  # name -> (most file bytes, limit)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CgroupWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for path in self.root.glob(f"{PREFIX}{os.getpid()}-*"):
                try:
                    stat = dict(
                        line.split() for line in (path / "memory.stat").read_text().splitlines()
                    )
                    limit = int((path / "memory.limit_in_bytes").read_text())
                except (OSError, ValueError):
                    continue
                pages = int(stat["total_active_file"]) + int(stat["total_inactive_file"])
                most, _ = self.seen.get(path.name, (0, limit))
                self.seen[path.name] = (max(most, pages), limit)


def test_the_trials_page_cache_stays_under_production_share(loops: Loops) -> None:
    """256 MiB of data, production caches an eighth (--data-set 2 GiB, --cache-memory
    256 MiB): the trial's cgroup holds 32 MiB of page cache, full, whatever fio itself uses
    (before, a fixed 48 MiB allowance for fio left it room to cache twice its share). The same
    trial without the model (the control) caches far more: the cgroup is what bounds it."""
    path = data_file(loops, 256 * MiB)
    target = TrialTarget.file(path)
    model = CacheModel(data_set_bytes=2 << 30, cache_bytes=256 * MiB)
    with CgroupWatch() as watch:
        result = run_trial(target, RANDOM, None, runtime_s=2, ramp_s=0, cache=model)
    assert result.cache_limit_bytes == 32 * MiB
    ((name, (most, limit)),) = watch.seen.items()
    assert most > 28 * MiB, "the warm-up and the ramp filled the cache"
    # 32 MiB, plus 4 MiB of headroom and fio's own binaries' pages (about 4 MiB).
    assert most <= 42 * MiB, f"the page cache is held at production's share: {most / MiB} MiB"
    assert result.cache_peak_bytes is not None and result.cache_peak_bytes <= 42 * MiB
    assert cached_bytes(path) <= limit
    assert not (watch.root / name).exists(), "the trial's cgroup is removed"
    # Reads beyond an eighth are the device's: not flagged as page cache.
    assert result.flagged is None, result.flagged

    control = run_trial(target, RANDOM, None, runtime_s=2, ramp_s=0)
    assert control.cache_limit_bytes is None
    assert cached_bytes(path) > 1.5 * limit


def test_a_trial_killed_for_memory_is_set_aside_with_its_cause(
    loops: Loops, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point whose reads at once do not fit beside production's cache share gets fio killed
    by the kernel in the trial's cgroup (seen on the lab: a wide readahead under a 75 MiB
    cgroup). The trial is set aside with that cause, not a tune-ending "fio failed: no
    message", and its cgroup is gone. Here the cache's floor and fio's own allowance are taken
    away, so fio's start does not fit in 1 MiB: the kernel's kill is real, only provoked."""
    monkeypatch.setattr(dataset, "MIN_CACHE_BYTES", 0)
    monkeypatch.setattr(trial_module, "FIO_OVERHEAD_BYTES", 0)
    monkeypatch.setattr(trial_module, "HEADROOM", 0)
    path = data_file(loops, 256 * MiB)
    model = CacheModel(data_set_bytes=2 << 30, cache_bytes=8 * MiB)
    with CgroupWatch() as watch:
        result = run_trial(TrialTarget.file(path), RANDOM, None, runtime_s=1, ramp_s=0,
                           cache=model)  # fmt: skip
    assert [flag.kind for flag in result.flags] == [OUT_OF_MEMORY], result.flagged
    assert result.flagged is not None and "killed fio for memory" in result.flagged
    assert policy(result.flags) == SKIP, "the search is told nothing of it"
    assert watch.seen, "the trial ran in its cgroup"
    assert not list(watch.root.glob(f"{PREFIX}{os.getpid()}-*")), "the trial's cgroup is removed"


def test_a_cgroup_counts_the_kernels_kills(tmp_path: Path) -> None:
    """oom_kills reads the kernel's count from either cgroup version's file."""
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 3\noom_kill 1\n")
    assert MemoryCap(tmp_path, 1, 1 << 20).oom_kills() == 2
    assert MemoryCap(tmp_path, 2, 1 << 20).oom_kills() == 1
    assert MemoryCap(tmp_path / "gone", 1, 1 << 20).oom_kills() == 0
