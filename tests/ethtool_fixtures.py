"""Captured ethtool output (tests/fixtures/ethtool/, licences there) placed on fixture roots."""

from __future__ import annotations

from pathlib import Path

from probes.hostfs import command_capture_path
from tests.sysfs_tree import SysTree

CAPTURED = Path(__file__).resolve().parent / "fixtures" / "ethtool"


def captured(name: str) -> str:
    """One captured output's text ("ixgbe-g")."""
    return (CAPTURED / name).read_text()


def nic(
    tree: SysTree,
    iface: str,
    driver: str,
    *,
    speed: int = 10000,
    txqueuelen: int = 1000,
    mac: str = "00:1b:21:aa:bb:cc",
) -> SysTree:
    """An interface `iface` whose `ethtool -g/-c` print the capture of `driver` ("ixgbe")."""
    base = f"sys/class/net/{iface}"
    tree.files(base, {"mtu": 1500, "speed": speed, "tx_queue_len": txqueuelen,
                      "address": mac, "operstate": "up"})  # fmt: skip
    for option in ("-g", "-c"):
        name = f"{driver}-{option[1]}"
        if (CAPTURED / name).exists():
            path = tree.root / command_capture_path(("ethtool", option, iface))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(captured(name))
    return tree
