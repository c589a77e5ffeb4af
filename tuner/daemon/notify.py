"""sd_notify(3) for Type=notify units: readiness, status, watchdog pings, stopping.

The protocol is one datagram of KEY=VALUE lines to the socket in $NOTIFY_SOCKET (an abstract
socket when it starts with "@"). It is small and stable, so it is spoken here directly rather
than through libsystemd bindings, which need a C toolchain and headers to install.
"""

from __future__ import annotations

import os
import socket
import time

from probes.hostfs import digits


class Notifier:
    """Talks to the service manager when one is listening; does nothing otherwise."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_s = _watchdog_seconds(env)
        self._last_ping = 0.0

    @property
    def enabled(self) -> bool:
        """True when a service manager gave us a socket."""
        return bool(self._address)

    def send(self, *lines: str) -> bool:
        """Send KEY=VALUE lines in one datagram; False when nobody listens or it failed."""
        if not self._address:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                # Never wait: a manager that does not read (or a full queue) must not stall
                # the loop; a lost watchdog ping is better than a daemon stuck in sendto.
                sock.sendto("\n".join(lines).encode(), socket.MSG_DONTWAIT, self._address)
        except OSError:
            # The manager went away or restarts: the daemon's work must not depend on it.
            return False
        return True

    def ready(self, status: str) -> None:
        """READY=1 with a status line."""
        self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        """A new STATUS= line (what `systemctl status` shows)."""
        self.send(f"STATUS={status}")

    def reloading(self) -> None:
        """RELOADING=1 before a config reload; `ready` again after it."""
        self.send(
            "RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}"
        )

    def stopping(self) -> None:
        """STOPPING=1 when shutdown starts (restoring a trial can take a while)."""
        self.send("STOPPING=1")

    def ping_due(self, now: float) -> float | None:
        """Seconds until the next watchdog ping is due (None without a watchdog)."""
        if self.watchdog_s is None:
            return None
        # Half the interval, as sd_watchdog_enabled(3) advises.
        return max(0.0, self._last_ping + self.watchdog_s / 2 - now)

    def ping(self, now: float) -> None:
        """WATCHDOG=1 when one is due."""
        due = self.ping_due(now)
        if due is not None and due <= 0:
            self.send("WATCHDOG=1")
            self._last_ping = now


def _watchdog_seconds(env: os._Environ[str] | dict[str, str]) -> float | None:
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not digits(usec) or int(usec) == 0:
        return None
    # WATCHDOG_PID names the process meant; a child that inherited the variable must not ping.
    if pid and digits(pid) and int(pid) != os.getpid():
        return None
    return int(usec) / 1e6
