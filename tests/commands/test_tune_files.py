"""A read-only `--fio-job` naming the user's own file: its trials read that file, where it is.

The data the user cares about, not a scratch copy: no scratch file is made (the file system
here has 16 MiB free, where a 1 GiB scratch file was refused before), the file is read with
the job's own placement and left byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli import iotuner
from tests.trials.conftest import Loops, loops  # noqa: F401 - the fixture

pytestmark = pytest.mark.lab
MiB = 1 << 20


def users_file(loops: Loops) -> Path:  # noqa: F811
    point = loops.mkfs_mount(loops.loop(112 * MiB))
    path = point / "records.dat"
    subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M", "count=80",
                    "status=none"], check=True)  # fmt: skip
    return path


def job(tmp_path: Path, data: Path) -> Path:
    path = tmp_path / "lookup.fio"
    path.write_text(f"[lookup]\nrw=randread\nbs=4k\nioengine=psync\ndirect=1\nfilename={data}\n")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_read_only_job_reads_the_users_own_file(tmp_path: Path, loops: Loops) -> None:  # noqa: F811
    if os.geteuid() != 0:
        pytest.skip("needs root")
    data = users_file(loops)
    before = digest(data)
    # What is checked holds for every trial, not for what the search found: --time 1 stops
    # the search after its first point.
    result = iotuner("tune", "--fio-job", str(job(tmp_path, data)), "--budget", "3",
                     "--runtime", "1", "--ramp", "0", "--time", "1", "--json",
                     state=tmp_path / "state", timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["target"] == str(data)
    assert doc["objective"] == "iops", "4 KiB random reads are judged by IOPS"
    # Direct reads of the file: the device moved what fio read, trial after trial.
    assert all(t["amplification"] == pytest.approx(1.0, abs=0.25) for t in doc["trials"])
    assert sorted(p.name for p in data.parent.iterdir()) == ["lost+found", "records.dat"]
    assert digest(data) == before, "read, never written"


@pytest.mark.lab_parallel  # its own loop device; refused before any trial
def test_a_job_whose_file_is_not_on_the_target_is_refused(tmp_path: Path, loops: Loops) -> None:  # noqa: F811
    if os.geteuid() != 0:
        pytest.skip("needs root")
    data = users_file(loops)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = iotuner("tune", "--target", str(elsewhere), "--fio-job", str(job(tmp_path, data)),
                     state=tmp_path / "state")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().endswith(f"reads {data}, which is not there"), result.stderr


def test_a_baseline_read_from_a_cache_below_stops_the_tune(tmp_path: Path, loops: Loops) -> None:  # noqa: F811
    """A loop device over a file on another file system, without direct I/O: after its first
    pass the trial reads the file's cached pages. Nothing can be compared with such a
    baseline: one line naming the flag and the remedy, exit 1, nothing changed."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    point = loops.mkfs_mount(loops.loop(64 * MiB))
    upper = loops.over(str(loops.file(16 * MiB, point)))
    name = upper.removeprefix("/dev/")
    before = Path(f"/sys/block/{name}/queue/read_ahead_kb").read_text()
    result = iotuner("tune", "--target", upper, "--budget", "3", "--runtime", "1",
                     state=tmp_path / "state", timeout=300)  # fmt: skip
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].endswith(
        "page cache below); nothing is recommended. To measure it: attach the loop device "
        "with direct I/O (losetup --direct-io=on)"
    ), result.stderr
    assert "the baseline cannot be measured honestly (trial 1: " in lines[-1]
    assert Path(f"/sys/block/{name}/queue/read_ahead_kb").read_text() == before


def state(path: Path) -> tuple[str, int, int, int]:
    """What a user would notice of a file: content, inode, size, mtime."""
    info = path.stat()
    return digest(path), info.st_ino, info.st_size, info.st_mtime_ns


@pytest.mark.lab_parallel  # its own loop device; refused before any trial
@pytest.mark.parametrize(
    "placement",
    ["size=200m", "filesize=100m", "offset=79m\nsize=4m", "numjobs=4\noffset_increment=30m",
     "size=100m\nfallocate=truncate", "offset=99%\nsize=2m"],
    ids=["size", "filesize", "offset", "offset_increment", "fallocate", "offset-percent"],
)  # fmt: skip
def test_a_read_past_the_end_of_the_users_file_is_refused_and_the_file_kept(
    tmp_path: Path,
    loops: Loops,  # noqa: F811
    placement: str,
) -> None:
    """A rw=randread job whose region passes the end of the user's own file: fio would lay
    the file out (unlink, recreate, fill it). One line, exit 2, the file as it was."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    data = users_file(loops)
    before = state(data)
    path = tmp_path / "lookup.fio"
    path.write_text(f"[lookup]\nrw=randread\nbs=4k\nioengine=psync\nfilename={data}\n{placement}\n")
    result = iotuner("tune", "--fio-job", str(path), "--budget", "3", "--runtime", "1",
                     "--ramp", "0", "--time", "1", state=tmp_path / "state",
                     timeout=300)  # fmt: skip
    assert state(data) == before, "the user's file was laid out again"
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"iotuner: {data}: " + lines[0].split(": ", 2)[2]
    assert "lay the file out" in lines[0]


@pytest.mark.lab_parallel  # its own loop device; refused before any trial
def test_a_job_file_whose_name_holds_a_section_runs_no_command(
    tmp_path: Path,
    loops: Loops,  # noqa: F811
) -> None:
    """A job file named "lookup<newline>[global]<newline>exec_prerun=..." (a glob picks it up
    as well as any other): its name must never become lines of the trial's job."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    data = users_file(loops)
    marker = Path(f"/tmp/iotuner-pwned-{os.getpid()}")
    marker.unlink(missing_ok=True)
    # A file name holds no '/': printf writes the marker's path (\057 is '/').
    name = f"lookup\n[global]\nexec_prerun=touch `printf '\\057tmp\\057{marker.name}'`"
    path = tmp_path / name
    path.write_text(f"[lookup]\nrw=randread\nbs=4k\nioengine=psync\ndirect=1\nfilename={data}\n")
    try:
        result = iotuner("tune", "--fio-job", str(path), "--budget", "3", "--runtime", "1",
                         "--ramp", "0", "--time", "1", state=tmp_path / "state",
                         timeout=300)  # fmt: skip
        assert not marker.exists(), "the job file's name ran a command"
    finally:
        marker.unlink(missing_ok=True)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "control character" in lines[0], result.stderr


@pytest.mark.lab_parallel  # its own loop device; refused before any trial
def test_a_filesize_larger_than_the_free_space_is_refused_before_a_trial(
    tmp_path: Path,
    loops: Loops,  # noqa: F811
) -> None:
    """fio extends a scratch file to the job's filesize whatever size= says: the free-space
    check counts it (a 400 MiB filesize on a file system with 100 MiB free)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    point = loops.mkfs_mount(loops.loop(112 * MiB))
    path = tmp_path / "burst.fio"
    path.write_text("[burst]\nrw=write\nbs=64k\nioengine=psync\nsize=16m\nfilesize=400m\n")
    result = iotuner("tune", "--target", str(point), "--fio-job", str(path), "--budget", "3",
                     "--runtime", "1", "--ramp", "0", "--time", "1", state=tmp_path / "state",
                     timeout=300)  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "400.0 MiB scratch file needs more than" in lines[0], lines
    assert sorted(p.name for p in point.iterdir()) == ["lost+found"]
