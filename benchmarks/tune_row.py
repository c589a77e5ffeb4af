"""One row of the tune benchmark: a lab, a workload, and four settings measured side by side.

The four: the host's defaults, TuneD's throughput-performance profile, what `iotuner tune`
recommends (its real search, default budget and trial length, run in this process), and the
best point of an exhaustive grid over the same space. Every point is applied through the
journaling TunableEngine and restored right after its trial.
"""

from __future__ import annotations

import inspect
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks import tuned_profile
from tuner.lab.model import Lab
from tuner.lab.spec import LabSpec, load_spec
from tuner.rules.model import RuleBase, Workload
from tuner.search.replay import Landscape, grid_points
from tuner.search.space import HOST, Point, SearchSpace, Value
from tuner.trials import TrialTarget
from tuner.trials.dataset import CacheModel
from tuner.trials.fio import writes
from tuner.tunables.engine import TunableEngine
from tuner.tunables.observe import probe_with_settings
from tuner.tune.result import TrialRecord
from tuner.tune.session import Tune, TuneConfig, trial_with
from tuner.tune.setup import prepare_tune

MiB = 1 << 20
# Reads on the stripe go through btrfs to a scratch file: 2 GiB holds what a trial reads at
# the stripe's 300 MB/s (pagecache.data_set_bytes) without starting over.
STRIPE_READ_BYTES = 2048 * MiB
SETTINGS = ("defaults", "tuned", "iotuner", "grid")
TUNED_VM = {(f"vm.{name}", HOST): value for name, value in tuned_profile.DIRTY_RATIOS.items()}

Setting = tuple[str, str]
Settings = dict[Setting, Value]


@dataclass(frozen=True)
class Plan:
    """How hard to measure: side-by-side rounds, grid passes, trial length, grid levels."""

    repeats: int = 3
    grid_repeats: int = 2
    runtime_s: float = 4.0
    ramp_s: float = 1.0
    quick: bool = False
    write_bytes: int = 256 * MiB
    seed: int = 0
    tune_budget: int | None = None  # None: the command's default


def tune_defaults() -> tuple[int, float]:
    """`iotuner tune`'s default --budget and --runtime, read from the command itself."""
    from tuner.commands.tune import tune

    params = inspect.signature(tune).parameters
    return int(params["budget"].default), float(params["runtime"].default)


def bench_spec(name: str, workload: Workload) -> LabSpec:
    """The built-in spec; for a writing workload on raw disks, with xfs on the first disk.

    Buffered writes to a raw block device go out as 4 KiB bios, and block throttling counts
    bios before they merge: a 200-IOPS lab disk then writes 0.8 MB/s (measured). Through a
    file system the writeback bios are large, as an application writing files would see.
    """
    spec = load_spec(name)
    if spec.stripe is None and writes(workload.fio):
        first = replace(spec.disks[0], fs="xfs")
        spec = replace(spec, disks=(first, *spec.disks[1:]))
    return spec


@contextmanager
def trial_target(lab: Lab, workload: Workload, plan: Plan) -> Iterator[TrialTarget]:
    """Where the row's trials run: the first disk itself for reads (as the main job does),
    else a scratch file on the lab's file system (xfs on that disk, or the btrfs stripe)."""
    if lab.mountpoint is None:
        yield TrialTarget.device(lab.disks[0].device, destroy_data=True)
        return
    size = plan.write_bytes if writes(workload.fio) else STRIPE_READ_BYTES
    with TrialTarget.scratch(lab.mountpoint, size) as target:
        yield target


def grid_levels(
    space: SearchSpace, workload: Workload, quick: bool, baseline: Point
) -> dict[Setting, list[Value]]:
    """A few values per dimension and every scheduler, the host's defaults among them.

    Reads get four readahead levels (the setting that decides them; --quick: two); a writer's
    space has no readahead (tune_space). The small max_sectors_kb level is 256, not the
    domain's 64: on a 200-IOPS lab disk a write trial at 128 KB requests flushes at 25 MB/s
    and takes three times as long. The background threshold: 16 MiB (writeback at once) and
    the host's own; --quick keeps one level of nr_requests and of the dirty limit (40 % of
    dirtyable memory, TuneD's vm.dirty_ratio).
    """
    levels: dict[Setting, list[Value]] = {}
    for dim in space.dimensions:
        values: list[Value]
        if dim.kind == "categorical":
            values = list(dim.choices)
        elif dim.key == "block.read_ahead_kb":
            values = [128, 4096] if quick else [128, 1024, 4096, 16384]
        elif dim.key == "block.nr_requests":
            values = [128] if quick else [16, 128]
        elif dim.key == "block.max_sectors_kb":
            values = [256, dim.high]
        elif dim.key == "vm.dirty_background_bytes":
            values = [16 * MiB, baseline[dim.name]]
        elif dim.key == "vm.dirty_bytes":
            forty = dim.high // 2  # the domain ends at 80 % of dirtyable memory
            values = [forty] if quick else [baseline[dim.name], forty]
        else:
            values = [dim.low, dim.high]
        levels[dim.name] = sorted({dim.snap(v) for v in values}, key=str)
    return levels


