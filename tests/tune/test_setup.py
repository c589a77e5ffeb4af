"""The tune's starting points: the workload's fio options, the rules' recommendations."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tests.probes.storage_fixtures import full_host
from tests.sysfs_tree import SysTree
from tuner.rules.installed import load_rule_base
from tuner.rules.model import Finding, Setting, Workload
from tuner.search.space import (
    APP,
    HOST,
    Dimension,
    Point,
    SearchSpace,
    app_dimensions,
    space_for,
)
from tuner.topology.model import Topology
from tuner.tunables.access import Tunables
from tuner.tunables.sysroot import SysRoot
from tuner.tune.setup import (
    bounded,
    current_point,
    dirtyable_bytes,
    prepare_tune,
    recommended_points,
    tune_space,
)

SPACE = SearchSpace(tuple(app_dimensions()))


def app_point(fio: dict[str, object], tmp_path: Path) -> dict[str, object]:
    point = current_point(SPACE, Tunables(tmp_path), Workload("w", "", dict(fio)))
    return {key: value for (key, target), value in point.items() if target == APP}


def test_fio_spellings_become_the_dimensions_units(tmp_path: Path) -> None:
    stream = load_rule_base().workload("stream-read")
    assert stream is not None and stream.fio["bs"] == "16k"
    assert app_point(stream.fio, tmp_path) == {"bs": 16384, "iodepth": 1, "numjobs": 1, "direct": 0}
    # A --fio-job gives every value as text.
    job = {"bs": "1M", "iodepth": "16", "numjobs": "2", "direct": "1"}
    assert app_point(job, tmp_path) == {"bs": 1 << 20, "iodepth": 16, "numjobs": 2, "direct": 1}


def test_absent_or_ranged_values_start_from_fios_defaults(tmp_path: Path) -> None:
    assert app_point({"bs": "4k-64k", "direct": "true"}, tmp_path) == {
        "bs": 4096, "iodepth": 1, "numjobs": 1, "direct": 1
    }  # fmt: skip


# -- the dirty thresholds: bytes in the space, whatever the host runs on ----------------------

GIB, MIB = 1 << 30, 1 << 20
BG, DIRTY = ("vm.dirty_background_bytes", HOST), ("vm.dirty_bytes", HOST)
MEMINFO = (
    "MemTotal:       268435456 kB\n"  # 256 GiB: the rules' facts see this and fire
    "MemFree:          4194304 kB\n"  # but only 6 GiB are free or file cache
    "MemAvailable:     5242880 kB\n"
    "Active(file):     1048576 kB\n"
    "Inactive(file):   1048576 kB\n"
)


def test_dirtyable_memory_is_free_plus_the_file_lists() -> None:
    assert dirtyable_bytes(MEMINFO) == 6 * GIB
    assert dirtyable_bytes("MemTotal: 1024 kB\nMemFree: 512 kB\n") is None


@pytest.fixture
def big_memory(tmp_path: Path) -> Path:
    """The fixture host the writeback rules fire on (256 GiB on the default ratios), of which
    6 GiB are dirtyable."""
    build_scenario("dirty-defaults-big-memory", tmp_path)
    (tmp_path / "proc" / "meminfo").write_text(MEMINFO)
    return tmp_path


def write_tune(root: Path) -> tuple[SearchSpace, Point, list[Point]]:
    """The space, baseline and rules' points a stream-write tune on `root` starts from: the
    set-up `iotuner tune` and the tune benchmark share."""
    write = load_rule_base().workload("stream-write")
    assert write is not None
    setup = prepare_tune(load_rule_base(), probe_host(HostFS(root)), ("sda",), write,
                         Tunables(root))  # fmt: skip
    return setup.space, setup.baseline, setup.suggested


def test_a_host_on_ratios_is_measured_at_the_bytes_they_amount_to(big_memory: Path) -> None:
    space, baseline, suggested = write_tune(big_memory)
    # 10 % and 20 % of the 6 GiB the kernel takes the ratios of, in whole MiB.
    assert (baseline[BG], baseline[DIRTY]) == (614 * MIB, 1229 * MIB)
    # The rules' 256 MiB and 1 GiB (rules/writeback.yaml) go in as they are: a ratio could
    # only say 4 % and 17 % (245.8 MiB and 1044 MiB).
    assert [(p[BG], p[DIRTY]) for p in suggested] == [(256 * MIB, GIB)]
    # Thresholds far under 1 % are in reach: that is where a short write burst gains.
    assert space.snap({**baseline, BG: 4 * MIB})[BG] == 4 * MIB


def test_a_host_on_dirty_bytes_is_measured_at_those_bytes(big_memory: Path) -> None:
    vm = big_memory / "proc" / "sys" / "vm"
    for name, value in (("dirty_ratio", 0), ("dirty_background_ratio", 0),
                        ("dirty_bytes", GIB), ("dirty_background_bytes", 300 << 20)):  # fmt: skip
        (vm / name).write_text(f"{value}\n")
    space, baseline, suggested = write_tune(big_memory)
    assert (baseline[BG], baseline[DIRTY]) == (300 * MIB, GIB)
    assert suggested == []  # under the rules' 1 GiB and 4 GiB: nothing for them to say
    assert all(dim.log for dim in space.dimensions if dim.target == HOST)


def test_a_device_read_directly_gets_the_readahead_rule(tmp_path: Path) -> None:
    # sda is an md member, not mounted: advise leaves its readahead alone (reads enter at md0);
    # a tune reading sda itself starts from the rules' readahead for it.
    build_scenario("readahead-128k", tmp_path)
    topology = probe_host(HostFS(tmp_path))
    queue = topology.block_device("sda").queue
    assert queue is not None and queue.read_ahead_kb == 128
    space = space_for(SysRoot(tmp_path), {"device": ["sda"]}, keys=["block.read_ahead_kb"])
    current = {("block.read_ahead_kb", "sda"): 128}
    found = load_rule_base().workload("stream-read")
    assert found is not None
    base = load_rule_base()
    assert recommended_points(base, topology, found, space, current) == []
    assert recommended_points(base, topology, found, space, current, read_devices=["sda"]) == [
        {("block.read_ahead_kb", "sda"): 4096}
    ]


def test_a_writer_searches_no_readahead_and_a_reader_no_writeback(big_memory: Path) -> None:
    space, _, _ = write_tune(big_memory)
    keys = {dim.key for dim in space.dimensions}
    assert "block.read_ahead_kb" not in keys  # a plan must not carry what trials cannot feel
    assert {"block.scheduler", "vm.dirty_bytes", "vm.dirty_background_bytes"} <= keys
    read = load_rule_base().workload("stream-read")
    assert read is not None
    space = tune_space(probe_host(HostFS(big_memory)), ("sda",), read, False)
    assert {dim.key for dim in space.dimensions} >= {"block.read_ahead_kb"}
    assert not [dim for dim in space.dimensions if dim.target == HOST]


# -- the space over the storage stack, cut to the findings' ranges ------------------------------


@pytest.fixture
def stacked(tree: SysTree) -> Topology:
    """sda (dm-0 on its sda2), md0 (raid5 over sdb1..sdd1) and the loop lab's devices."""
    full_host(tree)
    return probe_host(HostFS(tree.root))


