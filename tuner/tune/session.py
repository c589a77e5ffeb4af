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
from tuner.search.confirm import Confirmation, confirm
from tuner.search.optimizer import (
    Optimizer,
    SkoptOptimizer,
    Step,
    latency_value,
    should_stop,
    throughput_value,
)
from tuner.search.simplify import simplest
from tuner.search.space import APP, Point, SearchSpace, point_key
from tuner.trials.fio import AppParams
from tuner.trials.idle import DevicesBusy
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
    io_cap_bytes: int | None = None  # the most one trial may move (tune --io-cap)
    # A change is left out when the plan without it is within this of the plan with it (the
    # model's prediction proposes, confirmation decides). 0.5 % is the lab's trial noise (cv
    # 0.3-0.7 %): at 2 % the single disk's read plan lost a bfq and queue change that measured
    # 0.9 % faster in every round, and with it the lead over the bare readahead rule.
    simpler_within: float = 0.005


def trial_with(
    engine: TunableEngine,
    settings: Mapping[tuple[str, str], object],
    target: TrialTarget,
    workload: Workload,
    app: AppParams | None,
    runtime_s: float,
    ramp_s: float,
    io_cap_bytes: int | None = None,
) -> TrialResult:
    """Apply host `settings`, run one trial, and put the host back whatever happened."""
    # Each trial starts from the host as found and puts it back: the journal then only ever
    # holds true originals, and a kill between trials leaves nothing changed.
    try:
        if settings:
            engine.apply(dict(settings))
        return run_trial(target, workload, app, runtime_s, ramp_s, io_cap_bytes=io_cap_bytes)
    finally:
        engine.restore()


class Tune:
    """Measures points on one target; `run` drives the search and returns the result.

    `before_trial` runs before every trial (tune --idle-below waits for idle devices there);
    when it raises DevicesBusy the search stops early and the result keeps the baseline.
    """

    def __init__(
        self,
        target: TrialTarget,
        workload: Workload,
        space: SearchSpace,
        engine: TunableEngine,
        config: TuneConfig,
        on_trial: Callable[[TrialRecord], None] = lambda record: None,
        before_trial: Callable[[], object] = lambda: None,
    ) -> None:
        self.target = target
        self.workload = workload
        self.space = space
        self.engine = engine
        self.config = config
        self.on_trial = on_trial
        self.before_trial = before_trial
        self.records: list[TrialRecord] = []

    # -- one measurement -------------------------------------------------------------------

    def measure(self, point: Point, phase: str) -> TrialResult:
        """Apply the point's host settings, run one trial, record it."""
        host = {slot: v for slot, v in point.items() if slot[1] != APP}
        try:
            self.before_trial()
        except DevicesBusy as err:
            raise DevicesBusy(f"before trial {len(self.records) + 1} ({phase}): {err}") from None
        result = trial_with(self.engine, host, self.target, self.workload, _app_params(point),
                            self.config.runtime_s, self.config.ramp_s,
                            self.config.io_cap_bytes)  # fmt: skip
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
        base_results = [self.measure(baseline, "baseline") for _ in range(config.baseline_repeats)]
        noise = _cv([result.mbps for result in base_results])
        optimizer: Optimizer = SkoptOptimizer(
            self.space, seed=config.seed, initial_points=[baseline, *recommended]
        )
        # The baseline's repeats are measurements like any other: told, the optimiser never
        # spends a budget trial asking for the baseline again (and sees its noise).
        for result in base_results:
            optimizer.tell(baseline, self.value(result))
        deadline = None if config.time_s is None else started + config.time_s
        history: list[Step] = []
        reason: str | None = None
        while reason is None:
            point = optimizer.ask()
            ei = optimizer.expected_improvement()
            phase = "initial" if len(history) < len(recommended) else "search"
            try:
                value = self.value(self.measure(point, phase))
            except DevicesBusy as err:
                reason = f"stopped early: {err}"
                break
            optimizer.tell(point, value)
            history.append(Step(point, value, ei))
            reason = should_stop(history, max(noise, 0.005), config.budget, deadline)
        top = _top(history, config.top_k, baseline)
        candidates = list(_with_rules(top, recommended, baseline))
        if top and config.simpler_within > 0:
            candidates.insert(1, self._simplified(optimizer, top[0], baseline))
        try:
            if reason.startswith("stopped early"):
                raise DevicesBusy(reason)  # busy devices: no confirmation either
            outcome = confirm(lambda p: self.measure(p, "confirm").mbps, baseline, candidates,
                              config.confirm_rounds,
                              simpler_within=config.simpler_within)  # fmt: skip
        except DevicesBusy as err:
            outcome = _unconfirmed(baseline, self.records)  # never worse: the baseline stays
            reason = reason if reason.startswith("stopped early") else f"stopped early: {err}"
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
            left_out=_left_out(top[0], outcome) if top else {},
            stop_reason=reason,
            trials=tuple(self.records),
            seconds=time.monotonic() - started,
        )

    def _simplified(self, optimizer: Optimizer, best: Point, baseline: Point) -> Point:
        """`best` without the changes the model expects to be worth less than simpler_within."""
        if optimizer.predict([best]) is None:
            return best  # no model (random search): nothing to tell the changes apart
        return simplest(best, baseline, lambda points: optimizer.predict(points) or [],
                        self.space, self.config.simpler_within)  # fmt: skip


def _left_out(search_best: Point, outcome: Confirmation) -> dict[tuple[str, str], Any]:
    """The changes of the search's best that the recommendation does not make."""
    if not outcome.chosen:
        return {}
    base, chosen = outcome.baseline_point, outcome.best_point
    return {slot: value for slot, value in search_best.items()
            if value != base.get(slot) and chosen.get(slot) == base.get(slot)}  # fmt: skip


def _unconfirmed(baseline: Point, records: list[TrialRecord]) -> Confirmation:
    """The outcome when busy devices stopped the tune before confirmation: the baseline
    (measured in `records`' baseline trials) stays, nothing is chosen."""
    base = [r.mbps for r in records if r.phase == "baseline"]
    mean, cv = statistics.fmean(base), _cv(base)
    return Confirmation(dict(baseline), mean, cv, mean, cv, 1.0, 1.0, 1.0, chosen=False,
                        rounds=0, baseline_point=dict(baseline))  # fmt: skip


def _with_rules(top: list[Point], recommended: list[Point], baseline: Point) -> list[Point]:
    """`top` with its last slot given to the rules' first recommendation when the search did
    not rank it there.

    A rule's point is a hypothesis with the papers behind it, measured once: one unlucky trial
    (a busy neighbour, a slow flush) must not drop it unconfirmed. The runner-up it replaces is
    usually the best's neighbour, within noise of it. Needs two slots: the best keeps its own.
    """
    keys = {point_key(p) for p in top} | {point_key(baseline)}
    rules = [p for p in recommended if point_key(p) not in keys]
    if len(top) < 2 or not rules:
        return top
    return [*top[:-1], rules[0]]


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