def tuned_settings(target: TrialTarget, engine: TunableEngine) -> Settings:
    """TuneD throughput-performance: readahead at least 4096 KB on the target's devices,
    vm.dirty_ratio 40 and vm.dirty_background_ratio 10; the rest as it is."""
    settings: Settings = {}
    for device in target.devices:
        current = int(str(engine.tunables.read("block.read_ahead_kb", device)))
        settings[("block.read_ahead_kb", device)] = max(current, tuned_profile.READAHEAD_KB)
    settings.update(TUNED_VM)
    return settings


@dataclass(frozen=True)
class Measured:
    """One setting's side-by-side samples (MB/s)."""

    settings: Settings
    samples: tuple[float, ...]

    @property
    def mbps(self) -> float:
        """Mean MB/s."""
        return statistics.fmean(self.samples)

    @property
    def cv(self) -> float:
        """Coefficient of variation of the samples."""
        if len(self.samples) < 2:
            return 0.0
        return statistics.stdev(self.samples) / self.mbps


@dataclass(frozen=True)
class RowResult:
    """What one (lab, workload) row measured."""

    lab: str
    workload: str
    target: str
    space: SearchSpace
    measured: Mapping[str, Measured]
    landscape: Landscape
    tune_trials: tuple[TrialRecord, ...]
    tune_chosen: bool
    tune_stop: str
    tune_seconds: float
    seconds: float
    flagged: int
    notes: list[str] = field(default_factory=list)

    def ratio(self, top: str, bottom: str) -> float:
        """Mean MB/s of `top` over that of `bottom`."""
        return self.measured[top].mbps / self.measured[bottom].mbps


