"""Transfer trials: options checked by bounds, iperf3's command line, its JSON read into figures.

The JSON fixture is a real iperf3 3.12 client report from the lab's `wan` path (200 Mbit/s,
100 ms), memory to memory; tests/lab/test_network.py runs iperf3 itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tuner.errors import BadInput
from tuner.trials.transfer import (
    Ends,
    TransferError,
    TransferOptions,
    check_options,
    client_command,
    committed,
    parse_result,
)

DATA = Path(__file__).with_name("data")
LAB = Ends("iotuner-x-sender", "iotuner-x-receiver", "10.77.0.2")


def test_client_command_is_bounded_and_reports_json(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"x")
    options = TransferOptions(seconds=5, omit=1, congestion="cubic", window=1 << 20,
                              send_file=str(source), interval=0.3)  # fmt: skip
    cmd = client_command(LAB, options)
    assert cmd[:4] == ["ip", "netns", "exec", "iotuner-x-sender"]
    assert cmd[4:7] == ["iperf3", "-c", "10.77.0.2"]
    for pair in (["--json"], ["-t", "5"], ["-O", "1"], ["-i", "0.3"], ["-C", "cubic"],
                 ["-w", "1048576"],
                 ["-F", str(source)]):  # fmt: skip
        assert " ".join(pair) in " ".join(cmd)
    assert options.kind == "disk-to-memory"
    assert TransferOptions(receive_file="/x").kind == "memory-to-disk"
    assert client_command(Ends(None, None, "192.0.2.1"), TransferOptions())[0] == "iperf3"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (TransferOptions(seconds=0), "transfer seconds must be 1 to 300, got 0"),
        (TransferOptions(seconds=301), "transfer seconds must be 1 to 300"),
        (TransferOptions(omit=61), "transfer omit must be 0 to 60"),
        (TransferOptions(interval=0.05), "transfer interval must be 0.1 to 60 seconds"),
        (TransferOptions(interval=float("nan")), "transfer interval must be 0.1 to 60"),
        (TransferOptions(parallel=0), "transfer parallel must be 1 to 16"),
        (TransferOptions(congestion="cubic; reboot"), "congestion control must match"),
        # `re.match` with `$` let a final newline through (issue 27).
        (TransferOptions(congestion="cubic\n"), "congestion control must match"),
        (TransferOptions(window=10), "window must be 4096 to 1073741824 bytes, got 10"),
        (TransferOptions(send_file="relative"), "send file must be an absolute path"),
        (TransferOptions(send_file="/nonexistent/x"), "send file /nonexistent/x: no such file"),
        (TransferOptions(receive_file="/nonexistent/x"), "its directory does not exist"),
    ],
)
def test_options_out_of_bounds_are_refused(options: TransferOptions, message: str) -> None:
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        check_options(options)


def test_parse_a_real_report() -> None:
    data = json.loads((DATA / "iperf3-wan.json").read_text())
    result = parse_result(data, "memory-to-memory")
    assert result.kind == "memory-to-memory"
    assert 180 < result.received_mbit < 200
    assert len(result.intervals_mbit) == 8  # the omitted seconds are left out
    assert result.ramp_mbit == (195.007, 220.216, 199.225)  # what they were, kept apart
    assert 95 < result.rtt_ms < 150
    assert 100 <= result.min_rtt_ms <= result.rtt_ms  # the least smoothed RTT: the path's 100 ms
    assert result.max_cwnd_bytes > 2_000_000  # more than the 2.5 MB path holds, less ACK-clocked
    assert result.congestion
    assert 100 <= result.min_rtt_ms <= result.rtt_ms  # the path's own RTT, without queues
    assert result.max_snd_wnd_bytes > 2_500_000  # the receiver let a whole BDP fly
    assert result.limits is None  # sampled while iperf3 runs, not in its report
    assert result.remote_host == "10.77.0.2"  # where the client connected: the receiver


@pytest.mark.parametrize(
    "connected",
    [None, [], "10.77.0.2", [{"remote_host": "10.77.0.2 -c"}], [{"remote_host": 7}]],
)
def test_a_missing_or_odd_remote_host_is_left_empty(connected: object) -> None:
    data = json.loads((DATA / "iperf3-wan.json").read_text())
    data["start"]["connected"] = connected
    assert parse_result(data, "memory-to-memory").remote_host == ""


@pytest.mark.parametrize(
    "mangle",
    [
        lambda d: d.pop("end"),
        lambda d: d["end"].pop("sum_received"),
        lambda d: d["end"]["sum_sent"].update(bits_per_second="fast"),
        lambda d: d["end"]["sum_received"].update(seconds=None),
        lambda d: d["intervals"][0].update(sum=[]),
    ],
)
def test_malformed_reports_are_one_line_errors(mangle: object) -> None:
    data = json.loads((DATA / "iperf3-wan.json").read_text())
    mangle(data)  # type: ignore[operator]
    with pytest.raises(TransferError) as err:
        parse_result(data, "memory-to-memory")
    assert "\n" not in str(err.value)


def test_committed_is_the_windows_bytes_over_the_window_and_the_flush() -> None:
    data = json.loads((DATA / "iperf3-wan.json").read_text())
    result = parse_result(data, "memory-to-disk")
    # No flush left: the disk kept up with what arrived.
    assert committed(result, 0.0) == pytest.approx(result.received_mbit, rel=1e-4)
    # A flush as long as the window: the disk took twice the time the network did.
    assert committed(result, result.seconds) == pytest.approx(result.received_mbit / 2, rel=1e-4)
    assert committed(replace(result, seconds=0.0), 1.0) == 0.0


def test_the_receivers_reports_are_the_intervals_when_it_sent_them() -> None:
    # The sender's per-interval figures count bytes written into its send buffer: on a 100
    # Mbit/s, 200 ms lab path a 2 s run's sender reported 227 Mbit/s in an interval. The
    # receiver's (iperf3 -s --json, fetched with --get-server-output) count what arrived.
    data = json.loads((DATA / "iperf3-wan.json").read_text())
    sender = parse_result(data, "memory-to-memory").intervals_mbit
    arrived = [{"sum": {"bits_per_second": 90e6 + 1e6 * n, "omitted": n < 2}} for n in range(6)]
    data["server_output_json"] = {"intervals": arrived}
    result = parse_result(data, "memory-to-memory")
    assert result.intervals_mbit == (92.0, 93.0, 94.0, 95.0) != sender
    assert result.ramp_mbit == (90.0, 91.0)
    data["server_output_json"] = "a peer's iperf3 -s writing text"
    assert parse_result(data, "memory-to-memory").intervals_mbit == sender
