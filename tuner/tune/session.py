"""One tune: baseline, initial points, Bayesian search, confirmation, always restoring the host.

Every trial's settings go through the TunableEngine (journaled before they are written, the
whole batch read back before the trial runs), and the engine restores the originals when the
tune ends, however it ends: tune recommends, apply applies. A trial whose figures are not the
device's never becomes the recommendation (tuner/tune/guards.py).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tuner.rules.model import Workload
from tuner.search.budget import OVERHEAD_S, BudgetPlan, plan_budget, recosted
from tuner.search.confirm import Confirmation, Sample, confirm, transient_ceiling
from tuner.search.fidelity import (
    Disagreement,
    Fidelity,
    Figures,
    TrialLength,
    disagreement,
    figures,
)
from tuner.search.optimizer import Optimizer, SkoptOptimizer, SpaceExhausted, Step, should_stop
from tuner.search.rounding import rounded
from tuner.search.simplify import simplest
from tuner.search.space import APP, Point, SearchSpace, point_key
from tuner.trials.dataset import CacheModel
from tuner.trials.faults import GONE, TrialFault, device_name, gone_devices, require_present
from tuner.trials.fio import AppParams
from tuner.trials.flags import NOT_STEADY, joined
from tuner.trials.idle import DevicesBusy
from tuner.trials.steady import MAX_CEILING_S
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult, run_trial
from tuner.tunables.base import TargetGone, TunableError
from tuner.tunables.engine import TunableEngine
from tuner.tunables.registry import TUNABLES
from tuner.tune import guards
from tuner.tune.objective import Objective, objective_named
from tuner.tune.progress import TrialProgress, remaining, seconds_left
from tuner.tune.result import Setting, TrialRecord, TuneResult

DEVICE_SETTINGS = tuple(key for key, spec in TUNABLES.items() if spec.scope == "device")
"""What a trial records of its devices besides its batch: every block-device setting."""


SLOW_BELOW = 0.5
"""A search trial scoring below this share of the baseline's mean, or a baseline repeat below
it of the repeats' median, is measured once more and the better trial counts: a device that
turns slow for a while (a firmware pause, a rebuild, a neighbour's burst; the lab's `slow`
fault makes one 2-4 times slower) must neither set the baseline nor teach the search that a
point is bad. A point really that bad measures so again, at the cost of one trial's time."""


LEAST_WINDOW_S = 1.0
"""The shortest measured part a time bound cuts a trial to: fio's quick look, iperf3's whole
second. Below it a trial measures nothing worth its start."""


AGAIN = "again"
"""The phase of a search trial's second measurement (SLOW_BELOW): no budget trial."""

OUTSIDE = "confirm-outside"
"""The phase of a confirmation trial that no longer counts: its figure lay outside its point's
others and the re-measure came back within them, or it was that re-measure and came back
outside again (tuner/search/confirm.py, `Recheck`)."""


