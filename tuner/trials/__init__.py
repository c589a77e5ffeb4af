"""Real I/O trials: fio jobs on a device or a scratch file, guarded against the page cache.

`run_trial(target, workload, app, runtime_s, ramp_s) -> TrialResult`; targets come from
`TrialTarget.device(path, destroy_data=...)` or `TrialTarget.scratch(directory)` (a context
manager); `check_disposable(device)` says whether a device may be overwritten. See docs/trials.md.

The names below are imported from their modules when first used: a transfer trial, the peer
check `advise --peer` runs or the daemon's activity reader import their own module, not fio's
job files, the page-cache guards and the trial runner as well.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuner.trials.fio import AppParams
    from tuner.trials.jobfile import load_fio_job
    from tuner.trials.safety import check_disposable
    from tuner.trials.targets import TrialTarget
    from tuner.trials.trial import TrialResult, run_trial

_HOME = {
    "AppParams": "fio",
    "load_fio_job": "jobfile",
    "check_disposable": "safety",
    "TrialTarget": "targets",
    "TrialResult": "trial",
    "run_trial": "trial",
}

__all__ = [
    "AppParams",
    "TrialResult",
    "TrialTarget",
    "check_disposable",
    "load_fio_job",
    "run_trial",
]


def __getattr__(name: str) -> object:
    """One of the trials' public names, imported from its module now."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'tuner.trials' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tuner.trials.{home}"), name)
