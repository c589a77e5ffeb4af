"""What a tune found: every trial, the baseline, the confirmed best and the gain's interval."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from tuner.search.fidelity import Disagreement, TrialLength
from tuner.trials.flags import Flag, joined

Setting = tuple[str, str]  # (tunable key, target)


@dataclass(frozen=True)
class TrialRecord:
    """One measured point of the search.

    `settings`: the point asked for; `had`: what the devices held while the trial ran (the
    batch read back after all of it was written, and the queue settings it did not name).
    `flags`: why its figures may not be the device's; `set_aside`: they are not (it can
    never be the recommendation); `told`: what the search was told of a set-aside trial
    (tuner/tune/guards.py), "-" for an honest one or outside the search. `amplification`: the
    device's bytes per byte fio moved. `measured_s`: the trial's window; `settled`: whether it
    ended at steady state (None: a trial without the test); `length`: its floor and ceiling
    and why (tuner/trials/steady.py), None when not a disk trial.
    """

    number: int
    settings: dict[Setting, Any]
    mbps: float
    p99_latency_us: float | None
    seconds: float
    phase: str  # baseline, initial, search or confirm
    flags: tuple[Flag, ...] = ()
    iops: float = 0.0
    amplification: float | None = None
    had: dict[Setting, Any] = field(default_factory=dict)
    told: str = "-"
    set_aside: bool = False
    length_s: float = 0.0  # planned: ramp and measured part; `seconds` is what it took
    measured_s: float = 0.0
    settled: bool | None = None
    length: str | None = None

    @property
    def flagged(self) -> str | None:
        """The flags' messages in one line, None when the figures are the device's."""
        return joined(self.flags)


@dataclass(frozen=True)
class TuneResult:
    """The outcome: `chosen` False means the baseline stays (no gain beyond the noise).

    Scores are in the objective's unit (`unit`: MB/s, IOPS, or completions per second of the
    p99 latency), higher is better; `gain` is best over baseline. `refused`: why confirmation
    candidates could not be recommended beyond "no gain" (a flagged trial, a p99 that rose).
    """

    target: str
    workload: str
    objective: str
    baseline_settings: dict[Setting, Any]
    baseline_score: float
    baseline_cv: float
    best_settings: dict[Setting, Any]
    best_score: float
    best_cv: float
    gain: float
    ci: tuple[float, float]
    chosen: bool
    stop_reason: str
    trials: tuple[TrialRecord, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    # Changes the search's best made that the recommendation leaves out: confirmation measured
    # the plan without them within TuneConfig.simpler_within of the plan with them.
    left_out: dict[Setting, Any] = field(default_factory=dict)
    unit: str = "MB/s"
    refused: tuple[str, ...] = ()
    cache_note: str | None = None
    # Screen short, decide long (tuner/search/fidelity.py): the lengths of the search's and
    # confirmation's trials, how the time was planned, and the candidates whose gain differed
    # between the two beyond the noise. The claim is confirmation's figures.
    screen: TrialLength | None = None
    decide: TrialLength | None = None
    budget: str = ""
    disagreements: tuple[tuple[dict[Setting, Any], Disagreement], ...] = ()
    # The baseline's window was a transient (tuner/search/confirm.py, Sample.ceiling): gain
    # and interval are over its ceiling, a lower bound of the gain.
    at_least: bool = False
    # A user's fio job judged by what it does (tuner/trials/jobkind.py): the built-in profiles
    # whose rules gave its findings and starting point, in words.
    judged: str | None = None

    def changes(self) -> dict[Setting, Any]:
        """The settings the best point changes from the baseline (empty when not chosen)."""
        if not self.chosen:
            return {}
        return {
            slot: value
            for slot, value in self.best_settings.items()
            if self.baseline_settings.get(slot) != value
        }

    def confirmed(self, settings: dict[Setting, Any]) -> list[TrialRecord]:
        """The confirmation trials of one point (the baseline's: `baseline_settings`)."""
        return [t for t in self.trials if t.phase == "confirm" and t.settings == settings]

    def mbps_of(self, settings: dict[Setting, Any]) -> float | None:
        """The mean MB/s a point measured in confirmation, None when it was not confirmed."""
        runs = self.confirmed(settings)
        return statistics.fmean(t.mbps for t in runs) if runs else None

    def amplification_of(self, settings: dict[Setting, Any]) -> float | None:
        """The device's bytes per byte the application got, over a point's confirmation."""
        known = [t.amplification for t in self.confirmed(settings) if t.amplification]
        return statistics.fmean(known) if known else None

    @property
    def baseline_mbps(self) -> float:
        """The baseline's MB/s in confirmation (in its own trials when there was none)."""
        found = self.mbps_of(self.baseline_settings)
        if found is None:
            base = [t.mbps for t in self.trials if t.phase == "baseline"]
            return statistics.fmean(base) if base else 0.0
        return found

    @property
    def best_mbps(self) -> float:
        """The best candidate's MB/s in confirmation (the baseline's when none was)."""
        found = self.mbps_of(self.best_settings)
        return self.baseline_mbps if found is None else found

    def set_aside(self) -> list[TrialRecord]:
        """The trials whose figures were not the device's: never a winner."""
        return [t for t in self.trials if t.set_aside]


def _settings_doc(settings: dict[Setting, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "target": target, "value": value} for (key, target), value in settings.items()
    ]


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _length_doc(length: TrialLength | None) -> dict[str, Any] | None:
    if length is None:
        return None
    return {"ramp_s": length.ramp_s, "runtime_s": length.runtime_s, "why": length.why}


def fidelity_document(result: TuneResult) -> dict[str, Any]:
    """The `fidelity` part of `tune --json`: the two lengths, the plan, the disagreements."""
    return {
        "screen": _length_doc(result.screen),
        "decide": _length_doc(result.decide),
        "budget": result.budget,
        "disagree": [
            {
                "settings": _settings_doc(settings),
                "screened_by": d.by,
                "screened_gain": round(d.screened, 4),
                "decided_gain": round(d.decided, 4),
                "noise": round(d.noise, 4),
                "screened_score": round(d.screened_score, 2),
                "decided_score": round(d.decided_score, 2),
            }
            for settings, d in result.disagreements
        ],
    }


def result_document(result: TuneResult) -> dict[str, Any]:
    """The `iotuner tune --json` document."""
    return {
        "target": result.target,
        "workload": result.workload,
        "objective": result.objective,
        "unit": result.unit,
        "cache": result.cache_note,
        "judged": result.judged,
        "baseline": {
            "settings": _settings_doc(result.baseline_settings),
            "score": round(result.baseline_score, 2),
            "mbps": round(result.baseline_mbps, 2),
            "cv": round(result.baseline_cv, 4),
            "amplification": _rounded(result.amplification_of(result.baseline_settings), 3),
        },
        "best": {
            "settings": _settings_doc(result.best_settings),
            "score": round(result.best_score, 2),
            "mbps": round(result.best_mbps, 2),
            "cv": round(result.best_cv, 4),
            "amplification": _rounded(result.amplification_of(result.best_settings), 3),
        },
        "gain": round(result.gain, 4),
        "ci": [round(result.ci[0], 4), round(result.ci[1], 4)],
        "at_least": result.at_least,
        "chosen": result.chosen,
        "changes": _settings_doc(result.changes()),
        "left_out": _settings_doc(result.left_out),
        "refused": list(result.refused),
        "set_aside": [
            {"number": t.number, "phase": t.phase, "reason": t.flagged, "told": t.told}
            for t in result.set_aside()
        ],
        "stop_reason": result.stop_reason,
        "seconds": round(result.seconds, 1),
        "fidelity": fidelity_document(result),
        "trials": [
            {
                "number": t.number,
                "phase": t.phase,
                "settings": _settings_doc(t.settings),
                "had": _settings_doc(t.had),
                "mbps": round(t.mbps, 2),
                "iops": round(t.iops, 1),
                "p99_latency_us": t.p99_latency_us,
                "amplification": _rounded(t.amplification, 3),
                "seconds": round(t.seconds, 2),
                "length_s": round(t.length_s, 2),
                "measured_s": round(t.measured_s, 2),
                "settled": t.settled,
                "length": t.length,
                "flagged": t.flagged,
                "flags": [flag.kind for flag in t.flags],
                "told": t.told,
            }
            for t in result.trials
        ],
    }
