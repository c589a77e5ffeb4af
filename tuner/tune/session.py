"""One tune: baseline, initial points, Bayesian search, confirmation, always restoring the host.

Every trial's settings go through the TunableEngine (journaled before they are written, the
whole batch read back before the trial runs), and the engine restores the originals when the
tune ends, however it ends: tune recommends, apply applies. A trial whose figures are not the
device's never becomes the recommendation (tuner/tune/guards.py).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tuner.rules.model import Workload
from tuner.search.confirm import Confirmation, Sample, confirm
from tuner.search.optimizer import Optimizer, SkoptOptimizer, Step, should_stop
from tuner.search.rounding import rounded
from tuner.search.simplify import simplest
from tuner.search.space import APP, Point, SearchSpace, point_key
from tuner.trials.dataset import CacheModel
from tuner.trials.faults import GONE, TrialFault, device_name, gone_devices, require_present
from tuner.trials.fio import AppParams
from tuner.trials.flags import joined
from tuner.trials.idle import DevicesBusy
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult, run_trial
from tuner.tunables.base import TargetGone, TunableError
from tuner.tunables.engine import TunableEngine
from tuner.tunables.registry import TUNABLES
from tuner.tune import guards
from tuner.tune.objective import Objective, objective_named
from tuner.tune.result import Setting, TrialRecord, TuneResult

DEVICE_SETTINGS = tuple(key for key, spec in TUNABLES.items() if spec.scope == "device")
"""What a trial records of its devices besides its batch: every block-device setting."""


SLOW_BELOW = 0.5
"""A search trial scoring below this share of the baseline's mean, or a baseline repeat below
it of the repeats' median, is measured once more and the better trial counts: a device that
turns slow for a while (a firmware pause, a rebuild, a neighbour's burst; the lab's `slow`
fault makes one 2-4 times slower) must neither set the baseline nor teach the search that a
point is bad. A point really that bad measures so again, at the cost of one trial's time."""


AGAIN = "again"
"""The phase of a search trial's second measurement (SLOW_BELOW): no budget trial."""


@dataclass(frozen=True)
class TuneConfig:
    """How long and how hard to search, and what to optimise."""

    budget: int = 16
    time_s: float | None = None
    runtime_s: float = 4.0
    ramp_s: float = 1.0
    objective: str = "throughput"  # or "iops" or "latency" (p99): tuner/tune/objective.py
    seed: int = 0
    baseline_repeats: int = 3
    confirm_rounds: int = 3
    # More rounds, up to this many, while a candidate measures 5 % or more above the baseline
    # but its interval still reaches below 1 (tuner/search/confirm.py, UNDECIDED_ABOVE).
    confirm_max_rounds: int = 6
    # The whole tune's seconds, confirmation included: an extra confirmation round starts only
    # if it would end within them (None: no bound). The main job's three minutes.
    whole_s: float | None = None
    top_k: int = 2
    io_cap_bytes: int | None = None  # the most one trial may move (tune --io-cap)
    # A change is left out when the plan without it is within this of the plan with it (the
    # model's prediction proposes, confirmation decides). 0.5 % is the lab's trial noise (cv
    # 0.3-0.7 %): at 2 % the single disk's read plan lost a bfq and queue change that measured
    # 0.9 % faster in every round, and with it the lead over the bare readahead rule.
    simpler_within: float = 0.005
    # Production's data set and page cache (tune --data-set, --cache-memory): a buffered
    # reader's trials cache the same share of their data (tuner/trials/dataset.py).
    cache: CacheModel | None = None


@dataclass(frozen=True)
class PointTrial:
    """One trial at a point: what it measured, and what the devices really held meanwhile."""

    result: TrialResult
    had: dict[Setting, Any]


