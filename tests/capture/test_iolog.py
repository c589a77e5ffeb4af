"""The iolog a captured trace becomes (tuner/capture/iolog.py), on the traces recorded in
tests/fixtures/capture/ (tests/capture/samples.py says how each was made)."""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path

import pytest

from tests.capture.samples import FIXTURES
from tests.cli import iotuner
from tuner.capture.events import SECTOR
from tuner.capture.iolog import (
    ALIGN,
    VERSION_LINE,
    RunDir,
    check_replay,
    from_trace,
    read_events,
    replay_options,
)
from tuner.errors import BadInput
from tuner.trials.jobcheck import load_job

TARGET = "/dev/loop99"
REGION = 64 << 20


def _requests(name: str) -> list[tuple[float, str, int, int]]:
    """The trace's issued reads and writes: (time, action, byte offset, length)."""
    return [(e.ts, "read" if e.flags.is_read else "write", e.sector * SECTOR, e.size)
            for e in read_events(FIXTURES / f"{name}.txt")
            if e.issue and e.flags.op in "RW" and e.size > 0]  # fmt: skip


@pytest.mark.parametrize("name", ["random-mix", "buffered-streams", "fdatasync"])
def test_offsets_fall_in_the_region_and_keep_their_order_and_stride(name: str) -> None:
    log = from_trace(FIXTURES / f"{name}.txt", TARGET, REGION)
    done = [e for e in log.entries if e.action != "datasync"]
    trace = _requests(name)
    # every request, in the trace's order, with its direction and length
    assert [(e.action, e.length) for e in done] == [(a, n) for _, a, _, n in trace]
    assert all(e.offset >= 0 and e.offset + e.length <= REGION for e in done)
    assert all(e.offset % ALIGN == 0 for e in done)
    # the distance between consecutive requests is the trace's, modulo the region
    for (before, after), (was, now) in zip(pairwise(done), pairwise(trace), strict=True):
        if now[2] % ALIGN == 0 and was[2] % ALIGN == 0:
            assert (after.offset - before.offset) % REGION == (now[2] - was[2]) % REGION


def test_a_small_region_wraps_the_offsets_modulo_its_size() -> None:
    small = 8 << 20
    log = from_trace(FIXTURES / "random-mix.txt", TARGET, small)
    trace = _requests("random-mix")
    base = min(offset for _, _, offset, _ in trace)
    assert max(offset for _, _, offset, _ in trace) - base > small  # the trace spans more
    for entry, (_, _, offset, length) in zip(log.entries, trace, strict=True):
        if (offset - base) % small + length <= small:
            assert entry.offset == (offset - base) % small // ALIGN * ALIGN
        assert entry.offset + entry.length <= small


def test_the_timing_is_the_traces_and_the_speed_scales_it(tmp_path: Path) -> None:
    log = from_trace(FIXTURES / "buffered-streams.txt", TARGET, REGION)
    trace = _requests("buffered-streams")
    times = [e.us for e in log.entries]
    assert times == sorted(times)
    assert times[0] == 1  # fio skips the delay after a time of 0
    assert log.seconds == pytest.approx(trace[-1][0] - trace[0][0], abs=2e-6)
    run = RunDir(tmp_path / "run")
    run.path.mkdir(mode=0o700)
    path = run.write(log)
    assert replay_options(path, run, log, speed=2.0)["replay_time_scale"] == "200"
    assert replay_options(path, run, log, speed=0.5)["replay_time_scale"] == "50"
    with pytest.raises(BadInput, match="--speed 0"):
        replay_options(path, run, log, speed=0)


def test_flushes_become_datasyncs_and_the_depth_is_the_traces() -> None:
    log = from_trace(FIXTURES / "fdatasync.txt", TARGET, REGION)
    flushes = [e for e in read_events(FIXTURES / "fdatasync.txt")
               if e.issue and (e.flags.op == "F" or e.flags.preflush)]  # fmt: skip
    assert flushes
    assert sum(e.action == "datasync" for e in log.entries) == len(flushes)
    # a datasync carries no delay of its own (fio 3.33 would lose it): the previous time
    for before, entry in pairwise(log.entries):
        if entry.action == "datasync":
            assert entry.us == before.us
    assert log.writes
    random = from_trace(FIXTURES / "random-mix.txt", TARGET, REGION)
    assert 2 <= random.depth <= 8  # recorded at iodepth=4 (the kernel can hold a few more)


