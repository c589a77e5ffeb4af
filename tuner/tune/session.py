"""One tune: baseline, initial points, Bayesian search, confirmation, always restoring the host.

Every trial's settings go through the TunableEngine (journaled before they are written), and
the engine restores the originals when the tune ends, however it ends: tune recommends, apply
applies.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tuner.rules.model import Workload
from tuner.search.confirm import confirm
from tuner.search.optimizer import (
    Optimizer,
    SkoptOptimizer,
    Step,
    latency_value,
    should_stop,
    throughput_value,
)
from tuner.search.space import APP, Point, SearchSpace, point_key
from tuner.trials.fio import AppParams
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult, run_trial
from tuner.tunables.engine import TunableEngine
from tuner.tune.result import TrialRecord, TuneResult


@dataclass(frozen=True)
class TuneConfig:
    """How long and how hard to search, and what to optimise."""

    budget: int = 16
    time_s: float | None = None
    runtime_s: float = 4.0
    ramp_s: float = 1.0
    objective: str = "throughput"  # or "latency" (p99)
    seed: int = 0
    baseline_repeats: int = 3
    confirm_rounds: int = 3
    top_k: int = 2


def trial_with(
    engine: TunableEngine,
    settings: Mapping[tuple[str, str], object],
    target: TrialTarget,
    workload: Workload,
    app: AppParams | None,
    runtime_s: float,
    ramp_s: float,
) -> TrialResult:
    """Apply host `settings`, run one trial, and put the host back whatever happened."""
    # Each trial starts from the host as found and puts it back: the journal then only ever
    # holds true originals, and a kill between trials leaves nothing changed.
    try:
        if settings:
            engine.apply(dict(settings))
        return run_trial(target, workload, app, runtime_s, ramp_s)
    finally:
        engine.restore()


class Tune:
    """Measures points on one target; `run` drives the search and returns the result."""

    def __init__(
        self,
        target: TrialTarget,
        workload: Workload,
        space: SearchSpace,
        engine: TunableEngine,
        config: TuneConfig,
        on_trial: Callable[[TrialRecord], None] = lambda record: None,
    ) -> None:
        self.target = target
        self.workload = workload
        self.space = space
        self.engine = engine
        self.config = config
        self.on_trial = on_trial
        self.records: list[TrialRecord] = []

    # -- one measurement -------------------------------------------------------------------

    def measure(self, point: Point, phase: str) -> TrialResult:
        """Apply the point's host settings, run one trial, record it."""
        host = {slot: v for slot, v in point.items() if slot[1] != APP}
        result = trial_with(self.engine, host, self.target, self.workload, _app_params(point),
                            self.config.runtime_s, self.config.ramp_s)  # fmt: skip
        record = TrialRecord(
            number=len(self.records) + 1,
            settings=dict(point),
            mbps=result.mbps,
            p99_latency_us=result.p99_latency_us,
            seconds=result.seconds,
            phase=phase,
            flagged=result.flagged,
        )
        self.records.append(record)
        self.on_trial(record)
        return result

    def value(self, result: TrialResult) -> float:
        """What the optimiser minimises: -log(MB/s), or log(p99 latency)."""
        if self.config.objective == "latency":
            return latency_value(result.p99_latency_us or math.inf)
        return throughput_value(max(result.mbps, 1e-6))

    # -- the whole tune --------------------------------------------------------------------

    def run(self, baseline: Point, recommended: list[Point]) -> TuneResult:
        """Baseline, search, confirmation; the engine's originals are restored by the caller."""
        started = time.monotonic()
        config = self.config
        base_mbps = [
            self.measure(baseline, "baseline").mbps for _ in range(config.baseline_repeats)
        ]
        noise = _cv(base_mbps)
        optimizer: Optimizer = SkoptOptimizer(
            self.space, seed=config.seed, initial_points=[baseline, *recommended]
        )
        deadline = None if config.time_s is None else started + config.time_s
        history: list[Step] = []
        reason: str | None = None
        while reason is None:
            point = optimizer.ask()
            ei = optimizer.expected_improvement()
            phase = "initial" if len(history) <= len(recommended) else "search"
            value = self.value(self.measure(point, phase))
            optimizer.tell(point, value)
            history.append(Step(point, value, ei))
            reason = should_stop(history, max(noise, 0.005), config.budget, deadline)
        candidates = _top(history, config.top_k, baseline)
        outcome = confirm(
            lambda p: self.measure(p, "confirm").mbps, baseline, candidates, config.confirm_rounds
        )
        return TuneResult(
            target=self.target.path,
            workload=self.workload.name,
            objective=config.objective,
            baseline_settings=dict(baseline),
            baseline_mbps=outcome.baseline_mbps,
            baseline_cv=outcome.baseline_cv,
            best_settings=dict(outcome.best_point),
            best_mbps=outcome.best_mbps,
            best_cv=outcome.best_cv,
            gain=outcome.gain,
            ci=(outcome.ci_low, outcome.ci_high),
            chosen=outcome.chosen,
            stop_reason=reason,
            trials=tuple(self.records),
            seconds=time.monotonic() - started,
        )


def _top(history: list[Step], k: int, baseline: Point) -> list[Point]:
    """The k best distinct points measured, other than the baseline."""
    seen = {point_key(baseline)}
    chosen: list[Point] = []
    for step in sorted(history, key=lambda s: s.value):
        key = point_key(step.point)
        if key not in seen:
            seen.add(key)
            chosen.append(step.point)
        if len(chosen) == k:
            break
    return chosen


def _cv(values: list[float]) -> float:
    if len(values) < 2 or statistics.fmean(values) <= 0:
        return 0.0
    return statistics.stdev(values) / statistics.fmean(values)


def _app_params(point: Mapping[tuple[str, str], Any]) -> AppParams | None:
    app = {key: value for (key, target), value in point.items() if target == APP}
    if not app:
        return None
    direct = app.get("direct")
    return AppParams(
        bs=app.get("bs"),
        iodepth=app.get("iodepth"),
        numjobs=app.get("numjobs"),
        direct=None if direct is None else bool(direct),
    )
