"""A transfer tune's result in the terms of Hughes-Jones and Dallison (paper 003).

The paper moved data disk to disk over long paths and explained each result by three things:
the window the path needs (rate x round-trip time, 22 MB for 1 Gbit/s and 177 ms), the window
the hosts allowed (socket buffers), and which subsystem capped the transfer, found by measuring
its parts alone (memory to memory, disk to memory, memory to disk, disk to disk). This module
turns a tune's measurements into those three statements and what would lift the cap; it
measures nothing itself (tuner/tune/transfer.py runs the trials).

Against a named peer (`tune --peer`) the receiver is another host: its buffers are not known
here, only the window it advertised, and what would lift a cap on its side is said as a step
for the peer's administrator, since iotuner cannot change it from this host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from tuner.trials.transfer import TransferResult
from tuner.tune.result import TuneResult, result_document
from tuner.units import human_bytes

MEMORY = "memory-to-memory"
PART_ORDER = (MEMORY, "disk-to-memory", "memory-to-disk", "disk-to-disk")
FULL = 0.9
"""A part at this share of the path's goodput fills the path."""
SLOWER = 0.9
"""A disk part below this share of memory to memory is slower than the network."""
LIMITED = 0.1
"""A window that held the sender back this share of its busy time counts as a limit."""
CAPS = {
    "receiver-window": "the receiver's window (net.ipv4.tcp_rmem max)",
    "sender-buffer": "the sender's buffer (net.ipv4.tcp_wmem max)",
    "congestion": "the congestion window (loss, or the congestion control)",
    "path": "the path's rate",
    "source-disk": "the sender's disk",
    "destination-disk": "the receiver's disk",
    "both-disks": "the two disk ends together",
}
"""What can cap a transfer, by the name the result gives it, and how the text says it."""


@dataclass(frozen=True)
class Windows:
    """What the hosts allow now: the sender's tcp_wmem max, the receiver's tcp_rmem max (0: not
    known, a named peer's), and the largest window the receiver advertised in the
    memory-to-memory part (0: unknown)."""

    sender_wmem_max: int
    receiver_rmem_max: int
    advertised: int = 0


@dataclass(frozen=True)
class Explanation:
    """The window needed, the window allowed, the cap and what lifts it, before and after;
    `peer` names the receiver when it is another host (`rate_mbit` is then the most any run
    to it carried: the path carries at least that)."""

    rate_mbit: float
    goodput_mbit: float
    rtt_ms: float
    needed_bytes: int
    windows: Windows
    parts: dict[str, float]
    cap: str
    why: str
    lift: tuple[str, ...]
    after_parts: dict[str, float] = field(default_factory=dict)
    after_cap: str | None = None
    peer: str | None = None

    @property
    def ceiling_mbit(self) -> float:
        """What the advertised window lets one stream carry: window / RTT (0: unknown)."""
        if not self.windows.advertised or self.rtt_ms <= 0:
            return 0.0
        return self.windows.advertised * 8 / (self.rtt_ms / 1e3) / 1e6


def needed_window(rate_mbit: float, rtt_ms: float) -> int:
    """The bandwidth-delay product in bytes: what must be in flight to fill the path."""
    return int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)


def slowest_part(parts: dict[str, TransferResult]) -> str:
    """The kind of the part that moved the least (committed where a file was written)."""
    return min(parts, key=lambda kind: parts[kind].goodput_mbit)


def cap_of(parts: dict[str, TransferResult], goodput_mbit: float) -> tuple[str, str]:
    """Which subsystem caps the transfer (a key of CAPS) and the measurement that says so.

    The slowest part names it when it is a disk part clearly below memory to memory (each
    part includes the network, so a disk part within SLOWER of it is the network's speed).
    Otherwise the network caps it: the path's rate when memory to memory fills the path,
    else the window the sender's kernel found holding it back longest (tcp_limits.py).
    """
    memory = parts[MEMORY]
    slowest = slowest_part(parts)
    rate = memory.goodput_mbit
    if slowest != MEMORY and parts[slowest].goodput_mbit < SLOWER * rate:
        shown = f"{slowest} {parts[slowest].goodput_mbit:.1f} Mbit/s, memory to memory {rate:.1f}"
        if slowest == "disk-to-memory":
            return "source-disk", shown
        if slowest == "memory-to-disk":
            return "destination-disk", shown
        faster = [k for k in parts if k not in (MEMORY, slowest)]
        if all(parts[k].goodput_mbit >= SLOWER * rate for k in faster):
            return "both-disks", f"{shown}; each disk end alone keeps up"
        worst = min(faster, key=lambda k: parts[k].goodput_mbit)
        return ("source-disk" if worst == "disk-to-memory" else "destination-disk"), shown
    if rate >= FULL * goodput_mbit:
        return "path", f"memory to memory {rate:.1f} of {goodput_mbit:.1f} Mbit/s"
    limits = memory.limits
    shown = f"memory to memory {rate:.1f} of {goodput_mbit:.1f} Mbit/s"
    if limits is not None and max(limits.rwnd_share, limits.sndbuf_share) >= LIMITED:
        held = (
            f"{shown}; the receiver's window held the sender back {limits.rwnd_share:.0%} of "
            f"the time, its own buffer {limits.sndbuf_share:.0%}"
        )
        if limits.rwnd_share >= limits.sndbuf_share:
            return "receiver-window", held
        return "sender-buffer", held
    return "congestion", f"{shown}, {memory.retransmits} retransmits"


