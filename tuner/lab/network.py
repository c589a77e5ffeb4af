"""The lab's network: a sender and a receiver namespace joined through a delay line.

    sender ns                relay ns                         receiver ns
    wan0 (tbf rate) ---veth--- in0 <- delayline -> out0 ---veth--- wan0 (tbf rate)
    10.77.0.1                  (no addresses, no IPv6)             10.77.0.2

This kernel has no netem (no modules can be loaded), so the round trip comes from `delayline`
(`delayline.c`, compiled with gcc at `up`): it holds every frame RTT/2 each way and drops the
sender's frames with the spec's loss. The rate is tbf on each end's egress (the reverse one
carries the ACKs). TCP buffers and congestion control are per namespace (`net.ipv4.tcp_rmem`,
`tcp_wmem`, `tcp_congestion_control`); `net.core.rmem_max`/`wmem_max` are not (a namespace reads
the host's and cannot write them), so the lab leaves them alone. A namespace may only make an
algorithm in the host's `tcp_allowed_congestion_control` its default, which a real host's
initial namespace need not: the lab lends its namespaces the rest for its life (congestion.py).

Everything lives in the three namespaces: deleting them removes the links and qdiscs with
them. Each namespace and the relay is recorded before it is created; `lab down` kills what
still runs inside a namespace (`ip netns pids`), then deletes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tuner.lab import congestion, nbd, system
from tuner.lab.model import LabNetwork
from tuner.lab.netspec import HostTcp, NetworkSpec
from tuner.lab.record import LabRecord, Step
from tuner.tunables.netns import in_netns

SOURCE = Path(__file__).with_name("delayline.c")
INTERFACE = "wan0"
SENDER_ADDRESS, RECEIVER_ADDRESS = "10.77.0.1", "10.77.0.2"
NETNS_DIR = Path("/run/netns")
RELAY = "delayline"
NEEDS = "the lab network needs iproute2, gcc, libc6-dev and iperf3"
MIN_BURST = 128 * 1024  # tbf passes a whole 64 KiB GSO frame (with its headers) at once
MIN_LIMIT = 1 << 20
LIMIT_S = 0.05  # tbf's queue: 50 ms at the rate
QUEUE_SLACK = 16 << 20


def namespaces(lab_id: str) -> dict[str, str]:
    """The lab's namespace names by role (sender, relay, receiver); unique to the lab."""
    return {role: f"iotuner-{lab_id}-{role}" for role in ("sender", "relay", "receiver")}


def in_ns(ns: str, cmd: list[str]) -> list[str]:
    """`cmd` run inside namespace `ns`."""
    return in_netns(ns, cmd)


def relay_queue_bytes(spec: NetworkSpec) -> int:
    """Each direction's ring in the delay line: twice what one way holds at the rate, plus
    room for bursts (frames arrive in GSO bursts faster than the rate)."""
    one_way = spec.rate_mbit * 1e6 / 8 * spec.rtt_ms / 2e3
    return int(2 * one_way) + QUEUE_SLACK


def build_network(spec: NetworkSpec, record: LabRecord, workdir: Path) -> LabNetwork:
    """Create the namespaces, links, rates and relay of `spec`, recording each first."""
    names = namespaces(record.lab_id)
    # Before the namespaces: they are deleted first at `down`, then the names taken back.
    wanted = [h.tcp_congestion_control for h in (spec.sender, spec.receiver)]
    congestion.lend(record, [n for n in wanted if n])
    for role, ns in names.items():
        step = record.intend(Step("netns", ns, label=role))
        system.run(["ip", "netns", "add", ns])
        record.finish(step)
        # No IPv6: the relay must not speak, and the ends' router solicitations are noise.
        _sysctls(ns, {"net.ipv6.conf.all.disable_ipv6": "1",
                      "net.ipv6.conf.default.disable_ipv6": "1"})  # fmt: skip
        system.run(in_ns(ns, ["ip", "link", "set", "lo", "up"]))
    sender, relay, receiver = names["sender"], names["relay"], names["receiver"]
    for end, peer in ((sender, "in0"), (receiver, "out0")):
        system.run(["ip", "link", "add", INTERFACE, "netns", end, "type", "veth",
                    "peer", "name", peer, "netns", relay])  # fmt: skip
        system.run(["ip", "-n", relay, "link", "set", peer, "mtu", str(spec.mtu), "up"])
    for ns, address, host in ((sender, SENDER_ADDRESS, spec.sender),
                              (receiver, RECEIVER_ADDRESS, spec.receiver)):  # fmt: skip
        _end(ns, address, host, spec)
    if spec.loss_percent > 0:
        # Loss is drawn per frame: with segmentation offload a frame is up to 44 segments.
        system.run(in_ns(sender, ["ethtool", "-K", INTERFACE, "tso", "off", "gso", "off"]))
    _start_relay(spec, record, relay, workdir)
    return LabNetwork(sender, receiver, relay, SENDER_ADDRESS, RECEIVER_ADDRESS, INTERFACE,
                      spec.rate_mbit, spec.rtt_ms, spec.loss_percent, spec.mtu)  # fmt: skip


