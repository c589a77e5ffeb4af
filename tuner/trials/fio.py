"""fio jobs for trials: options from a workload, the job file text, running fio, its JSON result.

A trial's job is the workload's fio options (rules/workloads.yaml or the user's `--fio-job`),
overridden by the application parameters under test, plus what only iotuner may set: where the
I/O goes, the ramp, the bounded runtime and the output. fio always reports JSON; text output is
never parsed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probes.hostfs import digits
from tuner.errors import BadInput, IotunerError
from tuner.trials.faults import STALLED, TrialFault, classify, device_name, faulty_device

FIO_MISSING = "fio not found: install the Debian package fio"

# Options iotuner sets itself on every trial; a workload's or user's value for them is dropped.
# Where the I/O goes (the target), how long it runs (ramp and runtime), what it reports (JSON on
# our own output file), and logs, which fio would write into the current directory.
OWN_OPTIONS = frozenset(
    {
        "filename", "directory", "filename_format", "opendir", "size", "io_size", "io_limit",
        "offset", "offset_increment", "number_ios", "loops", "runtime", "time_based",
        "ramp_time", "output", "output-format", "group_reporting", "percentile_list",
        "create_only", "write_bw_log", "write_lat_log", "write_iops_log",
        "write_hist_log", "write_iolog", "per_job_logs", "log_avg_msec",
    }
)  # fmt: skip

_READ_ONLY_RW = frozenset({"read", "randread"})
_MIXED_RW = frozenset({"rw", "readwrite", "randrw"})
_SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2"})
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
_ALIGN = 1 << 20  # job regions start on 1 MiB boundaries, a multiple of any sane block size


@dataclass(frozen=True)
class AppParams:
    """Application parameters under test; each one given overrides the workload's value."""

    bs: int | str | None = None  # bytes, or as fio spells it ("64k")
    iodepth: int | None = None
    numjobs: int | None = None
    direct: bool | None = None


@dataclass(frozen=True)
class FioResult:
    """What one fio run reports, summed over its jobs; latency is the worse direction's p99."""

    read_bytes: int
    write_bytes: int
    mbps: float
    iops: float
    p99_latency_us: float | None
    runtime_s: float


def trial_options(fio: Mapping[str, Any], app: AppParams | None) -> dict[str, Any]:
    """The workload's options, without iotuner's own, with the application parameters applied."""
    options = {key: value for key, value in fio.items() if key not in OWN_OPTIONS}
    if app is not None:
        for key, value in (("bs", app.bs), ("iodepth", app.iodepth), ("numjobs", app.numjobs)):
            if value is not None:
                options[key] = value
        if app.direct is not None:
            options["direct"] = int(app.direct)
            options.pop("buffered", None)
    depth = count(options, "iodepth")
    if depth > 1 and str(options.get("ioengine", "psync")) in _SYNC_ENGINES:
        # A synchronous engine keeps one request in flight whatever iodepth says, so a
        # searched queue depth would change nothing; libaio honours it.
        options["ioengine"] = "libaio"
    return options


def is_buffered(options: Mapping[str, Any]) -> bool:
    """True when the job goes through the page cache (direct=0, the fio default)."""
    if _flag(options.get("buffered", 1)) is False:
        return False
    return not _flag(options.get("direct", 0))


def invalidates(options: Mapping[str, Any]) -> bool:
    """True when fio drops the file's cached pages before each pass (invalidate, default 1)."""
    return _flag(options.get("invalidate", 1))


def writes(options: Mapping[str, Any]) -> bool:
    """True when the job writes (or trims): any rw other than read and randread."""
    rw = str(options.get("rw", options.get("readwrite", "read")) or "read")
    return rw.split(":")[0] not in _READ_ONLY_RW


def reads(options: Mapping[str, Any]) -> bool:
    """True when the job reads: read, randread and the mixed rw, readwrite and randrw."""
    rw = str(options.get("rw", options.get("readwrite", "read")) or "read")
    return rw.split(":")[0] in _READ_ONLY_RW | _MIXED_RW


