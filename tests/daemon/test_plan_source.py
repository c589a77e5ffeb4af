"""Which plan the daemon holds, when the plan is hostile: a file named in its configuration,
or the text of the latest apply in the journal. Refused in one line, quickly (issue 27)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.common import refused_well, within
from tests.test_plan import PLAN_HEAD
from tests.yaml_bombs import deep_nesting, sized_bomb
from tuner.apply import changeset
from tuner.apply.render import render
from tuner.daemon.plan_source import find_plan, latest
from tuner.errors import BadInput, IotunerError
from tuner.plan import Plan
from tuner.tunables.journal import Journal

BOMB = PLAN_HEAD + "measured:\n" + sized_bomb(38_000, indent="  ")
DEEP = PLAN_HEAD + "measured: " + deep_nesting(10_000) + "\n"


@pytest.mark.parametrize("text", [BOMB, DEEP], ids=["aliases", "nesting"])
def test_a_hostile_plan_file_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    # The 38 KB bomb kept the daemon's plan check busy forever.
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    with within(2.0), pytest.raises(BadInput) as err:
        find_plan(tmp_path / "state.db", plan)
    assert str(plan) in refused_well(err.value)


@pytest.mark.parametrize("text", [BOMB, DEEP], ids=["aliases", "nesting"])
def test_a_hostile_plan_in_the_journal_is_one_error(tmp_path: Path, text: str) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    journal_path = state / "state.db"
    empty = Plan(1, "2026-11-22T07:10:00+00:00", "lab", "tune", None, ())
    rendered = render(empty, conf_root=tmp_path / "conf")
    with Journal(journal_path) as journal:
        apply_id = changeset.begin(journal, rendered, plan_text=text, plan_path="plan.yaml",
                                   owner_pid=os.getpid())  # fmt: skip
        changeset.finish(journal, apply_id, "applied")
    with within(2.0), pytest.raises(IotunerError) as err:
        latest(journal_path)
    message = str(err.value)
    assert f"apply #{apply_id}" in message and "\n" not in message
