"""An online tune: candidates tried on the live workload in alternating slices, safely.

    result = OnlineTune(device, held, trial, config, metric=None, sampler=sampler).run()

Two engines, one journal: `held` holds the settings in force as they move (each candidate
that won), `trial` applies one candidate for one slice and restores it at the slice's end. A
kill -9 at any point leaves both sessions' originals journaled, and recovery puts back the
oldest, the settings found at the start. The slices go baseline, candidate, baseline, ...;
a candidate slice whose latency breaks the bound ends within a second (checked every second
inside it) and the candidate is dropped; the time spent on worse settings is summed and
bounded. At the end, the settings reached are re-measured against the ones found, paired
(reached, found, reached, ...), and kept only when the interval of their gain is above 1.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from probes.hostfs import digits
from tuner.online.judge import Verdict, harm, interval, paired_ratios, verdict
from tuner.online.latency import LatencySampler, Request
from tuner.online.metric import Metric
from tuner.online.slices import SliceFigures, figures
from tuner.online.trust_region import KEYS, MAX_SECTORS, SCHEDULER, Candidate, TrustRegion
from tuner.trials.diskstats import DISKSTATS, DiskCounters, read_counters
from tuner.tunables.base import TunableError, Value
from tuner.tunables.engine import TunableEngine

CHECK_S = 1.0
"""How often a candidate slice is checked against the latency bound."""
MIN_CHECK_S = 2.0
"""The first check: a switch's first second still finishes the requests issued before it."""
NR_REQUESTS_MAX = 2048
"""The kernel's own top for nr_requests under a scheduler (MAX_SCHED_RQ); without one, the
tag set's depth, which the write refuses past (the candidate is then dropped unmeasured)."""


@dataclass(frozen=True)
class OnlineConfig:
    """The bounds of an online tune.

    slice_s: seconds per slice; latency_bound: the largest p99 rise a candidate slice may show
    over its baselines (0.2: 20 %); time_s: the whole tune; max_worse_s: the most time spent
    on candidates that measured worse; min_pairs/max_pairs: candidate slices per candidate
    before a verdict / at most; confirm_pairs: slices of the settings found in the final
    comparison; level: the intervals' confidence.
    """

    slice_s: float = 10.0
    latency_bound: float = 0.2
    time_s: float = 900.0
    max_worse_s: float = 120.0
    min_pairs: int = 2
    max_pairs: int = 4
    confirm_pairs: int = 3
    keys: tuple[str, ...] = KEYS
    level: float = 0.95


@dataclass(frozen=True)
class Tried:
    """One candidate and what became of it."""

    candidate: Candidate
    outcome: str  # better, worse, undecided, stopped, refused
    gain: float
    low: float
    high: float
    why: str | None = None


@dataclass(frozen=True)
class OnlineResult:
    """What an online tune did: the candidates, every slice, and the setting kept."""

    device: str
    found: dict[str, Value]
    reached: dict[str, Value]
    tried: tuple[Tried, ...]
    slices: tuple[SliceFigures, ...]
    worse_s: float
    gain: float
    low: float
    high: float
    kept: bool
    ended: str
    elapsed_s: float
    metric: str | None = None
    traced: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def changes(self) -> dict[str, Value]:
        """The keys whose kept value differs from the one found (empty when nothing kept)."""
        if not self.kept:
            return {}
        return {k: v for k, v in self.reached.items() if self.found.get(k) != v}


class Engines:
    """Both engines as one for restore_on_signals: the trial's candidate first, then the
    settings held."""

    def __init__(self, trial: TunableEngine, held: TunableEngine) -> None:
        self.trial, self.held = trial, held

    @property
    def restored_count(self) -> int:
        """Values put back by both so far."""
        return self.trial.restored_count + self.held.restored_count

    @restored_count.setter
    def restored_count(self, value: int) -> None:
        # Restorable declares the count an attribute; it is the engines' own: only a reset
        # to the same sum is meaningful, so the held engine takes the difference.
        self.held.restored_count += value - self.restored_count

    def restore(self) -> Sequence[object]:
        """Put back the candidate in force, then every setting held."""
        return [*self.trial.restore(), *self.held.restore()]