def is_random(options: Mapping[str, Any]) -> bool:
    """True when the job's offsets are random (randread, randwrite, randrw, or a share of
    random I/O through percentage_random)."""
    rw = str(options.get("rw", options.get("readwrite", "read")) or "read")
    if rw.split(":")[0].startswith("rand"):
        return True
    share = str(options.get("percentage_random", "0")).split(",")[0].strip()
    return digits(share) and int(share) > 0


def file_count(options: Mapping[str, Any]) -> int:
    """How many files each job spreads over (nrfiles; 1 for a single file or device)."""
    return count(options, "nrfiles")


def numjobs(options: Mapping[str, Any]) -> int:
    """How many processes run the job."""
    return count(options, "numjobs")


def count(options: Mapping[str, Any], key: str) -> int:
    """A whole-number option (numjobs, iodepth, nrfiles), 1 when absent; BadInput otherwise."""
    value = options.get(key)
    try:
        return int(value) if value not in (None, "") else 1
    except (TypeError, ValueError):
        raise BadInput(f"{key}={value}: iotuner needs a plain number here") from None


def fio_size(text: Any) -> int:
    """A fio size in bytes: 65536, "64k", "1M", "2GiB" (fio's default base is 1024)."""
    match = _SIZE.match(str(text))
    if match is None:
        raise ValueError(f"not a fio size: {text!r}")
    number, unit = int(match.group(1)), match.group(2).lower()
    return number * 1024 ** "_kmgtp".index(unit) if unit else number


def largest_size(text: Any) -> int:
    """The largest size in a fio value that may be a range or a list: "64k" -> 65536,
    "1m-2m" -> 2 MiB, "4k,64k" -> 64 KiB; ValueError when a part is not a size."""
    parts = [part for part in re.split(r"[-,:/]", str(text)) if part.strip()]
    if not parts:
        raise ValueError(f"not a fio size: {text!r}")
    return max(fio_size(part) for part in parts)


def one_pass(options: Mapping[str, Any]) -> bool:
    """Whether a trial of `options` runs one pass without a ramp: a buffered writer. One that
    starts over rewrites pages still dirty in memory, which fio counts and the device never
    sees, and what a ramp wrote is flushed inside the window uncounted; in one pass the flush
    (end_fsync) is paid for what was counted."""
    return writes(options) and is_buffered(options)


