"""What held a TCP sender back, read from `ss -tinH`: the fixture is the sender's view of a real
iperf3 run on the lab's wan-old-buffers path (Linux 2.6's buffers, 200 Mbit/s, 100 ms), taken
4.5 s into a 6 s run: the control connection and the data connection to port 5301."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.trials.tcp_limits import TcpLimits, parse_ss

SS = (Path(__file__).with_name("data") / "ss-wan-old-buffers.txt").read_text()


def test_the_data_connection_is_the_one_that_moved_the_bytes() -> None:
    found = parse_ss(SS, 5301)
    assert found == TcpLimits(busy_ms=4096, rwnd_ms=1308, sndbuf_ms=700, bytes_acked=3480406)
    # The receiver's small window held the sender back more than its own small buffer did.
    assert found.rwnd_share == pytest.approx(0.319, abs=0.001)
    assert found.sndbuf_share == pytest.approx(0.171, abs=0.001)
    assert found.cwnd_share == pytest.approx(0.51, abs=0.01)


def test_no_connection_to_the_port_is_none() -> None:
    assert parse_ss(SS, 5201) is None
    assert parse_ss("", 5301) is None
    assert parse_ss("garbage\n\t busy:12ms\n", 5301) is None


def test_an_idle_connection_has_no_shares() -> None:
    idle = TcpLimits(0, 0, 0)
    assert (idle.rwnd_share, idle.sndbuf_share, idle.cwnd_share) == (0.0, 0.0, 0.0)
