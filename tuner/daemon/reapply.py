"""Putting held settings back, journaled first like every change iotuner makes.

Each restore, and each disk that joins a class, is a change set of its own with source
"daemon" (tuner/apply/changeset.py): `iotuner history` lists it, `iotuner rollback` undoes it,
and a daemon killed between the journal entry and the write leaves a pending set that the
next iotuner command undoes. Only live values: the plan's files are the apply's business.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tuner.apply import changeset
from tuner.apply.render import LiveSetting, Rendered
from tuner.daemon.plan_source import DAEMON_SOURCE, HeldPlan
from tuner.plan import PLAN_VERSION, Plan, PlanEntry, plan_text
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError, Value
from tuner.tunables.journal import Journal


@dataclass(frozen=True)
class Written:
    """One setting after a restore: what it read before and after, and why it failed."""

    setting: LiveSetting
    before: Value | None
    actual: Value | None
    written: bool
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when it reads what the plan holds."""
        return self.error is None and self.actual == self.setting.expected


def write_journaled(
    journal: Journal, root: Path, held: HeldPlan, settings: Sequence[LiveSetting], reason: str
) -> tuple[int, list[Written]]:
    """Journal the settings as they are now in one change set, then write each that still
    differs from what the plan holds (in the order given: a scheduler before the depth it
    resets) and read it back. Returns the change set's id and one result per setting; a write
    the kernel refuses is a result, not an exception. Journal trouble raises (sqlite3.Error,
    OSError, TunableError) before anything is written."""
    plan = Plan(
        plan_version=PLAN_VERSION,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        host=held.plan.host,
        source=DAEMON_SOURCE,
        workload=held.plan.workload,
        entries=tuple(PlanEntry(s.key, s.target, s.value, None, reason) for s in settings),
    )
    live = tuple(replace(s, entry=i) for i, s in enumerate(settings))
    apply_id = changeset.begin(
        journal,
        Rendered(plan, (), live, {}),
        plan_text=plan_text(plan),
        plan_path=held.path,
        root=root,
        owner_pid=os.getpid(),
    )
    tunables = Tunables(root)
    results = [_write(tunables, setting) for setting in live]
    # One write can move an earlier one (on a rotational disk, kernel 6.17+, max_sectors_kb
    # raises read_ahead_kb): the batch is read back whole, and what moved is written once more.
    results = [_again_if_moved(tunables, result) for result in results]
    if any(r.written for r in results):
        status = "applied"
    else:
        status = "failed" if any(r.error for r in results) else "unchanged"
    changeset.finish(journal, apply_id, status)
    return apply_id, results


def _again_if_moved(tunables: Tunables, done: Written) -> Written:
    """`done` read back after the whole batch; written again when a later write moved it."""
    if done.error is not None or done.actual is None:
        return done
    try:
        if tunables.read(done.setting.key, done.setting.target) == done.actual:
            return done
    except TunableError as err:
        return replace(done, actual=None, error=str(err))
    again = _write(tunables, done.setting)
    return replace(again, before=done.before, written=True)


def _write(tunables: Tunables, setting: LiveSetting) -> Written:
    key, target = setting.key, setting.target
    before: Value | None = None
    try:
        before = tunables.read(key, target)
        # Read again here, not taken from the check: a scheduler written just before may
        # have set this depth already, or another process may have put it right.
        if before == setting.expected:
            return Written(setting, before, before, False)
        tunables.write(key, target, setting.value)
    except TunableError as err:
        return Written(setting, before, None, False, str(err))
    try:
        actual = tunables.read(key, target)
    except TunableError as err:
        return Written(setting, before, None, True, str(err))
    return Written(setting, before, actual, True)
