"""nic.txqueuelen on a fixture tree and on a veth pair made for the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ethtool_fixtures import nic
from tests.owned import Owned
from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue
from tuner.tunables.domain import SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.nic_txqueuelen import TxQueueLen
from tuner.tunables.sysroot import SysRoot


def test_write_and_read_back(tree: SysTree) -> None:
    nic(tree, "eth4", "ixgbe")
    tunables = Tunables(tree.root)
    tunables.write("nic.txqueuelen", "eth4", 10000)
    assert tunables.read("nic.txqueuelen", "eth4") == 10000
    with pytest.raises(InvalidValue, match="exceeds 4294967295"):
        tunables.validate("nic.txqueuelen", "eth4", 2**32)
    assert TxQueueLen().udev_assignment(10000) == 'ATTR{tx_queue_len}="10000"'


def test_dimension_keeps_the_current_value_inside(tree: SysTree) -> None:
    nic(tree, "eth4", "ixgbe", txqueuelen=32)
    nic(tree, "lo", "none", txqueuelen=0)
    sys = SysRoot(tree.root)
    dim = TxQueueLen().dimension(sys, "eth4", SpaceContext())
    assert dim is not None and (dim.low, dim.high, dim.log) == (32, 100_000, True)
    assert TxQueueLen().dimension(sys, "lo", SpaceContext()) is None


@pytest.mark.lab
@pytest.mark.lab_parallel  # its own veth, namespace and journal (tests/owned.py), no figure
def test_a_veth_pair_journaled_and_restored(owned: Owned, monkeypatch: pytest.MonkeyPatch) -> None:
    """The end under test stays in this namespace (its sysfs is this one's); its peer goes to
    a namespace made for the test. Both are deleted whatever happens."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    owned.state_dir(monkeypatch)
    name, _ = owned.veth(owned.namespace())
    tunables = Tunables()
    before = tunables.read("nic.txqueuelen", name)
    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        engine.apply({("nic.txqueuelen", name): 4321})
        assert Path(f"/sys/class/net/{name}/tx_queue_len").read_text() == "4321\n"
        (session,) = journal.sessions()
        (change,) = journal.changes(session.id)
        assert (change.saved.original, change.new) == (before, 4321)
        engine.restore()
    assert tunables.read("nic.txqueuelen", name) == before
