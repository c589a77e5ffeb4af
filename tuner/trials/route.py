"""Where the path to a peer leaves this host: the interface `ip route get ADDRESS` names, with
its MTU and the link speed the driver reports.

A transfer tune against a named peer needs both: the MTU says how much of a frame is payload,
and the speed bounds the path's rate when the measured rate is only a floor (the send buffers
held the measurement back: tuner/trials/peer.py). Read from this process's own network
namespace (`ip netns exec` gives it its own /sys/class/net), bounded in time and output.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
from dataclasses import dataclass

from probes.host_root import live_host
from probes.hostfs import HostFS, valid_ifname

ROUTE_TIMEOUT_S = 5.0
MAX_ROUTE_BYTES = 64 << 10


@dataclass(frozen=True)
class Route:
    """The interface a peer is reached by, its MTU, and its speed (None: the driver does not
    say, as for a tunnel or a virtual NIC without a link)."""

    interface: str
    mtu: int
    speed_mbit: int | None


def route_to(address: str, fs: HostFS | None = None) -> Route | None:
    """The route to `address` (an IP address, as iperf3 resolved the peer); None when it is
    not an address, `ip` is missing or fails, or its answer names no interface."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None
    ip = shutil.which("ip")
    if ip is None:
        return None
    try:
        done = subprocess.run([ip, "-j", "route", "get", address], capture_output=True,
                              timeout=ROUTE_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or len(done.stdout) > MAX_ROUTE_BYTES:
        return None
    return parse_route(done.stdout.decode(errors="replace"), fs or live_host())


def parse_route(text: str, fs: HostFS) -> Route | None:
    """The Route from `ip -j route get` output, the interface's MTU and speed read below
    `fs` (/sys/class/net/IFACE); None when it names no interface or no MTU is readable."""
    try:
        routes = json.loads(text)
    except ValueError:
        return None
    first = routes[0] if isinstance(routes, list) and routes else None
    dev = first.get("dev") if isinstance(first, dict) else None
    if not isinstance(dev, str) or not valid_ifname(dev):
        return None
    mtu = fs.read_int(f"sys/class/net/{dev}/mtu", low=68, high=1 << 20)
    if mtu is None:
        return None
    # Unknown speeds read -1 or fail (EINVAL) on virtual links.
    speed = fs.read_int(f"sys/class/net/{dev}/speed")
    return Route(dev, mtu, speed if speed is not None and speed > 0 else None)
