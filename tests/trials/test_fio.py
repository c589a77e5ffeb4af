"""fio jobs from workloads, fio's JSON, and a missing fio: no devices needed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tuner.errors import BadInput, IotunerError
from tuner.rules.installed import load_rule_base
from tuner.trials.fio import (
    FIO_MISSING,
    AppParams,
    escape_path,
    fio_size,
    first_error,
    is_buffered,
    job_text,
    parse_result,
    reads,
    run_fio,
    trial_options,
    writes,
)

DATA = Path(__file__).parent / "data"
WORKLOADS = {w.name: w for w in load_rule_base().workloads}


def options_of(text: str) -> dict[str, str | None]:
    """The [global] options of a job text, as fio would read them."""
    found: dict[str, str | None] = {}
    for line in text.splitlines():
        if line.startswith((";", "[")) or not line:
            continue
        key, sep, value = line.partition("=")
        found[key] = value if sep else None
    return found


def job_for(name: str, app: AppParams | None = None, **where: object) -> dict[str, str | None]:
    options = trial_options(WORKLOADS[name].fio, app)
    placement = where or {"filename": "/dev/loop9", "region_bytes": 1 << 30}
    return options_of(job_text(options, runtime_s=3, ramp_s=1, title=name, **placement))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(set(WORKLOADS) - {"small-files"}))
def test_every_single_file_workload_builds_a_bounded_job_on_the_target(name: str) -> None:
    job = job_for(name)
    fio = WORKLOADS[name].fio
    assert job["filename"] == "/dev/loop9"
    # A buffered writer makes one pass without a ramp (below); every other job is time_based.
    one_pass = writes(fio) and is_buffered(fio)
    expected = ("0", "3000ms", "0ms") if one_pass else ("1", "3000ms", "1000ms")
    assert (job["time_based"], job["runtime"], job["ramp_time"]) == expected
    assert job["rw"] == fio["rw"] and job["bs"] == str(fio["bs"])
    assert job["direct"] == str(fio["direct"])
    assert job["percentile_list"] == "99" and job["invalidate"] == "1"
    jobs = int(fio["numjobs"])
    share = int(job["size"] or 0)
    assert share * jobs <= 1 << 30 and share % (1 << 20) == 0
    # several jobs each get their own slice: shared offsets would share cached pages
    assert job.get("offset_increment") == (str(share) if jobs > 1 else None)


def test_a_buffered_write_makes_one_pass_without_a_ramp_and_a_direct_one_is_time_based() -> None:
    # Starting over would rewrite pages still dirty in memory (counted by fio, never by the
    # device), and a ramp's writes would be flushed inside the window uncounted.
    job = job_for("stream-write")
    assert (job["time_based"], job["ramp_time"], job["end_fsync"]) == ("0", "0ms", "1")
    direct = job_for("stream-write", AppParams(direct=True))
    assert (direct["time_based"], direct["ramp_time"]) == ("1", "1000ms")


def test_small_files_lays_out_fio_made_files_in_the_scratch_directory() -> None:
    job = job_for("small-files", directory="/mnt/x", file_prefix="iotuner-scratch-1.fio")
    assert job["directory"] == "/mnt/x"
    assert job["filename_format"] == "iotuner-scratch-1.fio.$jobnum.$filenum"
    assert "filename" not in job and "size" not in job
    assert job["nrfiles"] == "4096" and job["filesize"] == "64k"
    # fio 3.33 hangs with time_based, ramp_time and random file service over many files
    assert job["time_based"] == "0"


def test_every_workload_job_parses_with_fio(tmp_path: Path) -> None:
    if shutil.which("fio") is None:
        pytest.skip("fio not installed")
    for name, workload in WORKLOADS.items():
        options = trial_options(workload.fio, None)
        where: dict[str, object] = (
            {"directory": str(tmp_path), "file_prefix": "p"}
            if name == "small-files"
            else {"filename": str(tmp_path / "f"), "region_bytes": 1 << 30}
        )
        path = tmp_path / f"{name}.fio"
        path.write_text(job_text(options, runtime_s=2, ramp_s=1, **where))  # type: ignore[arg-type]
        done = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, (name, done.stderr)


def test_app_params_override_the_workload_and_a_queue_depth_needs_an_async_engine() -> None:
    job = job_for("stream-read", AppParams(bs=65536, iodepth=8, numjobs=2, direct=True))
    assert (job["bs"], job["iodepth"], job["numjobs"], job["direct"]) == ("65536", "8", "2", "1")
    assert job["ioengine"] == "libaio"  # psync keeps one request in flight whatever iodepth says
    assert job_for("stream-read", AppParams(bs="4k"))["ioengine"] == "psync"
    assert job_for("random-read", AppParams(direct=False))["direct"] == "0"


def test_the_target_runtime_and_output_are_iotuners() -> None:
    theirs = {"rw": "read", "filename": "/dev/sda", "runtime": 600, "output": "x", "size": "1G"}
    options = trial_options(theirs, None)
    assert options == {"rw": "read"}
    text = job_text(options, runtime_s=2, ramp_s=0.5, filename="a:b", region_bytes=4 << 20)
    job = options_of(text)
    assert job["filename"] == "a\\:b"  # fio splits file names at ':'
    assert job["runtime"] == "2000ms" and job["ramp_time"] == "500ms" and "output" not in job


def test_buffered_and_writing_jobs_are_recognised() -> None:
    assert is_buffered({"rw": "read"}) and is_buffered({"direct": 0})
    assert not is_buffered({"direct": "1"}) and not is_buffered({"buffered": 0})
    assert not writes({"rw": "randread"}) and not writes({})
    assert writes({"rw": "write"}) and writes({"readwrite": "randrw"}) and writes({"rw": "trim"})
    assert reads({}) and reads({"rw": "randrw"}) and reads({"readwrite": "rw:4"})
    assert (
        not reads({"rw": "write"}) and not reads({"rw": "randwrite"}) and not reads({"rw": "trim"})
    )
    assert fio_size("64k") == 65536 and fio_size("1M") == 1 << 20 and fio_size(4096) == 4096
    assert fio_size("2GiB") == 2 << 30
    with pytest.raises(ValueError):
        fio_size("64k-128k")


def test_a_captured_direct_read_parses_to_its_figures() -> None:
    doc = json.loads((DATA / "fio-read-direct.json").read_text())
    result = parse_result(doc)
    read = doc["jobs"][0]["read"]
    assert result.read_bytes == read["io_bytes"] and result.write_bytes == 0
    assert result.mbps == pytest.approx(read["bw_bytes"] / 1e6)
    assert result.iops == pytest.approx(read["iops"])
    assert result.p99_latency_us == pytest.approx(read["clat_ns"]["percentile"]["99.000000"] / 1000)
    assert result.runtime_s == pytest.approx(read["runtime"] / 1000)


def test_a_captured_mixed_job_sums_both_directions_and_keeps_the_worse_p99() -> None:
    doc = json.loads((DATA / "fio-randrw-2jobs.json").read_text())
    result = parse_result(doc)
    job = doc["jobs"][0]
    assert result.read_bytes == job["read"]["io_bytes"]
    assert result.write_bytes == job["write"]["io_bytes"]
    assert result.mbps == pytest.approx((job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 1e6)
    worse = max(job[d]["clat_ns"]["percentile"]["99.000000"] for d in ("read", "write"))
    assert result.p99_latency_us == pytest.approx(worse / 1000)


def test_a_failed_job_or_empty_document_is_one_line() -> None:
    doc = json.loads((DATA / "fio-read-direct.json").read_text())
    doc["jobs"][0]["error"] = 5
    with pytest.raises(IotunerError, match="failed: error 5"):
        parse_result(doc)
    with pytest.raises(IotunerError, match="no jobs"):
        parse_result({"jobs": []})
    assert first_error("noise\nfio: failed parsing rw=foo\n", "") == "failed parsing rw=foo"


def test_missing_fio_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(IotunerError) as caught:
        run_fio("[x]\n", timeout_s=5, what="nothing")
    assert str(caught.value) == FIO_MISSING == "fio not found: install the Debian package fio"


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


@needs_fio
def test_a_job_that_does_not_write_runs_fio_read_only(tmp_path: Path) -> None:
    """fio --readonly: a read job whose region passes the end of its file cannot lay it out
    (fio would unlink, recreate and fill it), and a write job given as a read one fails."""
    data = tmp_path / "records.dat"
    data.write_bytes(b"x" * 65536)
    inode = data.stat().st_ino
    text = job_text({"rw": "randread", "bs": "4k"}, runtime_s=0.2, ramp_s=0,
                    filename=str(data), own_region={"size": "1m"})  # fmt: skip
    with pytest.raises(IotunerError):
        run_fio(text, timeout_s=60, what=str(data))
    assert data.read_bytes() == b"x" * 65536 and data.stat().st_ino == inode
    writing = job_text({"rw": "randwrite", "bs": "4k"}, runtime_s=0.2, ramp_s=0,
                       filename=str(data), region_bytes=1 << 20)  # fmt: skip
    with pytest.raises(IotunerError, match=r"read-only|readonly"):
        run_fio(writing, timeout_s=60, what=str(data))
    assert data.read_bytes() == b"x" * 65536


@needs_fio
def test_a_title_cannot_add_a_section_to_the_job(tmp_path: Path) -> None:
    """A job file's name becomes the trial's title: a newline in it must not end the comment
    line and start a [global] that runs a command as root."""
    marker = tmp_path / "PWNED"
    data = tmp_path / "records.dat"
    data.write_bytes(os.urandom(1 << 20))
    title = (f"fio-job:x\n[global]\nexec_prerun=touch {marker}\r\n[global]\r"
             f"exec_postrun=touch {marker}")  # fmt: skip
    text = job_text({"rw": "read", "bs": "4k"}, runtime_s=0.2, ramp_s=0, filename=str(data),
                    region_bytes=1 << 20, title=title)  # fmt: skip
    assert text.count("\n") == len(text.splitlines()) and "\r" not in text
    lines = text.splitlines()
    assert [line for line in lines if "exec_" in line and not line.startswith(";")] == []
    run_fio(text, timeout_s=60, what=str(data))
    assert not marker.exists()


@pytest.mark.parametrize(
    ("path", "written"),
    [("/srv/data/x.dat", "/srv/data/x.dat"), ("/srv/a:b", "/srv/a\\:b"),
     ("/srv/a:b:c", "/srv/a\\:b\\:c"), ("/srv/données", "/srv/données")],
)  # fmt: skip
def test_a_path_is_escaped_as_fio_reads_it(path: str, written: str) -> None:
    assert escape_path(path) == written


@pytest.mark.parametrize(
    "path",
    ["/srv/$HOME/x", "/srv/${X}", "/srv/$ncpus", "/srv/$mb_memory", "/srv/$pagesize",
     "/srv/a\nb", "/srv/a\rb", "/srv/a\x1bb", "/srv/a\x00b", "/srv/a\\:b", " /srv/x",
     "/srv/x ", "/srv/a\x7fb", "-", ""],
)  # fmt: skip
def test_a_path_fio_would_read_otherwise_is_refused_in_one_line(path: str) -> None:
    """fio substitutes $VAR, ${VAR} and its keywords ($ncpus, $mb_memory, $pagesize) with no
    escape for '$', ends a value at a newline, strips blanks and reads '-' as stdin."""
    with pytest.raises(BadInput) as caught:
        escape_path(path)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message and caught.value.exit_code == 2
    assert repr(path)[1:-1][:20] in message


@needs_fio
@pytest.mark.parametrize("name", ["a:b", "c$HOME"])
def test_a_directory_whose_name_fio_reads_otherwise_is_written_so_or_refused(
    tmp_path: Path, name: str
) -> None:
    """A scratch directory with ':' is written '\\:' and fio makes its files there; one with
    '$' is refused before fio runs."""
    folder = tmp_path / name
    folder.mkdir()
    options = {"rw": "read", "bs": "4k", "nrfiles": 2, "filesize": "64k"}
    if "$" in name:
        with pytest.raises(BadInput):
            job_text(options, runtime_s=0, ramp_s=0, directory=str(folder), file_prefix="t",
                     create_only=True)  # fmt: skip
        return
    text = job_text(options, runtime_s=0, ramp_s=0, directory=str(folder), file_prefix="t",
                    create_only=True)  # fmt: skip
    run_fio(text, timeout_s=60, what=str(folder), may_write=True)
    assert sorted(p.name for p in folder.iterdir()) == ["t.0.0", "t.0.1"]
