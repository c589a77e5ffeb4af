"""The environment and workload generators: deterministic for a seed, every draw a spec the
lab's own validation takes, its workload a job the project's allow-list takes, and the draws
over many seeds covering the ranges docs/lab.md documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuner.errors import BadInput
from tuner.lab import parse_spec
from tuner.lab.generate import (
    FAMILIES,
    FS_DISK_MIB,
    RANGES,
    RPMS,
    STARTS,
    TCP_ERAS,
    draw_environment,
)
from tuner.lab.generate_jobs import FAMILIES as WORKLOADS
from tuner.lab.generate_jobs import TRANSFER, draw_pair, draw_workload
from tuner.lab.hdd import HddModel
from tuner.lab.raid import RaidModel
from tuner.lab.ssd import SsdModel
from tuner.trials.jobcheck import check_job

seeds = st.integers(0, 2**32)


@given(seeds)
@settings(max_examples=150, deadline=None)
def test_every_draw_is_a_spec_lab_up_takes(seed: int) -> None:
    env, work = draw_pair(seed)
    spec = parse_spec(env.spec_text, f"{env.name}.yaml", env.name)
    assert spec.name == env.name == f"drawn-{seed}"
    if env.network:
        assert spec.network is not None and not spec.disks and work.builtin == TRANSFER
        return
    (disk,) = spec.disks
    assert disk.start, "every disk draw begins from a drawn start"
    assert (disk.fs == "xfs") == (work.target == "mnt")
    if disk.fs:  # room for a tune's 1 GiB scratch file beside xfs's own
        assert disk.size_bytes >= FS_DISK_MIB << 20
    job = check_job(work.job_text("/dev/loop7", "/run/iotuner-lab/x/fs/d0"), "drawn.fio")
    assert job.options["rw"] in ("read", "randread", "randrw", "write")


@given(seeds)
@settings(max_examples=50, deadline=None)
def test_the_same_seed_draws_the_same_pair(seed: int) -> None:
    assert draw_pair(seed) == draw_pair(seed)
    assert draw_pair(seed)[0].spec_text != draw_pair(seed + 1)[0].spec_text


def test_draws_cover_the_families_starts_and_ranges() -> None:
    """Over 600 seeds: every family of environment and workload, every start, and the
    hard disks', flash drives' and paths' parameters spread over most of their ranges."""
    families, starts, works = set(), set(), set()
    rpm, ncq, cache, ratio, stripe, members = set(), [], [], [], set(), set()
    rate, rtt, mtu, loss, channels = [], [], set(), [], []
    for seed in range(600):
        env, work = draw_pair(seed)
        families.add(env.family)
        starts.add(env.start)
        works.add(work.family)
        spec = parse_spec(env.spec_text, "x.yaml", "x")
        if spec.network is not None:
            rate.append(spec.network.rate_mbit)
            rtt.append(spec.network.rtt_ms)
            mtu.add(spec.network.mtu)
            loss.append(spec.network.loss_percent)
            continue
        model = spec.disks[0].model
        if isinstance(model, RaidModel):
            stripe.add(model.stripe_kib)
            members.add((model.kind, model.members))
            model = model.member
        if isinstance(model, HddModel):
            rpm.add(model.rpm)
            ncq.append(model.queue_depth)
            cache.append(model.cache_kib)
            ratio.append(model.outer_mbps / model.inner_mbps)
        if isinstance(model, SsdModel):
            channels.append(model.channels)
    assert families == set(FAMILIES)
    assert starts == set(STARTS) | set(TCP_ERAS)
    assert works == set(WORKLOADS) | {TRANSFER}
    assert rpm == set(RPMS)
    assert min(ncq) == 1 and max(ncq) >= 30
    assert min(cache) == 0 and max(cache) > 128 * 1024
    assert min(ratio) < 1.6 and max(ratio) > 2.4
    assert min(stripe) == 16 and max(stripe) == 1024
    assert {("raid0", 2), ("raid5", 3), ("raid0", 6), ("raid5", 6)} <= members
    assert min(channels) <= 2 and max(channels) >= 15
    assert min(rate) < 20 and max(rate) > 500
    assert min(rtt) < 1 and max(rtt) > 200
    assert mtu == {1500, 9000} and min(loss) == 0 and max(loss) > 0.08
    assert RANGES["net.rtt_ms"] == (0.2, 400.0)