def names_on(topology: Topology, device: str) -> list[tuple[str, str]]:
    read = load_rule_base().workload("stream-read")
    assert read is not None
    return tune_space(topology, (device,), read, False).names()


def test_readahead_where_reads_enter_queue_keys_on_every_member(stacked: Topology) -> None:
    # The fixture's disks are rotational and offer mq-deadline: merging and mq-deadline's own
    # parameters are searched on each, as an expert would on hard disks (bfq is not offered).
    queue_keys = ("block.nr_requests", "block.max_sectors_kb", "block.scheduler",
                  "block.nomerges", "block.deadline_fifo_batch",
                  "block.deadline_read_expire")  # fmt: skip
    # md0's members are partitions: their disks hold the queues the requests wait in.
    assert names_on(stacked, "md0") == [
        ("block.read_ahead_kb", "md0"),
        *[(key, disk) for key in queue_keys for disk in ("sdb", "sdc", "sdd")],
    ]
    # A dm volume on sda2: readahead on the volume, the queue keys on sda.
    assert names_on(stacked, "dm-0") == [
        ("block.read_ahead_kb", "dm-0"),
        *[(key, "sda") for key in queue_keys],
    ]
    # A partition read directly reads ahead through its disk's window.
    assert names_on(stacked, "sda1") == names_on(stacked, "sda")


def test_a_loop_device_over_a_file_is_its_own_stack(stacked: Topology) -> None:
    # loop4's backing file lives on loop3's file system; a request waits in loop4's queue
    # (a single scheduler there: nothing to choose, and no scheduler parameters), never in
    # loop3's: the lab's one device. Marked rotational, so merging is searched.
    assert names_on(stacked, "loop4") == [
        ("block.read_ahead_kb", "loop4"),
        ("block.nr_requests", "loop4"),
        ("block.max_sectors_kb", "loop4"),
        ("block.nomerges", "loop4"),
    ]