def test_the_iolog_text_is_fios_version_3(tmp_path: Path) -> None:
    log = from_trace(FIXTURES / "random-mix.txt", TARGET, REGION)
    lines = log.text().splitlines()
    assert lines[0] == VERSION_LINE
    assert lines[1].endswith(f"{TARGET} add") and lines[2].endswith(f"{TARGET} open")
    assert lines[-1].endswith(f"{TARGET} close")
    assert all(len(line.split()) == 5 for line in lines[3:-1])


@pytest.mark.parametrize("target", ["/data/my file", "relative/file", "/x\n[global]"])
def test_a_target_fio_would_misread_is_refused(target: str) -> None:
    with pytest.raises(BadInput):
        from_trace(FIXTURES / "random-mix.txt", target, REGION)


def test_a_trace_with_no_request_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.trace"
    empty.write_text("not a trace line\n")
    with pytest.raises(BadInput, match="no read or write"):
        from_trace(empty, TARGET, REGION)
    with pytest.raises(BadInput, match="not a regular file"):
        from_trace(tmp_path, TARGET, REGION)


def _run(tmp_path: Path) -> tuple[RunDir, Path]:
    run = RunDir.make(tmp_path)
    log = from_trace(FIXTURES / "random-mix.txt", TARGET, REGION)
    return run, run.write(log)


def test_read_iolog_outside_the_run_directory_is_refused(tmp_path: Path) -> None:
    run, path = _run(tmp_path)
    elsewhere = tmp_path / "replay.iolog"
    elsewhere.write_text(path.read_text())
    for name in (str(elsewhere), "/etc/passwd", f"{run.path}/../replay.iolog", "replay.iolog",
                 f"{path}:/etc/passwd"):  # fmt: skip
        with pytest.raises(BadInput, match="read_iolog"):
            check_replay({"read_iolog": name}, run)
    check_replay({"read_iolog": str(path), "iodepth": "4"}, run)  # its own: accepted


def test_a_replay_job_may_set_no_other_option(tmp_path: Path) -> None:
    run, path = _run(tmp_path)
    for option in ("write_iolog", "exec_prerun", "filename", "replay_redirect"):
        with pytest.raises(BadInput, match=option):
            check_replay({"read_iolog": str(path), option: "/etc/x"}, run)


def test_a_link_or_a_shared_run_directory_is_refused(tmp_path: Path) -> None:
    run, path = _run(tmp_path)
    path.unlink()
    path.symlink_to("/etc/passwd")
    with pytest.raises(BadInput, match="not a regular file"):
        check_replay({"read_iolog": str(path)}, run)
    path.unlink()
    path.write_text("x")
    os.chmod(run.path, 0o777)
    with pytest.raises(BadInput, match="not a private directory"):
        check_replay({"read_iolog": str(path)}, run)


@pytest.mark.parametrize(
    "option",
    ["read_iolog=/var/tmp/iotuner-replay-x/replay.iolog", "write_iolog=/etc/fstab",
     "replay_redirect=/dev/sda", "replay_time_scale=50"],
)  # fmt: skip
def test_a_users_job_may_name_no_iolog_or_replay_option(tmp_path: Path, option: str) -> None:
    """read_iolog is iotuner's own (check_replay), never a --fio-job's, even one naming a
    path shaped like iotuner's run directory; a write_iolog would overwrite the file."""
    job = tmp_path / "user.fio"
    job.write_text(f"[global]\n{option}\n[j]\nrw=read\n")
    with pytest.raises(BadInput, match=f"option {option.split('=')[0]} is not allowed"):
        load_job(job)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("capture", "--replay-trace", "t", "--check", "j", "--device", "sda"), "one at a time"),
        (("capture", "--device", "sda", "--speed", "2"), "--speed goes with --replay-trace"),
        (("capture", "--replay-trace", "t", "--device", "a", "--device", "b"), "one --device"),
        (("capture", "--replay-trace", "t", "--device", "a", "--region", "lots"), "a size"),
    ],
)
def test_replay_arguments_are_refused_in_one_line(args: tuple[str, ...], why: str) -> None:
    done = iotuner(*args)
    assert done.returncode == 2
    assert why in done.stderr and len(done.stderr.strip().splitlines()) == 1