def trial_with(
    engine: TunableEngine,
    settings: Mapping[tuple[str, str], object],
    target: TrialTarget,
    workload: Workload,
    app: AppParams | None,
    runtime_s: float,
    ramp_s: float,
    io_cap_bytes: int | None = None,
    cache: CacheModel | None = None,
) -> PointTrial:
    """Apply host `settings`, run one trial, and put the host back whatever happened.

    `had` is the batch as read back after all of it was written, plus the queue settings of
    the target's devices the batch did not name (a write may move them: on a rotational disk,
    kernel 6.17+, max_sectors_kb raises read_ahead_kb), so the record is what the trial ran
    with, not what was asked.
    """
    # Each trial starts from the host as found and puts it back: the journal then only ever
    # holds true originals, and a kill between trials leaves nothing changed.
    require_present(target.devices, target.attachments)
    try:
        try:
            applied = engine.apply(dict(settings)) if settings else []
        except TargetGone as err:  # gone since the check: a fault of the device, not ours
            where = [*gone_devices(target.devices), device_name(target.path)][0]
            raise TrialFault(where, GONE, str(err)) from None
        had: dict[Setting, Any] = {(a.key, a.target): a.actual for a in applied}
        for device in target.devices:
            for key in DEVICE_SETTINGS:
                if (key, device) not in had:
                    try:
                        had[(key, device)] = engine.tunables.read(key, device)
                    except TunableError:
                        continue  # a partition or a device without that attribute
        result = run_trial(target, workload, app, runtime_s, ramp_s,
                           io_cap_bytes=io_cap_bytes, cache=cache)  # fmt: skip
        return PointTrial(result, had)
    finally:
        engine.restore()


Runner = Callable[[Point], PointTrial]
"""Runs one trial at a point (host settings and application parameters) and restores."""


