"""--fio-job FILE: fio judges the file, iotuner keeps its I/O options and sets the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuner.errors import BadInput, IotunerError
from tuner.trials.fio import FIO_MISSING
from tuner.trials.jobfile import job_options, load_fio_job

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")

JOB = """; a user's job
[global]
ioengine=libaio
direct=1
filename=/dev/sda
runtime=600
time_based

[scan]
rw=randread
bs=16k
iodepth=16
"""


@needs_fio
def test_a_valid_job_becomes_a_workload_without_the_options_iotuner_sets(tmp_path: Path) -> None:
    path = tmp_path / "scan.fio"
    path.write_text(JOB)
    workload = load_fio_job(path)
    assert workload.name == "fio-job:scan.fio"
    assert workload.fio == {
        "ioengine": "libaio",
        "direct": "1",
        "rw": "randread",
        "bs": "16k",
        "iodepth": "16",
    }
    assert "iotuner sets filename, runtime, time_based itself" in workload.description


@needs_fio
def test_a_job_fio_rejects_is_bad_input_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.fio"
    path.write_text("[global]\nioengine=libaio\n[x]\nhipri\n")  # an io_uring option
    with pytest.raises(BadInput) as caught:
        load_fio_job(path)
    message = str(caught.value)
    assert message.startswith(f"--fio-job {path}: fio rejects it:") and "\n" not in message
    assert "hipri" in message


def test_several_jobs_or_none_are_refused() -> None:
    with pytest.raises(BadInput, match="2 job sections \\(a, b\\)"):
        job_options("[a]\nrw=read\n[b]\nrw=write\n", "two.fio")
    with pytest.raises(BadInput, match="0 job sections"):
        job_options("[global]\nrw=read\n", "none.fio")


def test_job_options_merge_global_under_the_job_and_keep_bare_flags() -> None:
    options = job_options("[global]\nbs=4k\ntime_based\n[j]\nbs=1M\n", "f")
    assert options == {"bs": "1M", "time_based": None}


def test_a_missing_file_and_a_missing_fio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BadInput, match="no such file"):
        load_fio_job(tmp_path / "absent.fio")
    path = tmp_path / "ok.fio"
    path.write_text(JOB)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(IotunerError) as caught:
        load_fio_job(path)
    assert str(caught.value) == FIO_MISSING
