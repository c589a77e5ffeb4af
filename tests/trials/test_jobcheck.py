"""--fio-job by allow-list: what a user's job may say, and what fio makes of it (issue 17)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.loopdev import loop_device
from tuner.errors import BadInput
from tuner.trials.fio import writes
from tuner.trials.jobcheck import (
    ALLOWED,
    MAX_JOB_BYTES,
    MAX_SECTIONS,
    REPLACED,
    check_job,
    io_direction,
    load_job,
    load_jobs,
)
from tuner.trials.jobfile import load_fio_job

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def refused(text: str) -> str:
    """The one-line message check_job gives for `text`."""
    with pytest.raises(BadInput) as caught:
        check_job(text, "job.fio")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--fio-job job.fio: ")
    return message


# -- what the audit found -------------------------------------------------------------------


def test_rw_then_readwrite_in_one_section_is_refused_naming_both_lines() -> None:
    message = refused("[j]\nrw=read\nreadwrite=write\n")
    assert message == (
        "--fio-job job.fio: line 3: rw is already set on line 2 (readwrite is rw); set it once"
    )


@needs_fio
def test_whether_a_job_writes_is_fios_reading_of_it(tmp_path: Path) -> None:
    # [global] says read, the job says write through the alias: fio writes.
    path = tmp_path / "sneaky.fio"
    path.write_text("[global]\nrw=read\n[j]\nreadwrite=write\nbs=4k\n")
    job = load_job(path)
    assert job.options == {"rw": "write", "bs": "4k"} and job.writes
    assert writes(load_fio_job(path).fio), "the trial engine sees it write"


@needs_fio
def test_a_device_is_not_written_without_destroy_data_whatever_the_job_spells(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sneaky.fio"
    path.write_text("[global]\nrw=read\n[j]\nreadwrite=write\nbs=4k\n")
    with loop_device(64) as name:
        before = Path(f"/dev/{name}").read_bytes()[: 1 << 20]
        done = iotuner("tune", "--target", f"/dev/{name}", "--fio-job", str(path),
                       state=tmp_path / "state")  # fmt: skip
        assert Path(f"/dev/{name}").read_bytes()[: 1 << 20] == before
    assert done.returncode == 2, done.stderr
    assert "writes; name the device with --destroy-data" in done.stderr


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[j]\ninclude /abs/other.fio\n", "line 2: include is refused"),
        ("[j]\nread_iolog=/tmp/replay.log\n", "line 2: option read_iolog is not allowed"),
        ("[j]\nexec_prerun=touch /tmp/x\n", "line 2: option exec_prerun is not allowed"),
        ("[j]\nexec_postrun=touch /tmp/x\n", "line 2: option exec_postrun is not allowed"),
        ("[j]\nioengine=exec\nprogram=/bin/sh\n", "line 2: ioengine=exec: expected one of sync"),
        ("[j]\nioengine=external:/x.so\n", "line 2: ioengine=external:/x.so: expected one of"),
        ("[j]\nwrite_iolog=/etc/x\n", "line 2: option write_iolog is not allowed"),
        ("[j]\nopendir=/etc\n", "line 2: option opendir is not allowed"),
        ("[j]\nioscheduler=none\n", "line 2: option ioscheduler is not allowed"),
        ("[j]\nverify_state_save=1\n", "line 2: option verify_state_save is not allowed"),
    ],
)
def test_what_the_audit_ran_is_refused_before_fio_sees_it(text: str, why: str) -> None:
    assert why in refused(text)


@needs_fio
def test_a_refused_job_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    other = tmp_path / "other.fio"
    other.write_text(f"exec_prerun=touch {marker}\n")
    for text in (f"[j]\nexec_prerun=touch {marker}\n", f"[j]\ninclude {other}\n"):
        path = tmp_path / "job.fio"
        path.write_text(text)
        with pytest.raises(BadInput):
            load_fio_job(path)
    assert not marker.exists()


# -- the allow-list holds whatever the spelling -------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[j]\nbs=${HOME}\n", "bs=${HOME}: expected a size"),
        ("[j]\nsize=$mb_memory\n", None),  # replaced: dropped whatever it says
        ("[j]\n${X}=write\n", "'${X}' is not an option name"),
        ("[globalx]\nrw=write\n[j]\n", "[globalx]: fio reads it as [global]"),
        ("[j]\nrw=read\n[global]\nrw=write\n", "line 4: [global] must come before the job"),
        ("[a]\n[b]\n", "2 job sections (a, b)"),
        ("[global]\nrw=read\n", "0 job sections"),
        ("rw=write\n[j]\n", "line 1: 'rw=write' comes before any [section]"),
        ("[j]\nrw=read\x00\n", "line 2: holds a control or non-ASCII character"),
        ("[j]\nrw=réad\n", "line 2: holds a control or non-ASCII character"),
        ("[j]\nbs=" + "1" * 2000 + "\n", "line 2: longer than 1024 characters"),
        ("[j]\nrw\n", "line 2: rw: expected read, write"),
        ("[j]\nbs=4k ; comment\n", "bs=4k ; comment: expected a size"),
        ("[j]\nnumjobs=100000\n", "numjobs=100000: expected a whole number from 1 to 256"),
        ("[j]\nRW=write\n", "option RW is not allowed"),
        ("[j]\nrw =write\nrw= read\n", "line 3: rw is already set on line 2; set it once"),
    ],
)
def test_every_spelling_is_checked(text: str, why: str | None) -> None:
    if why is None:
        assert check_job(text, "job.fio").replaced == ("size",)
    else:
        assert why in refused(text)


def test_a_job_larger_than_the_limit_is_refused() -> None:
    assert "larger than 64 KiB" in refused("[j]\n" + "; padding\n" * (MAX_JOB_BYTES // 10 + 1))


def test_options_iotuner_sets_are_accepted_and_dropped() -> None:
    job = check_job(
        "[global]\nfilename=/dev/sda\ntimeout=600\ntime_based\nio_limit=1g\n[j]\nbs=64k\n", "f"
    )
    assert job.options == {"bs": "64k"}
    assert job.replaced == ("filename", "runtime", "time_based", "io_size")


def test_the_allow_list_spells_each_name_once() -> None:
    spellings = [s for option in (*ALLOWED, *REPLACED) for s in (option.name, *option.aliases)]
    assert len(spellings) == len(set(spellings))


@pytest.mark.parametrize(
    ("rw", "direction"),
    [
        (None, (True, False)),
        ("read", (True, False)),
        ("randread:8", (True, False)),
        ("write", (False, True)),
        ("randwrite", (False, True)),
        ("rw", (True, True)),
        ("readwrite", (True, True)),
        ("randrw:4", (True, True)),
        ("trim", (False, True)),
        ("randtrimwrite", (False, True)),
    ],
)
def test_io_direction(rw: str | None, direction: tuple[bool, bool]) -> None:
    assert io_direction({} if rw is None else {"rw": rw}) == direction


# -- fio's own view -------------------------------------------------------------------------


@needs_fio
def test_every_allowed_spelling_is_what_fio_calls_it(tmp_path: Path) -> None:
    """fio --showcmd names each alias by the option this module maps it to."""
    samples = {
        "ioengine": "psync",
        "rw": "read",
        "randseed": "7",
        "bssplit": "4k/50:64k/50",
        "bsrange": "4k-64k",
    }
    for option in ALLOWED:
        if option.name in ("hipri", "fixedbufs", "registerfiles", "userspace_reap"):
            continue  # engine options: fio wants their engine first (tested below)
        for spelling in (option.name, *option.aliases):
            value = samples.get(option.name)
            if value is None:
                value = next(v for v in ("1", "4k", "random", "none", "inline", "linear",
                                      "sequential", "tausworthe")
                             if option.check(v) is None)  # fmt: skip
            path = tmp_path / "one.fio"
            path.write_text(f"[j]\n{spelling}={value}\n")
            assert load_job(path).options == {option.name: value}, spelling


@needs_fio
def test_engine_options_with_their_engine_and_fios_refusal_without(tmp_path: Path) -> None:
    path = tmp_path / "ring.fio"
    path.write_text("[j]\nioengine=io_uring\nhipri\nfixedbufs\n")
    assert load_job(path).options == {"ioengine": "io_uring", "hipri": None, "fixedbufs": None}
    path.write_text("[global]\nioengine=libaio\n[j]\nhipri\n")
    with pytest.raises(BadInput, match=r"fio rejects it: Bad option <hipri>"):
        load_job(path)


@needs_fio
def test_values_fio_refuses_are_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "zero.fio"
    path.write_text("[j]\nbs=0\n")
    with pytest.raises(BadInput, match=r"fio rejects it: bs: min value out of range"):
        load_job(path)


def test_a_fifo_or_a_directory_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        load_job(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        load_job(tmp_path)
    with pytest.raises(BadInput, match="no such file"):
        load_job(tmp_path / "absent.fio")


def test_where_a_read_only_job_reads_its_own_file_is_kept_apart() -> None:
    """filename, directory, size, offset and offset_increment are iotuner's to set in a job;
    their values are kept (when they pass) so trials on the user's file read it as the job."""
    job = check_job(
        "[db]\nrw=randread\nfilename=/data/db.dat\nsize=1g\noffset_increment=25%\n", "db.fio"
    )
    assert dict(job.placement) == {
        "filename": "/data/db.dat",
        "size": "1g",
        "offset_increment": "25%",
    }
    assert "size" not in job.options and "filename" not in job.options
    assert check_job("[j]\nsize=$mb_memory\n", "j.fio").placement == {}


def test_several_job_sections_are_each_checked_with_the_global_one(tmp_path: Path) -> None:
    """A capture's reproduction has a section a process group: each is checked as a file of
    [global] and that section alone, and a refusal names the file's own line."""
    path = tmp_path / "groups.fio"
    path.write_text("[global]\nbs=4k\n[readers]\nrw=read\nnumjobs=4\n[log]\nrw=write\n")
    readers, log = load_jobs(path)
    assert (readers.section, readers.writes, readers.options["bs"]) == ("readers", False, "4k")
    assert (log.section, log.writes, log.options["bs"]) == ("log", True, "4k")
    path.write_text("[readers]\nrw=read\n[log]\nrw=write\nexec_prerun=touch /x\n")
    with pytest.raises(BadInput, match="line 5"):
        load_jobs(path)
    # a [global] after a job would apply to the later jobs only: refused, as for one job
    path.write_text("[readers]\nrw=read\n[global]\nbs=8k\n[log]\nrw=write\n")
    with pytest.raises(BadInput, match="before the job section"):
        load_jobs(path)
    path.write_text("".join(f"[j{i}]\nrw=read\n" for i in range(MAX_SECTIONS + 1)))
    with pytest.raises(BadInput, match="job sections"):
        load_jobs(path)
