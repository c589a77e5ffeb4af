"""`iotuner tune --workload disk-to-network --peer HOST[:PORT]` refused or ended in one line
before anything changes: a malformed peer (exit 2), options a transfer to a peer cannot use
(exit 2), a peer that does not answer (exit 1, within iperf3's connect timeout).

The tune against a real peer is tests/lab/test_tune_peer.py (the CLI in the lab's sender
namespace, `iperf3 -s` in its receiver's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.netns import host_sysctl

TRANSFER = ("tune", "--workload", "disk-to-network")
BUFFERS = ("net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control")


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line of stderr (stdout shows at most what was being measured)."""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("peer", "why"),
    [
        ("-c", "expected HOST[:PORT]"),
        ("host;reboot", "expected HOST[:PORT]"),
        ("host:80", "PORT 1024-65535"),
        ("10.77.0.256", "is not an IPv4 address"),
        ("224.0.0.1", "is not a single host"),
    ],
)
def test_a_malformed_peer_is_exit_2_in_one_line(tmp_path: Path, peer: str, why: str) -> None:
    done = iotuner(*TRANSFER, "--peer", peer, state=tmp_path)
    assert done.returncode == 2
    assert why in one_line(done) and "--peer" in done.stderr
    assert done.stdout == ""
    assert not any(tmp_path.iterdir())  # no journal opened, nothing recorded


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("tune", "--workload", "stream-read", "--peer", "h"), "give --workload disk-to-network"),
        ((*TRANSFER, "--peer", "h", "--destroy-data", "/dev/null"), "--destroy-data has nothing"),
        ((*TRANSFER, "--peer", "h", "--target", "/dev/null"), "a directory for the source file"),
        ((*TRANSFER, "--peer", "h", "--io-cap", "10"), "--io-cap"),
    ],
)
def test_options_a_peer_transfer_cannot_use_are_exit_2(
    tmp_path: Path, args: tuple[str, ...], why: str
) -> None:
    if os.geteuid() != 0:
        pytest.skip("tune checks for root first")
    done = iotuner(*args, state=tmp_path)
    assert done.returncode == 2
    assert why in one_line(done)


def test_a_peer_that_does_not_answer_is_exit_1_before_anything_changes(tmp_path: Path) -> None:
    """Nothing listens on the loopback's port 5299: iperf3 cannot connect, and the tune ends
    there in one line, this host's buffers as they were."""
    if os.geteuid() != 0 or shutil.which("iperf3") is None:
        pytest.skip("needs root and iperf3")
    before = {key: host_sysctl(key) for key in BUFFERS}
    started = time.monotonic()
    done = iotuner(*TRANSFER, "--peer", "127.0.0.1:5299", "--plan-out",
                   str(tmp_path / "plan.yaml"), state=tmp_path / "state")  # fmt: skip
    assert done.returncode == 1
    line = one_line(done)
    assert done.stdout.strip() == "measuring the path to 127.0.0.1:5299 (iperf3 -s there)"
    assert "--peer 127.0.0.1:5299: iperf3: unable to connect" in line, line
    assert "(does it run iperf3 -s?)" in line
    assert time.monotonic() - started < 30
    assert {key: host_sysctl(key) for key in BUFFERS} == before
    assert not (tmp_path / "plan.yaml").exists()
