"""Real I/O trials: fio jobs on a device or a scratch file, guarded against the page cache.

`run_trial(target, workload, app, runtime_s, ramp_s) -> TrialResult`; targets come from
`TrialTarget.device(path, destroy_data=...)` or `TrialTarget.scratch(directory)` (a context
manager); `check_disposable(device)` says whether a device may be overwritten. See docs/trials.md.
"""

from tuner.trials.fio import AppParams
from tuner.trials.jobfile import load_fio_job
from tuner.trials.safety import check_disposable
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import TrialResult, run_trial

__all__ = [
    "AppParams",
    "TrialResult",
    "TrialTarget",
    "check_disposable",
    "load_fio_job",
    "run_trial",
]