def test_a_findings_range_bounds_the_search_and_keeps_the_baseline(tmp_path: Path) -> None:
    # Random reads on md0 with an 8 MB readahead: readahead-large-for-random recommends 128 KB
    # and leaves [128, 256] to the search; the host's own 8192 stays a point of the space.
    build_scenario("well-configured", tmp_path)
    random = load_rule_base().workload("random-read")
    assert random is not None
    topology = probe_host(HostFS(tmp_path))
    full = tune_space(topology, ("md0",), random, False)
    setup = prepare_tune(load_rule_base(), topology, ("md0",), random, Tunables(tmp_path))
    ra = ("block.read_ahead_kb", "md0")
    before = {d.name: d for d in full.dimensions}[ra]
    after = {d.name: d for d in setup.space.dimensions}[ra]
    assert (before.low, before.high) == (128, 65536)
    assert (after.low, after.high) == (128, 8192)
    assert setup.baseline[ra] == 8192
    assert [p[ra] for p in setup.suggested] == [128]
    # Keys no range names keep the hardware's domain.
    others = [d for d in setup.space.dimensions if d.name != ra]
    assert others == [d for d in full.dimensions if d.name != ra]


def test_a_range_that_misses_the_hardware_leaves_the_dimension(tmp_path: Path) -> None:
    dim = Dimension("block.max_sectors_kb", "sda", "int", 64, 1280, log=True, step=4)
    space = SearchSpace((dim,))
    setting = Setting("block.max_sectors_kb", "sda", None, "range", 1280, (2048, 4096))
    finding = Finding(rule="r", title="t", lesson="request-size", severity="info",
                      target="sda", evidence="e", recommendation="r", settings=(setting,),
                      sources=(), workloads=())  # fmt: skip
    assert bounded(space, (finding,), {dim.name: 1280}) == space


# -- a user's fio job gets the rules of the profiles it resembles (tuner/trials/jobkind.py) -----

STREAMS_12 = (  # benchmarks/claims.py, row hdd-streams-12
    "[hdd-streams-12]\nrw=read\nbs=64k\nioengine=psync\ndirect=0\nnumjobs=12\n"
    "size=170m\noffset_increment=170m\nfilename=/dev/sda\n"
)
MMAP_RANDOM = (  # benchmarks/claims.py, row hdd-mmap-random: the readahead trap
    "[hdd-mmap-random]\nrw=randread\nbs=4k\nioengine=mmap\nfadvise_hint=0\nnumjobs=2\n"
    "size=256m\nfilename=/dev/sda\n"
)
RA = ("block.read_ahead_kb", "sda")


def job_tune(scenario: str, job: str, tmp_path: Path) -> tuple[Point, list[Point], SearchSpace]:
    """The baseline, the rules' points and the space a tune of `job` (a --fio-job file)
    reading sda of `scenario` starts from."""
    from tuner.trials.jobfile import load_fio_job

    build_scenario(scenario, tmp_path)
    path = tmp_path / "job.fio"
    path.write_text(job)
    setup = prepare_tune(load_rule_base(), probe_host(HostFS(tmp_path)), ("sda",),
                         load_fio_job(path), Tunables(tmp_path), read_devices=["sda"])  # fmt: skip
    return setup.baseline, setup.suggested, setup.space


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_twelve_buffered_streams_start_from_the_rules_large_window(tmp_path: Path) -> None:
    # As the built-in concurrent-streams profile does: the rules' 4096 KB window, beside the
    # host's own queue settings (not the tiny ones a seeded point may pair it with).
    baseline, suggested, _ = job_tune("readahead-128k", STREAMS_12, tmp_path)
    assert baseline[RA] == 128
    assert suggested == [{**baseline, RA: 4096}]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
@pytest.mark.parametrize("scenario", ["readahead-128k", "readahead-scaled-by-kernel",
                                      "well-configured"])  # fmt: skip
def test_a_memory_mapped_random_reader_gets_no_streaming_window(
    scenario: str, tmp_path: Path
) -> None:
    baseline, suggested, space = job_tune(scenario, MMAP_RANDOM, tmp_path)
    assert all(point[RA] <= 128 for point in suggested)
    if baseline[RA] > 256:
        # The random-read rules' point: back to the kernel's default window.
        assert [point[RA] for point in suggested] == [128]
    window = next(dim for dim in space.dimensions if (dim.key, dim.target) == RA)
    assert window.low == 128
