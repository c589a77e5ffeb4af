"""Checking that a plan's settings still hold, and putting back those that do not.

A check reads one small file per held setting and nothing else. A setting that differs is
written back in a change set of its own (tuner/daemon/reapply.py), and one "drift" event says
what it read, what the plan holds, and, as well as the daemon can tell, what reset it: a udev
event for the device, a reboot since the apply, or another process between two checks.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from probes.hostfs import HostFS
from tuner.apply.identity import block_identity
from tuner.apply.lock import changes_lock
from tuner.apply.render import LiveSetting
from tuner.daemon import plan_source
from tuner.daemon.events import Event, event
from tuner.daemon.held import SETTLE, Device, HeldSetting, boot_time, plain, reset_by, text
from tuner.daemon.hwclass import classes
from tuner.daemon.plan_source import HeldPlan
from tuner.daemon.reapply import Written, write_journaled
from tuner.errors import IotunerError
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TargetGone, TunableError, Value
from tuner.tunables.block import BlockTunable
from tuner.tunables.engine import conflict
from tuner.tunables.journal import Journal
from tuner.tunables.table import apply_rank

log = logging.getLogger("iotuner.daemon.hold")

SETTLE_SECONDS = 1.0
"""A loop device just attached may still get its queue set by the kernel (read_ahead_kb 2560
from the backing file's limits): what was written to it is read again this much later."""

JOURNAL_TROUBLE = (sqlite3.Error, OSError, TunableError)
"""What journaling a restore may raise; reported as an error event, nothing written."""


class DriftHolder:
    """The settings of one plan, held on the host below `root`, restores journaled in
    `journal_path`. Every method returns events; none raises for the host's trouble.
    Holder (tuner/daemon/plan_hold.py) adds the devices that come and go."""

    def __init__(self, root: Path, journal_path: Path) -> None:
        self.root = root
        self.journal_path = journal_path
        self.held: HeldPlan | None = None
        self._tunables = Tunables(root)
        self._settings: list[HeldSetting] = []
        self._devices: list[Device] = []
        self._journal: Journal | None = None
        self._boot_time = boot_time(root)

    # -- the plan -----------------------------------------------------------------------------

    def load(self, held: HeldPlan | None) -> list[Event]:
        """Hold `held` from now on (None: nothing). Each entry is validated as `iotuner apply`
        does; one that is invalid here, or whose target is gone, is an error event and the
        rest are held. Probes the host once for the hardware classes of the plan's disks."""
        self.held, self._settings, self._devices = held, [], []
        if held is None:
            why = f"no plan file configured and no apply in force in {self.journal_path}"
            return [event("plan", f"no plan to hold: {why}")]
        events: list[Event] = []
        entries = held.plan.entries
        batch = {(e.key, _name(self._tunables, e.key, e.target)) for e in entries}
        pending: dict[tuple[str, str], Value] = {}
        devices: dict[str, Device] = {}
        fs = HostFS(self.root)
        for i in sorted(range(len(entries)), key=lambda i: apply_rank(entries[i].key)):
            entry = entries[i]
            try:
                setting = self._validated(i, entry.key, entry.target, entry.value, pending, batch)
            except TunableError as err:
                message = f"{held.origin}: entries[{i}]: {err}; not held"
                events.append(event("error", message, key=entry.key, target=entry.target))
                continue
            pending[(setting.key, setting.target)] = setting.value
            device = None
            if isinstance(self._tunables.impl(setting.key), BlockTunable):
                device = devices.get(setting.target)
                if device is None:
                    identity = block_identity(fs, setting.target)
                    device = devices[setting.target] = Device(setting.target, identity, None)
            self._settings.append(HeldSetting(setting, device))
        self._devices = list(devices.values())
        if self._devices:
            found = classes(self.root, [d.name for d in self._devices])
            for device in self._devices:
                device.hwclass = found.get(device.name)
        targets = ", ".join(dict.fromkeys(h.live.target for h in self._settings)) or "nothing"
        message = f"holding {held.origin} ({held.path}): {len(self._settings)} setting(s) on "
        events.append(event("plan", message + targets, origin=held.origin, apply_id=held.apply_id))
        return events

    def _validated(
        self,
        entry: int,
        key: str,
        target: str,
        value: object,
        pending: dict[tuple[str, str], Value],
        batch: set[tuple[str, str]] | None = None,
    ) -> LiveSetting:
        """As render does it: the value checked against the host and the batch, and what
        reading it back should give."""
        tunables = self._tunables
        name = tunables.target(key, target)
        why = conflict(key, name, batch or set())
        if why:
            raise InvalidValue(f"{key} on {name}: {why}")
        checked = tunables.validate(key, name, value, pending=pending)
        expected = tunables.expected(key, name, checked)
        return LiveSetting(entry, key, name, checked, expected, tunables.path(key, name))

    def plan_state(self) -> dict[str, Any] | None:
        """The held plan for `iotuner status`; None when nothing is held."""
        return None if self.held is None else self.held.as_json()

    def block_targets(self) -> list[str]:
        """The kernel names of the held block devices that are here now."""
        return [d.name for d in self._devices if not d.gone]

    def state(self) -> list[dict[str, Any]]:
        """Each held setting as the last check found it: key, target, expected, actual, ok,
        and a note saying why it is not ok where the daemon knows."""
        rows = []
        for held in self._settings:
            actual = None if held.gone else held.actual
            rows.append({
                "key": held.live.key,
                "target": held.live.target,
                "expected": plain(held.live.expected),
                "actual": plain(actual),
                "ok": actual is not None and actual == held.live.expected,
                "note": "device gone" if held.gone else (held.problem or ""),
            })  # fmt: skip
        return rows

    def close(self) -> None:
        """Close the journal, if a restore opened it."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    # -- checking -----------------------------------------------------------------------------

    def check(self, cause: str = "periodic") -> list[Event]:
        """Read every held setting and restore, journaled, each that differs. `cause` is what
        asked ("periodic", "start", ...); a value whose restore the kernel refused is tried
        again by any check but a periodic one, or once it reads something else."""
        return self._check(None, cause)

    def _check(self, only: list[Device] | None, trigger: str) -> list[Event]:
        if self.held is None:
            return []
        now = time.time()
        events: list[Event] = []
        drifted: list[HeldSetting] = []
        for held in list(self._settings):  # a device found gone leaves the list
            if held.gone or (only is not None and held.device not in only):
                continue
            try:
                actual = self._tunables.read(held.live.key, held.live.target)
            except TargetGone as err:
                if held.device is not None:
                    events += self._leave(held.device, f"is gone ({err})")
                else:
                    events += held.report(str(err))
                continue
            except TunableError as err:
                events += held.report(str(err))
                continue
            held.actual = actual
            if actual == held.live.expected:
                held.ok_at, held.refused, held.problem = now, None, None
            elif trigger != "periodic" or held.refused is None or actual != held.refused:
                drifted.append(held)
        if drifted:
            events += self._restore(drifted, trigger, now)
        return events

    def _restore(self, drifted: list[HeldSetting], trigger: str, now: float) -> list[Event]:
        held_plan = self.held
        assert held_plan is not None
        if held_plan.apply_id is not None:
            # Before writing: an apply or a rollback since the plan was loaded changes what
            # is to be held, and an apply being written right now must not be fought.
            try:
                latest = plan_source.latest(self.journal_path)
            except IotunerError as err:
                return [event("error", f"not restoring {len(drifted)} setting(s): {err}")]
            if latest.pending:
                log.debug("an apply is being written: restores wait for the next check")
                return []
            if latest.held is None or latest.held.apply_id != held_plan.apply_id:
                instead = latest.held.origin if latest.held else "nothing"
                why = f"{held_plan.origin} is no longer in force: holding {instead}"
                return [event("plan", why), *self.load(latest.held), *self.check(trigger)]
        trialled = self._trialled()
        drifted = [h for h in drifted if (h.live.key, h.live.target) not in trialled]
        if not drifted:
            return []
        with changes_lock(self.journal_path.parent, wait=False) as free:
            if not free:
                # An apply or a rollback is writing: what to hold is decided when it is done.
                log.debug("apply or rollback in progress: restores wait for the next check")
                return []
            return self._write(drifted, held_plan, trigger, now)

    def _trialled(self) -> set[tuple[str, str]]:
        """(key, target) pairs another live iotuner process has changed for now (a tune's
        trial, a measured apply): theirs until they restore them, not drift."""
        try:
            journal = self._open_journal()
            sessions = {s.id: s for s in journal.sessions()}
            busy: set[tuple[str, str]] = set()
            for change in journal.open_changes():
                session = sessions.get(change.session)
                if session is None or session.pid == os.getpid() or not journal.is_alive(session):
                    continue
                busy.add((change.key, change.target))
                # A scheduler written for a trial resets the depth coupled to it.
                busy.update((key, change.target) for key in change.saved.coupled)
        except JOURNAL_TROUBLE as err:
            log.warning("cannot read open changes in %s: %s", self.journal_path, err)
            return set()
        return busy

    def _write(
        self, drifted: list[HeldSetting], held_plan: HeldPlan, trigger: str, now: float
    ) -> list[Event]:
        seen = {id(h): h.actual for h in drifted}
        causes = {id(h): reset_by(h, trigger, now, held_plan, self._boot_time) for h in drifted}
        # Writing a scheduler resets the depth coupled to it: held coupled settings go along.
        coupled = {(h.live.target, k) for h in drifted
                   for k in self._tunables.impl(h.live.key).coupled}  # fmt: skip
        along = [h for h in self._settings if (h.live.target, h.live.key) in coupled]
        batch = [h for h in self._settings if id(h) in seen or (h in along and not h.gone)]
        try:
            apply_id, results = write_journaled(
                self._open_journal(), self.root, held_plan, [h.live for h in batch],
                f"restored by iotuner daemon ({trigger})",
            )  # fmt: skip
        except JOURNAL_TROUBLE as err:
            what = f"{len(drifted)} setting(s) in {self.journal_path}"
            return [event("error", f"cannot journal the restore of {what}: {err}; nothing written")]
        events: list[Event] = []
        for held, result in zip(batch, results, strict=True):
            held.took(result)
            if id(held) not in seen:
                continue
            s, before = held.live, seen[id(held)]
            head = f"{s.target}: {s.key} read {text(before)}, plan holds {text(s.expected)}"
            data = {"key": s.key, "target": s.target, "read": plain(before),
                    "expected": plain(s.expected), "apply_id": apply_id, "trigger": trigger,
                    "reset_by": causes[id(held)]}  # fmt: skip
            if result.ok:
                done = "restored" if result.written else "put back by someone else meanwhile"
                events.append(
                    event("drift", f"{head}: {done}; reset by {causes[id(held)]}", **data)
                )
            elif result.error:
                held.refused, held.problem = before, f"not restored: {result.error}"
                events.append(event("error", f"{head}: not restored: {result.error}", **data))
            else:
                events.append(event("error", f"{head}: {unlike(result)}", **data))
                if held.device is not None and trigger != SETTLE:
                    self._settle(held.device)
        return events

    def _open_journal(self) -> Journal:
        if self._journal is None:
            self._journal = Journal(self.journal_path)
        return self._journal

    def _leave(self, device: Device, why: str) -> list[Event]:
        device.gone, device.settle_at = True, None
        count = sum(1 for h in self._settings if h.device is device)
        if device.joined:
            # It joins again by its class if it comes back: forgetting it now keeps a lab's
            # disks coming and going from piling up.
            self._devices.remove(device)
            self._settings = [h for h in self._settings if h.device is not device]
        message = f"{device.name} {why}: its {count} held setting(s) are not checked until it "
        return [event("hotplug", message + "comes back", device=device.name)]

    def _settle(self, device: Device) -> None:
        device.settle_at = time.time() + SETTLE_SECONDS


def unlike(result: Written) -> str:
    """A write the kernel took but reads back otherwise, in words."""
    s = result.setting
    return f"{s.key}: wrote {text(s.value)} but it reads {text(result.actual)}"


def _name(tunables: Tunables, key: str, target: str) -> str:
    try:
        return tunables.target(key, target)
    except TunableError:
        return target
