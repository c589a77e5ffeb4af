"""Block device events from the kernel or udev, for the daemon's loop (pyudev, no thread).

Where udevd runs (its control socket /run/udev/control exists) the events come from udev,
after its rules ran: a rule of `iotuner apply` has set the disk's queue by then, and the
daemon's check finds it right. Without udevd (a container, this project's VM) the kernel's
own uevents still arrive: attaching a loop device gives a "change" of loopN, a new disk an
"add". Only whole disks (DEVTYPE disk) of the block subsystem are passed on.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import pyudev

log = logging.getLogger("iotuner.daemon.hotplug")

UDEV_CONTROL = Path("/run/udev/control")
RECEIVE_BUFFER = 4 << 20
"""Bytes the kernel may queue for the socket: a burst of loop attaches by other programs
between two turns of the loop must not overflow it (ENOBUFS loses events)."""


def default_source() -> str:
    """ "udev" when udevd runs, else "kernel"."""
    return "udev" if UDEV_CONTROL.exists() else "kernel"


class HotplugMonitor:
    """A netlink socket of block events; select on `fileno()`, then `receive()`."""

    def __init__(self, source: str | None = None) -> None:
        self.source = source or default_source()
        self._monitor: pyudev.Monitor | None = pyudev.Monitor.from_netlink(
            pyudev.Context(), source=self.source
        )
        self._monitor.filter_by("block", device_type="disk")
        with contextlib.suppress(OSError, ValueError):
            self._monitor.set_receive_buffer_size(RECEIVE_BUFFER)
        self._monitor.start()

    def fileno(self) -> int:
        """The socket to wait on."""
        return int(self._open().fileno())

    def _open(self) -> pyudev.Monitor:
        if self._monitor is None:
            raise ValueError("the hotplug monitor is closed")
        return self._monitor

    def receive(self) -> list[tuple[str, str]]:
        """Every event waiting, as (action, kernel name), oldest first, without blocking; an
        event repeated back to back (a loop detach sends two changes) is given once."""
        found: list[tuple[str, str]] = []
        while True:
            try:
                device = self._open().poll(timeout=0)
            except OSError as err:
                # ENOBUFS: events were lost; the periodic check still covers the held disks.
                log.warning("udev monitor: %s", err)
                return found
            if device is None:
                return found
            if device.subsystem != "block" or device.device_type != "disk" or not device.action:
                continue
            item = (str(device.action), str(device.sys_name))
            if not found or found[-1] != item:
                found.append(item)

    def close(self) -> None:
        """Stop listening: libudev closes the socket with its last reference."""
        self._monitor = None