class OnlineTune:
    """One online tune of one device; `run` returns its OnlineResult."""

    def __init__(
        self,
        device: str,
        held: TunableEngine,
        trial: TunableEngine,
        config: OnlineConfig,
        *,
        metric: Metric | None = None,
        sampler: LatencySampler | None = None,
        on_slice: Callable[[SliceFigures], object] = lambda s: None,
        on_verdict: Callable[[Tried], object] = lambda t: None,
        counters: Callable[[], DiskCounters] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.device = device
        self.held, self.trial = held, trial
        self.config = config
        self.metric = metric
        self.sampler = sampler
        self.on_slice, self.on_verdict = on_slice, on_verdict
        self._counters = counters or (lambda: _device_counters(device))
        self.clock, self.sleep = clock, sleep
        self.slices: list[SliceFigures] = []
        self.worse_s = 0.0

    # -- the region --------------------------------------------------------------------

    def region(self) -> TrustRegion:
        """The trust region around the device's settings as they are now."""
        tunables = self.held.tunables
        found = self._read_keys()  # a key this device does not have is not moved
        limits = {"block.read_ahead_kb": (0, 65536), "block.nr_requests": (4, NR_REQUESTS_MAX),
                  MAX_SECTORS: (4, self._max_hw_sectors())}  # fmt: skip
        schedulers: tuple[str, ...] = ()
        if SCHEDULER in found:
            impl = tunables.impl(SCHEDULER)
            choices = getattr(impl, "choices", None)
            if choices is not None:
                schedulers = tuple(choices(tunables.sys, self.device)[1])
        return TrustRegion(found, limits, schedulers)

    def _read_keys(self) -> dict[str, Value]:
        """The configured keys' values on the device now (a key it lacks is left out)."""
        found: dict[str, Value] = {}
        for key in self.config.keys:
            try:
                found[key] = self.held.tunables.read(key, self.device)
            except TunableError:
                continue
        return found

    def _max_hw_sectors(self) -> int:
        text = self.held.tunables.sys.read(f"sys/block/{self.device}/queue/max_hw_sectors_kb")
        # Without the file, the kernel's own default limit (BLK_DEF_MAX_SECTORS_CAP, 1280 KiB
        # on 6.x) would do; 1024 stays below it on every kernel since 2.6.
        return int(text.strip()) if text and digits(text.strip()) else 1024

    # -- slices ------------------------------------------------------------------------

    def _slice(
        self, setting: str, check: Callable[[SliceFigures], str | None] | None = None
    ) -> SliceFigures:
        """Measure one slice of config.slice_s seconds (shorter if `check` names a harm)."""
        start_value = self.metric.read() if self.metric and self.metric.counter else None
        if self.sampler is not None:
            self.sampler.drain()  # what completed before the slice is not the slice's
        before, began = self._counters(), self.clock()
        requests: list[Request] = []
        stopped = None
        while True:
            elapsed = self.clock() - began
            left = self.config.slice_s - elapsed
            if left <= 0:
                break
            self.sleep(min(CHECK_S, left))
            if self.sampler is not None:
                requests += self.sampler.drain()
            elapsed = self.clock() - began
            if check is not None and elapsed >= MIN_CHECK_S and elapsed < self.config.slice_s:
                running = figures(setting, before, self._counters(), elapsed, requests)
                stopped = check(running)
                if stopped:
                    break
        seconds = self.clock() - began
        after = self._counters()
        value = None
        if self.metric is not None:
            now = self.metric.read()
            value = (now - start_value) / seconds if start_value is not None else now
        done = figures(setting, before, after, seconds, requests, value, stopped)
        self.slices.append(done)
        self.on_slice(done)
        return done

    def _baseline(self) -> SliceFigures:
        return self._slice("baseline")

    # -- the tune ----------------------------------------------------------------------

    def run(self) -> OnlineResult:
        """Try candidates until the time, the worse-time bound or the region runs out; then
        compare the settings reached with those found and keep them only if better."""
        cfg = self.config
        began = self.clock()
        region = self.region()
        found = dict(region.incumbent)
        tried: list[Tried] = []
        base = self._baseline()
        ended = "no candidate left in the trust region"
        while True:
            changed = region.incumbent != found
            reserve = (2 * cfg.confirm_pairs) * cfg.slice_s if changed else 0.0
            need = (2 * cfg.min_pairs) * cfg.slice_s + reserve
            if self.clock() - began + need > cfg.time_s:
                ended = "time"
                break
            if self.worse_s >= cfg.max_worse_s:
                ended = f"the bound on time on worse settings ({cfg.max_worse_s:g} s)"
                break
            candidate = region.next()
            if candidate is None:
                break
            result, base = self._try(candidate, base)
            tried.append(result)
            self.on_verdict(result)
            if result.outcome == "better":
                self.held.apply({(candidate.key, self.device): candidate.value})
                region.accepted(candidate)
                # What the device holds now is the settings in force: a write may move another
                # key (max_sectors_kb raises read_ahead_kb on a rotational disk, 6.17+), and
                # the region, the confirmation and the result must see that.
                region.incumbent.update(self._read_keys())
            else:
                region.rejected(candidate, hurt=result.outcome in ("worse", "stopped"))
        reached = dict(region.incumbent)
        gain, low, high = 1.0, 1.0, 1.0
        if reached != found:
            gain, low, high = self._confirm(found, reached, base)
        kept = reached != found and low > 1.0
        if kept:
            self.held.keep()
        else:
            self.held.restore()
        return OnlineResult(
            self.device, found, reached, tuple(tried), tuple(self.slices), self.worse_s,
            gain, low, high, kept, ended, self.clock() - began,
            metric=self.metric.name if self.metric else None, traced=self.sampler is not None,
        )  # fmt: skip

    def _try(self, candidate: Candidate, base: SliceFigures) -> tuple[Tried, SliceFigures]:
        """Alternate the candidate with the settings in force until a verdict; the result and
        the last baseline slice."""
        cfg = self.config
        bases, cands = [base], []
        last: Verdict | None = None
        for _ in range(cfg.max_pairs):
            try:
                self.trial.apply({(candidate.key, self.device): candidate.value})
            except TunableError as err:
                return Tried(candidate, "refused", 1.0, 0.0, math.inf, str(err)), bases[-1]
            before = bases[-1]

            def check(running: SliceFigures, before: SliceFigures = before) -> str | None:
                return self._harm(running, [before])

            try:
                slice_ = self._slice(candidate.label, check)
            finally:
                self.trial.restore()
            cands.append(slice_)
            after = self._baseline()
            bases.append(after)
            why = slice_.stopped or self._harm(slice_, [before, after])
            last = verdict(bases, cands, cfg.level)
            spent = sum(c.seconds for c in cands)
            if why is not None:
                self.worse_s += spent
                return Tried(candidate, "stopped", last.gain, last.low, last.high, why), after
            if len(cands) >= cfg.min_pairs and last.outcome != "undecided":
                break
            # A candidate measuring worse so far stops once its time would pass the bound.
            if last.gain < 1.0 and self.worse_s + spent >= cfg.max_worse_s:
                break
        assert last is not None
        # Time on worse settings: every slice of a candidate judged worse; of one without a
        # verdict, the slices that measured below the baselines around them.
        if last.outcome == "worse":
            self.worse_s += sum(c.seconds for c in cands)
        elif last.outcome == "undecided":
            below = zip(cands, last.ratios, strict=True)
            self.worse_s += sum(c.seconds for c, ratio in below if ratio < 1.0)
        return Tried(candidate, last.outcome, last.gain, last.low, last.high), bases[-1]

    def _harm(self, running: SliceFigures, around: list[SliceFigures]) -> str | None:
        """The latency bound, and without an application metric a throughput fall as large."""
        bound = self.config.latency_bound
        why = harm(running, around, bound, traced=self.sampler is not None)
        if why is None and self.metric is None:
            reference = sum(b.mbps for b in around) / len(around)
            if reference > 0 and running.mbps < (1 - bound) * reference:
                fell = (1 - running.mbps / reference) * 100
                why = f"throughput fell {fell:.0f} % below the baseline's"
        return why

    def _confirm(
        self, found: dict[str, Value], reached: dict[str, Value], base: SliceFigures
    ) -> tuple[float, float, float]:
        """(gain, low, high) of the settings reached over those found: the found ones are put
        back for one slice at a time between slices of the reached ones (reached, found,
        reached, ...), and the paired ratios inverted."""
        back = {(k, self.device): v for k, v in found.items() if reached.get(k) != v}
        bases, olds = [base], []
        for _ in range(self.config.confirm_pairs):
            try:
                self.trial.apply(back)
                olds.append(self._slice("found"))
            finally:
                self.trial.restore()
            bases.append(self._slice("reached"))
        ratios = [1.0 / r if r > 0 else math.inf for r in paired_ratios(bases, olds)]
        return interval(ratios, self.config.level)


def _device_counters(device: str) -> DiskCounters:
    """The device's counters now; TunableError when it has left /proc/diskstats."""
    found = read_counters([device], DISKSTATS).get(device)
    if found is None:
        raise TunableError(f"{device} is no longer in {DISKSTATS}")
    return found
