"""Stable identities: what a udev rule matches a disk or NIC by, and finding it again."""

from __future__ import annotations

import shutil

import pytest

from tests.apply.hosts import BACKING, WWN, identity_host
from tests.sysfs_tree import SysTree
from tuner.apply.identity import Identity, NoIdentity, find_device, identify


@pytest.fixture
def host(tree: SysTree) -> SysTree:
    return identity_host(tree)


def test_a_loop_device_is_its_backing_file(host: SysTree) -> None:
    found = identify(host.root, "/dev/loop3")
    assert found == Identity("loop", BACKING)
    assert found.udev_match() == f'ATTR{{loop/backing_file}}=="{BACKING}"'


def test_a_disk_is_its_wwn_before_its_serial_or_path(host: SysTree) -> None:
    found = identify(host.root, "sda")
    assert found.udev_match() == f'ENV{{ID_WWN}}=="{WWN}"'


def test_without_udev_a_scsi_wwid_from_sysfs(host: SysTree) -> None:
    (host.root / "run/udev/data/b8:0").unlink()
    host.file("sys/block/sda/device/wwid", "naa.5000c500a1b2c3d4")
    assert identify(host.root, "sda").udev_match() == 'ATTRS{wwid}=="naa.5000c500a1b2c3d4"'


def test_a_disk_with_nothing_stable_is_refused(host: SysTree) -> None:
    with pytest.raises(
        NoIdentity, match="sdb: no WWN, serial, by-path or loop backing file"
    ) as err:
        identify(host.root, "sdb")
    assert err.value.exit_code == 2


def test_a_nic_is_its_mac(host: SysTree) -> None:
    assert identify(host.root, "eth0").udev_match() == 'ATTR{address}=="52:54:00:12:34:56"'


def test_the_same_disk_is_found_under_its_new_name(host: SysTree) -> None:
    """A swap or a reboot renamed sda to sdc: the identity still finds it."""
    before = identify(host.root, "sda")
    shutil.move(host.root / "sys/block/sda", host.root / "sys/block/sdc")
    assert find_device(host.root, before) == "sdc"
    assert find_device(host.root, Identity("wwn", "0xdeadbeef")) is None


def test_quotes_in_a_value_cannot_break_the_rule() -> None:
    # udev unescapes only \" and reads * ? [ ] | as patterns: such values are refused, not
    # escaped, since no escaping makes udev match them exactly (issue 17).
    for value in ('a"b', "a\\", "a\nb", "disk*", "a|b", "a[1]"):
        with pytest.raises(NoIdentity, match="cannot match it exactly"):
            Identity("serial", value).udev_match()
    assert Identity("serial", "ST4000NM_Z1Z2X3").udev_match() == 'ENV{ID_SERIAL}=="ST4000NM_Z1Z2X3"'
