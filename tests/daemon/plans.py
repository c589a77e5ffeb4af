"""Plans for the daemon's tests, and applying them the way `iotuner apply` journals them."""

from __future__ import annotations

import os
from pathlib import Path

from tests.daemon.loops import queue_value
from tuner.apply import changeset
from tuner.apply.render import render
from tuner.plan import Plan, PlanEntry, plan_text
from tuner.tunables.access import Tunables
from tuner.tunables.journal import Journal

SIZE_MB = 77  # no other test uses it: a stranger's loop device is never mistaken for ours


def block_plan(dev: str, readahead: int = 4093, depth: int = 64, source: str = "tune") -> Plan:
    """Scheduler, readahead (4093 reads back 4092: whole pages) and depth for one device."""
    return Plan(1, "2026-11-22T07:10:00+00:00", "lab", source, "stream-read",
                (PlanEntry("block.scheduler", dev, "mq-deadline"),
                 PlanEntry("block.read_ahead_kb", dev, readahead),
                 PlanEntry("block.nr_requests", dev, depth)))  # fmt: skip


def apply(journal_path: Path, plan: Plan, conf: Path, *, finish: bool = True) -> int:
    """What `iotuner apply` does to the journal and the live values, done directly."""
    rendered = render(plan, conf_root=conf)
    with Journal(journal_path) as journal:
        apply_id = changeset.begin(journal, rendered, plan_text=plan_text(plan),
                                   plan_path="plan.yaml", owner_pid=os.getpid())  # fmt: skip
        tunables = Tunables()
        for setting in rendered.live:
            tunables.write(setting.key, setting.target, setting.value)
        if finish:
            changeset.finish(journal, apply_id, "applied")
    return apply_id


def queue(dev: str) -> dict[str, str]:
    return {a: queue_value(dev, a) for a in ("scheduler", "read_ahead_kb", "nr_requests")}


def set_queue(dev: str, attr: str, value: object) -> None:
    """A change behind the daemon's back."""
    Path(f"/sys/block/{dev}/queue/{attr}").write_text(f"{value}\n")


HELD = {"scheduler": "mq-deadline", "read_ahead_kb": "4092", "nr_requests": "64"}
