"""`--peer HOST[:PORT]` read by allow-list (names, IPv4 and IPv6 addresses, a port from 1024),
and when its measured rate is only a floor.

Measuring a peer for real is tests/lab/test_advise_peer.py (advise in the lab's sender
namespace against `iperf3 -s` in its receiver).
"""

from __future__ import annotations

import pytest

from tuner.errors import BadInput
from tuner.trials.peer import PathMeasurement, Peer, parse_peer


@pytest.mark.parametrize(
    ("text", "peer"),
    [
        ("dtn1.example.org", Peer("dtn1.example.org", 5201)),
        ("dtn1.example.org:5202", Peer("dtn1.example.org", 5202)),
        ("10.77.0.2", Peer("10.77.0.2", 5201)),
        ("10.77.0.2:65535", Peer("10.77.0.2", 65535)),
        ("2001:db8::1", Peer("2001:db8::1", 5201)),
        ("[2001:db8::1]", Peer("2001:db8::1", 5201)),
        ("[2001:DB8::1]:1024", Peer("2001:db8::1", 1024)),
        ("localhost", Peer("localhost", 5201)),
    ],
)
def test_a_peer_is_a_host_and_a_port(text: str, peer: Peer) -> None:
    assert parse_peer(text) == peer


def test_a_peer_prints_as_it_would_be_typed() -> None:
    assert str(Peer("2001:db8::1", 5201)) == "[2001:db8::1]:5201"
    assert str(Peer("10.77.0.2", 5202)) == "10.77.0.2:5202"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "expected HOST[:PORT]"),
        ("-c", "expected HOST[:PORT]"),  # no option smuggled into iperf3's command line
        ("--help", "expected HOST[:PORT]"),
        ("host name", "expected HOST[:PORT]"),
        ("host;reboot", "expected HOST[:PORT]"),
        ("host\n", "expected HOST[:PORT]"),
        ("hôte.example", "expected HOST[:PORT]"),
        ("a" * 64 + ".example", "expected HOST[:PORT]"),
        (".".join(["a" * 60] * 5), "expected HOST[:PORT]"),
        ("host:", "PORT 1024-65535"),
        ("host:80", "PORT 1024-65535"),
        ("host:65536", "PORT 1024-65535"),
        ("host:52o1", "PORT 1024-65535"),
        ("host:+5201", "PORT 1024-65535"),
        ("host:5201\n", "PORT 1024-65535"),  # `re.match` with `$` took it (issue 27)
        ("[10.77.0.2]:5201", "brackets are for IPv6"),
        ("[2001:db8::1", "expected HOST[:PORT]"),
        ("[2001:db8::1]5201", "expected HOST[:PORT]"),
        ("[host]:5201", "expected HOST[:PORT]"),
        ("fe80::1%eth0", "scoped IPv6"),
        ("10.77.0.256", "is not an IPv4 address"),
        ("0.0.0.0", "is not a single host"),
        ("[::]:5201", "is not a single host"),
        ("224.0.0.1", "is not a single host"),
        ("255.255.255.255", "is not a single host"),
    ],
)
def test_anything_else_is_bad_input_in_one_line(text: str, why: str) -> None:
    with pytest.raises(BadInput, match=why.replace("[", r"\[").replace("+", r"\+")) as err:
        parse_peer(text)
    assert "\n" not in str(err.value)


def _measured(rate_mbit: float, rtt_ms: float = 100.0) -> PathMeasurement:
    return PathMeasurement(Peer("10.0.0.2"), rtt_ms, rate_mbit, 8, 5, 0, "cubic")


def test_a_rate_near_what_the_send_buffers_allow_is_a_floor() -> None:
    """128 KiB send buffers, 8 streams, 100 ms: 83.9 Mbit/s at most. The lab measured 61 Mbit/s
    there (0.73 of it): a floor; 191 Mbit/s on 32 MiB buffers is the path's own rate."""
    assert _measured(61.0).send_cap_mbit(131072) == pytest.approx(83.9)
    assert _measured(191.0).send_cap_mbit(32 << 20) is None
    assert _measured(20.0).send_cap_mbit(131072) is None, "far below: something else limits"
    assert _measured(61.0).send_cap_mbit(None) is None
