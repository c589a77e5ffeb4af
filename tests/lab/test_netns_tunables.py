"""Namespace-scoped TCP settings on the network lab: a plan names the receiver's namespace,
the engine journals and writes the value inside it, the host and the sender keep theirs, and
restoring puts the old buffers back; raising both ends' buffers lifts the window / RTT cap.

The lab is `wan-old-buffers` (200 Mbit/s, 100 ms, Linux 2.6's buffers at both ends), brought up
once for both tests in a state directory of its own and torn down after them: each test puts
the buffers it changed back, and checks they are the spec's before it measures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import module_lab
from tests.netns import host_sysctl, sysctl_in
from tuner.lab import LabNetwork, load_spec
from tuner.plan import Plan, PlanEntry, check_plan
from tuner.trials.transfer import Ends, TransferOptions, run_transfer
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.sysroot import live_sysroot

pytestmark = pytest.mark.lab

RMEM, WMEM = "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"
WIDE = [4096, 131072, 33554432]
"""Buffers well above the path's 2.5 MB bandwidth-delay product."""


def plan(*entries: tuple[str, str, object]) -> Plan:
    return Plan(1, "2026-11-26T07:00:00+00:00", "dtn01", "advise", "disk-to-network",
                tuple(PlanEntry(k, t, v) for k, t, v in entries))  # fmt: skip


def settings(checked: Plan) -> dict[tuple[str, str], object]:
    return {(e.key, e.target): e.value for e in checked.entries}


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNetwork]:
    """wan-old-buffers' path, shared by the module's tests."""
    with module_lab(tmp_path_factory, load_spec("wan-old-buffers")) as (lab, _):
        assert lab.network is not None
        yield lab.network


def test_a_plan_sets_tcp_rmem_in_the_receiver_namespace_and_rolls_it_back(
    state: Path, net: LabNetwork
) -> None:
    old = "4096 87380 174760"
    host_before = host_sysctl(RMEM)
    assert sysctl_in(net.receiver, RMEM) == sysctl_in(net.sender, RMEM) == old
    checked = check_plan(plan((RMEM, f"netns:{net.receiver}", WIDE)), "plan.yaml")
    with Journal(command="test_netns_tunables") as journal:
        engine = TunableEngine(live_sysroot(), journal)
        (applied,) = engine.apply(settings(checked))
        assert applied.original == (4096, 87380, 174760)
        assert applied.actual == tuple(WIDE)
        (change,) = journal.open_changes()
        assert (change.key, change.target) == (RMEM, f"netns:{net.receiver}")
        assert sysctl_in(net.receiver, RMEM) == "4096 131072 33554432"
        assert sysctl_in(net.sender, RMEM) == old, "the other end keeps its own"
        assert host_sysctl(RMEM) == host_before, "the host keeps its own"
        engine.close()
        assert journal.open_changes() == []
    assert sysctl_in(net.receiver, RMEM) == old
    assert host_sysctl(RMEM) == host_before


def test_wider_buffers_at_both_ends_lift_the_window_cap(net: LabNetwork) -> None:
    """The paper's first observation, through namespace-scoped plan entries: the sender's send
    buffer and the receiver's receive buffer raised past the BDP, the cap of window / RTT goes."""
    assert sysctl_in(net.sender, WMEM) == "4096 16384 131072"
    assert sysctl_in(net.receiver, RMEM) == "4096 87380 174760"
    # 3 s after 2 s of slow start: 8.0-8.1 Mbit/s with the old buffers and 191.0-191.1 with
    # the plan's (three runs; 8.0 and 191.2-191.3 over 6 s): the 5 x asked is a fifth of that.
    options = TransferOptions(seconds=3, omit=2, congestion="cubic")
    before = run_transfer(Ends.of_lab(net), options).received_mbit
    checked = check_plan(
        plan((WMEM, f"netns:{net.sender}", WIDE), (RMEM, f"netns:{net.receiver}", WIDE)),
        "plan.yaml",
    )
    with TunableEngine(live_sysroot(), None) as engine:
        engine.apply(settings(checked))
        after = run_transfer(Ends.of_lab(net), options).received_mbit
    print(f"\nwan-old-buffers: {before:.1f} Mbit/s with the old buffers, {after:.1f} with the "
          f"plan's ({net.rate_mbit:.0f} Mbit/s path)")  # fmt: skip
    assert before < 0.3 * net.rate_mbit
    assert after > 5 * before
    assert sysctl_in(net.sender, WMEM) == "4096 16384 131072"
    assert sysctl_in(net.receiver, RMEM) == "4096 87380 174760"
