"""The path's round trip from ping's summary (tuner/tune/transfer_path.py); the probe run itself
is a lab test's (tests/lab/test_transfer_length.py)."""

from __future__ import annotations

import pytest

from tuner.tune.transfer_path import parse_ping

SUMMARY = """PING 10.77.0.2 (10.77.0.2) 56(84) bytes of data.

--- 10.77.0.2 ping statistics ---
5 packets transmitted, 5 received, 0% packet loss, time 801ms
rtt min/avg/max/mdev = 300.412/300.611/301.020/0.214 ms
"""


def test_the_least_round_trip_is_the_paths() -> None:
    assert parse_ping(SUMMARY) == 300.412


@pytest.mark.parametrize(
    "text",
    [
        "",  # ping printed nothing
        SUMMARY.split("rtt")[0] + "5 packets transmitted, 0 received, 100% packet loss\n",
        "rtt min/avg/max/mdev = 0.000/0.000/0.000/0.000 ms\n",  # no round trip at all
        "rtt min/avg/max/mdev = 99999.0/1.0/1.0/1.0 ms\n",  # past any path's
    ],
)
def test_no_echo_no_rtt(text: str) -> None:
    assert parse_ping(text) is None
