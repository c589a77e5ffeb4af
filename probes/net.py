"""Network interfaces (the PCI function each hangs from, link attributes, queues) and TCP limits.

Reads: sys/class/net/* (links) and, for each interface, {mtu,speed,address,operstate},
device/driver, queues/; proc/sys/net/ipv4/{tcp_rmem,tcp_wmem,tcp_congestion_control,
tcp_available_congestion_control}, proc/sys/net/core/{rmem_max,wmem_max,default_qdisc}.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from probes.devpath import nearest_pci
from probes.hostfs import U64_MAX, HostFS, parse_int
from probes.ids import MACHINE_ID, net_id, pci_id
from tuner.topology.model import NetDevice, TcpSettings

NET_DIR = "sys/class/net"
IPV4 = "proc/sys/net/ipv4"
CORE = "proc/sys/net/core"
VIRTUAL = "devices/virtual/"
# SPEED_UNKNOWN is -1; some kernels print it as an unsigned 16- or 32-bit number.
_UNKNOWN_SPEEDS = frozenset({0xFFFF, 0xFFFFFFFF})


def probe_net(fs: HostFS) -> tuple[list[NetDevice], TcpSettings]:
    """Every interface under sys/class/net, and the host's TCP buffer and congestion settings."""
    devices: list[NetDevice] = []
    unseen_virtual: list[str] = []
    for name in fs.listdir(NET_DIR):
        if fs.exists(f"{NET_DIR}/{name}") and not fs.is_dir(f"{NET_DIR}/{name}"):
            continue  # bonding_masters: the bonding driver's control file, not an interface
        device = _read_interface(fs, name)
        if device is None:
            unseen_virtual.append(name)
            device = NetDevice(id=net_id(name), parent=MACHINE_ID, name=name, virtual=True)
        devices.append(device)
    if unseen_virtual:
        # Gatherers often copy only the physical devices; the virtual ones are still worth listing.
        fs.warn(
            f"{NET_DIR}: links of virtual interfaces {', '.join(unseen_virtual)} dangle; "
            "listed without attributes"
        )
    return devices, probe_tcp(fs)


def _read_interface(fs: HostFS, name: str) -> NetDevice | None:
    """One interface; None for a virtual one whose link dangles (the caller lists it bare)."""
    base = f"{NET_DIR}/{name}"
    real = fs.realpath(base)
    if real is None:
        target = fs.readlink(base) or ""
        if VIRTUAL in target:
            return None
        fs.warn(f"{base}: link to {target or '?'} dangles; attributes unknown")
        address = nearest_pci(target)
        parent = pci_id(address) if address else MACHINE_ID
        return NetDevice(id=net_id(name), parent=parent, name=name)
    address = nearest_pci(real)
    virtual = real.startswith("sys/" + VIRTUAL)
    if real == base:
        # Old kernels (CONFIG_SYSFS_DEPRECATED) keep a real directory here, linking `device`
        # for hardware only.
        device_path = fs.realpath(f"{base}/device")
        virtual = device_path is None
        address = nearest_pci(device_path) if device_path else None
    rx_queues, tx_queues = _queue_counts(fs, f"{base}/queues")
    return NetDevice(
        id=net_id(name),
        parent=pci_id(address) if address else MACHINE_ID,
        name=name,
        driver=_driver(fs, base),
        mtu=fs.read_int(f"{base}/mtu", low=0, high=2**31 - 1),
        speed_mbps=_speed(fs, f"{base}/speed"),
        rx_queues=rx_queues,
        tx_queues=tx_queues,
        address=fs.read(f"{base}/address") or None,
        operstate=fs.read(f"{base}/operstate") or None,
        virtual=virtual,
    )


def _driver(fs: HostFS, base: str) -> str | None:
    """The driver bound to the interface's device: the last component of its `driver` link."""
    device = fs.realpath(f"{base}/device")
    if device is None:
        return None
    # Captures often lack the bus's drivers/ directory, so read the link without resolving it.
    target = fs.readlink(f"{device}/driver")
    return PurePosixPath(target).name if target else None


def _speed(fs: HostFS, rel: str) -> int | None:
    """Link speed in Mb/s; None while the link is down or the driver does not say."""
    text = fs.read(rel)  # EINVAL on a down link: the read gives None, silently.
    if not text:
        return None
    try:
        speed = parse_int(text) if len(text) <= 20 else None
    except ValueError:
        speed = None
    if speed is None or speed > 0xFFFFFFFF:  # ethtool's speed is a u32
        fs.warn(f"{rel}: expected a speed in Mb/s, got {text[:40]!r}")
        return None
    return None if speed <= 0 or speed in _UNKNOWN_SPEEDS else speed


def _queue_counts(fs: HostFS, rel: str) -> tuple[int | None, int | None]:
    """(rx, tx) queue counts from the queues/ directory; None where it shows none of a kind."""
    names = fs.listdir(rel)
    # Every interface has at least one queue each way, so zero means the capture lacks them.
    rx = sum(1 for n in names if n.startswith("rx-")) or None
    tx = sum(1 for n in names if n.startswith("tx-")) or None
    return rx, tx


def probe_tcp(fs: HostFS) -> TcpSettings:
    """TCP buffer autotuning ranges, socket buffer ceilings and congestion control."""
    available = fs.read(f"{IPV4}/tcp_available_congestion_control")
    return TcpSettings(
        tcp_rmem=_three_ints(fs, f"{IPV4}/tcp_rmem"),
        tcp_wmem=_three_ints(fs, f"{IPV4}/tcp_wmem"),
        rmem_max=fs.read_int(f"{CORE}/rmem_max"),
        wmem_max=fs.read_int(f"{CORE}/wmem_max"),
        congestion_control=fs.read(f"{IPV4}/tcp_congestion_control") or None,
        available_congestion_control=tuple(available.split()) if available else (),
        default_qdisc=fs.read(f"{CORE}/default_qdisc") or None,
    )


def _three_ints(fs: HostFS, rel: str) -> tuple[int, ...] | None:
    """A `min default max` triple such as tcp_rmem, or None (with a warning when malformed)."""
    text = fs.read(rel)
    if text is None:
        return None
    words = text.split()
    try:
        values = tuple(parse_int(word) for word in words if len(word) <= 20)
    except ValueError:
        values = ()
    if len(values) != 3 or len(words) != 3 or not all(0 <= v <= U64_MAX for v in values):
        fs.warn(f"{rel}: expected three integers (min default max), got {text[:40]!r}")
        return None
    return values
