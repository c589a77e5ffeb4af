"""The live workload from /proc/diskstats deltas: what each device does, and which profile it is.

`Activity` is one device over one interval; `classify` names the workload those activities
show; `WorkloadWatch` samples the counters, one read of /proc/diskstats per sample, and reports
a new class once it has held for a sustained window.

What diskstats can tell apart is what the device sees, not what the application asked for:
request size (after readahead, merging and writeback), direction, and how many requests wait.
The profiles that differ only above the block layer (disk-to-network is stream-read sent to a
socket; small-files is many opens; write-once-read-many is a read phase like stream-read) are
not guessed from it: the watch names the stream and random classes and leaves the rest to the
person who declares them.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from tuner.daemon.events import Event, event
from tuner.errors import BadInput
from tuner.resources import rules_dir
from tuner.trials.activity import Activity, activity
from tuner.trials.diskstats import DISKSTATS, DiskCounters, read_counters
from tuner.yaml_text import load_yaml

# -- thresholds ------------------------------------------------------------------------------
IDLE_UTIL_PERCENT = 5.0
"""Below this utilisation AND IDLE_MBPS a device counts as idle: journald, atime updates and
monitoring agents keep a disk a few percent busy without being a workload worth a re-tune."""
IDLE_MBPS = 1.0
STREAM_KB = 64.0
"""Requests this large or larger are streaming (docs/design.md: "64 KB and up for streams").
Buffered 16 KiB application reads reach the disk as readahead-sized requests (128 KiB and more),
and buffered writes as writeback-merged ones (hundreds of KiB), so both land here."""
RANDOM_KB = 32.0
"""Requests smaller than this are random: databases read and write 4-16 KiB pages, and a
sequential stream whose readahead or merging worked never comes down this far."""
DEEP_QUEUE = 4.0
"""Between RANDOM_KB and STREAM_KB, this many requests in flight (on average) or more means
many independent small requests (random); fewer means a sequential reader with a small
readahead window, one request after the other (stream)."""
DIRECTION_SHARE = 0.75
"""A direction holding at least this share of the bytes names the class; below it on both
sides the workload is mixed ("mixed" where the rule base has that profile, else the larger)."""
MIXED = "mixed"
IDLE = "idle"
WORKLOADS_FILE = "workloads.yaml"  # as tuner.rules.loader reads it; that module is heavier

_HISTORY_S = 3600.0  # how far back idle_seconds can look


@functools.cache
def profile_names(directory: Path | None = None) -> frozenset[str]:
    """The workload profile names of the rule base (rules/workloads.yaml), read once.

    Read with yaml directly: the daemon must not pay for the rule engine to learn six names.
    """
    return frozenset(profiles(directory))


@functools.cache
def profiles(directory: Path | None = None) -> dict[str, dict[str, Any]]:
    """The rule base's workload profiles: name -> fio options (empty when the file is bad)."""
    path = (directory or rules_dir()) / WORKLOADS_FILE
    try:
        doc = load_yaml(path.read_text(), str(path))  # bounded: no alias bomb, no deep nesting
    except (OSError, UnicodeDecodeError, BadInput):
        return {}
    entries = doc.get("workloads") if isinstance(doc, dict) else None
    found: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and "name" in entry:
            fio = entry.get("fio")
            found[str(entry["name"])] = dict(fio) if isinstance(fio, dict) else {}
    return found


# -- classification --------------------------------------------------------------------------


def is_idle(item: Activity) -> bool:
    """Below IDLE_UTIL_PERCENT utilisation and IDLE_MBPS."""
    return item.util_percent < IDLE_UTIL_PERCENT and item.mbps < IDLE_MBPS


def classify(
    activities: Iterable[Activity] | Mapping[str, Activity],
    profile_set: Collection[str] | None = None,
) -> str:
    """The workload the activities show: "idle", "stream-read", "stream-write", "random-read",
    "random-write", or "mixed" when `profile_set` (default: the rule base's profile names)
    has such a profile.

    The devices are taken together, as one workload spread over them: rates add up, the
    utilisation and queue depth are the busiest device's. The direction holding at least
    DIRECTION_SHARE of the bytes names the class, and that direction's own request size
    decides stream or random (STREAM_KB, RANDOM_KB, DEEP_QUEUE between the two).
    """
    items = list(activities.values() if isinstance(activities, Mapping) else activities)
    if not items or all(is_idle(item) for item in items):
        return IDLE
    names = profile_names() if profile_set is None else profile_set
    read_mbps = sum(i.read_mbps for i in items)
    write_mbps = sum(i.write_mbps for i in items)
    depth = max(i.queue_depth for i in items)
    share = read_mbps / (read_mbps + write_mbps) if read_mbps + write_mbps > 0 else 0.0
    if (1 - DIRECTION_SHARE) < share < DIRECTION_SHARE and MIXED in names:
        return MIXED
    reading = share >= 0.5
    mbps = read_mbps if reading else write_mbps
    iops = sum(i.read_iops if reading else i.write_iops for i in items)
    request_kb = mbps * 1e6 / iops / 1024 if iops > 0 else 0.0
    if request_kb >= STREAM_KB:
        pattern = "stream"
    elif request_kb < RANDOM_KB:
        pattern = "random"
    else:
        pattern = "random" if depth >= DEEP_QUEUE else "stream"
    return f"{pattern}-{'read' if reading else 'write'}"