@dataclass(frozen=True)
class TuneConfig:
    """How long and how hard to search, and what to optimise."""

    budget: int = 16
    # The whole tune's seconds, baseline, search and confirmation (tune --time; the main
    # job's three minutes): tuner/search/budget.py plans them. None: the budget decides.
    time_s: float | None = None
    # The screen length: the search's and the baseline's trials (tune --runtime, --ramp).
    runtime_s: float = 4.0
    ramp_s: float = 1.0
    # The decide length: confirmation's trials, whose figures are the claim (None: the
    # screen length's). tuner/search/fidelity.py.
    decide_runtime_s: float | None = None
    decide_ramp_s: float | None = None
    # When the tune's time started (time.monotonic()); None: when the search starts. The
    # command passes its own start, so what it does before the search counts too.
    started: float | None = None
    objective: str = "throughput"  # or "iops" or "latency" (p99): tuner/tune/objective.py
    seed: int = 0
    baseline_repeats: int = 3
    confirm_rounds: int = 3
    # More rounds, up to this many, while a candidate measures 5 % or more above the baseline
    # but its interval still reaches below 1 (tuner/search/confirm.py, UNDECIDED_ABOVE).
    confirm_max_rounds: int = 6
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

    @property
    def fidelity(self) -> Fidelity:
        """The screen and decide lengths."""
        screen = TrialLength(self.ramp_s, self.runtime_s, "--ramp and --runtime")
        if self.decide_runtime_s is None and self.decide_ramp_s is None:
            return Fidelity(screen, screen)
        decide = TrialLength(max(self.decide_ramp_s or 0.0, self.ramp_s),
                             max(self.decide_runtime_s or 0.0, self.runtime_s),
                             "the decide length")  # fmt: skip
        return Fidelity(screen, decide)


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
    *,
    ceiling_s: float | None = None,
) -> PointTrial:
    """Apply host `settings`, run one trial, and put the host back whatever happened.

    `ceiling_s` is the longest its window may run (what a --time bound leaves: run_trial).

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
                           io_cap_bytes=io_cap_bytes, cache=cache, ceiling_s=ceiling_s)  # fmt: skip
        return PointTrial(result, had)
    finally:
        engine.restore()


Runner = Callable[[Point], PointTrial]
"""Runs one trial at a point (host settings and application parameters) and restores."""

SizedRunner = Callable[[Point, TrialLength], PointTrial]
"""Runs one trial at a point for a given length: a search given one screens at the screen
length and confirms at the decide length (tuner/search/fidelity.py)."""


class Search:
    """Measures points through `runner`; `run` drives the search and returns the result.

    What a trial is belongs to the runner: one fio job on a target (`Tune`), or a transfer
    between two hosts (tuner/tune/transfer.py). Baseline, search, confirmation, the guards'
    verdicts and the never-worse rule are the same for every kind. `label` and `workload`
    name what was tuned in the result.

    `before_trial` runs before every trial (tune --idle-below waits for idle devices there);
    when it raises DevicesBusy the search stops early and the result keeps the baseline.

    `sized`, when given, runs every trial instead of `runner`, told its length: the screen
    length for the baseline and the search, the decide length for confirmation (screen short,
    decide long: tuner/search/fidelity.py). Without it every trial is the runner's own length.
    `on_progress` hears after every trial where the tune is (tuner/tune/progress.py).
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
        *,
        sized: SizedRunner | None = None,
        on_progress: Callable[[TrialProgress], None] = lambda progress: None,
    ) -> None:
        self.label = label
        self.workload_name = workload
        self.space = space
        self.config = config
        self.objective: Objective = objective_named(config.objective)
        self.on_trial = on_trial
        self.on_progress = on_progress
        self.before_trial = before_trial
        self.runner = runner
        self.sized = sized
        screen = config.fidelity.screen
        # A search without a sized runner cannot lengthen a trial: one fidelity.
        self.fidelity = config.fidelity if sized is not None else Fidelity(screen, screen)
        self.records: list[TrialRecord] = []
        self.plan: BudgetPlan | None = None
        self.decide = self.fidelity.decide
        self.started = time.monotonic()
        self.searching = True
        self.steps: list[float] = []  # the wall seconds of each search step, the model's included
        # What each trial took beyond its length: settings, cache drop, fio's start and end,
        # and what a large readahead leaves behind (the main job's best points took 2-3 s
        # more than the baseline's 4.5 s): the plan is made again with them (_overhead).
        self.overheads: list[float] = []
        # A capped random reader's trials start from the ramp the baseline needed to settle
        # its cache (tuner/trials/settle.py), instead of each finding it out by running twice.
        self.ramp_s = config.ramp_s
        self._initial = 0  # the rules' points the search starts from (run)
        self._phase = "baseline"  # of the trial being measured: its time bound (window_left)
        self.confirming: tuple[Point, ...] = ()
        """The points confirmation compares, the baseline first (set as it starts): a runner
        deciding its own length reads them, since what a comparison must hold depends on what
        it compares (a transfer: whether the points differ in congestion control)."""

    @property
    def phase(self) -> str:
        """The phase of the trial being measured (or last measured): 'baseline', 'initial',
        'search', AGAIN or 'confirm'. A runner deciding its own length reads it: confirmation's
        trials are the claim (screen short, decide long)."""
        return self._phase

    # -- one measurement -------------------------------------------------------------------

    def measure(self, point: Point, phase: str) -> TrialResult:
        """Run one trial at the point, record it (for a search trial, with what the search
        makes of it when flagged: guards.policy) and return what it measured."""
        try:
            self.before_trial()
        except DevicesBusy as err:
            raise DevicesBusy(f"before trial {len(self.records) + 1} ({phase}): {err}") from None
        self._phase = phase
        length = self.within_time(self.decide if phase == "confirm" else self.fidelity.screen)
        began = time.monotonic()
        try:
            done = self.runner(point) if self.sized is None else self.sized(point, length)
        except TrialFault as fault:
            raise fault.at(len(self.records) + 1, phase) from None
        took = time.monotonic() - began
        self.overheads.append(max(took - length.seconds, 0.0))
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
            length_s=length.seconds,
            measured_s=result.measured_s,
            settled=result.settled,
            length=None if result.length is None else result.length.describe(),
        )
        self.records.append(record)
        self.on_trial(record)
        self.on_progress(self._progress(record, length, took))
        return result

    def window_left(self, ramp_s: float, *, hard: bool = False) -> float | None:
        """The seconds the trial starting now may measure for after a `ramp_s` ramp, its cost
        beyond its length counted, within a --time bound: by the plan's end (`hard`: by the
        bound itself), less what the trials planned after it need. A search or baseline trial
        must end before confirmation's reserve; a confirmation trial leaves the confirmation
        trials still to come their planned length. None without a bound, or when the bound is
        below the least tune (which then runs as planned, and says so)."""
        plan = self.plan
        if (self.config.time_s is None or plan is None or not plan.fits
                or not math.isfinite(plan.end_s)):  # fmt: skip
            return None
        end = self.config.time_s if hard else plan.end_s
        overhead = self._overhead()
        if self._phase == "confirm":
            done = sum(1 for r in self.records if r.phase == "confirm")
            after = max(plan.points * plan.rounds - done - 1, 0)
            end -= after * (plan.decide.seconds + overhead)
        else:
            end -= plan.end_s - plan.search_end_s  # confirmation's reserve
        return self.started + end - time.monotonic() - ramp_s - overhead

    def within_time(self, length: TrialLength) -> TrialLength:
        """`length` bounded by a --time bound (`window_left`): its ceiling what the plan leaves
        it, so a trial that runs until steady state stops in time; its measured part cut only
        when it would otherwise end past the bound itself (at least LEAST_WINDOW_S), so
        confirmation's figures keep one length while the plan holds. Unchanged without a
        bound."""
        left = self.window_left(length.ramp_s)
        hard = self.window_left(length.ramp_s, hard=True)
        if left is None or hard is None:
            return length
        runtime = min(length.runtime_s, max(hard, LEAST_WINDOW_S))
        return replace(length, runtime_s=runtime, ceiling_s=max(left, runtime))

    def _progress(self, record: TrialRecord, length: TrialLength, took: float) -> TrialProgress:
        """Where the tune is after `record`: its number, the estimated total and time left."""
        plan = self.plan or self._plan(None, self.config.baseline_repeats)
        phases = [r.phase for r in self.records]
        step = statistics.fmean(self.steps) if self.steps else None
        left = remaining(plan, time.monotonic() - self.started,
                         baseline_left=max(self.config.baseline_repeats - phases.count("baseline"),
                                           0),
                         searched=phases.count("initial") + phases.count("search"),
                         confirmed=phases.count("confirm"), searching=self.searching,
                         step_s=step)  # fmt: skip
        figure = self.objective.shown(self.objective.record_score(record))
        note = "set aside" if record.set_aside else ""
        return TrialProgress(record.number, record.number + left.trials, record.phase, length,
                             took, figure, seconds_left(plan, left, step), note)  # fmt: skip

    def _overhead(self) -> float:
        """What a trial costs beyond its length, for the plan: the upper quartile of what the
        trials so far took beyond theirs. Not the mean: the points confirmation measures are
        the best ones, and on a reader those hold the largest readahead, whose trials took
        the longest (the main job's 2-3 s against the baseline's 0.5 s)."""
        if len(self.overheads) < 4:
            return max(self.overheads, default=OVERHEAD_S)
        return statistics.quantiles(self.overheads, n=4)[2]

    def _plan(self, overhead_s: float | None, baseline_left: int) -> BudgetPlan:
        """The budget plan from now on (tuner/search/budget.py); `overhead_s` None: the
        default estimate of a trial's cost beyond its length."""
        config = self.config
        points = 1 + config.top_k + (1 if config.simpler_within > 0 else 0)
        # The rules' points and the space-filling design come before the model's own choices
        # (SkoptOptimizer): fewer search trials than that and the model never chose.
        least = self._initial + max(3, len(self.space.dimensions))
        searched = sum(1 for r in self.records if r.phase in ("initial", "search"))
        extra = {} if overhead_s is None else {"overhead_s": overhead_s}
        plan = plan_budget(config.time_s, self.fidelity, budget=max(config.budget - searched, 0),
                           points=max(points, 2), rounds=config.confirm_rounds,
                           baseline_left=baseline_left, min_search=max(least - searched, 0),
                           spent_s=time.monotonic() - self.started, **extra)  # fmt: skip
        # Counted from the start, as progress counts the trials done.
        return replace(plan, search_trials=plan.search_trials + searched)

    def value(self, result: TrialResult) -> float:
        """What the optimiser minimises (tuner/tune/objective.py)."""
        return self.objective.value(result)

    # -- the whole tune --------------------------------------------------------------------

    def run(self, baseline: Point, recommended: list[Point]) -> TuneResult:
        """Baseline, search, confirmation; the engine's originals are restored by the caller.

        guards.Unmeasurable when a baseline trial is flagged: nothing is recommended.
        """
        config = self.config
        started = self.started = config.started if config.started is not None else time.monotonic()
        # A recommendation names what it changes; the rest is the baseline's.
        recommended = [self.space.complete(point, baseline) for point in recommended]
        self._initial = len(recommended)
        self.plan = self._plan(None, config.baseline_repeats)
        base_results = []
        for _ in range(config.baseline_repeats):
            result = self._baseline_trial(baseline)
            base_results.append(result)
            self.ramp_s = max(self.ramp_s, result.ramp_s)
        base_results = self._slow_baselines_again(baseline, base_results)
        # Made again with what the trials really cost beyond their length, and its costs
        # after every search step (a point's trials may cost more than the baseline's).
        self.plan = plan = self._plan(self._overhead(), 0)
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
        history: list[Step] = []
        set_aside: set[Any] = set()
        reason: str | None = None
        step_began = time.monotonic()
        while reason is None:
            try:
                point = optimizer.ask()
            except SpaceExhausted as err:
                # A small space (a transfer's few buffer sizes and congestion controls) can be
                # measured through before the budget is spent: the search is done, not broken.
                reason = f"every point of the space measured ({err})"
                break
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
            now = time.monotonic()
            self.steps.append(now - step_began)
            step_began = now
            # The next trial starts only if, as long as the search's steps take, it ends
            # before confirmation's reserve (tuner/search/budget.py).
            self.plan = plan = recosted(plan, self.fidelity.screen, self._overhead())
            end = started + plan.search_end_s - statistics.fmean(self.steps)
            deadline = end if math.isfinite(end) else None
            reason = reason or should_stop(history, max(noise, 0.005), config.budget, deadline)
        self.searching = False
        top = _top(history, config.top_k, baseline, set_aside)
        candidates = list(_with_rules(top, recommended, baseline, set_aside))
        if top and config.simpler_within > 0:
            candidates.insert(1, self._simplified(optimizer, top[0], baseline))
        candidates = self._rounded(optimizer, candidates, baseline, max(noise, 0.005))
        # The plan's points, the baseline among them: the runner-up gives way first.
        candidates = _distinct(candidates, baseline)[: plan.points - 1]
        expected = _expected(optimizer, baseline, candidates)
        self.plan = plan = replace(plan, points=len(candidates) + 1)
        self.decide = plan.decide
        self.confirming = (baseline, *candidates)
        try:
            if reason.startswith("stopped early"):
                raise DevicesBusy(reason)  # busy devices: no confirmation either
            outcome = confirm(self._confirm_sample, baseline, candidates, config.confirm_rounds,
                              simpler_within=config.simpler_within,
                              p99_rise=self.objective.p99_rise,
                              max_rounds=config.confirm_max_rounds,
                              extra_until=started + plan.end_s
                              if math.isfinite(plan.end_s) else None,
                              noise=noise)  # fmt: skip
            self._set_apart(outcome)
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
            at_least=outcome.at_least,
            left_out=_left_out(top[0], outcome) if top else {},
            stop_reason=reason,
            trials=tuple(self.records),
            seconds=time.monotonic() - started,
            refused=_refusals(outcome),
            cache_note=config.cache.describe() if config.cache is not None else None,
            screen=self.fidelity.screen,
            decide=plan.decide,
            budget=plan.describe(),
            disagreements=self._disagreements(baseline, outcome, noise, expected),
        )

    def _disagreements(
        self,
        baseline: Point,
        outcome: Confirmation,
        screen_noise: float,
        expected: Mapping[Any, tuple[float, float]],
    ) -> tuple[tuple[dict[Setting, Any], Disagreement], ...]:
        """The confirmed candidates whose gain at the decide length differs from the search's
        screening figure by more than the noise of both (tuner/search/fidelity.py). A
        candidate the search never measured as it is (rounded, simplified) is held against
        the gain its model expects (`expected`, by point_key), a figure made of short trials
        too; without a model it has nothing to compare."""
        score = self.objective.record_score

        def scores(point: Point, phases: tuple[str, ...]) -> list[float]:
            return [score(r) for r in self.records
                    if r.phase in phases and not r.set_aside and r.settings == point]  # fmt: skip

        base_short = figures(scores(baseline, ("baseline",)))
        base_long = figures(scores(baseline, ("confirm",)))
        if base_short is None or base_long is None:
            return ()
        found = []
        for comparison in outcome.comparisons:
            short = figures(scores(comparison.point, ("initial", "search", AGAIN)))
            by = "trials"
            model = expected.get(point_key(comparison.point))
            if short is None and model is not None:
                short, by = Figures(base_short.mean * model[0], model[1], 1), "model"
            long = figures(list(comparison.samples))
            if short is None or long is None or comparison.refused:
                continue
            differs = disagreement(base_short, short, base_long, long, screen_noise, by)
            if differs is not None:
                found.append((dict(comparison.point), differs))
        return tuple(found)

    def _baseline_trial(self, baseline: Point) -> TrialResult:
        """One baseline trial. One that ran to its ceiling still trending is run again with
        that ceiling as its floor (twice as long at most, within the trial's longest,
        steady.MAX_CEILING_S), and every later trial gets the longer floor: a target that
        settles slowly (several streams on a slow disk, their readahead windows and the cache
        turning over) needs longer windows, and a tune that refused its baseline at a length
        it chose itself would leave the user nothing. guards.Unmeasurable when it is flagged
        for another reason, or does not settle in the longest window."""
        result = self.measure(baseline, "baseline")
        while (floor := self._settling_floor(result)) is not None:
            self._lengthen(floor)
            result = self.measure(baseline, "baseline")
        guards.check_baseline(result.flags, len(self.records))
        return result

    def _settling_floor(self, result: TrialResult) -> float | None:
        """The floor a baseline trial that did not settle asks of the next: the window it ran
        to; None when it settled, was flagged for anything else, or ran to no longer a
        window than the screen length already asks (a --time bound cut it, or it reached the
        longest)."""
        found = guards.disqualifying(result.flags)
        if self.sized is None or result.length is None or not found:
            return None
        if any(flag.kind != NOT_STEADY for flag in found):
            return None
        reached = result.length.ceiling_s
        if reached >= MAX_CEILING_S or reached <= self.fidelity.screen.runtime_s:
            return None
        return reached

    def _lengthen(self, floor_s: float) -> None:
        """Every trial from now on measures at least `floor_s` (the screen length; the decide
        length when shorter): the plan is made again with it after the baseline."""
        screen = replace(self.fidelity.screen, runtime_s=floor_s,
                         why=f"the baseline settled only after {floor_s:g} s")  # fmt: skip
        decide = self.fidelity.decide
        if decide.runtime_s < floor_s:
            decide = replace(decide, runtime_s=floor_s, why=screen.why)
        self.fidelity = Fidelity(screen, decide)
        self.decide = decide

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
                second = self._baseline_trial(baseline)
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
        score = self.objective.score(result)
        ceiling = transient_ceiling(score, result.fio_bytes, result.device_bytes,
                                    result.ahead_bytes)  # fmt: skip
        return Sample(score, result.p99_latency_us, flag, ceiling,
                      trial=self.records[-1].number)  # fmt: skip

    def _set_apart(self, outcome: Confirmation) -> None:
        """Each confirmation trial a re-measure set apart (tuner/search/confirm.py, `Recheck`)
        recorded as OUTSIDE, so the confirmation trials of a point are the figures it kept."""
        dropped = {r.dropped_trial for r in outcome.rechecks if r.dropped_trial is not None}
        self.records = [replace(r, phase=OUTSIDE) if r.number in dropped else r
                        for r in self.records]  # fmt: skip

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
        on_progress: Callable[[TrialProgress], None] = lambda progress: None,
    ) -> None:
        self.target = target
        self.workload = workload
        self.engine = engine
        # A test's runner has one length; the real trial runs as long as it is told.
        super().__init__(target.path, workload.name, space, config, runner or self._screen_trial,
                         on_trial, before_trial, sized=None if runner else self._real_trial,
                         on_progress=on_progress)  # fmt: skip

    def _screen_trial(self, point: Point) -> PointTrial:
        return self._real_trial(point, self.fidelity.screen)

    def _real_trial(self, point: Point, length: TrialLength) -> PointTrial:
        host = self.space.host_settings(point)
        config = self.config
        # The baseline's settled ramp (self.ramp_s) holds for every length; a longer ramp
        # than the length was bounded with leaves less for the window.
        ramp = max(length.ramp_s, self.ramp_s)
        ceiling = length.ceiling_s
        if ceiling is not None:
            ceiling = max(ceiling - (ramp - length.ramp_s), LEAST_WINDOW_S)
        return trial_with(self.engine, host, self.target, self.workload, _app_params(point),
                          length.runtime_s if ceiling is None else min(length.runtime_s, ceiling),
                          ramp, config.io_cap_bytes, config.cache, ceiling_s=ceiling)  # fmt: skip


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


def _expected(
    optimizer: Optimizer, baseline: Point, candidates: list[Point]
) -> dict[Any, tuple[float, float]]:
    """What the search's model expects of each candidate over the baseline, by point_key: the
    gain and how unsure the model is of it (its standard deviation there, in log units). The
    short figure of a candidate no search trial measured as it is (rounded, simplified)."""
    means = optimizer.predict([baseline, *candidates]) if candidates else None
    spreads = optimizer.predict_std(candidates) if candidates else None
    if means is None or spreads is None:
        return {}
    found = zip(candidates, means[1:], spreads, strict=True)
    return {point_key(point): (math.exp(means[0] - mean), spread) for point, mean, spread in found}


def _distinct(candidates: list[Point], baseline: Point) -> list[Point]:
    """`candidates` in order, each once, the baseline left out (confirmation measures it)."""
    seen = {point_key(baseline)}
    kept = []
    for point in candidates:
        if point_key(point) not in seen:
            seen.add(point_key(point))
            kept.append(point)
    return kept


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
