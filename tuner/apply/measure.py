"""`apply --measure`: the plan's workload before and after an apply, rolled back when worse.

Tune's confirmation interleaves baseline and candidate trials so drift hits both alike; across
an apply that is impossible (the change cannot be taken back between trials without undoing
the apply), so the baseline repeats come first, then the apply, then the same repeats again.
The verdict uses confirmation's statistics (tuner/search/confirm.py): a confidence interval for
after/before from Welch's t on log MB/s. "Worse" means the whole interval lies below 1: worse
by more than the noise, not merely a lower mean. Drift during the after-phase (a neighbour
starting to read) can still make a harmless change look worse; a false "worse" costs only a
rollback, which is the safe side.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from tuner.errors import BadInput
from tuner.plan import Plan
from tuner.rules.installed import load_rule_base
from tuner.rules.model import RuleBase, Workload
from tuner.trials.blockdev import block_number
from tuner.trials.faults import TrialFault
from tuner.trials.fio import writes
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult, run_trial
from tuner.tunables.registry import TUNABLES

T = TypeVar("T")


@dataclass(frozen=True)
class MeasureConfig:
    """How many trials on each side of the apply, how long each, and the interval's level."""

    repeats: int = 3
    runtime_s: float = 4.0
    ramp_s: float = 1.0
    level: float = 0.95


@dataclass(frozen=True)
class Measurement:
    """The workload's throughput before and after, and the verdict.

    ratio = after_mbps / baseline_mbps; ci is its `level` confidence interval; worse is True
    when the whole interval lies below 1. flagged: why some trials' figures may not be the
    device's (the trial engine's page-cache and byte-count checks), one line each.
    """

    workload: str
    target: str
    baseline_mbps: float
    baseline_cv: float
    after_mbps: float
    after_cv: float
    ratio: float
    ci: tuple[float, float]
    worse: bool
    baseline: tuple[float, ...]
    after: tuple[float, ...]
    flagged: tuple[str, ...] = ()


@dataclass(frozen=True)
class MeasuredApply(Generic[T]):
    """What `apply` returned, the measurement, and whether `rollback` was called."""

    applied: T
    measurement: Measurement
    rolled_back: bool


OnTrial = Callable[[str, TrialResult], None]
"""Called after each trial with its phase ("before" or "after") and its result."""


def plan_workload(plan: Plan, base: RuleBase | None = None) -> Workload:
    """The plan's workload from the rule base; BadInput when it has none or an unknown one."""
    if plan.workload is None:
        raise BadInput("the plan names no workload to measure (advise without --workload?)")
    rules = base if base is not None else load_rule_base()
    found = rules.workload(plan.workload)
    if found is None:
        known = ", ".join(w.name for w in rules.workloads)
        raise BadInput(
            f"the plan's workload {plan.workload!r} is not in the rule base (known: {known}); "
            "a plan tuned with --fio-job cannot be re-measured by name"
        )
    return found


def unseen_by_fio(plan: Plan) -> list[str]:
    """The plan's entries a fio trial on a disk cannot see ("net.ipv4.tcp_wmem on host"): the
    network's settings, socket buffers, congestion control and NIC alike. fio moves no byte
    over a network, so measuring such a plan with it would keep whatever they do to a
    transfer, better or worse."""
    return [
        f"{entry.key} on {entry.target}"
        for entry in plan.entries
        if entry.key.startswith("net.") or _scope(entry.key) == "nic"
    ]


def _scope(key: str) -> str | None:
    spec = TUNABLES.get(key)
    return None if spec is None else spec.scope


def plan_target(plan: Plan, target: str | None = None, destroy_data: str | None = None) -> str:
    """Where to measure: `target` if given, else where the tune measured (measured.target),
    else the device `--destroy-data` names."""
    if target is not None:
        return target
    recorded = (plan.measured or {}).get("target")
    if isinstance(recorded, str) and recorded:
        return recorded
    if destroy_data is not None:
        return destroy_data
    raise BadInput(
        "the plan records no trial target (an advise plan, or a tune before targets were "
        "recorded): give a device or a directory to measure on"
    )


def may_write(where: str, destroy_data: str | None, named_by: str) -> bool:
    """Whether trials on `where` may write it: only when it is the very device `--destroy-data`
    names. A plan is input too: the device it records is never written on its say-so, so
    `--destroy-data` naming another device than the one measured is refused (BadInput)."""
    if destroy_data is None:
        return False
    named = block_number(destroy_data)
    if named is None:
        raise BadInput(f"--destroy-data {destroy_data}: not a block device")
    if block_number(where) != named:
        raise BadInput(
            f"--destroy-data {destroy_data} names another device than {named_by} {where}: "
            f"only the device named is written (give --target {destroy_data}, or drop "
            "--destroy-data)"
        )
    return True


@contextmanager
def trial_target(
    path: str, workload: Workload, *, destroy_data: bool = False
) -> Iterator[TrialTarget]:
    """A device (writable only with `destroy_data`) or a scratch file in a directory, as tune's."""
    if Path(path).is_dir():
        with TrialTarget.scratch(path) as scratch:
            yield scratch
        return
    device = TrialTarget.device(path, destroy_data=destroy_data)
    if writes(workload.fio) and not device.writable:
        raise BadInput(
            f"{path}: {workload.name} writes; measuring it on a device needs "
            f"--destroy-data {path}, or give a directory for a scratch file"
        )
    yield device


