"""Following the real workload: counters every interval, a short capture when they move, a
re-tune on the capture's reproduction, and a warm start when a remembered workload returns.

The daemon's loop drives it (tuner/daemon/service.py): `sample` after each /proc/diskstats
read says when a capture is due (tuner/daemon/fingerprint_watch.py); the capture runs as the
re-tune's one child; `captured(path)` decides what the fingerprint gets: the remembered result
of the nearest earlier fingerprint within `follow.memory_distance` (a warm start), else a
re-tune on its reproduction; `tuned(event)` stores a finished re-tune's result with the
fingerprint it was made for (tuner/daemon/tune_memory.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.capture import fingerprint as fp
from tuner.capture.compare import TOLERANCE
from tuner.daemon.config import FollowSection
from tuner.daemon.events import Event, event
from tuner.daemon.fingerprint_watch import FingerprintWatch, counter_print
from tuner.daemon.tune_memory import Record, TuneMemory, host_key
from tuner.errors import BadInput
from tuner.trials.activity import Activity

CAPTURE_NAME = "follow-capture.json"
# A capture that lost more than compare.TOLERANCE (15 %) of its events cannot hold its figures
# within the 15 % a reproduction is held to: it is not compared, remembered or tuned on.


@dataclass(frozen=True)
class Decision:
    """What a capture gets: a warm start from `record` (None: a re-tune on `fingerprint`);
    `unchanged` when `record` is the result already in force (a counter move that was noise,
    or the same workload at another rate): nothing to do."""

    fingerprint: fp.Fingerprint
    record: Record | None
    distance: float | None
    unchanged: bool = False


class Follow:
    """The counter watch, the memory, and the fingerprint the running re-tune was asked for."""

    def __init__(
        self,
        config: FollowSection,
        sample_interval: float,
        window: float,
        devices: Sequence[str],
        state: Path,
        root: Path = Path("/"),
    ) -> None:
        self.config = config
        self.sample_interval = sample_interval
        self.window = window
        self.devices = tuple(devices)
        self.capture_path = state / CAPTURE_NAME
        self.watch = FingerprintWatch(
            math.ceil(window / sample_interval), math.ceil(config.history / sample_interval)
        )
        self.memory = TuneMemory(state, config.memory_entries, host_key(devices, root))
        self.pending: fp.Fingerprint | None = None
        self.captures = 0
        self.warm_starts = 0
        self.last: dict[str, Any] | None = None
        self.in_force: str | None = None  # the memory id of the result last applied or kept

    def sample(self, activity: Mapping[str, Activity], own_io: bool = False) -> str | None:
        """One interval's figures (WorkloadWatch.activity); why a capture is due, or None.
        An interval of iotuner's own I/O (a re-tune's trials) counts for nothing."""
        found = None if own_io else counter_print(activity.values(), self.sample_interval)
        return self.watch.add(found)

    def capture_started(self) -> None:
        """The capture is running: the next move is judged against what it captured."""
        self.watch.captured()
        self.captures += 1

    def captured(self, path: Path) -> tuple[Decision | None, list[Event]]:
        """Read the capture's fingerprint and look it up in the memory: the decision, and
        one event per memory line refused or dropped (None with an error for a bad file)."""
        try:
            found = fp.load(path)
        except BadInput as err:
            return None, [event("error", f"follow: the capture is unreadable: {err}")]
        lost, kept = found.data["lost"], found.data["events"]
        if lost > TOLERANCE * (lost + kept):
            return None, [event("follow", f"the capture lost {lost} of {lost + kept} events (the "
                                "kernel's trace buffer overflowed): its figures are not used; "
                                "the next move captures again", state="lossy")]  # fmt: skip
        if found.busiest() is None:
            return None, [event("follow", "captured no request: the workload stopped; "
                                "nothing to tune", state="empty")]  # fmt: skip
        record, distance, said = self.memory.nearest(found, self.config.memory_distance)
        events = [event("error", line) for line in said]
        self.last = {"distance": distance, "memory_id": record.id if record else None,
                     "summary": _summary(found)}  # fmt: skip
        if record is None:
            self.pending = found
        unchanged = record is not None and record.id == self.in_force
        if not unchanged:
            self.in_force = None  # another workload: the result in force is not its own
        return Decision(found, record, distance, unchanged), events

    def warm(self, decision: Decision) -> dict[str, Any]:
        """The remembered figures a warm start reports (and status shows)."""
        record = decision.record
        assert record is not None
        self.warm_starts += 1
        self.in_force = record.id
        return {
            "memory_id": record.id,
            "distance": decision.distance,
            "remembered_gain": record.gain,
            "remembered_ci": list(record.ci),
            "remembered_trials": record.trials,
            "entries": record.entries,
        }

    def tuned(self, done: Event) -> list[Event]:
        """Store a finished re-tune on the pending fingerprint: its plan when it kept one
        (a confirmed gain with entries), else "keep the settings in force"."""
        found, self.pending = self.pending, None
        data = done.data
        if found is None or data.get("state") != "finished" or "capture" not in data:
            return []
        kept = bool(data.get("chosen")) and data["ci"][0] > 1.0 and data.get("entries", 0) > 0
        plan = None
        if kept:
            try:
                plan = Path(str(data["plan"])).read_text()
            except (OSError, UnicodeDecodeError) as err:
                return [event("error", f"follow: the re-tune's plan is unreadable, not "
                              f"remembered: {err}")]  # fmt: skip
        try:
            record = self.memory.remember(found, plan, data)
        except BadInput as err:
            return [event("error", f"follow: the tune memory was not written: {err}")]
        self.in_force = record.id
        what = f"its plan ({record.entries} setting(s))" if plan else "keep the settings in force"
        return [event("follow", f"remembered {record.id}: {_summary(found)} -> {what}",
                      state="remembered", memory_id=record.id)]  # fmt: skip

    def state(self) -> dict[str, Any]:
        """For status: the last counter print, captures and warm starts, the last lookup."""
        latest = self.watch.latest()
        return {
            "counters": None if latest is None else latest.as_json(),
            "captures": self.captures,
            "warm_starts": self.warm_starts,
            "last": self.last,
        }


def _summary(found: fp.Fingerprint) -> str:
    """One phrase of a fingerprint's busiest device: "sdb 12.0 MB/s, 90% read, depth 4.0"."""
    dev = found.busiest()
    if dev is None:
        return "no request"
    return (f"{dev['device']} {dev['mbps']:.1f} MB/s, {dev['read_share']:.0%} read, "
            f"{dev['mean_size']['read'] or dev['mean_size']['write']} B requests, "
            f"depth {dev['queue_depth']['mean']:.1f}")  # fmt: skip
