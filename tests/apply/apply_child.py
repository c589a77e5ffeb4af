"""A process that journals an apply, writes half of it, then kills itself with SIGKILL.

    python -m tests.apply.apply_child ROOT CONF_ROOT

The state directory comes from IOTUNER_STATE_DIR, as for iotuner itself.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from tuner.apply import changeset
from tuner.apply.render import render
from tuner.plan import Plan, PlanEntry
from tuner.tunables.access import Tunables
from tuner.tunables.journal import Journal

PLAN = Plan(1, "2026-11-22T07:10:00+00:00", "storage01", "advise", "stream-read",
            (PlanEntry("block.scheduler", "loop3", "mq-deadline"),
             PlanEntry("block.nr_requests", "loop3", 512),
             PlanEntry("vm.dirty_background_ratio", "host", 5)))  # fmt: skip


def main(root: Path, conf_root: Path) -> None:
    rendered = render(PLAN, root=root, conf_root=conf_root)
    with Journal() as journal:
        changeset.begin(journal, rendered, plan_text="plan", plan_path="plan.yaml", root=root,
                        owner_pid=os.getpid())  # fmt: skip
    wanted = [f for f in rendered.files if f.content is not None]
    path = Path(wanted[0].path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted[0].content or "")
    tunables = Tunables(root)
    for setting in rendered.live[:2]:  # the third never gets written
        tunables.write(setting.key, setting.target, setting.value)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
