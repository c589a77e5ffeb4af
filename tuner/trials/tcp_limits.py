"""What held a TCP sender back, as the kernel counts it: the receiver's window, the send
buffer, or neither (the congestion window: the path and congestion control).

Since Linux 4.10 every socket keeps "chrono" timers (tcp_info's tcpi_busy_time,
tcpi_rwnd_limited, tcpi_sndbuf_limited) that `ss -ti` shows as `busy:3480ms
rwnd_limited:1092ms(31.4%) sndbuf_limited:540ms(15.5%)`. A transfer trial samples them at the
sender while iperf3 runs (the connection is gone once it ends), so the tune can say which
window capped the transfer from the kernel's own accounting instead of guessing from settings.

`parse_ss` is a small parser of that text; `LimitSampler` polls `ss` in the sender's
namespace, bounded in time, and keeps the last sample of the busiest connection to the port.
"""

from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass
from types import TracebackType

from tuner.tunables.netns import in_netns

POLL_S = 0.5
SS_TIMEOUT_S = 5.0
MAX_SS_BYTES = 1 << 20
_PEER_PORT = re.compile(r":(\d{1,5})$")
_FIELD = re.compile(r"\b(busy|rwnd_limited|sndbuf_limited):(\d{1,12})ms")
_ACKED = re.compile(r"\bbytes_acked:(\d{1,20})")


@dataclass(frozen=True)
class TcpLimits:
    """One connection's chrono timers: `busy_ms` while it had data to send, and of that time
    `rwnd_ms` held by the receiver's advertised window and `sndbuf_ms` by its own send buffer;
    the rest it sent as fast as the congestion window let it."""

    busy_ms: int
    rwnd_ms: int
    sndbuf_ms: int
    bytes_acked: int = 0

    @property
    def rwnd_share(self) -> float:
        """The share of busy time the receiver's window held the sender back (0 when idle)."""
        return self.rwnd_ms / self.busy_ms if self.busy_ms else 0.0

    @property
    def sndbuf_share(self) -> float:
        """The share of busy time the sender's own buffer held it back."""
        return self.sndbuf_ms / self.busy_ms if self.busy_ms else 0.0

    @property
    def cwnd_share(self) -> float:
        """The rest of the busy time: limited by the congestion window (the path)."""
        return max(0.0, 1.0 - self.rwnd_share - self.sndbuf_share) if self.busy_ms else 0.0


def parse_ss(text: str, port: int) -> TcpLimits | None:
    """The timers of the connection to peer `port` that moved the most bytes, from
    `ss -tinH` output (a socket line, then its indented details); None when there is none."""
    best: TcpLimits | None = None
    peer_port: int | None = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            words = line.split()
            match = _PEER_PORT.search(words[4]) if len(words) >= 5 else None
            peer_port = int(match.group(1)) if match else None
            continue
        if peer_port != port:
            continue
        fields = {name: int(value) for name, value in _FIELD.findall(line)}
        acked = _ACKED.search(line)
        found = TcpLimits(
            busy_ms=fields.get("busy", 0),
            rwnd_ms=fields.get("rwnd_limited", 0),
            sndbuf_ms=fields.get("sndbuf_limited", 0),
            bytes_acked=int(acked.group(1)) if acked else 0,
        )
        if best is None or found.bytes_acked > best.bytes_acked:
            best = found
    return best


class LimitSampler:
    """Polls `ss -tinH` (in namespace `ns`, None for this host's) every POLL_S while the
    `with` block runs; `last` is the latest sample of the connection to `address`:`port`
    that moved the most bytes (the data connection, not iperf3's control connection)."""

    def __init__(self, ns: str | None, address: str, port: int) -> None:
        self.command = in_netns(ns, ["ss", "-tinH", "dst", address])
        self.port = port
        self.last: TcpLimits | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LimitSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=SS_TIMEOUT_S + 1)

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                done = subprocess.run(self.command, capture_output=True, timeout=SS_TIMEOUT_S,
                                      check=False)  # fmt: skip
            except (OSError, subprocess.TimeoutExpired):
                continue  # a missed sample: the next one counts from the connection's start
            found = parse_ss(done.stdout[:MAX_SS_BYTES].decode(errors="replace"), self.port)
            # The data connection closes before the control one: a later sample without it
            # must not replace its figures (they only grow while it lives).
            if found is not None and (self.last is None
                                      or found.bytes_acked >= self.last.bytes_acked):  # fmt: skip
                self.last = found
