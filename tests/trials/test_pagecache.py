"""The page-cache guard's verdicts, and /proc/diskstats read once or sampled through a run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tuner.trials import pagecache
from tuner.trials.diskstats import Counters, Sampler, read_diskstats, total
from tuner.trials.flags import (
    CACHE_BELOW,
    CACHES_KEPT,
    DATA_SET,
    PAGE_CACHE,
    READAHEAD,
    WRITES_CACHED,
    Flag,
)
from tuner.trials.pagecache import compare, compare_below, data_set_bytes, drops, wrapped

DISKSTATS = """\
   7       3 loop3 100 0 2048 5 200 0 4096 7 0 10 12 0 0 0 0 0 0
   7       4 loop4 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 9 0 999999 1 9 0 999999 1 0 1 1
   8       1 sda1 5 0 10 0 5 0 20 0 0 0 0
"""


def test_diskstats_counts_512_byte_sectors_of_the_named_devices(tmp_path: Path) -> None:
    path = tmp_path / "diskstats"
    path.write_text(DISKSTATS)
    found = read_diskstats(["loop3", "sda1", "nope"], path)
    assert found == {"loop3": Counters(2048 * 512, 4096 * 512), "sda1": Counters(5120, 10240)}
    assert total(found, ["loop3", "sda1", "nope"]) == Counters(2058 * 512, 4116 * 512)
    assert Counters(10, 20) - Counters(3, 5) == Counters(7, 15)


def test_the_sampler_gives_the_bytes_moved_between_two_times(tmp_path: Path) -> None:
    path = tmp_path / "diskstats"
    path.write_text(DISKSTATS)
    with Sampler(["loop3", "loop4"], path) as sampler:
        time.sleep(0.1)
        changed = time.time()
        path.write_text(DISKSTATS.replace(" 2048 ", " 4096 "))  # loop3 reads 1 MiB
        time.sleep(0.1)
    assert len(sampler.times) >= 5 and sampler.times == sorted(sampler.times)
    assert sampler.whole(["loop3"]) == Counters(1 << 20, 0)
    assert sampler.whole(["loop4"]) == Counters(0, 0)
    assert sampler.between(sampler.times[0], changed - 0.03, ["loop3"]) == Counters(0, 0)
    assert sampler.between(changed + 0.03, sampler.times[-1], ["loop3"]) == Counters(0, 0)
    # Between two samples the bytes are spread evenly: half-way gets part of the MiB.
    first_after = next(t for t in sampler.times if t > changed)
    last_before = max(t for t in sampler.times if t < first_after)
    half = sampler.between(sampler.times[0], (first_after + last_before) / 2, ["loop3"])
    assert 0 <= half.read_bytes <= 1 << 20


def test_reads_from_cache_and_readahead_beyond_fio_are_flagged_both_ways() -> None:
    fio = Counters(1000, 0)
    assert compare(fio, Counters(1000, 0)) is None
    assert compare(fio, Counters(800, 0)) is None  # within the tolerance
    assert compare(fio, Counters(120, 0)) == Flag(
        PAGE_CACHE, "device moved 12% of fio's bytes: page cache"
    )
    assert compare(fio, Counters(3000, 0)) == Flag(
        READAHEAD, "device moved 300% of fio's bytes: readahead beyond what fio read"
    )


def test_readahead_still_in_flight_is_not_waste_but_more_is() -> None:
    """Six streams of 8 MiB windows hold up to 96 MiB ahead of fio when the window closes:
    the hdd lab's 3 s trial read 140 % of fio's bytes there and was flagged; within that
    allowance it is not, beyond it (readahead thrashing, re-reads) it still is."""
    mib = 1 << 20
    fio, ahead = Counters(250 * mib, 0), 96 * mib
    assert compare(fio, Counters(350 * mib, 0)) is not None  # the old judgement
    assert compare(fio, Counters(350 * mib, 0), ahead_bytes=ahead) is None
    flag = compare(fio, Counters(750 * mib, 0), ahead_bytes=ahead)
    assert flag == Flag(
        READAHEAD,
        "device moved 300% of fio's bytes, 96.0 MiB of it still ahead: readahead beyond "
        "what fio read",
    )


def test_reads_production_caches_too_are_not_flagged_but_more_are() -> None:
    """A trial whose cgroup holds a quarter of its data may serve a quarter from memory."""
    fio = Counters(1000, 0)
    assert compare(fio, Counters(700, 0), cached_share=0.25) is None
    flag = compare(fio, Counters(300, 0), cached_share=0.25)
    assert flag is not None and flag.kind == PAGE_CACHE
    assert "may serve 25%" in flag.message
    # A data set that fits production's cache: after warm-up every read is memory's, as there.
    assert compare(fio, Counters(10, 0), cached_share=1.0) is None


def test_a_random_readers_unused_readahead_is_its_cost_not_a_flag() -> None:
    """An mmap reader faulting 128 KiB around each 4 KiB read moves 32 times what it gets:
    that is what production pays too (reported as amplification), not a measurement error."""
    assert compare(Counters(1000, 0), Counters(32000, 0), sequential=False) is None


def test_writes_are_only_flagged_when_the_device_wrote_too_little() -> None:
    fio = Counters(0, 1000)
    assert compare(fio, Counters(0, 5000)) is None  # the ramp's writes drain in the window
    assert compare(fio, Counters(0, 400)) == Flag(
        WRITES_CACHED, "device wrote 40% of fio's bytes: writes left in page cache"
    )


def test_a_cache_under_a_loop_device_is_flagged_only_when_the_lower_device_read_less() -> None:
    top = Counters(1000, 0)
    assert compare_below(top, Counters(2000, 0), "loop9", "loop7") is None  # other users
    assert compare_below(top, Counters(30, 0), "loop9", "loop7") == Flag(
        CACHE_BELOW, "loop7 under loop9 moved 3% of loop9's bytes: page cache below"
    )


def test_a_data_set_exceeds_what_the_trial_can_move_plus_readahead() -> None:
    size = data_set_bytes(rate_mbps=100, runtime_s=5, ramp_s=1, readahead=8 << 20)
    assert size > 600e6 + (8 << 20)
    assert wrapped(600_000_000, 8 << 20, size) is None
    reason = wrapped(600_000_000, 8 << 20, 256 << 20)
    assert reason is not None and reason.kind == DATA_SET
    assert reason.message.startswith("data set 256.0 MiB smaller than the trial")


def test_a_trial_that_cannot_drop_caches_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root the real file is always writable; a path that cannot be written stands in for
    # an unprivileged user's /proc/sys/vm/drop_caches.
    monkeypatch.setattr(pagecache, "DROP_CACHES", tmp_path / "absent" / "drop_caches")
    assert pagecache.prepare(True) == Flag(
        CACHES_KEPT, "page cache not dropped (needs root): reads may come from memory"
    )
    assert pagecache.prepare(False) is None  # direct trials only sync


def test_sync_one_writes_back_one_device_or_one_file_system(tmp_path: Path) -> None:
    """A trial syncs only its own device or scratch file system, not the whole host."""
    from tests.loopdev import loop_device

    with loop_device(16) as name:
        device = f"/dev/{name}"
        with open(device, "r+b", buffering=0) as f:
            f.write(b"x" * 65536)  # dirty pages in the device's page cache
        pagecache.sync_one(device)
        assert pagecache.prepare(False, device) is None
    (tmp_path / "scratch").write_bytes(b"y" * 4096)
    pagecache.sync_one(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        pagecache.sync_one(str(tmp_path / "absent"))


def test_readahead_another_job_dropped_mid_window_is_not_called_waste(tmp_path: Path) -> None:
    """On a shared host other jobs drop the page cache (here: 7 drops in 20 s while six
    engineers ran tests); readahead evicted before it was read is read again, and the device's
    extra bytes are theirs, not the setting's. Counted in /proc/vmstat's drop_pagecache."""
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 12\ndrop_pagecache 863\ndrop_slab 864\n")
    assert drops(vmstat) == 863
    assert drops(tmp_path / "absent") is None
    fio = Counters(1000, 0)
    assert compare(fio, Counters(2000, 0)) is not None
    assert compare(fio, Counters(2000, 0), dropped=True) is None
    assert compare(fio, Counters(100, 0), dropped=True) is not None  # page cache still is
