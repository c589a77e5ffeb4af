"""The ethtool output parsers and HostFS.command, on captured output of real NICs."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probes.ethtool import MAX_LINES, failure, parse_coalesce, parse_rings
from probes.gather import write_capture
from probes.hostfs import HostFS, command_capture_path, valid_ifname
from tests.ethtool_fixtures import captured, nic
from tests.sysfs_tree import SysTree


def test_rings_of_real_nics() -> None:
    ixgbe = parse_rings(captured("ixgbe-g"))
    assert ixgbe is not None
    assert (ixgbe.maximum["RX"], ixgbe.current["RX"], ixgbe.current["TX"]) == (4096, 4096, 512)
    virtio = parse_rings(captured("virtio_net-g"))
    assert virtio is not None
    assert virtio.maximum == {"RX": 256, "RX Mini": None, "RX Jumbo": None, "TX": 256}
    odd = parse_rings(captured("insights-g"))
    assert odd is not None and (odd.maximum["RX"], odd.current["RX"]) == (2047, 200)


def test_coalescing_of_real_nics() -> None:
    ixgbe = parse_coalesce(captured("ixgbe-c"))
    assert ixgbe is not None and (ixgbe["rx-usecs"], ixgbe["tx-usecs"]) == (1, 0)
    virtio = parse_coalesce(captured("virtio_net-c"))
    assert virtio is not None
    assert (virtio["rx-usecs"], virtio["tx-usecs"], virtio["rx-usecs-irq"]) == (0, 0, None)


def test_a_driver_without_rings_says_why() -> None:
    assert parse_rings(captured("veth-g")) is None
    assert parse_coalesce(captured("veth-c")) is None
    assert failure(captured("veth-g")) == "Operation not supported"
    assert failure("Cannot get device ring settings: No such device\n") == "No such device"
    assert failure(captured("ixgbe-g")) is None


@given(st.text(max_size=3000))
def test_hostile_text_never_raises(text: str) -> None:
    rings = parse_rings(text)
    params = parse_coalesce(text)
    failure(text)
    if rings is not None:
        assert all(v is None or 0 <= v < 2**32 for v in rings.current.values())
    if params is not None:
        assert len(params) <= MAX_LINES


LINES = ["Pre-set maximums:", "Current hardware settings:", "RX:\t4096", "RX:\tn/a",
         "TX: 99999999999", "RX: ٣", "Coalesce parameters", "rx-usecs: 1", "rx-usecs: -1",
         "\x00", ""]  # fmt: skip


@given(st.lists(st.sampled_from(LINES), max_size=40))
def test_hostile_ethtool_like_lines(lines: list[str]) -> None:
    text = "\n".join(lines)
    rings = parse_rings(text)
    if rings is not None:
        assert all(v is None or (isinstance(v, int) and 0 <= v < 2**32)
                   for v in (*rings.current.values(), *rings.maximum.values()))  # fmt: skip
    params = parse_coalesce(text)
    assert params is None or all(v is None or v >= 0 for v in params.values())


@pytest.mark.parametrize("name", ["eth0", "enp3s0f1", "bond0.102@b", "a" * 15])
def test_interface_names_the_kernel_gives(name: str) -> None:
    assert valid_ifname(name)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a:b", "a b", "-g", "a" * 16, "é", "a\n"])
def test_interface_names_refused(name: str) -> None:
    assert not valid_ifname(name)


def test_a_capture_replays_the_output(tree: SysTree) -> None:
    nic(tree, "eth4", "ixgbe")
    fs = HostFS(tree.root)
    assert fs.command(("ethtool", "-g", "eth4")) == captured("ixgbe-g").strip()
    assert fs.command(("ethtool", "-g", "eth9")) is None  # not captured


def test_only_allowed_commands(tree: SysTree) -> None:
    fs = HostFS(tree.root)
    with pytest.raises(ValueError, match="not an allowed read command"):
        fs.command(("ethtool", "-G", "eth0"))
    with pytest.raises(ValueError, match="not an allowed read command"):
        fs.command(("ip", "-g", "eth0"))
    assert fs.command(("ethtool", "-g", "../../etc")) is None
    assert "not an interface name" in fs.warnings[0]


def test_a_hostile_capture_is_bounded(tree: SysTree) -> None:
    fifo = tree.root / command_capture_path(("ethtool", "-g", "eth0"))
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    big = tree.root / command_capture_path(("ethtool", "-c", "eth0"))
    with big.open("wb") as out:
        out.truncate(65 << 20)  # beyond MAX_FILE_BYTES
    fs = HostFS(tree.root)
    assert fs.command(("ethtool", "-g", "eth0")) is None
    assert fs.command(("ethtool", "-c", "eth0")) is None


@pytest.mark.live
def test_the_live_host_runs_ethtool_and_gather_keeps_it(tmp_path: Path) -> None:
    if shutil.which("ethtool") is None or not Path("/sys/class/net/eth0").exists():
        pytest.skip("needs ethtool and an eth0")
    fs = HostFS("/")
    live = fs.command(("ethtool", "-g", "eth0"))
    assert live is not None and live.startswith("Ring parameters for eth0:")
    fs.touched.add("sys")
    out = tmp_path / "c.tar.xz"
    write_capture(fs, out, "top")
    with tarfile.open(out) as tar:
        member = tar.extractfile("top/sos_commands/networking/ethtool_-g_eth0")
        assert member is not None and member.read().decode().strip() == live
        tar.extractall(tmp_path / "x", filter="data")
    assert HostFS(tmp_path / "x" / "top").command(("ethtool", "-g", "eth0")) == live