def test_random_readers_data_set_spans_the_cache() -> None:
    """The data set is 0.25-8 x the page cache it gets: some fit, some do not."""
    ratios = []
    for seed in range(400):
        env = draw_environment(seed, family="hdd")
        work = draw_workload(seed, env, family="random-readers")
        if work.cache_memory is None:
            assert "ioengine=libaio" in work.job and "direct=1" in work.job
            continue
        size = int(re.search(r"size=(\d+)m", work.job).group(1))  # type: ignore[union-attr]
        ratios.append(size * 2**20 / work.cache_memory)
    assert min(ratios) < 0.5 and max(ratios) > 4


def test_small_files_outlast_a_trial() -> None:
    """Seed 2 drew 256 files of 16 KiB: read through in 0.9 s, the tune refused to measure."""
    for seed in range(200):
        work = draw_workload(seed, draw_environment(seed, family="hdd"), family="small-files")
        numbers = dict(re.findall(r"(filesize|nrfiles|numjobs)=(\d+)", work.job))
        total_kib = int(numbers["filesize"]) * int(numbers["nrfiles"]) * int(numbers["numjobs"])
        assert total_kib >= 32 * 1024, work.summary


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="no family"):
        draw_environment(1, family="tape")


@pytest.mark.parametrize(
    ("start", "why"),
    [
        ("{scheduler: cfq}", "scheduler must be one of"),
        ("{read_ahead_kb: -1}", "read_ahead_kb must be an integer"),
        ("{read_ahead_kb: .nan}", "read_ahead_kb must be an integer"),
        ("{nr_requests: 1e400}", "nr_requests must be an integer"),
        ("{max_sectors_kb: true}", "max_sectors_kb must be an integer"),
        ("{rotational: 1}", "unknown key 'rotational'"),
        ("[128]", "expected a mapping"),
    ],
)
def test_a_bad_start_is_one_line_naming_the_field(start: str, why: str) -> None:
    disk = "name: d0, read_mbps: 10, write_mbps: 10, iops: 9, size: 1GiB"
    text = f"disks:\n  - {{{disk}, start: {start}}}\n"
    with pytest.raises(BadInput, match=why) as err:
        parse_spec(text, "bad.yaml", "bad")
    assert "\n" not in str(err.value) and str(err.value).startswith("bad.yaml: disks[0] (d0)")


@pytest.mark.lab
def test_lab_up_begins_from_the_drawn_start_and_down_puts_back(state: Path) -> None:
    """A badly tuned draw (a throttled disk, so no server: about a second): `up` leaves its
    queue as the draw says, after the lab's own reset; `down` puts back what was there."""
    from tests.lab.conftest import snapshot
    from tuner.lab import lab_down, lab_up
    from tuner.lab.queue import read_queue
    from tuner.tunables.access import Tunables

    env = next(
        e
        for e in (draw_environment(s, family="throttled") for s in range(100))
        if e.start == "badly-tuned"
    )
    spec = parse_spec(env.spec_text, "drawn.yaml", "drawn")
    lab = lab_up(spec)
    record = snapshot(state)
    (found,) = [s.detail["found"] for s in record.steps if s.kind == "loop"]
    queue = read_queue(Tunables(), lab.disks[0].device)
    lab_down()
    assert {k: queue[k] for k, _ in spec.disks[0].start} == dict(spec.disks[0].start)
    assert read_queue(Tunables(), lab.disks[0].device) == found
