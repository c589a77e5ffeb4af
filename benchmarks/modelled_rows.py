"""The tune benchmark's rows on modelled devices (issue 18): lab, workload and grid of each.

The throttled labs' rows (benchmarks/tune.py's labs x workloads) have one lever, readahead,
which TuneD's static profile also pulls. These rows run on the modelled disks and arrays
(docs/lab.md), where seeks, rotation, channels, parity and a shared bus decide the figures,
each with the workload the issue names for it. Every row's exhaustive grid covers only the
dimensions that can matter there (the reason is the row's `why`); every other dimension of
the tune's space stays at the host's value in the grid, while the tune itself searches its
whole space.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tuner.rules.model import RuleBase, Workload
from tuner.search.space import Point, SearchSpace, Value
from tuner.trials.dataset import CacheModel

MiB = 1 << 20

Levels = dict[tuple[str, str], list[Value]]

MAX = "max"
"""A level meaning the dimension's top (max_sectors_kb: what the device accepts)."""
HOST_VALUE = "host"
"""A level meaning the host's own value (the baseline's)."""
FORTY = "forty"
"""A level of vm.dirty_bytes: 40 % of dirtyable memory (TuneD's dirty limit), half the
domain's top (80 %)."""
ALL = "all"
"""Every choice of a categorical dimension (the schedulers the device offers)."""


@dataclass(frozen=True)
class ModelledRow:
    """One row: a built-in lab spec, a workload (a rule-base profile, or one with its fio
    options changed), and the grid's levels by tunable key."""

    name: str
    lab: str
    profile: str
    fio: Mapping[str, object]
    grid: Mapping[str, tuple[Value, ...] | str]
    why: str
    precondition_mib: int = 0
    """MiB written to the device before the row (a flash drive past its over-provisioned
    area, as a drive in service is), so no trial runs on a fresher drive than another."""
    fs: str | None = None
    """A file system made on the lab's disk: the trials then write a scratch file there
    (buffered writes to a raw device are not what applications that write files do)."""
    disk_mib: int | None = None
    """The lab disk's size in MiB instead of the spec's: a reader of the whole device then
    reads a data set of this size (a device's trials read all of it, whatever fio's size)."""
    cache_mib: int | None = None
    """The page cache production leaves this reader, in MiB (tune --cache-memory): its
    trials run in a memory cgroup holding that share of the device they read, so a readahead
    that evicts what the reader needs costs what it costs there."""

    def cache(self, disk_bytes: int) -> CacheModel | None:
        """Production's data set (the whole device of `disk_bytes`) and page cache, when the
        row has one."""
        if self.cache_mib is None:
            return None
        return CacheModel(disk_bytes, self.cache_mib * MiB)

    def workload(self, base: RuleBase) -> Workload:
        """The rule base's profile with this row's fio options over its own; the profile's
        name stays, so the rules that concern it are the tune's suggestions."""
        profile = base.workload(self.profile)
        if profile is None:
            raise ValueError(f"{self.name}: no workload {self.profile!r} in the rule base")
        return Workload(profile.name, profile.description, {**profile.fio, **self.fio})

    def levels(self, space: SearchSpace, baseline: Point) -> Levels:
        """The grid's values per dimension: the row's levels where it names the key, the
        baseline's value elsewhere (a dimension held still)."""
        levels: Levels = {}
        for dim in space.dimensions:
            wanted = self.grid.get(dim.key)
            values: list[Value]
            if wanted is None:
                values = [baseline[dim.name]]
            elif wanted == ALL:
                values = list(dim.choices)
            else:
                values = [_level(v, dim.high, baseline[dim.name]) for v in wanted]
            levels[dim.name] = sorted({dim.snap(v) for v in values}, key=str)
        return levels


def _level(value: Value, high: int, baseline: Value) -> Value:
    """A named level's value on a dimension whose top is `high`."""
    if value == MAX:
        return high
    if value == FORTY:
        return high // 2
    if value == HOST_VALUE:
        return baseline
    return value


