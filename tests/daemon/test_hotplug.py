"""Hotplug on real loop devices: the kernel's events arrive, a disk of a held disk's class gets
its plan within seconds, strangers do not, and a held disk that leaves and comes back is
followed."""

from __future__ import annotations

import selectors
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.loops import Loops, spare_device
from tests.daemon.plans import HELD, SIZE_MB, apply, block_plan, queue, set_queue
from tuner.apply import changeset
from tuner.daemon.events import Event
from tuner.daemon.hotplug import HotplugMonitor, default_source
from tuner.daemon.plan_hold import SETTLE_SECONDS, Holder, find_plan
from tuner.tunables.journal import Journal


@pytest.fixture
def monitor() -> Iterator[HotplugMonitor]:
    found = HotplugMonitor()
    try:
        yield found
    finally:
        found.close()


@pytest.fixture
def journal_path(state: Path) -> Path:
    state.mkdir(mode=0o700, exist_ok=True)
    return state / "state.db"


def wait_for(monitor: HotplugMonitor, name: str, seconds: float = 2.0) -> list[tuple[str, str]]:
    """The events for `name` that arrive within `seconds` (other tests' devices are skipped)."""
    found: list[tuple[str, str]] = []
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(monitor.fileno(), selectors.EVENT_READ)
        while not found and time.monotonic() < deadline:
            selector.select(max(0.0, deadline - time.monotonic()))
            found = [e for e in monitor.receive() if e[1] == name]
    return found


def holding(journal_path: Path, tmp_path: Path, dev: str) -> Holder:
    """A holder of a plan applied (and journaled) for `dev`."""
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    apply(journal_path, block_plan(dev), conf)
    holder = Holder(Path("/"), journal_path)
    holder.load(find_plan(journal_path, None))
    return holder


def test_the_monitor_sees_a_loop_attach_within_two_seconds(
    loops: Loops, monitor: HotplugMonitor
) -> None:
    assert monitor.source == default_source() == "kernel"  # no udevd on this VM
    name = loops.attach(loops.directory(), SIZE_MB)
    assert ("change", name) in wait_for(monitor, name)


def test_a_disk_of_a_held_disks_class_gets_its_plan_within_seconds(
    loops: Loops, monitor: HotplugMonitor, journal_path: Path, tmp_path: Path
) -> None:
    lab = loops.directory()
    held_dev = loops.attach(lab, SIZE_MB)
    holder = holding(journal_path, tmp_path, held_dev)
    started = time.monotonic()
    new = loops.attach(lab, SIZE_MB)
    # A reused loop number keeps the queue its last user left, maybe the plan's own values.
    set_queue(new, "read_ahead_kb", 128)
    events: list[Event] = []
    for action, name in wait_for(monitor, new):
        events += holder.device_event(action, name)
    assert time.monotonic() - started < 5
    assert [e.kind for e in events] == ["hotplug"]
    assert events[0].message == (
        f"{new} joins the class of {held_dev} (loop 77.0 MiB, file in {lab}): "
        "block.scheduler mq-deadline, block.nr_requests 64, block.read_ahead_kb 4092 applied"
    )
    assert queue(new) == HELD
    assert new in holder.block_targets()
    with Journal(journal_path) as journal:
        newest = changeset.history(journal)[0]
    assert (newest.id, newest.source, newest.status) == (events[0].data["apply_id"], "daemon",
                                                         "applied")  # fmt: skip

    # The kernel (or udev) setting the new disk's queue just after: the second look sees it.
    due = holder.next_due()
    assert due is not None and due - time.time() <= SETTLE_SECONDS
    set_queue(new, "read_ahead_kb", 2560)
    (settled,) = holder.due(due)
    assert settled.kind == "drift" and "settling" in settled.data["reset_by"]
    assert queue(new) == HELD and holder.next_due() is None

    # A reload keeps it: it joins again, and as it holds the plan already nothing is written.
    with Journal(journal_path) as journal:
        sets = len(changeset.history(journal))
    reloaded = holder.load(find_plan(journal_path, None))
    assert [e.kind for e in reloaded] == ["plan", "hotplug"]
    assert reloaded[1].message.endswith("already so") and reloaded[1].data["apply_id"] is None
    with Journal(journal_path) as journal:
        assert len(changeset.history(journal)) == sets

    # From now on it is held like the others.
    set_queue(new, "nr_requests", 32)
    (drift,) = holder.check()
    assert drift.data["target"] == new and queue(new) == HELD

    # Gone, it is forgotten (a lab's disks come and go); back, it joins again.
    backing = Path(f"/sys/block/{new}/loop/backing_file").read_text().strip()
    loops.detach(new)
    (left,) = holder.device_event("change", new)
    assert left.message.startswith(f"{new} was detached")
    assert {row["target"] for row in holder.state()} == {held_dev}
    again = loops.attach(lab, SIZE_MB, file=Path(backing).name)
    (joined,) = holder.device_event("change", again)
    assert joined.message.startswith(f"{again} joins the class of {held_dev} ")
    assert queue(again) == HELD
    holder.close()