def lift_for(
    cap: str,
    windows: Windows,
    needed: int,
    parts: dict[str, float],
    rtt_ms: float,
    peer: str | None = None,
) -> tuple[str, ...]:
    """What would lift `cap`, most direct first, in settings and figures; with a named `peer`
    the receiver's step is the peer's to take."""
    receive = _receive_buffer_for(windows, needed)
    send = 2 * needed  # the send buffer also keeps every byte in flight until it is acked
    if peer is None:
        rmem = f"raise the receiver's net.ipv4.tcp_rmem max ({windows.receiver_rmem_max}) " \
               f"to at least {receive} ({human_bytes(receive)})"  # fmt: skip
        wmem = f"raise the sender's net.ipv4.tcp_wmem max ({windows.sender_wmem_max}) to at " \
               f"least {send} ({human_bytes(send)})"  # fmt: skip
    else:
        shown = f", it advertised at most {human_bytes(windows.advertised)}" \
            if windows.advertised else ""  # fmt: skip
        rmem = f"raise net.ipv4.tcp_rmem max on the peer {peer} to at least {receive} " \
               f"({human_bytes(receive)}{shown}): iotuner cannot change it from here"  # fmt: skip
        wmem = f"raise this host's net.ipv4.tcp_wmem max ({windows.sender_wmem_max}) to at " \
               f"least {send} ({human_bytes(send)})"  # fmt: skip
    if cap in ("receiver-window", "sender-buffer"):
        steps = [rmem, wmem] if cap == "receiver-window" else [wmem, rmem]
        small = {rmem: windows.receiver_rmem_max < receive, wmem: windows.sender_wmem_max < send}
        if peer is not None:
            # The peer's buffer is not known here, and a window a sender held back never
            # grew: only a cap the peer's window set is the peer's to lift.
            small[rmem] = cap == "receiver-window"
        chosen = [s for s in steps if small[s]] or steps[:1]
        if peer is not None:
            # The rate is the most a run carried: a window that capped every run hid the rest.
            return (*chosen, f"the path needs at least {human_bytes(needed)} in flight at "
                             f"{rtt_ms:.0f} ms, more if it is faster than any run to the peer "
                             "carried")  # fmt: skip
        return (*chosen, f"the path needs {human_bytes(needed)} in flight at {rtt_ms:.0f} ms")
    if cap == "congestion":
        return ("a congestion control that tolerates loss (bbr) on the sender, or a path "
                "without loss",)  # fmt: skip
    if cap == "path":
        return ("nothing on these hosts: the path's rate is the cap (a faster link, or "
                "parallel paths)",)  # fmt: skip
    if cap == "source-disk":
        read = parts.get("disk-to-memory", 0.0)
        return (f"a faster read at the sender ({read:.1f} Mbit/s now): readahead on the "
                "source device, more disks striped under the file",)  # fmt: skip
    if cap == "destination-disk":
        write = parts.get("memory-to-disk", 0.0)
        return (f"a faster write at the receiver ({write:.1f} Mbit/s now): its disks, its "
                "writeback thresholds (vm.dirty_*)",)  # fmt: skip
    return ("each end keeps up alone: the load of disk and network together (CPU, interrupts, "
            "a NIC and a disk controller on one bus, as the paper found)",)  # fmt: skip


def _receive_buffer_for(windows: Windows, needed: int) -> int:
    """The tcp_rmem max whose advertised window holds `needed`: the kernel advertises a
    share of its buffer (the rest is kept for overhead); measured from the window it did
    advertise, else taken as half (tcp_adv_win_scale's long-standing default)."""
    share = 0.5
    if windows.advertised and windows.receiver_rmem_max:
        share = min(max(windows.advertised / windows.receiver_rmem_max, 0.25), 1.0)
    return math.ceil(needed / share)


