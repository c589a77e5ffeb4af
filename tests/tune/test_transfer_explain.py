"""The explanation of a transfer tune in the paper's terms, from part trials' figures.

The parts are TransferResults as iperf3 and the sender's kernel report them; the figures are
the lab's (wan-old-buffers: 200 Mbit/s, 100 ms, Linux 2.6's buffers) and the paper's shapes
(a disk end slower than the network, both ends fine alone but not together).
"""

from __future__ import annotations

import pytest

from tuner.trials.tcp_limits import TcpLimits
from tuner.trials.transfer import TransferResult
from tuner.tune.transfer_explain import (
    Windows,
    cap_of,
    explain,
    explanation_document,
    explanation_lines,
    needed_window,
)

GOODPUT = 191.3
OLD = Windows(sender_wmem_max=131072, receiver_rmem_max=174760, advertised=113280)


def part(kind: str, mbit: float, *, limits: TcpLimits | None = None, retransmits: int = 0,
         committed: float = 0.0) -> TransferResult:  # fmt: skip
    return TransferResult(kind=kind, seconds=3.0, sent_mbit=mbit, received_mbit=mbit,
                          retransmits=retransmits, intervals_mbit=(mbit,), rtt_ms=100.8,
                          max_cwnd_bytes=338832, congestion="bbr", sender_cpu_percent=1.0,
                          receiver_cpu_percent=1.0, committed_mbit=committed, min_rtt_ms=100.3,
                          max_snd_wnd_bytes=113280, limits=limits)  # fmt: skip


SMALL_WINDOWS = part("memory-to-memory", 7.6, limits=TcpLimits(4096, 1308, 700))


def test_old_buffers_name_the_receivers_window_and_how_far_to_raise_it() -> None:
    e = explain(200, GOODPUT, OLD, {"memory-to-memory": SMALL_WINDOWS})
    assert e.needed_bytes == needed_window(200, 100.3) == 2_507_500
    assert e.cap == "receiver-window"
    assert "held the sender back 32% of the time, its own buffer 17%" in e.why
    # The receiver advertised 113280 of its 174760: 0.648 of its buffer, so the buffer that
    # advertises the path's 2.5 MB is 2.5 MB / 0.648.
    assert e.lift[0].startswith(
        "raise the receiver's net.ipv4.tcp_rmem max (174760) to at least 38"
    )
    assert "the sender's net.ipv4.tcp_wmem max (131072) to at least 5015000" in e.lift[1]
    assert e.ceiling_mbit == pytest.approx(9.04, abs=0.01)  # window / RTT


def test_a_sender_held_by_its_own_buffer_names_it_first() -> None:
    held = part("memory-to-memory", 7.6, limits=TcpLimits(4000, 400, 2000))
    e = explain(200, GOODPUT, OLD, {"memory-to-memory": held})
    assert e.cap == "sender-buffer"
    assert "tcp_wmem" in e.lift[0]


def test_a_full_path_is_the_cap_and_nothing_on_the_hosts_lifts_it() -> None:
    after = {"memory-to-memory": part("memory-to-memory", 190.9)}
    e = explain(200, GOODPUT, OLD, {"memory-to-memory": SMALL_WINDOWS}, after)
    assert e.after_cap == "path"
    assert cap_of(after, GOODPUT)[0] == "path"
    assert e.after_parts == {"memory-to-memory": 190.9}


def test_without_a_window_limit_the_congestion_window_is_named() -> None:
    lossy = part("memory-to-memory", 40.0, limits=TcpLimits(4000, 0, 0), retransmits=812)
    cap, why = cap_of({"memory-to-memory": lossy}, GOODPUT)
    assert (cap, why) == ("congestion", "memory to memory 40.0 of 191.3 Mbit/s, 812 retransmits")


def test_the_slowest_disk_end_caps_a_disk_to_disk_transfer() -> None:
    parts = {
        "memory-to-memory": part("memory-to-memory", 190.0),
        "disk-to-memory": part("disk-to-memory", 96.0),
        "memory-to-disk": part("memory-to-disk", 150.0, committed=80.0),
        "disk-to-disk": part("disk-to-disk", 85.0, committed=78.0),
    }
    # Committed, not received: the receiver's page cache takes more than its disk writes.
    assert cap_of(parts, GOODPUT)[0] == "destination-disk"
    e = explain(200, GOODPUT, OLD, parts)
    assert e.parts == {"memory-to-memory": 190.0, "disk-to-memory": 96.0,
                       "memory-to-disk": 80.0, "disk-to-disk": 78.0}  # fmt: skip
    assert "a faster write at the receiver (80.0 Mbit/s now)" in e.lift[0]


