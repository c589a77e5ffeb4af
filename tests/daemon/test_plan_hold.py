"""Holding the applied plan on real loop devices: which plan, drift restored and journaled,
refused writes, applies and rollbacks behind the daemon's back, and what an idle check costs."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.apply.applylab import refused
from tests.cli import iotuner
from tests.daemon.loops import Loops, queue_value
from tests.daemon.plans import HELD, SIZE_MB, apply, block_plan, queue, set_queue
from tuner.apply import changeset
from tuner.daemon.plan_hold import Holder, find_plan
from tuner.daemon.plan_source import latest
from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry, write_plan
from tuner.tunables.journal import Journal


@pytest.fixture
def journal_path(state: Path) -> Path:
    state.mkdir(mode=0o700, exist_ok=True)
    return state / "state.db"


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "conf"
    path.mkdir()
    return path


@pytest.fixture
def dev(loops: Loops) -> str:
    return loops.attach(loops.directory(), SIZE_MB)


def kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events]


def test_find_plan_takes_the_latest_apply_in_force_that_the_daemon_did_not_make(
    dev: str, journal_path: Path, conf: Path, tmp_path: Path
) -> None:
    assert find_plan(journal_path, None) is None, "no journal: nothing to hold"
    first = apply(journal_path, block_plan(dev), conf)
    second = apply(journal_path, block_plan(dev, readahead=8192), conf)
    with Journal(journal_path) as journal:
        assert changeset.undo(journal, second) == []
    apply(journal_path, block_plan(dev, readahead=1024, source="daemon"), conf)
    held = find_plan(journal_path, None)
    assert held is not None
    assert (held.origin, held.apply_id, held.path) == (f"apply #{first}", first, "plan.yaml")
    assert held.plan.entries[1].value == 4093
    assert held.applied_at is not None and abs(held.applied_at - time.time()) < 60

    path = tmp_path / "hold.yaml"
    write_plan(block_plan(dev, readahead=2048), path)
    from_file = find_plan(journal_path, path)
    assert from_file is not None and from_file.apply_id is None
    assert from_file.origin == f"file {path}" and from_file.plan.entries[1].value == 2048
    path.write_text("plan_version: 7\n")
    with pytest.raises(BadInput, match="not an iotuner plan"):
        find_plan(journal_path, path)


def test_drift_is_restored_in_a_change_set_that_rollback_undoes(
    dev: str, journal_path: Path, conf: Path, state: Path
) -> None:
    apply(journal_path, block_plan(dev), conf)
    holder = Holder(Path("/"), journal_path)
    loaded = holder.load(find_plan(journal_path, None))
    assert kinds(loaded) == ["plan"] and dev in loaded[0].message
    assert holder.check("start") == [], "nothing drifted yet"
    assert holder.block_targets() == [dev]

    set_queue(dev, "read_ahead_kb", 128)
    (drift,) = holder.check()
    assert drift.kind == "drift"
    assert drift.message.startswith(
        f"{dev}: block.read_ahead_kb read 128, plan holds 4092: restored; reset by another "
        "process between "
    )
    assert queue(dev) == HELD
    assert all(row["ok"] for row in holder.state())

    # A scheduler put back resets the depth: both come back, in that order.
    set_queue(dev, "scheduler", "none")
    events = holder.check()
    assert [e.data["key"] for e in events] == ["block.scheduler", "block.nr_requests"]
    assert queue(dev) == HELD
    holder.close()

    with Journal(journal_path) as journal:
        records = changeset.history(journal)
    assert [(r.source, r.status) for r in records[:2]] == [("daemon", "applied")] * 2
    assert records[1].id == drift.data["apply_id"]
    listed = iotuner("history", "--json", state=state)
    assert listed.returncode == 0 and f'"id": {drift.data["apply_id"]}' in listed.stdout
    with Journal(journal_path) as journal:
        assert changeset.undo(journal, records[0].id) == []
        assert queue(dev)["scheduler"] == "none"
        assert changeset.undo(journal, records[1].id) == []
    assert queue(dev)["read_ahead_kb"] == "128", "the drifted value is back"


def test_a_refused_restore_is_one_error_event_and_the_rest_is_restored(
    dev: str, journal_path: Path, conf: Path
) -> None:
    apply(journal_path, block_plan(dev), conf)
    holder = Holder(Path("/"), journal_path)
    holder.load(find_plan(journal_path, None))
    set_queue(dev, "read_ahead_kb", 128)
    set_queue(dev, "nr_requests", 32)
    with refused(f"/sys/block/{dev}/queue/read_ahead_kb"):
        events = holder.check()
        assert kinds(events) == ["drift", "error"], "readahead is restored last"
        assert events[1].message.startswith(
            f"{dev}: block.read_ahead_kb read 128, plan holds 4092: not restored: "
        )
        assert "EROFS" in events[1].message
        assert events[0].data["key"] == "block.nr_requests"
        assert holder.check() == [], "the periodic check does not say it again"
        row = next(r for r in holder.state() if r["key"] == "block.read_ahead_kb")
        assert row["ok"] is False and row["actual"] == 128 and "EROFS" in row["note"]
    assert queue(dev)["nr_requests"] == "64"
    (again,) = holder.check("reload")
    assert again.kind == "drift" and queue(dev) == HELD
    holder.close()


def test_an_entry_that_cannot_hold_here_is_an_error_and_the_rest_are_held(
    dev: str, journal_path: Path, tmp_path: Path
) -> None:
    plan = Plan(1, "2026-11-22T07:10:00+00:00", "lab", "tune", None,
                (PlanEntry("block.read_ahead_kb", dev, 4096),
                 PlanEntry("block.scheduler", dev, "cfq"),
                 PlanEntry("block.nr_requests", "loop-iotuner-none", 64)))  # fmt: skip
    path = tmp_path / "plan.yaml"
    write_plan(plan, path)
    holder = Holder(Path("/"), journal_path)
    events = holder.load(find_plan(journal_path, path))
    assert kinds(events) == ["error", "error", "plan"]
    assert "entries[1]: block.scheduler on " in events[0].message
    assert "'cfq' is not available" in events[0].message
    assert "entries[2]: block.nr_requests on loop-iotuner-none: no such block device" in (
        events[1].message
    )
    assert [row["key"] for row in holder.state()] == ["block.read_ahead_kb"]
    before = queue(dev)["read_ahead_kb"]
    (drift,) = holder.check("start")
    assert f"read {before}, plan holds 4096: restored" in drift.message
    assert "before the daemon first checked it" in drift.message, "no apply: no earlier time"
    holder.close()


def test_an_apply_or_rollback_behind_the_daemon_is_followed_not_fought(
    dev: str, journal_path: Path, conf: Path
) -> None:
    first = apply(journal_path, block_plan(dev), conf)
    holder = Holder(Path("/"), journal_path)
    holder.load(find_plan(journal_path, None))
    # An apply still being written (its process lives): the daemon waits for it.
    second = apply(journal_path, block_plan(dev, readahead=8192), conf, finish=False)
    assert latest(journal_path).pending
    assert holder.check() == [] and queue(dev)["read_ahead_kb"] == "8192"
    with Journal(journal_path) as journal:
        changeset.finish(journal, second, "applied")
    events = holder.check()
    assert events[0].kind == "plan"
    assert events[0].message == f"apply #{first} is no longer in force: holding apply #{second}"
    assert queue(dev)["read_ahead_kb"] == "8192" and holder.held is not None
    assert holder.held.apply_id == second
    with Journal(journal_path) as journal:
        changeset.undo(journal, second)
    assert queue(dev)["read_ahead_kb"] == "4092"
    events = holder.check()
    assert events[0].message == f"apply #{second} is no longer in force: holding apply #{first}"
    assert queue(dev) == HELD
    holder.close()


def test_an_idle_check_of_ten_settings_reads_ten_files_and_nothing_else(
    loops: Loops, journal_path: Path, conf: Path
) -> None:
    lab = loops.directory()
    one, two = loops.attach(lab, SIZE_MB), loops.attach(lab, SIZE_MB)
    entries = [
        PlanEntry("block.scheduler", one, "mq-deadline"),
        PlanEntry("block.read_ahead_kb", one, 4096),
        PlanEntry("block.nr_requests", one, 64),
        PlanEntry("block.max_sectors_kb", one, int(queue_value(one, "max_sectors_kb"))),
        PlanEntry("block.rq_affinity", one, 2),
        PlanEntry("block.nomerges", one, 1),
        PlanEntry("block.write_cache", one, queue_value(one, "write_cache")),
        *block_plan(two).entries,
    ]
    plan = Plan(1, "2026-11-22T07:10:00+00:00", "lab", "tune", None, tuple(entries))
    apply(journal_path, plan, conf)
    holder = Holder(Path("/"), journal_path)
    holder.load(find_plan(journal_path, None))
    assert holder.check("start") == []
    opened: list[str] = []
    listening = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if listening[0] and event == "open":
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # hooks cannot be removed: this one is switched off below
    try:
        started = time.perf_counter()
        assert holder.check() == []
        took = time.perf_counter() - started
    finally:
        listening[0] = False
    assert len(opened) == 10, opened
    assert all(p.startswith("/sys/") for p in opened), opened
    assert took < 0.25, f"an idle check took {took:.3f} s"
    holder.close()


def test_a_value_another_live_process_is_trialling_is_not_drift(
    dev: str, journal_path: Path, conf: Path
) -> None:
    """A tune's trial changes a held device for seconds: the daemon must not undo it then,
    and does restore the value once that process is gone without putting it back."""
    import subprocess

    apply(journal_path, block_plan(dev), conf)
    holder = Holder(Path("/"), journal_path)
    holder.load(find_plan(journal_path, None))
    trial = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from tuner.tunables.journal import Journal\n"
        "from tuner.tunables.engine import TunableEngine\n"
        "engine = TunableEngine(Path('/'), Journal(Path(sys.argv[1])))\n"
        "engine.apply({('block.scheduler', sys.argv[2]): 'none',\n"
        "              ('block.read_ahead_kb', sys.argv[2]): 512})\n"
        "print('set', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", trial, str(journal_path), dev],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "set\n"
        assert holder.check() == [], "a live session's trial values are its own"
        assert queue(dev)["read_ahead_kb"] == "512"
    finally:
        child.kill()  # as kill -9 would: nothing put back
        child.wait()
    events = holder.check()
    assert "drift" in kinds(events)
    assert queue(dev) == HELD
