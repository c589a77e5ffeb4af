"""Issue 16's failure cannot recur: a memory-mapped random reader tuned, then re-measured
without iotuner's trial code.

The database-like reader: two jobs of random 4 KiB reads through ioengine=mmap without madvise
hints, over a file four times the page cache production leaves (`--cache-memory`), on a
150 MB/s, 300-IOPS lab disk with xfs. Before, trials served from the page cache won and the
plan measured 0.04 x of the defaults. Now no set-aside trial may win, and a plan that changes
something, measured with plain fio, caches dropped, in a memory cgroup of production's cache the
test makes itself, warmed to a full cache, interleaved with the defaults, is at least 0.98 of
the defaults ("keep" is the defaults).

The trap is the ratio, not the size: readaround fills a cache a quarter of the data set with
pages nobody reads, so 64 MiB through 16 MiB springs it as 256 MiB through 64 MiB did, and a
trial's ramp to turn its cache over scales with the cache (tuner/trials/settle.py). 113 s in
the last suite run at the old size; 61 and 75 s at this one, load average 6.5-7.7 (17 trials,
3 set aside as cache warm-ups: the trap still springs; both plans kept the defaults, so plain
fio had nothing to compare). The rest is the tune's floor: each trial's 2 s settle ramp
(settle.MIN_SETTLE_S) and 1 s window.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import iotuner

pytestmark = pytest.mark.lab
MiB = 1 << 20
SPEC = """\
name: claims-db
description: One 150 MB/s, 300-IOPS disk with xfs.
disks:
  - {name: d0, read_mbps: 150, write_mbps: 150, iops: 300, size: 640MiB, fs: xfs}
"""
JOB = """[db]
rw=randread
bs=4k
ioengine=mmap
fadvise_hint=0
numjobs=2
size=64m
filename={data}
"""
CACHE = 16 * MiB  # production's page cache: a quarter of the 64 MiB data set
# The test's cgroup: the cache plus fio's own memory (8 MiB measured for these two jobs).
LIMIT = CACHE + 16 * MiB


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Path, str, Path]]:
    """(state directory, the disk's kernel name, the data file on its xfs)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    state = tmp_path / "state"
    spec = tmp_path / "claims-db.yaml"
    spec.write_text(SPEC)
    assert iotuner("lab", "up", str(spec), state=state).returncode == 0
    try:
        up = json.loads(iotuner("lab", "status", "--json", state=state).stdout)["lab"]
        data = Path(up["mountpoint"]) / "db.dat"
        subprocess.run(["dd", "if=/dev/urandom", f"of={data}", "bs=1M", "count=64",
                        "oflag=direct", "status=none"], check=True)  # fmt: skip
        yield state, up["disks"][0]["device"].removeprefix("/dev/"), data
    finally:
        iotuner("lab", "down", state=state)


def plain_fio(job: Path, data: Path, cgroup: Path) -> float:
    """The user's job under plain fio in the test's own cgroup, caches dropped, then the data
    read once in that cgroup so the window is production's steady state (a full cache, not
    the fill from cold that flatters large readahead): IOPS."""
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    wrapped = job.with_suffix(".run.fio")
    wrapped.write_text("[global]\nruntime=3\nramp_time=1\ntime_based\n" + job.read_text())
    warm = f"dd if={data} of=/dev/null bs=1M count={LIMIT // MiB} status=none"
    out = subprocess.run(["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && {warm} && exec "$@"',
                          "sh", "fio", "--output-format=json", str(wrapped)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return sum(j["read"]["iops"] for j in json.loads(out[out.index("{") :])["jobs"])


def set_queue(device: str, values: dict[str, object]) -> None:
    """Plain sysfs writes, limits before readahead (independent of iotuner's engine)."""
    order = ("scheduler", "max_sectors_kb", "nr_requests", "read_ahead_kb")
    for attr in sorted(values, key=lambda a: order.index(a) if a in order else 2):
        Path(f"/sys/block/{device}/queue/{attr}").write_text(str(values[attr]))


@pytest.mark.end_to_end
def test_a_mmap_random_reader_gets_no_flagged_winner_and_holds_when_re_measured(
    tmp_path: Path, lab: tuple[Path, str, Path]
) -> None:
    state, device, data = lab
    job = tmp_path / "db.fio"
    job.write_text(JOB.format(data=data))
    result = iotuner("tune", "--target", str(data.parent), "--fio-job", str(job),
                     "--cache-memory", str(CACHE), "--budget", "3", "--runtime", "1", "--ramp", "0",
                     "--json", state=state, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["objective"] == "iops"
    assert "production caches 25% of it" in doc["cache"]
    aside = {t["number"] for t in doc["set_aside"]}
    print(f"\n{len(doc['trials'])} trials, {len(aside)} set aside, {doc['seconds']} s; "
          f"changes {doc['changes']}")  # fmt: skip
    best = {(s["key"], s["value"]) for s in doc["best"]["settings"]}
    winners = [t for t in doc["trials"] if {(s["key"], s["value"]) for s in t["settings"]} == best]
    assert not {t["number"] for t in winners} & aside, "a set-aside trial won"
    changes = {c["key"].removeprefix("block."): c["value"] for c in doc["changes"]}
    assert set(changes) <= {"read_ahead_kb", "nr_requests", "max_sectors_kb", "scheduler"}
    if not changes:
        # "Keep the current settings": the plan is the defaults, x1 of them by construction,
        # so plain fio has nothing to compare (it measured x1.005 when it ran anyway).
        assert not doc["chosen"], doc
        return

    queue = Path(f"/sys/block/{device}/queue")
    found = {a: (queue / a).read_text().split("[")[-1].split("]")[0].strip()
             for a in ("scheduler", "max_sectors_kb", "nr_requests", "read_ahead_kb")}  # fmt: skip
    cgroup = Path(f"/sys/fs/cgroup/memory/iotuner-test-claims-{os.getpid()}")
    cgroup.mkdir()
    defaults: list[float] = []
    planned: list[float] = []
    try:
        (cgroup / "memory.limit_in_bytes").write_text(str(LIMIT))
        for number in range(3):
            for side in ("defaults", "plan") if number % 2 == 0 else ("plan", "defaults"):
                set_queue(device, changes if side == "plan" else found)
                try:
                    (planned if side == "plan" else defaults).append(plain_fio(job, data, cgroup))
                finally:
                    set_queue(device, found)
    finally:
        for _ in range(50):
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    ratio = statistics.fmean(planned) / statistics.fmean(defaults)
    assert ratio >= 0.98, (
        f"plan {changes} measured {planned} IOPS against defaults {found} {defaults}: "
        f"x{ratio:.3f}; iotuner: gain {doc['gain']} {doc['ci']}, trials {doc['trials']}"
    )