def test_ends_fine_alone_but_slow_together_are_both_disks() -> None:
    parts = {
        "memory-to-memory": part("memory-to-memory", 190.0),
        "disk-to-memory": part("disk-to-memory", 188.0),
        "memory-to-disk": part("memory-to-disk", 186.0, committed=186.0),
        "disk-to-disk": part("disk-to-disk", 120.0, committed=120.0),
    }
    cap, why = cap_of(parts, GOODPUT)
    assert cap == "both-disks" and "each disk end alone keeps up" in why


def test_a_disk_end_within_the_networks_speed_is_not_the_cap() -> None:
    parts = {"memory-to-memory": SMALL_WINDOWS, "disk-to-memory": part("disk-to-memory", 7.2)}
    assert cap_of(parts, GOODPUT)[0] == "receiver-window"


def test_json_and_text_say_the_same() -> None:
    e = explain(200, GOODPUT, OLD, {"memory-to-memory": SMALL_WINDOWS})
    doc = explanation_document(e)
    assert doc["cap"] == "receiver-window"
    assert doc["cap_text"] == "the receiver's window (net.ipv4.tcp_rmem max)"
    assert doc["needed_window_bytes"] == 2_507_500
    assert doc["windows"]["receiver_tcp_rmem_max"] == 174760
    rows = dict(explanation_lines(e))
    assert rows["cap now"].startswith("the receiver's window")
    assert "2.4 MiB (rate x RTT)" in rows["path"]


def test_the_memory_part_is_required() -> None:
    with pytest.raises(ValueError, match="memory-to-memory"):
        explain(200, GOODPUT, OLD, {"disk-to-memory": part("disk-to-memory", 9.0)})


# A named peer: the receiver is another host, its tcp_rmem unknown here (0).
PEER = "10.77.0.2:5201"
PEER_WINDOWS = Windows(sender_wmem_max=131072, receiver_rmem_max=0, advertised=113280)


def test_a_peers_window_is_the_peers_to_raise_from_what_it_advertised() -> None:
    e = explain(191.0, 191.0, PEER_WINDOWS, {"memory-to-memory": SMALL_WINDOWS}, peer=PEER)
    assert e.cap == "receiver-window"
    # Its buffer unknown, half of it taken as advertised: twice the 2.39 MB that 191 Mbit/s
    # keep in flight over 100.3 ms.
    assert e.needed_bytes == 2_394_662
    assert e.lift[0] == (
        "raise net.ipv4.tcp_rmem max on the peer 10.77.0.2:5201 to at least 4789324 (4.6 MiB, "
        "it advertised at most 110.6 KiB): iotuner cannot change it from here"
    )
    assert e.lift[1].startswith("raise this host's net.ipv4.tcp_wmem max (131072) to at least")
    # The rate is a floor when the peer's window held every run back: so is the window.
    assert e.lift[2] == ("the path needs at least 2.3 MiB in flight at 100 ms, more if it is "
                         "faster than any run to the peer carried")  # fmt: skip
    doc = explanation_document(e)
    assert doc["peer"] == PEER and doc["windows"]["receiver_tcp_rmem_max"] is None
    assert doc["windows"]["advertised_bytes"] == 113280
    rows = dict(explanation_lines(e))
    assert rows["path"].startswith("at least 191 Mbit/s to 10.77.0.2:5201 (the most a run")
    assert "the peer's receive buffer is not known here" in rows["window now"]
    assert "(tcp_rmem max)" not in rows["window now"].split(";")[0]


def test_a_sender_held_by_its_own_buffer_leaves_the_peer_alone() -> None:
    held = part("memory-to-memory", 7.6, limits=TcpLimits(4000, 400, 2000))
    e = explain(191.0, 191.0, PEER_WINDOWS, {"memory-to-memory": held}, peer=PEER)
    assert e.cap == "sender-buffer"
    assert e.lift[0].startswith("raise this host's net.ipv4.tcp_wmem max (131072)")
    assert not any("on the peer" in step for step in e.lift)