def describe(items: Mapping[str, Activity]) -> str:
    """One line for an event: the devices' figures taken together."""
    values = list(items.values())
    if not values:
        return "no figures"
    mbps = sum(i.mbps for i in values)
    iops = sum(i.iops for i in values)
    moved = sum(i.read_mbps for i in values)
    size = mbps * 1e6 / iops / 1024 if iops else 0.0
    reads = moved / mbps if mbps else 0.0
    return (
        f"{mbps:.1f} MB/s in {size:.0f} KiB requests, {reads:.0%} read, "
        f"{max(i.queue_depth for i in values):.1f} in flight, "
        f"{max(i.util_percent for i in values):.0f}% busy"
    )


# -- the watch -------------------------------------------------------------------------------


class WorkloadWatch:
    """Samples the devices' counters and reports the workload class once it is sustained.

    `sample(now)` reads /proc/diskstats once. A class different from `current` is reported
    (one "workload" event) when a non-idle sample of that class comes at least `window`
    seconds after the run of that class began, and every non-idle sample since agreed. Idle
    samples neither start nor break a run: a pause in a workload does not restart its window,
    and a workload that stops is not a change (the last class stays `current`). The first
    sustained class after start is reported the same way, with previous None.
    `now` is the caller's clock in seconds (the daemon passes time.time()); `since` is in it.
    """

    def __init__(
        self,
        devices: Iterable[str],
        sample_interval: float,
        window: float,
        path: Path = DISKSTATS,
        profile_set: Collection[str] | None = None,
    ) -> None:
        self.devices = tuple(devices)
        self.sample_interval = sample_interval
        self.window = window
        self.path = path
        self.profile_set = profile_set
        self.current: str | None = None
        self.since: float | None = None
        self.activity: dict[str, Activity] = {}
        self._last: dict[str, DiskCounters] = {}
        self._last_time: float | None = None
        self._missing: set[str] = set()
        self._unreadable = False
        self._run: str | None = None  # the class building up towards a change
        self._run_since: float | None = None
        # (start, end, busiest utilisation) per interval, for idle_seconds
        self._history: deque[tuple[float, float, float]] = deque(
            maxlen=int(_HISTORY_S / max(sample_interval, 0.1)) + 2
        )

    def sample(self, now: float, *, own_io: bool = False) -> list[Event]:
        """Read the counters once; events: a sustained change of class, devices missing.

        `own_io=True` marks an interval whose I/O is iotuner's own (a re-tune's trials): its
        figures are kept for status, but it counts as evidence for no class.
        """
        events: list[Event] = []
        try:
            counters = read_counters(self.devices, self.path)
        except OSError as err:
            if not self._unreadable:
                self._unreadable = True
                events.append(event("error", f"{self.path}: {err.strerror or err}: "
                                    "workload not watched until it can be read"))  # fmt: skip
            return events
        self._unreadable = False
        previous_time, self._last_time = self._last_time, now
        fresh: dict[str, Activity] = {}
        for name in self.devices:
            found = counters.get(name)
            if found is None:
                if name not in self._missing:
                    self._missing.add(name)
                    events.append(event("error", f"{name}: not in {self.path}: not watched "
                                        "until it is back", device=name))  # fmt: skip
                self._last.pop(name, None)
                continue
            self._missing.discard(name)
            before = self._last.get(name)
            self._last[name] = found
            # A device seen for the first time, or re-attached (counters back to zero), has
            # no interval yet: its baseline starts here.
            if before is None or previous_time is None or found.went_back(before):
                continue
            fresh[name] = activity(before, found, now - previous_time)
        self.activity = fresh
        if not fresh or previous_time is None:
            return events
        self._history.append((previous_time, now, max(a.util_percent for a in fresh.values())))
        if own_io:
            return events
        found_class = classify(fresh, self.profile_set)
        if found_class == IDLE:
            return events
        if found_class != self._run:
            self._run, self._run_since = found_class, previous_time
        assert self._run_since is not None
        if found_class != self.current and now - self._run_since >= self.window:
            before_class, self.current, self.since = self.current, found_class, self._run_since
            was = f" (was {before_class})" if before_class else ""
            events.append(event(
                "workload",
                f"workload now {found_class}{was}, held {now - self._run_since:.0f} s: "
                f"{describe(fresh)}",
                workload=found_class, previous=before_class, since=self._run_since,
                devices={n: a.as_json() for n, a in fresh.items()},
            ))  # fmt: skip
        return events

    def idle_seconds(self, threshold_percent: float) -> float:
        """How long every watched device has been below `threshold_percent` utilisation,
        up to the last sample (0 when the last interval was busier, or nothing measured)."""
        start: float | None = None
        end: float | None = None
        for first, last, busiest in reversed(self._history):
            if busiest >= threshold_percent:
                break
            end = last if end is None else end
            start = first
        return 0.0 if start is None or end is None else end - start

    def state(self) -> dict[str, Any]:
        """For `iotuner status`: the class, since when, each device's last figures."""
        return {
            "class": self.current,
            "since": self.since,
            "devices": {name: a.as_json() for name, a in self.activity.items()},
        }