MMAP_READERS = {"ioengine": "mmap", "direct": 0, "iodepth": 1, "numjobs": 2, "fadvise_hint": 0}
"""Two readers of 4 KiB pages (the random-read profile's bs) of the memory-mapped device,
with no fadvise hint: the kernel's own readaround decides what each fault reads."""


STREAM_GRID: Mapping[str, tuple[Value, ...] | str] = {
    "block.read_ahead_kb": (128, 1024, 4096, 8192, 16384),
    "block.scheduler": ("mq-deadline", "bfq"),
}
"""The grid of the issue-28 stream rows: the window, which decides how much each seek between
streams brings, and whether bfq lets a stream keep the head; 16 MiB windows are in (trials
run to steady state now)."""


ROWS: tuple[ModelledRow, ...] = (
    ModelledRow(
        name="hdd-streams",
        lab="hdd",
        profile="concurrent-streams",
        fio={},
        grid={
            "block.read_ahead_kb": (128, 1024, 4096, 8192),
            "block.max_sectors_kb": (512, MAX),
            "block.scheduler": ("mq-deadline", "bfq"),
            "block.bfq_slice_idle": (8, 16),
        },
        why="four buffered readers on one disk: the readahead window decides how much each "
        "seek brings, the request size how the window reaches the drive, bfq's idling "
        "(slice_idle 8 or 16 ms) whether a stream keeps the head; mq-deadline's "
        "parameters at their defaults. 16 MiB windows are left out: a 3 s trial reads "
        "less than they fetch (flagged, docs/benchmarks.md)",
    ),
    ModelledRow(
        name="hdd-streams-6",
        lab="hdd",
        profile="concurrent-streams",
        fio={"numjobs": 6},
        grid=STREAM_GRID,
        why="six buffered readers on one disk (issue 28): windows of 4-16 MiB keep 48-192 MiB "
        "in flight, more than a fixed 3 s window consumed, and were set aside as readahead "
        "beyond what fio read; the trials now run to steady state",
    ),
    ModelledRow(
        name="hdd-streams-12",
        lab="hdd",
        profile="concurrent-streams",
        fio={"numjobs": 12},
        grid=STREAM_GRID,
        why="twelve buffered readers on one disk: each seek between streams costs more the "
        "smaller the window, and 4 windows a stream at 16 MiB is 768 MiB, the physics floor "
        "that lengthens these trials",
    ),
    ModelledRow(
        name="hdd5400-streams-3",
        lab="hdd-5400",
        profile="concurrent-streams",
        fio={"numjobs": 3},
        grid=STREAM_GRID,
        why="three buffered readers on the second disk model (5400 rpm, 24 zones, 8 MiB "
        "cache): slower media and longer seeks than `hdd`, so the window that pays for a "
        "seek is not the same",
    ),
    ModelledRow(
        name="hdd-random-32",
        lab="hdd",
        profile="random-read",
        fio={"numjobs": 1, "iodepth": 32},
        grid={
            "block.scheduler": ALL,
            "block.nr_requests": (16, 256),
            "block.deadline_fifo_batch": (16, 256),
        },
        why="direct 4 KiB reads, 32 in flight: readahead and writeback cannot act; the "
        "order the requests reach the drive in (scheduler, its sorted batches) and how "
        "many the queue holds can",
    ),
    ModelledRow(
        name="ssd-mixed",
        lab="ssd",
        profile="random-write",
        fio={"rw": "randrw", "rwmixread": 70, "bs": "8k", "iodepth": 8, "numjobs": 4},
        grid={
            "block.scheduler": ALL,
            "block.nr_requests": (8, 64),
            "block.nomerges": (0, 2),
        },
        why="a database's 8 KiB pages, 70 % reads, 32 in flight, direct: the scheduler "
        "(reads behind slow writes), the queue's depth against the 4 channels, and merge "
        "attempts; readahead and writeback cannot act",
        # The built-in ssd slows its writes 4 x once 256 MiB have been written (op_bytes):
        # without this the first trials would run on a fresh drive and the later ones not.
        precondition_mib=320,
    ),
    ModelledRow(
        name="raid5-sync-writes",
        lab="raid5",
        profile="random-write",
        fio={"ioengine": "psync", "iodepth": 1, "numjobs": 8, "sync": 1},
        grid={
            "block.scheduler": ALL,
            "block.nr_requests": (16, 256),
        },
        why="eight writers of 4 KiB O_SYNC|O_DIRECT writes, one in flight each (a "
        "database's commits): each a read-modify-write of four member commands; only "
        "the order and the number of writes the queue passes on can act (bfq idles "
        "on a synchronous writer's empty queue)",
    ),
    ModelledRow(
        name="raid0-bus-stream",
        lab="raid0-one-bus",
        profile="stream-read",
        fio={},
        grid={
            "block.read_ahead_kb": (128, 1024, 4096, 16384),
            "block.max_sectors_kb": (192, MAX),
            "block.scheduler": ("mq-deadline", "none"),
        },
        why="one buffered reader of a three-disk stripe behind a 250 MB/s bus: the readahead "
        "window decides how many members work at once, the request size whether a "
        "request covers whole stripes (192 KiB)",
    ),
    ModelledRow(
        name="raid0-bus-write",
        lab="raid0-one-bus",
        profile="stream-write",
        fio={},
        grid={
            "vm.dirty_background_bytes": (16 << 20, HOST_VALUE),
            "vm.dirty_bytes": (HOST_VALUE, FORTY),
            "block.max_sectors_kb": (192, MAX),
            "block.scheduler": ("mq-deadline", "none"),
        },
        why="one buffered writer of a 256 MiB file on xfs on the same stripe, flushed at its "
        "end: when writeback starts (the dirty thresholds: 16 MiB or the host's 10 %, a "
        "limit of the host's 20 % or TuneD's 40 %), and the request size against the stripe",
        fs="xfs",
    ),
    ModelledRow(
        name="raid0-wide-stream",
        lab="raid0-wide",
        profile="stream-read",
        fio={},
        grid={
            "block.read_ahead_kb": (128, 4096, 8192, 16384, 32768),
            "block.scheduler": ("mq-deadline", "none"),
        },
        why="one buffered reader of a six-disk stripe with a 4 MiB unit (24 MiB full "
        "stripe): the readahead windows in flight decide how many members stream at "
        "once, and TuneD's 4096 KB reaches about two of six",
    ),
    ModelledRow(
        name="ssd-mmap-random",
        lab="ssd",
        profile="random-read",
        fio=MMAP_READERS,
        grid={
            "block.read_ahead_kb": (128, 512, 1024, 4096),
            "block.scheduler": ("mq-deadline", "none"),
        },
        why="two readers of 4 KiB pages of the memory-mapped 4 GiB drive (a database or "
        "key-value store using mmap), production's cache holding a quarter (1 GiB): every "
        "fault reads the readahead window around it, so a large window costs transfer time "
        "and evicts pages the readers need (by hand, over 1 GiB with 256 MiB cached: 1100 "
        "IOPS at 128 KB, 139 at 4096)",
        cache_mib=1024,
    ),
    ModelledRow(
        name="hdd-mmap-random",
        lab="hdd",
        profile="random-read",
        fio=MMAP_READERS,
        grid={
            "block.read_ahead_kb": (128, 512, 1024, 4096),
            "block.scheduler": ("mq-deadline", "bfq"),
        },
        why="the same readers on the modelled hard disk, made 256 MiB, a quarter cached: "
        "each fault is a seek, and a large window adds its transfer and evicts the cache "
        "(by hand: 160 IOPS at 128 KB, 45 at 4096); on the whole 2 GiB disk turning a "
        "quarter of it over at 128 KB takes longer than a trial may ramp (30 s)",
        disk_mib=256,
        cache_mib=64,
    ),
)


def row_named(name: str) -> ModelledRow:
    """The row called `name`; ValueError naming the rows when there is none."""
    for row in ROWS:
        if row.name == name:
            return row
    raise ValueError(f"no modelled row {name!r}: {', '.join(r.name for r in ROWS)}")
