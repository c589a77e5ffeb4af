"""What the daemon holds, setting by setting, and what its checks found (tuner/daemon/plan_hold.py).

Mutable on purpose: a check updates what a setting reads and when it was last right, a device
event renames a disk that came back under another name. The events' words live here too:
what a value reads, what likely reset it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probes.hostfs import HostFS
from tuner.apply.identity import Identity
from tuner.apply.render import LiveSetting
from tuner.daemon.events import Event, event
from tuner.daemon.hwclass import HardwareClass
from tuner.daemon.plan_source import HeldPlan
from tuner.daemon.reapply import Written
from tuner.tunables.access import format_value
from tuner.tunables.base import Value

SETTLE = "settle re-check"
"""The trigger of the second look at a device written just after it appeared or changed."""


@dataclass(eq=False)  # compared by identity: a device is the same one under a new name
class Device:
    """A held block device: its kernel name now, what identifies it, its class."""

    name: str
    identity: Identity | None
    hwclass: HardwareClass | None
    gone: bool = False
    udev: tuple[str, float] | None = None  # the last udev action seen for it, and when
    settle_at: float | None = None  # when to read its settings once more (time.time())
    joined: bool = False  # joined a held disk's class, rather than named by the plan


@dataclass(eq=False)
class HeldSetting:
    """One held setting and what the checks found."""

    live: LiveSetting
    device: Device | None  # None for what is no block device: sysctls, NICs, IRQs, CPUs
    actual: Value | None = None
    ok_at: float | None = None  # when it last read as the plan holds
    refused: Value | None = None  # what it read when the kernel refused the restore
    problem: str | None = None  # the last error reported, so it is reported once

    @property
    def gone(self) -> bool:
        """True while its device is not here."""
        return self.device is not None and self.device.gone

    def took(self, result: Written) -> None:
        """Record what a write left: the value it reads now, and when it was last right."""
        if result.actual is not None:
            self.actual = result.actual
        if result.ok:
            self.ok_at, self.refused, self.problem = time.time(), None, None

    def report(self, message: str) -> list[Event]:
        """An error event, unless the same one was the last reported for this setting."""
        if message == self.problem:
            return []
        self.problem = message
        return [event("error", message, key=self.live.key, target=self.live.target)]


def reset_by(
    held: HeldSetting, trigger: str, now: float, plan: HeldPlan, boot_time: float | None
) -> str:
    """What most likely reset a setting, from what the daemon saw, and no more than that."""
    device, since = held.device, held.ok_at
    if device is not None and device.udev is not None:
        action, at = device.udev
        if trigger == SETTLE:
            return f"the kernel or udev settling {device.name} after its udev {action} at {hms(at)}"
        if since is None or at >= since:
            return f"a udev {action} event at {hms(at)} ({device.name} re-attached or changed)"
    if since is not None:
        return f"another process between {hms(since)} and {hms(now)}"
    applied = plan.applied_at
    if applied is not None and boot_time is not None and applied < boot_time:
        return f"the reboot at {when(boot_time)} ({plan.origin} was made at {when(applied)})"
    if applied is not None:
        return f"another process between {hms(applied)} ({plan.origin}) and {hms(now)}"
    return f"something before the daemon first checked it at {hms(now)}"


def boot_time(root: Path) -> float | None:
    """When this boot began (btime of /proc/stat), None where the root has no /proc."""
    for line in (HostFS(root).read("proc/stat") or "").splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return None


def plain(value: Value | None) -> Any:
    """A value for JSON: a triple as a list."""
    return list(value) if isinstance(value, tuple) else value


def text(value: Value | None) -> str:
    """A value for people."""
    return "nothing" if value is None else format_value(value)


def hms(stamp: float) -> str:
    """The local time of day, to the second."""
    return time.strftime("%H:%M:%S", time.localtime(stamp))


def when(stamp: float) -> str:
    """The local date and time, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