class Row:
    """Measures one (lab, workload) row on a target; every trial restores the host after it."""

    def __init__(
        self,
        lab_name: str,
        workload: Workload,
        target: TrialTarget,
        engine: TunableEngine,
        base: RuleBase,
        plan: Plan,
        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
        levels: Callable[[SearchSpace, Point], dict[Setting, list[Value]]] | None = None,
        cache: CacheModel | None = None,
    ) -> None:
        self.lab_name = lab_name
        self.workload = workload
        self.target = target
        self.engine = engine
        self.base = base
        self.plan = plan
        self.log = log
        # The grid's levels: a modelled row's own (benchmarks/modelled_rows.py), else
        # grid_levels for the throttled labs' rows.
        self.levels = levels
        # Production's page cache for a random reader (a modelled row's cache_mib): every
        # trial, the tune's and the grid's, runs in that share, as `tune --cache-memory`'s.
        self.cache = cache
        self.space: SearchSpace | None = None  # the tune's, once run() has it
        self.flagged = 0
        self.trials = 0

    def measure(self, settings: Mapping[Setting, Value], label: str, detail: str = "") -> float:
        """Apply `settings`, run one trial, restore; MB/s. A point of the space is written
        as a tune writes it (SearchSpace.host_settings): a scheduler's parameters only with
        their scheduler."""
        if self.space is not None:
            settings = self.space.host_settings(settings)
        result = trial_with(self.engine, settings, self.target, self.workload, None,
                            self.plan.runtime_s, self.plan.ramp_s,
                            cache=self.cache).result  # fmt: skip
        self.trials += 1
        note = f"  FLAGGED: {result.flagged}" if result.flagged else ""
        self.flagged += result.flagged is not None
        self.log(f"    {label:<9} {result.mbps:8.4g} MB/s {result.iops:8.1f} IOPS  "
                 f"{result.seconds:4.1f} s  {detail}{note}")  # fmt: skip
        return result.mbps

    def run(self) -> RowResult:
        """Warm up, tune, record the grid, then the four settings side by side."""
        started = time.monotonic()
        budget, runtime = tune_defaults()
        budget = self.plan.tune_budget or budget
        host = self.engine.tunables.sys
        setup = prepare_tune(self.base, probe_with_settings(host.fs()), self.target.devices,
                             self.workload, self.engine.tunables,
                             read_devices=self.target.raw_devices)  # fmt: skip
        space, baseline, suggested = setup.space, setup.baseline, setup.suggested
        self.space = space
        self.log(f"  space: {', '.join(f'{k}@{t}' for k, t in space.names())}")
        # DESIGN.md: the first (write) trial on a fresh lab runs slow; it is not counted.
        self.measure({}, "warm-up")

        self.log(f"  iotuner tune: budget {budget}, {runtime:g} s trials, seed {self.plan.seed}")
        config = TuneConfig(budget=budget, runtime_s=runtime, seed=self.plan.seed,
                            cache=self.cache)  # fmt: skip
        session = Tune(self.target, self.workload, space, self.engine, config,
                       on_trial=self._tune_trial)  # fmt: skip
        tuned = session.run(baseline, suggested)
        ours: Settings = dict(tuned.best_settings if tuned.chosen else tuned.baseline_settings)

        if self.levels is not None:
            levels = self.levels(space, baseline)
        else:
            levels = grid_levels(space, self.workload, self.plan.quick, baseline)
        grid = grid_points(space, levels)
        self.log(f"  grid: {len(grid)} points x {self.plan.grid_repeats} pass(es)")
        landscape = Landscape.record(
            space,
            grid,
            lambda point: self.measure(point, "grid", short(point)),
            self.plan.grid_repeats,
            {
                "lab": self.lab_name,
                "workload": self.workload.name,
                "target": self.target.path,
                "runtime_s": self.plan.runtime_s,
                "ramp_s": self.plan.ramp_s,
                "baseline": _triples(baseline),
                "recommended": [_triples(p) for p in suggested],
                "levels": {f"{k}@{t}": v for (k, t), v in levels.items()},
            },
        )
        best, _ = landscape.optimum()

        candidates: dict[str, Settings] = {
            "defaults": {},
            "tuned": tuned_settings(self.target, self.engine),
            "iotuner": ours,
            "grid": dict(best),
        }
        samples = self._side_by_side(candidates)
        return RowResult(
            lab=self.lab_name,
            workload=self.workload.name,
            target=self.target.path,
            space=space,
            measured={k: Measured(candidates[k], tuple(samples[k])) for k in SETTINGS},
            landscape=landscape,
            tune_trials=tuned.trials,
            tune_chosen=tuned.chosen,
            tune_stop=tuned.stop_reason,
            tune_seconds=tuned.seconds,
            seconds=time.monotonic() - started,
            flagged=self.flagged,
        )

    def _side_by_side(self, candidates: Mapping[str, Settings]) -> dict[str, list[float]]:
        """Every setting once per round, the order rotating so none always goes first."""
        samples: dict[str, list[float]] = {name: [] for name in candidates}
        names = list(candidates)
        self.log(f"  side by side: {self.plan.repeats} rounds of {', '.join(names)}")
        for round_ in range(self.plan.repeats):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(self.measure(candidates[name], name))
        return samples

    def _tune_trial(self, record: TrialRecord) -> None:
        self.trials += 1
        self.flagged += record.flagged is not None
        note = f"  FLAGGED: {record.flagged}" if record.flagged else ""
        self.log(f"    tune #{record.number:<3} {record.phase:<8} {record.mbps:8.4g} MB/s"
                 f"  {record.seconds:4.1f} s{note}")  # fmt: skip


def short(point: Mapping[Setting, Value]) -> str:
    """A point in one short line: "read_ahead_kb=4096 scheduler=bfq ..."."""
    return " ".join(f"{key.split('.')[-1]}={value}" for (key, _), value in point.items())


def _triples(point: Mapping[Setting, Value]) -> list[list[Any]]:
    return [[key, target, value] for (key, target), value in point.items()]


def point_from_triples(rows: Sequence[Sequence[Any]]) -> Point:
    """The inverse of the [key, target, value] lists stored in a landscape's meta."""
    return {(str(key), str(target)): value for key, target, value in rows}
