"""What a tune found: every trial, the baseline, the confirmed best and the gain's interval."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Setting = tuple[str, str]  # (tunable key, target)


@dataclass(frozen=True)
class TrialRecord:
    """One measured point of the search."""

    number: int
    settings: dict[Setting, Any]
    mbps: float
    p99_latency_us: float | None
    seconds: float
    phase: str  # baseline, initial, search or confirm
    flagged: str | None = None


@dataclass(frozen=True)
class TuneResult:
    """The outcome: `chosen` False means the baseline stays (no gain beyond the noise)."""

    target: str
    workload: str
    objective: str
    baseline_settings: dict[Setting, Any]
    baseline_mbps: float
    baseline_cv: float
    best_settings: dict[Setting, Any]
    best_mbps: float
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

    def changes(self) -> dict[Setting, Any]:
        """The settings the best point changes from the baseline (empty when not chosen)."""
        if not self.chosen:
            return {}
        return {
            slot: value
            for slot, value in self.best_settings.items()
            if self.baseline_settings.get(slot) != value
        }


def _settings_doc(settings: dict[Setting, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "target": target, "value": value} for (key, target), value in settings.items()
    ]


def result_document(result: TuneResult) -> dict[str, Any]:
    """The `iotuner tune --json` document."""
    return {
        "target": result.target,
        "workload": result.workload,
        "objective": result.objective,
        "baseline": {
            "settings": _settings_doc(result.baseline_settings),
            "mbps": round(result.baseline_mbps, 2),
            "cv": round(result.baseline_cv, 4),
        },
        "best": {
            "settings": _settings_doc(result.best_settings),
            "mbps": round(result.best_mbps, 2),
            "cv": round(result.best_cv, 4),
        },
        "gain": round(result.gain, 4),
        "ci": [round(result.ci[0], 4), round(result.ci[1], 4)],
        "chosen": result.chosen,
        "changes": _settings_doc(result.changes()),
        "left_out": _settings_doc(result.left_out),
        "stop_reason": result.stop_reason,
        "seconds": round(result.seconds, 1),
        "trials": [
            {
                "number": t.number,
                "phase": t.phase,
                "settings": _settings_doc(t.settings),
                "mbps": round(t.mbps, 2),
                "p99_latency_us": t.p99_latency_us,
                "seconds": round(t.seconds, 2),
                "flagged": t.flagged,
            }
            for t in result.trials
        ],
    }
