"""nic.mtu on a fixture tree (limits given as netlink would) and on a real veth pair."""

from __future__ import annotations

import os

import pytest

from tests.owned import Owned
from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TargetGone
from tuner.tunables.sysroot import SysRoot


def limited(host: SysTree) -> Tunables:
    return Tunables(SysRoot(host.root, link_limits=lambda name: (68, 9000)))


def test_write_within_the_limits(host: SysTree) -> None:
    tunables = limited(host)
    tunables.write("nic.mtu", "eth0", 9000)
    assert tunables.read("nic.mtu", "eth0") == 9000


@pytest.mark.parametrize(
    ("value", "why"),
    [(9001, "9001 exceeds 9000, the device's max_mtu"),
     (67, "67 is below 68, the device's min_mtu"),
     ("jumbo", "expected an integer, got 'jumbo'")],
)  # fmt: skip
def test_refusals(host: SysTree, value: object, why: str) -> None:
    with pytest.raises(InvalidValue) as err:
        limited(host).write("nic.mtu", "eth0", value)
    assert str(err.value) == f"nic.mtu on eth0: {why}"


def test_unknown_limits_still_need_a_positive_mtu(tunables: Tunables) -> None:
    assert tunables.validate("nic.mtu", "eth0", 65536) == 65536
    with pytest.raises(InvalidValue, match=r"nic\.mtu on eth0: 0 is not a positive MTU"):
        tunables.validate("nic.mtu", "eth0", 0)


def test_a_missing_interface(tunables: Tunables) -> None:
    with pytest.raises(TargetGone, match=r"no such interface \(/sys/class/net/eth9\)"):
        tunables.read("nic.mtu", "eth9")


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own veth pair (tests/owned.py), no figure
def test_a_real_veth_pair(owned: Owned) -> None:
    """Limits from netlink: veth takes 68..65535."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    name, _ = owned.veth()
    tunables = Tunables()
    with pytest.raises(InvalidValue, match=f"nic.mtu on {name}: 65536 exceeds 65535"):
        tunables.validate("nic.mtu", name, 65536)
    tunables.write("nic.mtu", name, 9000)
    assert tunables.read("nic.mtu", name) == 9000
