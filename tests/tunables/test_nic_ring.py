"""nic.ring_rx / nic.ring_tx on fixture roots holding captured `ethtool -g` output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ethtool_fixtures import nic
from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError
from tuner.tunables.domain import SpaceContext
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.nic_ring import RingRx, RingTx
from tuner.tunables.sysroot import SysRoot


@pytest.fixture
def nics(tree: SysTree) -> SysTree:
    nic(tree, "eth4", "ixgbe")
    nic(tree, "eth2", "insights")
    nic(tree, "eth0", "virtio_net", speed=-1)
    return nic(tree, "veth0", "veth")


def test_reads_the_current_rings(nics: SysTree) -> None:
    tunables = Tunables(nics.root)
    assert tunables.read("nic.ring_rx", "eth4") == 4096
    assert tunables.read("nic.ring_tx", "eth4") == 512
    assert tunables.read("nic.ring_rx", "eth2") == 200


def test_values_are_checked_against_the_pre_set_maximum(nics: SysTree) -> None:
    tunables = Tunables(nics.root)
    assert tunables.validate("nic.ring_tx", "eth4", 4096) == 4096
    with pytest.raises(InvalidValue) as err:
        tunables.validate("nic.ring_tx", "eth4", 8192)
    assert str(err.value) == "nic.ring_tx on eth4: 8192 exceeds 4096, the driver's pre-set maximum"
    with pytest.raises(InvalidValue, match="0 is not a ring size"):
        tunables.validate("nic.ring_rx", "eth4", 0)


def test_a_driver_without_rings_is_refused_with_its_reason(nics: SysTree) -> None:
    with pytest.raises(TunableError) as err:
        Tunables(nics.root).validate("nic.ring_rx", "veth0", 256)
    assert str(err.value) == (
        "nic.ring_rx on veth0: the driver does not report it (Operation not supported)"
    )


def test_n_a_maximum_refuses(tree: SysTree) -> None:
    nic(tree, "eth0", "virtio_net")
    capture = tree.root / "sos_commands/networking/ethtool_-g_eth0"
    capture.write_text(capture.read_text().replace("TX:\t\t256\nCurrent", "TX:\t\tn/a\nCurrent"))
    with pytest.raises(TunableError, match="does not let the TX ring be set"):
        Tunables(tree.root).validate("nic.ring_tx", "eth0", 128)


def test_writes_run_on_the_live_host_only(nics: SysTree) -> None:
    with pytest.raises(TunableError) as err:
        Tunables(nics.root).write("nic.ring_tx", "eth4", 1024)
    assert str(err.value) == (
        "nic.ring_tx on eth4: ethtool -G eth4 tx 1024: commands run on the live host only"
    )


def test_the_engine_journals_before_the_write(nics: SysTree, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """On a capture the write is refused; the journal has the original saved before it."""
    monkeypatch.setenv("IOTUNER_STATE_DIR", str(tmp_path / "state"))
    with Journal() as journal:
        engine = TunableEngine(nics.root, journal)
        with pytest.raises(TunableError, match="live host only"):
            engine.apply({("nic.ring_tx", "eth4"): 1024})
        (session,) = journal.sessions()
        (change,) = journal.changes(session.id)
        assert (change.key, change.target, change.saved.original) == ("nic.ring_tx", "eth4", 512)
        assert change.written_at is None, "refused: never written"


def test_dimension_powers_of_two_up_to_the_maximum(nics: SysTree) -> None:
    sys = SysRoot(nics.root)
    dim = RingRx().dimension(sys, "eth4", SpaceContext())
    assert dim is not None and (dim.low, dim.high, dim.pow2) == (64, 4096, True)
    odd = RingRx().dimension(sys, "eth2", SpaceContext())
    assert odd is not None and (odd.low, odd.high) == (64, 2047)
    assert odd.low <= 200 <= odd.high and odd.snap(4000) == 1024
    virtio = RingTx().dimension(sys, "eth0", SpaceContext())  # 256 of 256: only smaller
    assert virtio is not None and (virtio.low, virtio.high) == (64, 256)


def test_facts_and_verify(nics: SysTree) -> None:
    sys = SysRoot(nics.root)
    assert RingRx().observe(sys, "eth2") == (("ring_rx", 200), ("ring_rx_max", 2047))
    (read,) = RingRx().verify_reads(sys, "eth4", 2048)
    assert (read.path, read.command, read.section, read.field) == (
        "ethtool -g eth4",
        ("ethtool", "-g", "eth4"),
        "Current hardware settings:",
        "RX",
    )
    assert Tunables(nics.root).path("nic.ring_rx", "eth4") == "ethtool -g eth4"


def test_udev_runs_ethtool_by_its_absolute_path() -> None:
    program = shutil.which("ethtool")
    if program is None:
        with pytest.raises(TunableError, match="ethtool is not installed here"):
            RingRx().udev_assignment(4096)
        return
    assert RingRx().udev_assignment(4096) == f'RUN+="{program} -G $name rx 4096"'