class Search:
    """Measures points through `runner`; `run` drives the search and returns the result.

    What a trial is belongs to the runner: one fio job on a target (`Tune`), or a transfer
    between two hosts (tuner/tune/transfer.py). Baseline, search, confirmation, the guards'
    verdicts and the never-worse rule are the same for every kind. `label` and `workload`
    name what was tuned in the result.

    `before_trial` runs before every trial (tune --idle-below waits for idle devices there);
    when it raises DevicesBusy the search stops early and the result keeps the baseline.
    """

    def __init__(
        self,
        label: str,
        workload: str,
        space: SearchSpace,
        config: TuneConfig,
        runner: Runner,
        on_trial: Callable[[TrialRecord], None] = lambda record: None,
        before_trial: Callable[[], object] = lambda: None,
    ) -> None:
        self.label = label
        self.workload_name = workload
        self.space = space
        self.config = config
        self.objective: Objective = objective_named(config.objective)
        self.on_trial = on_trial
        self.before_trial = before_trial
        self.runner = runner
        self.records: list[TrialRecord] = []
        # A capped random reader's trials start from the ramp the baseline needed to settle
        # its cache (tuner/trials/settle.py), instead of each finding it out by running twice.
        self.ramp_s = config.ramp_s

    # -- one measurement -------------------------------------------------------------------

    def measure(self, point: Point, phase: str) -> TrialResult:
        """Run one trial at the point, record it (for a search trial, with what the search
        makes of it when flagged: guards.policy) and return what it measured."""
        try:
            self.before_trial()
        except DevicesBusy as err:
            raise DevicesBusy(f"before trial {len(self.records) + 1} ({phase}): {err}") from None
        try:
            done = self.runner(point)
        except TrialFault as fault:
            raise fault.at(len(self.records) + 1, phase) from None
        result = done.result
        record = TrialRecord(
            number=len(self.records) + 1,
            settings=dict(point),
            mbps=result.mbps,
            p99_latency_us=result.p99_latency_us,
            seconds=result.seconds,
            phase=phase,
            flags=result.flags,
            iops=result.iops,
            amplification=result.amplification,
            had={**done.had, **{slot: v for slot, v in point.items() if slot[1] == APP}},
            told=(guards.policy(result.flags) or "-") if phase in ("initial", "search") else "-",
            set_aside=bool(guards.disqualifying(result.flags)),
            measured_s=result.measured_s,
            settled=result.settled,
            length=None if result.length is None else result.length.describe(),
        )
        self.records.append(record)
        self.on_trial(record)
        return result

    def value(self, result: TrialResult) -> float:
        """What the optimiser minimises (tuner/tune/objective.py)."""
        return self.objective.value(result)

    # -- the whole tune --------------------------------------------------------------------

    def run(self, baseline: Point, recommended: list[Point]) -> TuneResult:
        """Baseline, search, confirmation; the engine's originals are restored by the caller.

        guards.Unmeasurable when a baseline trial is flagged: nothing is recommended.
        """
        started = time.monotonic()
        config = self.config
        # A recommendation names what it changes; the rest is the baseline's.
        recommended = [self.space.complete(point, baseline) for point in recommended]
        base_results = []
        for _ in range(config.baseline_repeats):
            result = self.measure(baseline, "baseline")
            guards.check_baseline(result.flags, len(self.records))
            base_results.append(result)
            self.ramp_s = max(self.ramp_s, result.ramp_s)
        base_results = self._slow_baselines_again(baseline, base_results)
        base_mean = statistics.fmean(self.objective.score(r) for r in base_results)
        noise = _cv([self.objective.score(result) for result in base_results])
        optimizer: Optimizer = SkoptOptimizer(
            self.space, seed=config.seed, initial_points=[baseline, *recommended]
        )
        honest: list[float] = []
        # The baseline's repeats are measurements like any other: told, the optimiser never
        # spends a budget trial asking for the baseline again (and sees its noise).
        for result in base_results:
            honest.append(self.value(result))
            optimizer.tell(baseline, honest[-1])
        deadline = None if config.time_s is None else started + config.time_s
        history: list[Step] = []
        set_aside: set[Any] = set()
        reason: str | None = None
        while reason is None:
            point = optimizer.ask()
            ei = optimizer.expected_improvement()
            phase = "initial" if len(history) < len(recommended) else "search"
            try:
                measured = self.measure(point, phase)
            except DevicesBusy as err:
                reason = f"stopped early: {err}"
                break
            told = guards.policy(measured.flags)
            if told is None and self.objective.score(measured) < SLOW_BELOW * base_mean:
                # _better_of keeps an honest trial, so `told` stays None.
                try:
                    measured = self._better_of(measured, self.measure(point, AGAIN))
                except DevicesBusy as err:
                    reason = f"stopped early: {err}"  # the first trial still counts
            if told is None:
                value = self.value(measured)
                honest.append(value)
                optimizer.tell(point, value)
            else:
                set_aside.add(point_key(point))
                value = guards.penalty(honest)
                if told == guards.PENALISE:
                    optimizer.tell(point, value)
            history.append(Step(point, value, ei))
            reason = reason or should_stop(history, max(noise, 0.005), config.budget, deadline)
        top = _top(history, config.top_k, baseline, set_aside)
        candidates = list(_with_rules(top, recommended, baseline, set_aside))
        if top and config.simpler_within > 0:
            candidates.insert(1, self._simplified(optimizer, top[0], baseline))
        candidates = self._rounded(optimizer, candidates, baseline, max(noise, 0.005))
        try:
            if reason.startswith("stopped early"):
                raise DevicesBusy(reason)  # busy devices: no confirmation either
            outcome = confirm(self._confirm_sample, baseline, candidates, config.confirm_rounds,
                              simpler_within=config.simpler_within,
                              p99_rise=self.objective.p99_rise,
                              max_rounds=config.confirm_max_rounds,
                              extra_until=None if config.whole_s is None
                              else started + config.whole_s)  # fmt: skip
        except DevicesBusy as err:
            outcome = _unconfirmed(baseline, self.records, self.objective)
            reason = reason if reason.startswith("stopped early") else f"stopped early: {err}"
        if outcome.note:
            reason = f"{reason}; {outcome.note}"
        return TuneResult(
            target=self.label,
            workload=self.workload_name,
            objective=self.objective.name,
            unit=self.objective.unit,
            baseline_settings=dict(baseline),
            baseline_score=outcome.baseline_score,
            baseline_cv=outcome.baseline_cv,
            best_settings=dict(outcome.best_point),
            best_score=outcome.best_score,
            best_cv=outcome.best_cv,
            gain=outcome.gain,
            ci=(outcome.ci_low, outcome.ci_high),
            chosen=outcome.chosen,
            left_out=_left_out(top[0], outcome) if top else {},
            stop_reason=reason,
            trials=tuple(self.records),
            seconds=time.monotonic() - started,
            refused=_refusals(outcome),
            cache_note=config.cache.describe() if config.cache is not None else None,
        )

    def _slow_baselines_again(
        self, baseline: Point, results: list[TrialResult]
    ) -> list[TrialResult]:
        """The baseline's repeats with each far below their median (SLOW_BELOW) measured once
        more: a device slow for a while must not set the bar every trial is compared with."""
        if len(results) < 2:
            return results
        middle = statistics.median(self.objective.score(r) for r in results)
        again = []
        for result in results:
            if self.objective.score(result) < SLOW_BELOW * middle:
                second = self.measure(baseline, "baseline")
                guards.check_baseline(second.flags, len(self.records))
                # The better of the two: a lower bar would flatter every trial after it.
                result = self._better_of(result, second)
            again.append(result)
        return again

    def _better_of(self, first: TrialResult, second: TrialResult) -> TrialResult:
        """Of a point's two trials the one that counts: the better honest one (a slow period
        only ever makes a trial worse; a flagged second trial does not replace the first)."""
        if guards.policy(second.flags) is not None:
            return first
        return second if self.value(second) < self.value(first) else first

    def _confirm_sample(self, point: Point) -> Sample:
        result = self.measure(point, "confirm")
        flag = joined(guards.disqualifying(result.flags))
        return Sample(self.objective.score(result), result.p99_latency_us, flag)

    def _simplified(self, optimizer: Optimizer, best: Point, baseline: Point) -> Point:
        """`best` without the changes the model expects to be worth less than simpler_within."""
        if optimizer.predict([best]) is None:
            return best  # no model (random search): nothing to tell the changes apart
        return simplest(best, baseline, lambda points: optimizer.predict(points) or [],
                        self.space, self.config.simpler_within)  # fmt: skip

    def _rounded(
        self, optimizer: Optimizer, candidates: list[Point], baseline: Point, noise: float
    ) -> list[Point]:
        """Each candidate with its values rounded where the model expects no loss beyond the
        noise (tuner/search/rounding.py); confirmation measures the rounded points."""
        if not candidates or optimizer.predict([candidates[0]]) is None:
            return candidates
        return [rounded(point, baseline, lambda points: optimizer.predict(points) or [],
                        self.space, noise) for point in candidates]  # fmt: skip