def explain(
    rate_mbit: float,
    goodput_mbit: float,
    windows: Windows,
    before: dict[str, TransferResult],
    after: dict[str, TransferResult] | None = None,
    peer: str | None = None,
) -> Explanation:
    """The explanation of a transfer from its part trials `before` the tune (at the settings
    found; memory to memory among them, whose least RTT measures the path) and `after` it (at
    the recommended settings; None or empty when the baseline stays); `peer` names a receiver
    that is another host."""
    if MEMORY not in before:
        raise ValueError("the explanation needs the memory-to-memory part")
    rtt = before[MEMORY].min_rtt_ms or before[MEMORY].rtt_ms
    needed = needed_window(rate_mbit, rtt)
    cap, why = cap_of(before, goodput_mbit)
    parts = _figures(before)
    after_cap = cap_of(after, goodput_mbit)[0] if after and MEMORY in after else None
    return Explanation(rate_mbit, goodput_mbit, rtt, needed, windows, parts, cap, why,
                       lift_for(cap, windows, needed, parts, rtt, peer),
                       _figures(after or {}), after_cap, peer)  # fmt: skip


def _figures(parts: dict[str, TransferResult]) -> dict[str, float]:
    return {k: round(parts[k].goodput_mbit, 2) for k in PART_ORDER if k in parts}


def explanation_document(e: Explanation) -> dict[str, Any]:
    """The explanation as the `transfer` block of `iotuner tune --json`."""
    return {
        "peer": e.peer,
        "rate_mbit": e.rate_mbit,
        "goodput_mbit": round(e.goodput_mbit, 2),
        "rtt_ms": round(e.rtt_ms, 3),
        "needed_window_bytes": e.needed_bytes,
        "windows": {
            "sender_tcp_wmem_max": e.windows.sender_wmem_max,
            # A named peer's is not known here (None): only the window it advertised.
            "receiver_tcp_rmem_max": e.windows.receiver_rmem_max if e.peer is None else None,
            "advertised_bytes": e.windows.advertised,
            "ceiling_mbit": round(e.ceiling_mbit, 2),
        },
        "parts_mbit": e.parts,
        "cap": e.cap,
        "cap_text": CAPS[e.cap],
        "why": e.why,
        "lift": list(e.lift),
        "after_parts_mbit": e.after_parts,
        "after_cap": e.after_cap,
    }


def explanation_lines(e: Explanation) -> list[tuple[str, str]]:
    """The explanation as (label, text) rows for the terminal."""
    rate = f"{e.rate_mbit:g} Mbit/s"
    if e.peer is not None:
        rate = f"at least {rate} to {e.peer} (the most a run carried)"
    rows = [
        (
            "path",
            f"{rate}, RTT {e.rtt_ms:.1f} ms: it needs a window of "
            f"{human_bytes(e.needed_bytes)} (rate x RTT)",
        ),
        ("window now", _windows_text(e)),
        ("parts", _parts_text(e.parts)),
        ("cap now", f"{CAPS[e.cap]}: {e.why}"),
    ]
    rows += [("to lift it" if i == 0 else "", step) for i, step in enumerate(e.lift)]
    if e.after_parts:
        after = _parts_text(e.after_parts)
        cap = f": capped by {CAPS[e.after_cap]}" if e.after_cap else ""
        rows.append(("after", f"{after}{cap}"))
    return rows


def _windows_text(e: Explanation) -> str:
    w = e.windows
    text = (f"the receiver's buffer stops at {w.receiver_rmem_max} (tcp_rmem max), the "
            f"sender's at {w.sender_wmem_max} (tcp_wmem max)")  # fmt: skip
    if e.peer is not None:
        text = (f"this host's send buffer stops at {w.sender_wmem_max} (tcp_wmem max); the "
                "peer's receive buffer is not known here")  # fmt: skip
    if w.advertised:
        text += (f"; the receiver advertised at most {human_bytes(w.advertised)}: "
                 f"{e.ceiling_mbit:.1f} Mbit/s at this RTT")  # fmt: skip
    return text


def _parts_text(parts: dict[str, float]) -> str:
    return ", ".join(f"{kind} {mbit:.1f} Mbit/s" for kind, mbit in parts.items())


def transfer_document(result: TuneResult, explanation: Explanation) -> dict[str, Any]:
    """The `iotuner tune --json` document of a transfer tune: a tune's, plus `transfer`."""
    document = result_document(result)
    document["transfer"] = explanation_document(explanation)
    return document


def explanation_table(explanation: Explanation) -> Table:
    """The explanation's rows under the summary."""
    table = Table(title="the path, in the terms of Hughes-Jones & Dallison", title_justify="left")
    table.add_column("")
    table.add_column("")
    for label, text in explanation_lines(explanation):
        table.add_row(label, text)
    return table