def compare(
    baseline: list[float], after: list[float], level: float = 0.95
) -> tuple[float, tuple[float, float], bool]:
    """(after/before ratio of means, its confidence interval, worse beyond the noise)."""
    # scipy takes seconds to import: only a measured apply pays for it, not every apply.
    from tuner.search.confirm import gain_interval

    low, high = gain_interval(baseline, after, level)
    base = statistics.fmean(baseline)
    ratio = statistics.fmean(after) / base if base > 0 else float("inf")
    return ratio, (low, high), high < 1.0


def measure_runs(
    target: TrialTarget,
    workload: Workload,
    config: MeasureConfig,
    phase: str,
    on_trial: OnTrial | None = None,
) -> list[TrialResult]:
    """`config.repeats` trials of the workload on the target as it is set now."""
    results = []
    for number in range(1, config.repeats + 1):
        try:
            result = run_trial(target, workload, None, config.runtime_s, config.ramp_s)
        except TrialFault as fault:
            raise fault.at(number, phase) from None
        results.append(result)
        if on_trial is not None:
            on_trial(phase, result)
    return results


def measured_apply(
    plan: Plan,
    target: str | None,
    apply: Callable[[], T],
    rollback: Callable[[], None],
    *,
    config: MeasureConfig | None = None,
    destroy_data: str | None = None,
    workload: Workload | None = None,
    on_trial: OnTrial | None = None,
) -> MeasuredApply[T]:
    """Measure the plan's workload, `apply()`, measure again; `rollback()` when worse.

    `target` is a device or a directory (None: the one the plan's tune measured on, else the
    `destroy_data` device). Trials write a device only when `destroy_data` names that very
    device. Bad input (no workload, no target, a write workload on a device `destroy_data`
    does not name, `destroy_data` naming another device than the one measured) is
    raised before anything is measured or applied. An exception from `apply` propagates as
    is (the caller's apply cleans up after itself); one during the after-phase (a trial that
    fails, Ctrl-C) calls `rollback` before it propagates: an apply whose effect could not be
    measured is not kept by a measured apply.
    """
    settings = config or MeasureConfig()
    unseen = unseen_by_fio(plan)
    if unseen:
        more = f" (and {len(unseen) - 1} more)" if len(unseen) > 1 else ""
        raise BadInput(
            f"--measure runs the plan's workload with fio on a disk, which cannot see "
            f"{unseen[0]}{more}: apply without --measure (a transfer is measured by "
            "`iotuner tune --workload disk-to-network --peer HOST`)"
        )
    if settings.repeats < 2:
        raise BadInput("measuring needs at least two trials on each side to estimate the noise")
    chosen = workload or plan_workload(plan)
    where = plan_target(plan, target, destroy_data)
    named_by = "--target" if target is not None else "the plan's target"
    writable = may_write(where, destroy_data, named_by)
    with trial_target(where, chosen, destroy_data=writable) as trial:
        before = measure_runs(trial, chosen, settings, "before", on_trial)
        applied = apply()
        try:
            after = measure_runs(trial, chosen, settings, "after", on_trial)
        except BaseException:
            rollback()
            raise
    from tuner.search.confirm import cv_of

    base_mbps = [r.mbps for r in before]
    after_mbps = [r.mbps for r in after]
    ratio, ci, worse = compare(base_mbps, after_mbps, settings.level)
    flagged = tuple(
        f"{phase} trial {n}: {r.flagged}"
        for phase, results in (("before", before), ("after", after))
        for n, r in enumerate(results, 1)
        if r.flagged
    )
    measurement = Measurement(
        workload=chosen.name,
        target=where,
        baseline_mbps=statistics.fmean(base_mbps),
        baseline_cv=cv_of(base_mbps),
        after_mbps=statistics.fmean(after_mbps),
        after_cv=cv_of(after_mbps),
        ratio=ratio,
        ci=ci,
        worse=worse,
        baseline=tuple(base_mbps),
        after=tuple(after_mbps),
        flagged=flagged,
    )
    if worse:
        rollback()
    return MeasuredApply(applied, measurement, rolled_back=worse)


def measurement_document(m: Measurement) -> dict[str, object]:
    """The measurement as JSON-able data (for `apply --measure --json`)."""
    return {
        "workload": m.workload,
        "target": m.target,
        "baseline": {"mbps": round(m.baseline_mbps, 2), "cv": round(m.baseline_cv, 4),
                     "samples": [round(s, 2) for s in m.baseline]},
        "after": {"mbps": round(m.after_mbps, 2), "cv": round(m.after_cv, 4),
                  "samples": [round(s, 2) for s in m.after]},
        "ratio": round(m.ratio, 4),
        "ci": [round(m.ci[0], 4), round(m.ci[1], 4)],
        "worse": m.worse,
        "flagged": list(m.flagged),
    }  # fmt: skip
