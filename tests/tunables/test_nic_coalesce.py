"""nic.coalesce_rx_usecs / nic.coalesce_tx_usecs on captured `ethtool -c` output."""

from __future__ import annotations

import pytest

from tests.ethtool_fixtures import nic
from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.nic_coalesce import SEARCH_HIGH, CoalesceRxUsecs
from tuner.tunables.sysroot import SysRoot


@pytest.fixture
def nics(tree: SysTree) -> SysTree:
    nic(tree, "eth4", "ixgbe")
    nic(tree, "eth0", "virtio_net")
    return nic(tree, "veth0", "veth")


def test_reads_the_delays(nics: SysTree) -> None:
    tunables = Tunables(nics.root)
    assert tunables.read("nic.coalesce_rx_usecs", "eth4") == 1
    assert tunables.read("nic.coalesce_tx_usecs", "eth0") == 0


def test_validation(nics: SysTree) -> None:
    tunables = Tunables(nics.root)
    assert tunables.validate("nic.coalesce_rx_usecs", "eth4", "50") == 50
    with pytest.raises(InvalidValue, match="-1 is below 0"):
        tunables.validate("nic.coalesce_rx_usecs", "eth4", -1)
    with pytest.raises(TunableError, match=r"does not report it \(Operation not supported\)"):
        tunables.validate("nic.coalesce_rx_usecs", "veth0", 10)


def test_n_a_is_unsupported(tree: SysTree) -> None:
    nic(tree, "eth0", "virtio_net")
    capture = tree.root / "sos_commands/networking/ethtool_-c_eth0"
    capture.write_text(capture.read_text().replace("tx-usecs: 0", "tx-usecs: n/a"))
    with pytest.raises(TunableError) as err:
        Tunables(tree.root).validate("nic.coalesce_tx_usecs", "eth0", 8)
    assert (
        str(err.value)
        == "nic.coalesce_tx_usecs on eth0: the driver does not support tx-usecs (n/a)"
    )


def test_dimension_and_facts(nics: SysTree) -> None:
    sys = SysRoot(nics.root)
    dim = CoalesceRxUsecs().dimension(sys, "eth4", SpaceContext())
    assert dim is not None and (dim.low, dim.high, dim.log) == (0, SEARCH_HIGH, False)
    assert CoalesceRxUsecs().observe(sys, "eth4") == (("coalesce_rx_usecs", 1),)
    (read,) = CoalesceRxUsecs().verify_reads(sys, "eth4", 50)
    assert (read.command, read.section, read.field) == (("ethtool", "-c", "eth4"), "", "rx-usecs")
