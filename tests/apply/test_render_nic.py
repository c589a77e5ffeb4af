"""A plan with the NIC settings only ethtool holds renders one udev rule for the interface."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from probes.hostfs import command_capture_path
from tests.apply.hosts import identity_host
from tests.ethtool_fixtures import captured
from tests.sysfs_tree import SysTree
from tuner.apply.render import UDEV_RULES, render
from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry

ENTRIES = (("nic.ring_rx", "eth0", 4096), ("nic.coalesce_rx_usecs", "eth0", 50),
           ("nic.txqueuelen", "eth0", 10000))  # fmt: skip


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    identity_host(tree)
    tree.file("sys/class/net/eth0/tx_queue_len", 1000)
    for option in ("g", "c"):  # eth0 prints what an ixgbe port printed
        tree.file(command_capture_path(("ethtool", f"-{option}", "eth0")),
                  captured(f"ixgbe-{option}").rstrip("\n"))  # fmt: skip
    return tree


def plan(*entries: tuple[str, str, object]) -> Plan:
    return Plan(1, "2026-11-22T07:10:00+00:00", "storage01", "advise", "disk-to-network",
                tuple(PlanEntry(k, t, v) for k, t, v in entries))  # fmt: skip


def test_the_udev_rule_runs_ethtool_and_sets_the_queue(host: SysTree, tmp_path: Path) -> None:
    program = shutil.which("ethtool")
    if program is None:
        pytest.skip("ethtool is not installed")
    rendered = render(plan(*ENTRIES), root=host.root, conf_root=tmp_path)
    udev = next(f for f in rendered.files if f.path == str(tmp_path / UDEV_RULES))
    assert udev.content is not None
    rule = udev.content.splitlines()[-1]
    assert rule == (
        'ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="52:54:00:12:34:56", '
        f'RUN+="{program} -G $name rx 4096", RUN+="{program} -C $name rx-usecs 50", '
        'ATTR{tx_queue_len}="10000"'
    )
    assert [s.path for s in rendered.live] == ["ethtool -g eth0", "ethtool -c eth0",
                                               "/sys/class/net/eth0/tx_queue_len"]  # fmt: skip


def test_a_ring_above_the_maximum_is_refused(host: SysTree) -> None:
    with pytest.raises(BadInput, match="8192 exceeds 4096, the driver's pre-set maximum"):
        render(plan(("nic.ring_rx", "eth0", 8192)), root=host.root)
