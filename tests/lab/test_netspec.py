"""A spec's `network:` map: the built-in paths, and one-line errors naming the field at fault."""

from __future__ import annotations

import pytest

from tuner.errors import BadInput
from tuner.lab import load_spec, parse_spec
from tuner.lab.netspec import HostTcp, NetworkSpec
from tuner.lab.network import relay_queue_bytes

PATH = "network: {rate_mbit: 200, rtt_ms: 100}\n"


def test_builtin_paths() -> None:
    wan = load_spec("wan")
    assert wan.disks == () and wan.network is not None
    assert (wan.network.rate_mbit, wan.network.rtt_ms, wan.network.mtu) == (200, 100, 1500)
    assert wan.network.bdp_bytes == 2_500_000
    # Large buffers: autotuning may grow past the bandwidth-delay product.
    assert wan.network.receiver.tcp_rmem is not None
    assert wan.network.receiver.tcp_rmem[2] > 4 * wan.network.bdp_bytes
    old = load_spec("wan-old-buffers").network
    assert old is not None and old.receiver.tcp_rmem is not None
    # The benchmark: a window below a quarter of the bandwidth-delay product.
    assert old.receiver.tcp_rmem[2] < old.bdp_bytes / 4
    lossy = load_spec("wan-lossy").network
    # The wan path, losing 1 frame in 1,000 of the sender's.
    assert lossy == NetworkSpec(200, 100, 0.1, 1500, wan.network.sender, wan.network.receiver)


def test_defaults_and_forms() -> None:
    spec = parse_spec(PATH, "x.yaml", "x")
    assert spec.network == NetworkSpec(200.0, 100.0, 0.0, 1500, HostTcp(), HostTcp())
    text = (
        "network: {rate_mbit: 1000, rtt_ms: 6.5, loss_percent: 0.01, mtu: 9000,\n"
        "  sender: {tcp_wmem: [4096, 16384, 4194304], tcp_congestion_control: reno},\n"
        "  receiver: {tcp_rmem: '4096 87380 174760'}}\n"
        "disks: [{name: d0, read_mbps: 100, write_mbps: 100, iops: 200, size: 1GiB}]\n"
    )
    spec = parse_spec(text, "x.yaml", "x")
    assert spec.network is not None and len(spec.disks) == 1
    assert spec.network.sender == HostTcp(None, (4096, 16384, 4194304), "reno")
    assert spec.network.receiver.tcp_rmem == (4096, 87380, 174760)
    assert spec.network.mtu == 9000


ENDS = (
    "network: {{rate_mbit: 200, rtt_ms: 20, sender: {{disk: {sender}}}, "
    "receiver: {{disk: {receiver}}}}}\n"
    "disks: [{{name: src, read_mbps: 12, write_mbps: 100, iops: 5000, size: 400MiB, fs: xfs}},\n"
    "        {{name: dst, read_mbps: 100, write_mbps: 10, iops: 5000, size: 400MiB, fs: xfs}},\n"
    "        {{name: raw, read_mbps: 100, write_mbps: 10, iops: 5000, size: 64MiB}}]\n"
)


def test_each_end_may_name_a_disk_with_a_file_system() -> None:
    spec = parse_spec(ENDS.format(sender="src", receiver="dst"), "x.yaml", "x")
    assert spec.network is not None
    assert (spec.network.sender.disk, spec.network.receiver.disk) == ("src", "dst")
    assert [d.fs for d in spec.disks] == ["xfs", "xfs", None]


