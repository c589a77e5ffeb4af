"""`iotuner advise --peer` on the lab: advise runs in the sender's namespace, as on a host of
its own, and measures the path to `iperf3 -s` in the receiver's; the buffer rules then judge
the measured path as they judge typed numbers.

On `wan-old-buffers` (200 Mbit/s, 100 ms, send buffers of at most 128 KiB) the measured
rate is what eight window-capped streams carry, above the buffers' window / RTT, so the
buffer findings fire; with the buffers raised in both namespaces the rate is the path's and
they are quiet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab.test_network import goodput_mbit, in_ns
from tuner.facts.network import bdp_bytes
from tuner.lab import lab_down, lab_up, load_spec
from tuner.lab.model import LabNetwork

pytestmark = pytest.mark.lab

BUFFER_RULES = {"tcp-rmem-below-bdp", "tcp-wmem-below-bdp"}
LARGE = "4096 131072 33554432"


def serve(net: LabNetwork) -> subprocess.Popen[bytes]:
    """`iperf3 -s` for one test in the receiver's namespace, once it listens."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", net.receiver, "iperf3", "-s", "-1", "-B", net.receiver_address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not in_ns(net.receiver, "ss", "-Hltn", "sport = :5201").strip():
        assert time.monotonic() < deadline, "iperf3 -s did not listen"
        time.sleep(0.05)
    return server


def advise_at_sender(net: LabNetwork, *args: str) -> subprocess.CompletedProcess[str]:
    """`iotuner advise ARGS` run in the sender's namespace, as a user there would."""
    command = [sys.executable, "-m", "tuner.cli", "advise", "--workload", "disk-to-network"]
    return subprocess.run(["ip", "netns", "exec", net.sender, *command, *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def measured_advice(net: LabNetwork) -> tuple[dict[str, float], dict[str, dict[str, object]]]:
    server = serve(net)
    try:
        done = advise_at_sender(net, "--peer", net.receiver_address, "--json")
    finally:
        server.wait(timeout=10)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    return doc["measured"], {f["rule"]: f for f in doc["findings"]}


def test_advise_measures_the_path_to_its_peer(state: Path) -> None:
    spec = load_spec("wan-old-buffers")
    lab = lab_up(spec)
    net = lab.network
    assert net is not None and spec.network is not None and spec.network.sender.tcp_wmem
    before = in_ns(net.sender, "sysctl", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")

    measured, findings = measured_advice(net)
    window_mbit = spec.network.sender.tcp_wmem[2] * 8 / (net.rtt_ms / 1e3) / 1e6
    print(f"\nwan-old-buffers: measured {measured}")
    assert abs(measured["rtt_ms"] - net.rtt_ms) <= 0.1 * net.rtt_ms
    # Eight streams, each capped near window / RTT: more than one stream's cap, less than the path.
    assert 2 * window_mbit < measured["rate_mbit"] < goodput_mbit(net)
    # ... and said to be a floor: the sender's own buffers held the run back.
    assert measured["send_cap_mbit"] == pytest.approx(8 * window_mbit, rel=0.01)
    assert set(findings) >= BUFFER_RULES
    bdp = bdp_bytes(measured["rate_mbit"] / 1000, measured["rtt_ms"])
    rmem = findings["tcp-rmem-below-bdp"]
    assert f"{measured['rtt_ms']:g} ms RTT" in str(rmem["evidence"])
    assert {"key": "net.ipv4.tcp_rmem", "value": f"4096 131072 {bdp}"}.items() <= (
        rmem["settings"][0].items()  # type: ignore[index]
    )
    # Nothing changed at the sender: advise only measured.
    assert in_ns(net.sender, "sysctl", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem") == before

    # Both ends' buffers raised, as the plan would on two hosts: the path's rate, no finding.
    for ns in (net.sender, net.receiver):
        in_ns(ns, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={LARGE}", f"net.ipv4.tcp_wmem={LARGE}")
    measured, findings = measured_advice(net)
    print(f"wan-old-buffers, buffers raised: measured {measured}")
    # Measured 0.997-1.000 of the path (docs/advise.md); room for a busy CI machine.
    assert measured["rate_mbit"] >= 0.8 * goodput_mbit(net)
    assert measured["send_cap_mbit"] is None
    assert abs(measured["rtt_ms"] - net.rtt_ms) <= 0.1 * net.rtt_ms
    assert not BUFFER_RULES & set(findings)

    # No iperf3 -s at the peer: one line, exit 1, within iperf3's connect timeout.
    refused = advise_at_sender(net, "--peer", f"{net.receiver_address}:5202")
    assert refused.returncode == 1
    assert refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1
    assert f"--peer {net.receiver_address}:5202: iperf3: unable to connect" in refused.stderr
    lab_down()