class Tune(Search):
    """A search whose trials run the workload's fio job on one target, the host's settings
    applied through `engine` (`trial_with`). `runner` replaces the real trial where a test
    drives the search over a synthetic landscape.
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
        runner: Runner | None = None,
    ) -> None:
        self.target = target
        self.workload = workload
        self.engine = engine
        super().__init__(target.path, workload.name, space, config, runner or self._real_trial,
                         on_trial, before_trial)  # fmt: skip

    def _real_trial(self, point: Point) -> PointTrial:
        host = self.space.host_settings(point)
        config = self.config
        return trial_with(self.engine, host, self.target, self.workload, _app_params(point),
                          config.runtime_s, self.ramp_s, config.io_cap_bytes,
                          config.cache)  # fmt: skip


def _refusals(outcome: Confirmation) -> tuple[str, ...]:
    """Why confirmation candidates could not be recommended beyond "no gain"."""
    return tuple(c.refused for c in outcome.comparisons if c.refused)


def _left_out(search_best: Point, outcome: Confirmation) -> dict[tuple[str, str], Any]:
    """The changes of the search's best that the recommendation does not make."""
    if not outcome.chosen:
        return {}
    base, chosen = outcome.baseline_point, outcome.best_point
    return {slot: value for slot, value in search_best.items()
            if value != base.get(slot) and chosen.get(slot) == base.get(slot)}  # fmt: skip


def _unconfirmed(baseline: Point, records: list[TrialRecord], objective: Objective) -> Confirmation:
    """The outcome when busy devices stopped the tune before confirmation: the baseline
    (measured in `records`' baseline trials) stays, nothing is chosen."""
    base = [objective.record_score(r) for r in records if r.phase == "baseline"]
    mean, cv = statistics.fmean(base), _cv(base)
    return Confirmation(dict(baseline), mean, cv, mean, cv, 1.0, 1.0, 1.0, chosen=False,
                        rounds=0, baseline_point=dict(baseline))  # fmt: skip


def _with_rules(
    top: list[Point], recommended: list[Point], baseline: Point, set_aside: Collection[Any] = ()
) -> list[Point]:
    """`top` with its last slot given to the rules' first recommendation when the search did
    not rank it there.

    A rule's point is a hypothesis with the papers behind it, measured once: one unlucky trial
    (a busy neighbour, a slow flush) must not drop it unconfirmed. The runner-up it replaces is
    usually the best's neighbour, within noise of it. Needs two slots: the best keeps its own.
    A rule's point whose trial was set aside (flagged) is not brought back.
    """
    keys = {point_key(p) for p in top} | {point_key(baseline)} | set(set_aside)
    rules = [p for p in recommended if point_key(p) not in keys]
    if len(top) < 2 or not rules:
        return top
    return [*top[:-1], rules[0]]


def _top(
    history: list[Step], k: int, baseline: Point, set_aside: Collection[Any] = ()
) -> list[Point]:
    """The k best distinct points measured, other than the baseline and those set aside."""
    seen = {point_key(baseline)} | set(set_aside)
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