def job_text(
    options: Mapping[str, Any],
    *,
    runtime_s: float,
    ramp_s: float,
    filename: str | None = None,
    region_bytes: int | None = None,
    own_region: Mapping[str, Any] | None = None,
    directory: str | None = None,
    file_prefix: str | None = None,
    create_only: bool = False,
    title: str = "trial",
    io_size: int | None = None,
    keep_cache: bool = False,
) -> str:
    """The job file for one trial: on `filename` (a device or file whose first `region_bytes`
    are read or written), or on fio-made files `file_prefix.JOB.FILE` in `directory`.

    Each of several jobs on one file gets its own slice of the region: buffered readers that
    share offsets would serve each other from the page cache. `io_size` (bytes per job, ramp
    included) ends a job once it has moved that much, even before the runtime is up.
    `own_region` (the user's size, offset, offset_increment on the user's own file) places the
    I/O as the user's job does instead. `keep_cache`: fio keeps the file's cached pages
    (invalidate=0 unless the job says otherwise), for a trial whose cache a memory cgroup
    already holds to production's share and a warm-up filled.
    """
    ours: dict[str, Any] = {}
    if filename is not None:
        ours["filename"] = escape_path(filename)
        if own_region is not None:
            ours.update(own_region)
        elif region_bytes is not None:
            share = region_bytes // numjobs(options) // _ALIGN * _ALIGN
            if share <= 0:
                raise IotunerError(f"{filename}: {region_bytes} bytes is too small for a trial")
            ours["size"] = share
            if numjobs(options) > 1:
                ours["offset_increment"] = share
    else:
        if directory is None or file_prefix is None:
            raise ValueError("job_text needs a filename, or a directory and a file prefix")
        ours["directory"] = escape_path(directory)
        ours["filename_format"] = f"{file_prefix}.$jobnum.$filenum"
    if create_only:
        ours["create_only"] = 1
    else:
        single = one_pass(options)
        ramp_ms = 0 if single else round(ramp_s * 1000)
        ours.update(runtime=f"{round(runtime_s * 1000)}ms", ramp_time=f"{ramp_ms}ms")
        # time_based keeps a job running for the whole runtime, starting over at the end of
        # its region. Not over many files: fio 3.33 hangs with time_based, ramp_time and
        # file_service_type=random together; there a job stops after one pass or the runtime.
        ours["time_based"] = 1 if filename is not None and not single else 0
        if io_size is not None:
            # time_based would start over past io_size until the runtime is up (fio 3.33).
            ours.update(io_size=io_size, time_based=0)
    # invalidate=1 (fio's default, kept unless the job says otherwise): fio drops the file's
    # cached pages before each pass over it, so a pass that starts over re-reads the device;
    # drop_caches (pagecache.py) covers the rest, such as the file a loop device reads from.
    invalidate = options.get("invalidate", 0 if keep_cache else 1)
    ours.update(invalidate=invalidate, group_reporting=1, percentile_list=99)
    lines = [job_comment(title), "[global]"]
    lines += [_line(key, value) for key, value in {**options, **ours}.items()]
    lines.append("[trial]")
    return "\n".join(lines) + "\n"


def parse_result(doc: Mapping[str, Any]) -> FioResult:
    """The trial's figures from fio's JSON document (group_reporting: one job entry, or more)."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise IotunerError("fio's JSON output has no jobs")
    read_bytes = write_bytes = 0
    bw = iops = 0.0
    p99: float | None = None
    runtime_ms = 0
    for job in jobs:
        if job.get("error"):
            raise IotunerError(f"fio job {job.get('jobname', '?')} failed: error {job['error']}")
        for direction in ("read", "write", "trim"):
            stats = job.get(direction) or {}
            moved = int(stats.get("io_bytes", 0))
            if moved <= 0:
                continue
            if direction == "read":
                read_bytes += moved
            else:
                write_bytes += moved
            bw += float(stats.get("bw_bytes", 0))
            iops += float(stats.get("iops", 0.0))
            runtime_ms = max(runtime_ms, int(stats.get("runtime", 0)))
            value = (stats.get("clat_ns") or {}).get("percentile", {}).get("99.000000")
            if value is not None:
                p99 = max(p99 or 0.0, float(value) / 1000)
    return FioResult(read_bytes, write_bytes, bw / 1e6, iops, p99, runtime_ms / 1000)


def fio_binary() -> str:
    """The fio executable on PATH; IotunerError (one line) when it is not installed."""
    path = shutil.which("fio")
    if path is None:
        raise IotunerError(FIO_MISSING)
    return path


def run_fio(
    text: str,
    *,
    timeout_s: float,
    what: str,
    preexec: Callable[[], None] | None = None,
    devices: tuple[str, ...] = (),
    may_write: bool = False,
) -> dict[str, Any]:
    """Run one job file through fio and return its JSON document; `what` names the target.

    Unless `may_write` (a write trial on a scratch file or a --destroy-data device, or the
    layout of a scratch data set), fio runs with --readonly: it then refuses to write,
    trim, or lay out (unlink, recreate and fill) a file whose job region passes its end.

    `preexec` runs in the child before fio starts (joining a memory cgroup: memcap.py).
    TrialFault when fio met an I/O error, the target or one of its `devices` (kernel names)
    disappeared, or fio overran `timeout_s` (faults.py); IotunerError for any other failure.
    """
    fio = fio_binary()
    with tempfile.TemporaryDirectory(prefix="iotuner-fio-") as tmp:
        job, out = Path(tmp, "trial.fio"), Path(tmp, "result.json")
        job.write_text(text)
        command = [fio, *(() if may_write else ("--readonly",)), "--output-format=json",
                   f"--output={out}", str(job)]  # fmt: skip
        code, stdout, stderr = _run(
            command, cwd=tmp, timeout_s=timeout_s, what=what, preexec=preexec
        )
        if code != 0:
            kind = classify(what, stdout + stderr, devices)
            if kind is not None:
                where = faulty_device(stdout + stderr, what, devices)
                raise TrialFault(where, kind, f"fio: {first_error(stderr, stdout)}")
            raise IotunerError(f"fio on {what} failed: {first_error(stderr, stdout)}")
        return load_json(out.read_text() if out.exists() else "", what)


def _run(
    command: list[str],
    *,
    cwd: str,
    timeout_s: float,
    what: str,
    preexec: Callable[[], None] | None = None,
) -> tuple[int, str, str]:
    """Run fio in its own process group and kill the whole group on a timeout or an
    interrupt: fio forks a process per job, and killing only the parent leaves them running."""
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            # Only os calls run there (memcap.MemoryCap.joiner): safe beside our threads.
            preexec_fn=preexec,
        )
    except FileNotFoundError:
        raise IotunerError(FIO_MISSING) from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise TrialFault(
            device_name(what), STALLED, f"fio did not finish within {timeout_s:.0f} s"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, stdout, stderr


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def load_json(text: str, what: str) -> dict[str, Any]:
    """fio's JSON document; fio may print notes before it, so start at the first brace."""
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as err:
        raise IotunerError(f"fio on {what} wrote malformed JSON: {err}") from None
    if not isinstance(doc, dict):
        raise IotunerError(f"fio on {what} wrote no JSON result")
    return doc