def test_relay_queue_holds_more_than_one_way() -> None:
    net = NetworkSpec(1000.0, 100.0)
    assert relay_queue_bytes(net) > net.bdp_bytes  # one way holds half of it


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("network: {rtt_ms: 100}",
         "x.yaml: network: rate_mbit must be a number from 1 to 10000, got None"),
        ("network: {rate_mbit: 0, rtt_ms: 100}",
         "rate_mbit must be a number from 1 to 10000, got 0"),
        ("network: {rate_mbit: 100, rtt_ms: -1}", "rtt_ms must be a number from 0 to 2000, got -1"),
        ("network: {rate_mbit: 100, rtt_ms: true}",
         "rtt_ms must be a number from 0 to 2000, got True"),
        ("network: {rate_mbit: 100, rtt_ms: 10, loss_percent: 50}",
         "loss_percent must be a number from 0 to 10"),
        ("network: {rate_mbit: 100, rtt_ms: 10, mtu: 70000}",
         "mtu must be an integer from 576 to 9000"),
        ("network: {rate_mbit: 10000, rtt_ms: 1000}", "rate_mbit x rtt_ms is 1e+07, above 1e+06"),
        ("network: {rate_mbit: 100, rtt_ms: 10, delay: 5}", "x.yaml: network: unknown key 'delay'"),
        ("network: [1]", "x.yaml: network: expected a mapping, got list"),
        ("network: {rate_mbit: 100, rtt_ms: 10, sender: {rmem_max: 1}}",
         "x.yaml: network.sender: unknown key 'rmem_max' (known: tcp_rmem, tcp_wmem, "
         "tcp_congestion_control, disk)"),
        ("network: {rate_mbit: 100, rtt_ms: 10, sender: {tcp_rmem: '4096 1'}}",
         "network.sender: tcp_rmem must be three byte counts"),
        ("network: {rate_mbit: 100, rtt_ms: 10, receiver: {tcp_wmem: '9 8 7'}}",
         "network.receiver: tcp_wmem must be three byte counts min <= default <= max"),
        ("network: {rate_mbit: 100, rtt_ms: 10, receiver: {tcp_wmem: '1 2 -3'}}",
         "tcp_wmem must be three byte counts"),
        ("network: {rate_mbit: 100, rtt_ms: 10, receiver: {tcp_wmem: [1, 2, 3000000000]}}",
         "(at most 2147483647)"),
        ("network: {rate_mbit: 100, rtt_ms: 10, sender: {tcp_congestion_control: 'x; reboot'}}",
         "network.sender: tcp_congestion_control must match"),
        ("name: x\n", "x.yaml: disks: expected a non-empty list, got nothing"),
        (ENDS.format(sender="dst", receiver="src"), ""),  # either way round
        (ENDS.format(sender="src", receiver="nope"),
         "x.yaml: network.receiver: disk 'nope' is not defined (disks: src, dst, raw)"),
        (ENDS.format(sender="raw", receiver="dst"),
         "network.sender: disk 'raw' has no file system (fs: xfs or ext4)"),
        (ENDS.format(sender="src", receiver="src"),
         "network.receiver: disk 'src' is already the sender's"),
        (ENDS.format(sender="[1]", receiver="dst"),
         "network.sender: disk must name one of the spec's disks, got [1]"),
        # Two file systems only when the ends name both.
        (ENDS.format(sender="null", receiver="dst"),
         "x.yaml: disks: only one disk may carry a file system, or one at each network end, "
         "got ['src', 'dst']"),
        (ENDS.split("\n", 1)[1].format(),  # no network: one file system, as before
         "x.yaml: disks: only one disk may carry a file system"),
    ],
)  # fmt: skip
def test_malformed(text: str, message: str) -> None:
    if not message:
        parse_spec(text, "x.yaml", default_name="x")
        return
    with pytest.raises(BadInput) as err:
        parse_spec(text, "x.yaml", default_name="x")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    "text",
    [
        'network: {rate_mbit: 100, rtt_ms: 10, sender: {tcp_congestion_control: "reno\\n"}}',
        "network: {rate_mbit: .nan, rtt_ms: 10}",
        "network: {rate_mbit: 100, rtt_ms: .inf}",
        "network: {rate_mbit: 1" + "0" * 400 + ", rtt_ms: 10}",
        "network: {rate_mbit: 100, rtt_ms: 10, sender: {tcp_rmem: [1, 2, 1" + "0" * 400 + "]}}",
        "network: {rate_mbit: 100, rtt_ms: 10, sender: {tcp_rmem: [[1], 2, 3]}}",
    ],
)
def test_hostile_networks_are_one_line(text: str) -> None:
    # A trailing newline passed `re.match` with `$` (issue 27).
    with pytest.raises(BadInput) as err:
        parse_spec(text, "x.yaml", default_name="x")
    message = str(err.value)
    assert message.startswith("x.yaml: network") and "\n" not in message
    assert err.value.exit_code == 2
