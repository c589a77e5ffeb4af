"""The tune's starting points: the workload's fio options, the rules' recommendations."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.fixtures.scenarios import build_scenario
from tuner.rulebase import load_rule_base
from tuner.rules.model import Workload
from tuner.search.space import APP, HOST, SearchSpace, app_dimensions, space_for
from tuner.tunables.access import Tunables
from tuner.tune.setup import (
    current_point,
    dirtyable_bytes,
    host_dirtyable_bytes,
    ratio_for_bytes,
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


# -- the rules' vm.dirty_*_bytes recommendations, in the space's ratio dimensions ------------

GIB = 1 << 30
BG, DIRTY = ("vm.dirty_background_ratio", HOST), ("vm.dirty_ratio", HOST)
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


def test_a_byte_count_becomes_the_nearest_whole_ratio_and_never_zero() -> None:
    assert ratio_for_bytes(256 << 20, 6 * GIB) == 4  # 4.17 %
    assert ratio_for_bytes(GIB, 6 * GIB) == 17  # 16.7 %
    assert ratio_for_bytes(256 << 20, 24 * GIB) == 1  # this VM: 1.04 %
    assert ratio_for_bytes(1 << 20, 256 * GIB) == 1  # 0 would stall every writer
    with pytest.raises(ValueError):
        ratio_for_bytes(GIB, 0)


@pytest.fixture(scope="module")
def big_memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture host the writeback rules fire on (256 GiB on the default ratios)."""
    root = tmp_path_factory.mktemp("big-memory")
    build_scenario("dirty-defaults-big-memory", root)
    return root


def recommended_vm(root: Path, workload: str) -> list[dict[tuple[str, str], object]]:
    topology = probe_host(HostFS(root))
    space = space_for({}, topology.vm)  # the dirty ratios only
    current = space.snap({BG: topology.vm.dirty_background_ratio, DIRTY: topology.vm.dirty_ratio})
    found = load_rule_base().workload(workload)
    assert found is not None
    return recommended_points(load_rule_base(), topology, found, space, current)


def test_write_tunes_start_from_the_rules_bytes_as_ratios(big_memory: Path) -> None:
    meminfo = big_memory / "proc" / "meminfo"
    original = meminfo.read_text()
    try:
        meminfo.write_text(MEMINFO)
        # 256 MiB and 1 GiB (rules/writeback.yaml) of the 6 GiB the kernel counts.
        assert recommended_vm(big_memory, "stream-write") == [{BG: 4, DIRTY: 17}]
    finally:
        meminfo.write_text(original)
    # Without the LRU lines, the fallback is MemTotal (256 GiB), as the rules' facts use: both
    # round to 1 %, and dirty_ratio's domain starts at 5.
    assert recommended_vm(big_memory, "stream-write") == [{BG: 1, DIRTY: 5}]
    # A reading workload gets no writeback recommendation.
    assert recommended_vm(big_memory, "stream-read") == []


def test_a_device_read_directly_gets_the_readahead_rule(tmp_path: Path) -> None:
    # sda is an md member, not mounted: advise leaves its readahead alone (reads enter at md0);
    # a tune reading sda itself starts from the rules' readahead for it.
    build_scenario("readahead-128k", tmp_path)
    topology = probe_host(HostFS(tmp_path))
    queue = topology.block_device("sda").queue
    assert queue is not None and queue.read_ahead_kb == 128
    space = space_for({"sda": queue}, keys=["block.read_ahead_kb"])
    current = {("block.read_ahead_kb", "sda"): 128}
    found = load_rule_base().workload("stream-read")
    assert found is not None
    base = load_rule_base()
    assert recommended_points(base, topology, found, space, current) == []
    assert recommended_points(base, topology, found, space, current, read_devices=["sda"]) == [
        {("block.read_ahead_kb", "sda"): 4096}
    ]


def test_a_host_on_dirty_bytes_is_measured_at_those_thresholds(tmp_path: Path) -> None:
    # The kernel reads a ratio as 0 while its bytes twin rules. Taken literally the baseline
    # would be bg 1 % / dirty 2 % (the repair of 0/0), a host nobody runs.
    build_scenario("dirty-defaults-big-memory", tmp_path)
    vm = tmp_path / "proc" / "sys" / "vm"
    for name, value in (("dirty_ratio", 0), ("dirty_background_ratio", 0),
                        ("dirty_bytes", GIB), ("dirty_background_bytes", 256 << 20)):  # fmt: skip
        (vm / name).write_text(f"{value}\n")
    (tmp_path / "proc" / "meminfo").write_text(MEMINFO)
    topology = probe_host(HostFS(tmp_path))
    dirtyable = host_dirtyable_bytes(topology)
    assert dirtyable == 6 * GIB
    write = load_rule_base().workload("stream-write")
    assert write is not None
    space = tune_space(topology, ("sda",), write, False, dirtyable)
    baseline = current_point(space, Tunables(tmp_path), write, dirtyable)
    assert (baseline[BG], baseline[DIRTY]) == (4, 17)  # 256 MiB and 1 GiB of 6 GiB
    assert all(dim.log for dim in space.dimensions if dim.target == HOST)
