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
from tuner.trials import TrialTarget, run_trial
from tuner.trials.dataset import CacheModel
from tuner.trials.memcap import PREFIX, backend

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