def test_a_disk_of_another_size_or_another_directory_is_left_alone(
    loops: Loops, journal_path: Path, tmp_path: Path
) -> None:
    lab = loops.directory()
    holder = holding(journal_path, tmp_path, loops.attach(lab, SIZE_MB))
    bigger = loops.attach(lab, SIZE_MB + 1)
    stranger = loops.attach(loops.directory(), SIZE_MB)
    before = {name: queue(name) for name in (bigger, stranger)}
    for name in (bigger, stranger):
        assert holder.device_event("change", name) == []
        assert holder.device_event("change", name) == [], "and without a second probe"
        assert queue(name) == before[name]
    assert holder.device_event("remove", "loop-iotuner-none") == []
    holder.close()


def test_a_held_disk_that_leaves_is_not_checked_and_is_followed_when_it_comes_back(
    loops: Loops, journal_path: Path, tmp_path: Path
) -> None:
    lab = loops.directory()
    dev = loops.attach(lab, SIZE_MB)
    holder = holding(journal_path, tmp_path, dev)

    # A change event on a held disk is a check of it now, the event named as the cause.
    set_queue(dev, "read_ahead_kb", 128)
    (drift,) = holder.device_event("change", dev)
    assert drift.kind == "drift" and drift.data["reset_by"].startswith("a udev change event at")
    assert queue(dev) == HELD

    backing = Path(f"/sys/block/{dev}/loop/backing_file").read_text().strip()
    loops.detach(dev)
    (left,) = holder.device_event("change", dev)
    assert left.kind == "hotplug" and left.message.startswith(f"{dev} was detached")
    assert holder.block_targets() == [] and holder.check() == []
    assert not any(row["ok"] for row in holder.state())

    back = loops.attach(lab, SIZE_MB, file=Path(backing).name)
    found = queue(back)
    events = holder.device_event("change", back)
    assert events[0].kind == "hotplug" and f"is back (loop {backing})" in events[0].message
    restored = [e for e in events if e.kind == "drift"]
    assert len(restored) == sum(found[a] != v for a, v in HELD.items())
    assert queue(back) == HELD and holder.block_targets() == [back]
    assert all(row["ok"] and row["target"] == back for row in holder.state())
    holder.close()


def test_a_detach_is_one_change_event_not_two(loops: Loops, monitor: HotplugMonitor) -> None:
    # A number no other test's `losetup --find` takes: a worker beside this one re-attached
    # loop0 within the 0.5 s and its events came under the same name (CI, 2026-11-28).
    name = loops.attach(loops.directory(), SIZE_MB, device=spare_device())
    assert wait_for(monitor, name)
    loops.detach(name)  # the kernel sends two changes back to back
    time.sleep(0.5)
    assert [e for e in monitor.receive() if e[1] == name] == [("change", name)]
