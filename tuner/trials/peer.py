"""A named peer's path, measured: `iotuner advise --peer HOST[:PORT]`.

The peer runs `iperf3 -s` (Debian `iperf3`); one iperf3 client run from this host measures
both figures the socket-buffer rules need, the round-trip time and the rate, instead of the
numbers a user would type (`--rtt-ms`, `--link-gbps`). Nothing on this host is changed: the
client only opens connections to the peer.

- RTT: the least smoothed RTT TCP saw on any stream (iperf3's `min_rtt`, from TCP_INFO): the
  path's round trip with the least queueing, as the bandwidth-delay product wants it.
- Rate: the receiver's goodput over STREAMS parallel streams, after OMIT_S seconds of slow
  start. Parallel streams lift the cap a short buffer puts on one stream (window / RTT): if
  this host's buffers are what limits the transfer, the rate is still at least STREAMS times
  what one stream gets, so the bandwidth-delay product computed from it exceeds the buffers
  and the buffer rules fire; the figure is then a floor on the path's rate.

The peer is checked by allow-list (a host name, an IPv4 or IPv6 address, a port from 1024),
the run is bounded in time (iperf3's connect timeout, the trial's budget) and in output size
(tuner/trials/transfer.py).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from tuner.errors import BadInput
from tuner.trials.transfer import DEFAULT_PORT, Ends, TransferError, TransferOptions, run_client

SECONDS = 5
OMIT_S = 2
STREAMS = 8
CAPPED_NEAR = 0.5
"""A rate at least this share of what the send buffers allow was limited by them: the kernel
keeps part of each buffer for its own overhead, so a buffer-limited run measures about 0.6-0.8
of STREAMS x buffer / RTT (0.73 on the lab's wan-old-buffers)."""
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_PORT = re.compile(r"^[0-9]{1,5}$")
_DOTTED = re.compile(r"^[0-9.]+$")  # digits and dots only: a mistyped IPv4 address, not a name
_USAGE = "expected HOST[:PORT], [IPV6]:PORT or an IPv6 address, PORT 1024-65535"


@dataclass(frozen=True)
class Peer:
    """A host running `iperf3 -s`: a host name or an IP address, and its port."""

    host: str
    port: int = DEFAULT_PORT

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class PathMeasurement:
    """What one iperf3 run to `peer` measured, and how; `address` is the one iperf3
    connected to (a host name resolved once; the name itself when iperf3 did not say)."""

    peer: Peer
    rtt_ms: float
    rate_mbit: float
    streams: int
    seconds: int
    retransmits: int
    congestion: str
    address: str = ""

    def send_cap_mbit(self, tcp_wmem_max: int | None) -> float | None:
        """What this host's send buffers allow STREAMS streams on this RTT (STREAMS x
        tcp_wmem max / RTT), when the measured rate is near it (at least CAPPED_NEAR of it):
        the rate is then a floor on the path's, and the window it implies too small. None when
        the buffers are not what limited the run (or are unknown)."""
        if not tcp_wmem_max or self.rtt_ms <= 0:
            return None
        cap = self.streams * tcp_wmem_max * 8 / (self.rtt_ms / 1000) / 1e6
        return round(cap, 1) if self.rate_mbit >= CAPPED_NEAR * cap else None

    @property
    def how(self) -> str:
        """One line saying what was run."""
        return (
            f"iperf3 to {self.peer}, {self.streams} streams, {self.seconds} s after {OMIT_S} s "
            f"of slow start, {self.congestion or 'the default congestion control'}"
        )


def parse_peer(text: str) -> Peer:
    """`HOST`, `HOST:PORT`, `[IPV6]:PORT` or a bare IPv6 address; BadInput (one line) else."""
    where = f"--peer {text[:80]!r}"
    if not text.isascii() or not text.isprintable() or len(text) > 300:
        raise BadInput(f"{where}: {_USAGE}")
    host, port_text = text, ""
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise BadInput(f"{where}: {_USAGE}")
        host, port_text = inside, rest[1:]
        if not rest:
            port_text = str(DEFAULT_PORT)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    port = DEFAULT_PORT
    if port_text or text.endswith(":"):
        if not _PORT.fullmatch(port_text) or not 1024 <= int(port_text) <= 65535:
            raise BadInput(f"{where}: {_USAGE}")
        port = int(port_text)
    return Peer(_host(host, where, bracketed=text.startswith("[")), port)


def _host(host: str, where: str, bracketed: bool) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if bracketed or ":" in host or len(host) > 253 or not _HOSTNAME.fullmatch(host):
            raise BadInput(f"{where}: {_USAGE}") from None
        if _DOTTED.fullmatch(host):
            raise BadInput(f"{where}: {host} is not an IPv4 address") from None
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        raise BadInput(f"{where}: a scoped IPv6 address (%zone) is not supported")
    if bracketed and address.version == 4:
        raise BadInput(f"{where}: brackets are for IPv6 addresses")
    if address.is_unspecified or address.is_multicast or str(address) == "255.255.255.255":
        raise BadInput(f"{where}: {address} is not a single host")
    return str(address)


def measure_path(peer: Peer) -> PathMeasurement:
    """One iperf3 run from this host to `peer`; TransferError (exit 1, one line) if the peer
    does not answer or iperf3 fails."""
    options = TransferOptions(seconds=SECONDS, omit=OMIT_S, parallel=STREAMS)
    try:
        result = run_client(Ends(None, None, peer.host, peer.port), options)
    except TransferError as err:
        raise TransferError(f"--peer {peer}: {err} (does it run iperf3 -s?)") from None
    if result.min_rtt_ms <= 0 or result.received_mbit <= 0:
        raise TransferError(f"iperf3 to {peer} reported no RTT or no bytes received")
    return PathMeasurement(
        peer,
        rtt_ms=round(result.min_rtt_ms, 1),
        rate_mbit=round(result.received_mbit, 1),
        streams=STREAMS,
        seconds=SECONDS,
        retransmits=result.retransmits,
        congestion=result.congestion,
        address=result.remote_host or peer.host,
    )
