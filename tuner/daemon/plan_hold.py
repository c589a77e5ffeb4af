"""Holding the applied plan: drift checks, and the disks that come and go.

    holder = Holder(Path("/"), journal_path())
    holder.load(find_plan(journal_path(), None))   # the latest apply in force
    holder.check()                                 # reads each held value; restores drift
    holder.device_event("change", "loop7")         # from tuner/daemon/hotplug.py

The checks and restores are tuner/daemon/drift.py. Disks are followed by their identity
(tuner/apply/identity.py) and hardware class (tuner/daemon/hwclass.py): a held disk that is
re-attached is checked at once (under its new kernel name, if it has one), one that leaves is
no longer checked, and a new disk of a held disk's class gets that disk's block settings.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from probes.hostfs import HostFS
from tuner.apply.identity import Identity, block_identity
from tuner.apply.render import LiveSetting
from tuner.daemon.drift import JOURNAL_TROUBLE, SETTLE_SECONDS, DriftHolder, unlike
from tuner.daemon.events import Event, event
from tuner.daemon.held import SETTLE, Device, HeldSetting, hms, text
from tuner.daemon.hwclass import HardwareClass, Matcher
from tuner.daemon.plan_source import HeldPlan, find_plan
from tuner.daemon.reapply import Written, write_journaled
from tuner.tunables.base import TunableError, Value

__all__ = ["SETTLE", "SETTLE_SECONDS", "HeldPlan", "Holder", "find_plan"]

log = logging.getLogger("iotuner.daemon.hold")


class Holder(DriftHolder):
    """A plan's settings held on the host below `root`, restores journaled in `journal_path`,
    following the disks udev reports. Every method returns events; none raises for the
    host's trouble."""

    def load(self, held: HeldPlan | None) -> list[Event]:
        """Hold `held` from now on (None: nothing); see DriftHolder.load. Disks that joined
        a class under the previous plan join again if the new plan holds a disk of it."""
        joined = [(d.name, d.identity) for d in self._devices if d.joined and not d.gone]
        self._matcher = Matcher(self.root)
        events = super().load(held)
        for name, identity in joined:
            if self.held is not None and block_identity(HostFS(self.root), name) == identity:
                events += self._join(name, identity, None)
        return events

    # -- devices ------------------------------------------------------------------------------

    def device_event(self, action: str, name: str) -> list[Event]:
        """A udev add, change or remove of the whole disk `name`: check a held disk now (or
        stop checking it when it leaves), follow a held disk that comes back under any name,
        and give a new disk of a held disk's class that disk's block settings."""
        if self.held is None or action not in ("add", "change", "remove"):
            log.debug("udev %s %s: ignored", action, name)
            return []
        now = time.time()
        device = next((d for d in self._devices if d.name == name and not d.gone), None)
        if device is None:
            if action == "remove":
                log.debug("udev remove %s: not held", name)
                return []
            return self._arrive(action, name, now, block_identity(HostFS(self.root), name))
        device.udev = (action, now)
        if action == "remove":
            return self._leave(device, f"was removed (udev remove at {hms(now)})")
        if device.identity is not None:
            identity = block_identity(HostFS(self.root), name)
            if identity != device.identity:
                what = f"now holds another disk ({identity})" if identity else "was detached"
                left = self._leave(device, f"{what} (udev {action} at {hms(now)})")
                return left + self._arrive(action, name, now, identity)
        events = self._check([device], f"udev {action}")
        self._settle(device)
        return events

    def _arrive(self, action: str, name: str, now: float, identity: Identity | None) -> list[Event]:
        if identity is not None:
            for device in self._devices:
                if device.gone and device.identity == identity:
                    return self._back(device, name, action, now)
        return self._join(name, identity, (action, now))

    def _join(
        self, name: str, identity: Identity | None, udev: tuple[str, float] | None
    ) -> list[Event]:
        known = [d.hwclass for d in self._devices if d.hwclass is not None]
        cls = self._matcher.match(name, identity, known)
        like = next((d for d in self._devices if cls is not None and d.hwclass == cls), None)
        if cls is None or like is None:
            log.debug("%s: no disk of a held class", name)
            return []
        return self._adopt(Device(name, identity, cls, udev=udev, joined=True), like)

    def _back(self, device: Device, name: str, action: str, now: float) -> list[Event]:
        old = device.name
        device.name, device.gone, device.udev = name, False, (action, now)
        for held in self._settings:
            if held.device is device:
                path = self._tunables.path(held.live.key, name)
                held.live = replace(held.live, target=name, path=path)
                held.actual = held.ok_at = held.refused = held.problem = None
        where = name if old == name else f"{name} (was {old})"
        message = f"{where} is back ({device.identity}): its held settings are checked again"
        events = [event("hotplug", message, device=name)]
        events += self._check([device], f"udev {action}")
        self._settle(device)
        return events

    def _adopt(self, device: Device, like: Device) -> list[Event]:
        """Give `device` the block settings held on `like`, journaled, and hold them."""
        assert self.held is not None
        cls: HardwareClass | None = device.hwclass
        joins = f"{device.name} joins the class of {like.name}"
        events: list[Event] = []
        settings: list[LiveSetting] = []
        pending: dict[tuple[str, str], Value] = {}
        for s in [h.live for h in self._settings if h.device is like]:
            try:
                setting = self._validated(s.entry, s.key, device.name, s.value, pending)
            except TunableError as err:
                events.append(event("error", f"{joins}, but {err}; not applied"))
                continue
            pending[(setting.key, setting.target)] = setting.value
            settings.append(setting)
        if not settings:
            return events
        results = [self._as_is(s) for s in settings]
        apply_id = None
        if not all(r.ok for r in results):
            try:
                journal = self._open_journal()
                apply_id, results = write_journaled(journal, self.root, self.held, settings, joins)
            except JOURNAL_TROUBLE as err:
                why = f"{joins}, but it could not be journaled in {self.journal_path}: {err}"
                return [*events, event("error", f"{why}; nothing written")]
        self._devices.append(device)
        done = []
        for result in results:
            held = HeldSetting(result.setting, device)
            held.took(result)
            self._settings.append(held)
            if result.ok:
                done.append(f"{result.setting.key} {text(result.actual)}")
            elif result.error:
                held.refused, held.problem = result.before, f"not applied: {result.error}"
                events.append(event("error", f"{joins}, but {result.error}"))
            else:
                events.append(event("error", f"{device.name}: {unlike(result)}"))
        what = "applied" if any(r.written for r in results) else "already so"
        summary = cls.summary if cls is not None else "?"
        message = f"{joins} ({summary}): {', '.join(done) or 'nothing'} {what}"
        self._settle(device)
        return [event("hotplug", message, device=device.name, like=like.name,
                      hwclass=summary, apply_id=apply_id), *events]  # fmt: skip

    def _as_is(self, setting: LiveSetting) -> Written:
        """A setting as it reads now, unwritten (an error reads as not ok: it gets written)."""
        try:
            actual = self._tunables.read(setting.key, setting.target)
        except TunableError as err:
            return Written(setting, None, None, False, str(err))
        return Written(setting, actual, actual, False)

    # -- the second look after a device appeared --------------------------------------------

    def next_due(self) -> float | None:
        """When (time.time()) `due` has a device to look at again; None when none."""
        times = [d.settle_at for d in self._devices if d.settle_at is not None and not d.gone]
        return min(times, default=None)

    def due(self, now: float | None = None) -> list[Event]:
        """Check once more the devices written about a second ago after they appeared or
        changed: the kernel may still have been setting up their queue."""
        now = time.time() if now is None else now
        ready = [d for d in self._devices if d.settle_at is not None and d.settle_at <= now]
        for device in ready:
            device.settle_at = None
        ready = [d for d in ready if not d.gone]
        return self._check(ready, SETTLE) if ready else []
