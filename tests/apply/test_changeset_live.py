"""A change set undone on a real loop device, where the kernel ties one queue attribute to
another: what a fixture tree cannot refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.owned import Owned
from tuner.apply import changeset
from tuner.apply.render import LiveSetting, Rendered
from tuner.plan import Plan, PlanEntry
from tuner.tunables.access import Tunables
from tuner.tunables.journal import Journal

pytestmark = [pytest.mark.lab, pytest.mark.lab_parallel]  # its own loop device, nothing host-wide


def queue(name: str, attr: str) -> str:
    return Path(f"/sys/block/{name}/queue/{attr}").read_text().strip()


def test_a_plans_scheduler_none_and_depth_are_undone_without_a_refusal(
    owned: Owned, tmp_path: Path
) -> None:
    """The plan the claims benchmark's hdd-streams-12 row applied (2026-11-28): scheduler
    none, then a depth of 22. Undone newest first, the depth's original 256 is refused while
    none is still in place (128 is its most); `iotuner rollback` then said "1 value(s) could
    not be restored" although mq-deadline, once back, brings 256 with it."""
    loop = owned.loop()
    Path(f"/sys/block/{loop}/queue/scheduler").write_text("mq-deadline\n")
    # 202: not the 256 mq-deadline brings, so the undo must write it itself.
    Path(f"/sys/block/{loop}/queue/nr_requests").write_text("202\n")
    entries = (PlanEntry("block.scheduler", loop, "none"), PlanEntry("block.nr_requests", loop, 22))
    live = tuple(LiveSetting(i, e.key, e.target, e.value, e.value, f"/sys/block/{loop}/queue")
                 for i, e in enumerate(entries))  # fmt: skip
    rendered = Rendered(Plan(1, "2026-11-28T21:00:00+00:00", "lab", "tune", None, entries),
                        (), live, {})  # fmt: skip
    with Journal(tmp_path / "state.db") as journal:
        apply_id = changeset.begin(journal, rendered, plan_text="p", plan_path="p.yaml")
        tunables = Tunables()
        for s in live:
            tunables.write(s.key, s.target, s.value)
        changeset.finish(journal, apply_id, "applied")
        assert "[none]" in queue(loop, "scheduler") and queue(loop, "nr_requests") == "22"
        assert changeset.undo(journal, apply_id) == []
    assert "[mq-deadline]" in queue(loop, "scheduler")
    assert queue(loop, "nr_requests") == "202"