def _end(ns: str, address: str, host: HostTcp, spec: NetworkSpec) -> None:
    """One end: its link's MTU, address and rate, and its TCP settings."""
    system.run(["ip", "-n", ns, "link", "set", INTERFACE, "mtu", str(spec.mtu), "up"])
    system.run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", INTERFACE])
    rate_bytes = spec.rate_mbit * 1e6 / 8
    burst = max(MIN_BURST, int(rate_bytes / 1000))  # 1 ms at the rate
    limit = max(MIN_LIMIT, int(rate_bytes * LIMIT_S))
    system.run(in_ns(ns, ["tc", "qdisc", "add", "dev", INTERFACE, "root", "tbf",
                          "rate", f"{spec.rate_mbit * 1000:.0f}kbit", "burst", str(burst),
                          "limit", str(limit)]))  # fmt: skip
    # A cached ssthresh from the previous connection would make trials depend on their order.
    settings = {"net.ipv4.tcp_no_metrics_save": "1"}
    if host.tcp_rmem:
        settings["net.ipv4.tcp_rmem"] = " ".join(map(str, host.tcp_rmem))
    if host.tcp_wmem:
        settings["net.ipv4.tcp_wmem"] = " ".join(map(str, host.tcp_wmem))
    if host.tcp_congestion_control:
        # Allowed here: build_network lent every available algorithm to the namespaces.
        settings["net.ipv4.tcp_congestion_control"] = host.tcp_congestion_control
    _sysctls(ns, settings)


def _sysctls(ns: str, settings: dict[str, str]) -> None:
    system.run(in_ns(ns, ["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in settings.items())]))


def _start_relay(spec: NetworkSpec, record: LabRecord, relay: str, workdir: Path) -> None:
    binary = workdir / RELAY
    system.run(["gcc", "-O2", "-Wall", "-o", str(binary), str(SOURCE)])
    pidfile = workdir / f"{RELAY}.pid"
    step = record.intend(Step("relay", str(pidfile), label=RELAY))
    delay_us = round(spec.rtt_ms * 1000 / 2)
    loss_ppm = round(spec.loss_percent * 10_000)
    command = in_ns(relay, [str(binary), str(pidfile), "in0", "out0", str(delay_us),
                            str(loss_ppm), "1", str(relay_queue_bytes(spec))])  # fmt: skip
    pid = nbd.start(command, workdir / f"{RELAY}.log", pidfile, RELAY, needs=NEEDS)
    record.finish(step, detail={"pid": pid})


def undo_relay(step: Step) -> list[str]:
    """Stop the delay line (found by its pidfile argument, so also when its pid was lost)."""
    return [f"{RELAY} pid {pid}" for pid in nbd.stop(step.target, RELAY)]


def undo_netns(step: Step) -> list[str]:
    """Kill what still runs in the namespace (a trial's iperf3), then delete it: its links and
    qdiscs go with it."""
    if not step.target.startswith("iotuner-") or "/" in step.target:
        raise system.LabError(f"refusing to delete namespace {step.target!r}: not a lab's")
    if not (NETNS_DIR / step.target).exists():
        return []
    pids = system.run(["ip", "netns", "pids", step.target]).split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    system.run(["ip", "netns", "delete", step.target])
    return [f"namespace {step.target} ({step.label})"]


def present(step: Step) -> bool:
    """Whether a recorded network step (netns, relay) exists on the system now."""
    if step.kind == "netns":
        return (NETNS_DIR / step.target).exists()
    return bool(nbd.processes_with(step.target, RELAY))


UNDO = {"relay": undo_relay, "netns": undo_netns}