def first_error(*outputs: str) -> str:
    """fio's first complaint ("fio: ..." line), else the first non-empty line, else a stub."""
    lines = [line.strip() for text in outputs for line in (text or "").splitlines()]
    lines = [line for line in lines if line]
    for line in lines:
        if line.startswith("fio:"):
            return line.removeprefix("fio:").strip()
    return lines[0] if lines else "no message"


def _flag(value: Any) -> bool:
    return str(value).strip().lower() not in ("0", "false", "no", "off", "")


def escape_path(path: str) -> str:
    """`path` as a fio job line takes it: every path iotuner writes into a job goes through
    here. fio separates file names (and directories) with ':', a literal one written '\\:';
    BadInput (one line naming the path) for what fio has no escape for: '$' (fio substitutes
    $VAR, ${VAR} and its keywords $ncpus, $mb_memory, $pagesize), a backslash (its escape
    character), a control character (a newline ends the value; the rest of the name would be
    a job line of its own), blanks at either end (fio strips them: another file), "-" (stdin)
    and nothing at all."""
    why = _unwritable(path)
    if why is not None:
        raise BadInput(f"{path!r}: {why}; iotuner cannot write this path into a fio job")
    return path.replace(":", "\\:")


def _unwritable(path: str) -> str | None:
    if not path or path == "-":
        return "fio reads it as no file or as standard input"
    if "$" in path:
        return "fio substitutes '$' (environment variables, $ncpus, $mb_memory, $pagesize)"
    if "\\" in path:
        return "a backslash is fio's escape character"
    if not path.isprintable():
        return "it holds a control character"
    if path != path.strip():
        return "fio strips blanks at its ends"
    return None


def job_comment(title: str) -> str:
    """The job file's first line: a comment naming the trial, `title` as printable ASCII
    (anything else a '?', at most 200 characters): a newline in a title (a --fio-job file's
    name) would end the comment and start a section of its own, such as [global] with
    exec_prerun=."""
    shown = "".join(c if " " <= c <= "~" else "?" for c in title[:200])
    return f"; written by iotuner: {shown}"


def _line(key: str, value: Any) -> str:
    return key if value is None else f"{key}={value}"
