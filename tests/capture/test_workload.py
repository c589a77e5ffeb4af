"""A fingerprint as a tune's workload: the section a trial runs and the data set it sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.capture.samples import FIXTURES
from tuner.commands.tune import cache_model
from tuner.trials.dataset import job_data_set
from tuner.trials.targets import TrialTarget


@pytest.mark.parametrize("name", ["pgbench-select", "tar-backup"])
def test_the_data_set_is_the_captured_footprint_not_a_fixed_scratch_file(
    tmp_path: Path, name: str
) -> None:
    """The old reproduction named no size: the tune's scratch file was the default 1 GiB and
    --cache-memory had no data set to weigh against (job_data_set None). The trial's data set
    is now the busiest group's footprint (whole MiB a job), whatever the job count."""
    from tuner.capture.workload import capture_workload

    workload, found = capture_workload(FIXTURES / f"{name}.json")
    dev = found.busiest()
    assert dev is not None
    footprint = dev["by_process"][0]["footprint_bytes"]
    data_set = job_data_set({**workload.fio, **workload.region})
    assert data_set is not None
    assert footprint - (8 << 20) <= data_set <= footprint
    target = TrialTarget(path=str(tmp_path / "scratch"), devices=(), size_bytes=data_set,
                         writable=True, directory=str(tmp_path))  # fmt: skip
    cache = cache_model(workload, target, None, "128MiB")
    assert cache is not None and not cache.fits  # a 300-800 MB footprint in 128 MiB
