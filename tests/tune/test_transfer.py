"""A transfer tune's space, its starting points and the values it reports, on the small host's
fixture tree (both ends named "host" there; in the lab each is a namespace, exercised by
tests/lab/test_transfer_tune.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.sysfs_tree import SysTree
from tests.tunables.hostroot import build_host
from tuner.rules.model import Workload
from tuner.search.space import SearchSpace
from tuner.trials.transfer import Ends
from tuner.tunables.access import Tunables
from tuner.tune.result import TrialRecord, TuneResult
from tuner.tune.setup import current_point
from tuner.tune.transfer import (
    TransferEnds,
    as_written,
    bdp_point,
    goodput_mbit,
    part_options,
    transfer_space,
    window_high,
)

MIB = 1 << 20
ENDS = TransferEnds(Ends(None, None, "10.77.0.2"), "host", "host", 200, 1500)
WORKLOAD = Workload("disk-to-network", "", {"rw": "read"})


@pytest.fixture
def tunables(tree: SysTree) -> Tunables:
    return Tunables(build_host(tree).root)


def space(tunables: Tunables, high: int = 20 * MIB) -> SearchSpace:
    return transfer_space(None, tunables, ENDS, high, None)


def test_the_space_is_what_a_one_way_transfer_feels(tunables: Tunables) -> None:
    found = space(tunables)
    by_name = {d.name: d for d in found.dimensions}
    # The sender's send buffer and congestion control, the receiver's receive buffer.
    assert list(by_name) == [("net.ipv4.tcp_wmem", "host"),
                             ("net.ipv4.tcp_congestion_control", "host"),
                             ("net.ipv4.tcp_rmem", "host")]  # fmt: skip
    wmem = by_name[("net.ipv4.tcp_wmem", "host")]
    assert (wmem.low, wmem.high, wmem.log, wmem.kept) == (4194304, 20 * MIB, True, (4096, 16384))


def test_the_baseline_is_the_max_in_force_and_a_trial_writes_whole_triples(
    tunables: Tunables,
) -> None:
    found = space(tunables)
    baseline = current_point(found, tunables, WORKLOAD)
    assert baseline == {("net.ipv4.tcp_wmem", "host"): 4194304,
                        ("net.ipv4.tcp_rmem", "host"): 6291456,
                        ("net.ipv4.tcp_congestion_control", "host"): "cubic"}  # fmt: skip
    written = found.host_settings({**baseline, ("net.ipv4.tcp_rmem", "host"): 16 * MIB})
    assert written[("net.ipv4.tcp_rmem", "host")] == (4096, 131072, 16 * MIB)
    assert written[("net.ipv4.tcp_wmem", "host")] == (4096, 16384, 4194304)


def test_the_rules_point_raises_each_buffer_below_the_bdp_to_it(tunables: Tunables) -> None:
    found = space(tunables)
    baseline = current_point(found, tunables, WORKLOAD)
    (point,) = bdp_point(found, baseline, ENDS, 5 * MIB)
    assert point[("net.ipv4.tcp_wmem", "host")] == 5 * MIB
    assert point[("net.ipv4.tcp_rmem", "host")] == 6291456  # already above it: kept
    assert bdp_point(found, baseline, ENDS, MIB) == []  # both above it: nothing to suggest


def test_the_search_reaches_eight_bdps_within_bounds() -> None:
    assert window_high(200, 100) == 20_000_000  # 8 x 2.5 MB
    assert window_high(10, 1) == 4 * MIB  # a short slow path still gets room
    assert window_high(10_000, 1000) == 1 << 30


def test_goodput_counts_payload_in_whole_frames() -> None:
    assert goodput_mbit(200, 1500) == pytest.approx(191.3, abs=0.05)
    assert goodput_mbit(200, 9000) == pytest.approx(198.5, abs=0.05)


def test_parts_follow_the_files_the_ends_have() -> None:
    assert list(part_options(ENDS, 3, 1)) == ["memory-to-memory"]
    with_sink = replace(ENDS, sink="/srv/in")
    parts = part_options(with_sink, 3, 1)
    assert list(parts) == ["memory-to-memory", "memory-to-disk"]
    assert parts["memory-to-disk"].receive_file == "/srv/in/received"
    assert with_sink.kind == "memory-to-disk"


def test_the_result_shows_triples_as_the_kernel_takes_them(tunables: Tunables) -> None:
    found = space(tunables)
    base = current_point(found, tunables, WORKLOAD)
    best = {**base, ("net.ipv4.tcp_rmem", "host"): 16 * MIB}
    record = TrialRecord(1, dict(best), 23.9, None, 4.0, "confirm")
    result = TuneResult("lab", "disk-to-network", "transfer", dict(base), 7.5, 0.01, best,
                        191.0, 0.01, 25.0, (24.0, 26.0), True, "budget", (record,))  # fmt: skip
    shown = as_written(result, found)
    assert shown.changes() == {("net.ipv4.tcp_rmem", "host"): (4096, 131072, 16 * MIB)}
    assert shown.trials[0].settings[("net.ipv4.tcp_rmem", "host")] == (4096, 131072, 16 * MIB)
