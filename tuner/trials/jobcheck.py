"""`--fio-job FILE` by allow-list: the fio options a workload needs, and nothing else.

iotuner runs fio as root, and fio can do much more than I/O: `include` other files,
`exec_prerun=` commands, replay `read_iolog=` files, load `ioengine=external:/x.so`, write logs
wherever it is told. A deny-list of such options is always one option short, so a job file is
read here line by line and every option must be one of ALLOWED, spelled by its name or one of
fio's aliases for it, with a value matching that option's pattern; anything else is BadInput
(exit 2) naming the file, the line and the option, before fio ever sees the file. Options naming
where the I/O goes, how long it runs and what it reports (REPLACED) are accepted and dropped:
iotuner sets them itself (tuner/trials/fio.py).

Whether the job writes is then decided from fio's own parsed view of the checked job (`fio
--showcmd`, which resolves aliases such as readwrite= to rw= and prints what each option ended
up as), never from one key of the text: `rw=read` followed by `readwrite=write` writes. A section
may set an option once only (fio sorts a section's options by priority before applying them,
so "the last one wins" is not something to build on), and fio's view must name exactly the
options this module accepted, with the same values.

    job = load_job(Path("scan.fio"))   # CheckedJob; BadInput on the first option at fault
    job.options                         # {"rw": "randread", "bs": "16k", ...}, as fio sees them
    job.writes                          # False
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tuner.errors import BadInput, IotunerError
from tuner.trials.fio import FIO_MISSING, fio_binary, first_error

MAX_JOB_BYTES = 64 * 1024
"""A job file is a few hundred bytes; fio's own line buffer is 8 KiB."""
MAX_LINE = 1024
FIO_SECONDS = 30.0
"""How long `fio --showcmd` may take to parse a checked job."""

Check = Callable[[str | None], str | None]
"""An option's value check: returns why the value is refused, or None."""


def _matches(pattern: str, what: str) -> Check:
    compiled = re.compile(pattern)

    def check(value: str | None) -> str | None:
        if value is None or not compiled.fullmatch(value):
            return f"expected {what}"
        return None

    return check


def _ranged(low: int, high: int) -> Check:
    def check(value: str | None) -> str | None:
        if (
            value is None
            or not re.fullmatch(r"[0-9]{1,12}", value)
            or not low <= int(value) <= high
        ):
            return f"expected a whole number from {low} to {high}"
        return None

    return check


def _choice(*names: str) -> Check:
    return _matches("|".join(map(re.escape, names)), f"one of {', '.join(names)}")


_SIZE = r"[0-9]{1,15}(?:[kKmMgGtTpP](?:[iI]?[bB])?)?"
_DECIMAL = r"[0-9]{1,6}(?:\.[0-9]{1,6})?"
_FLAG = _matches(r"[01]", "no value, 0 or 1")
_BOOL = _choice("0", "1")
_PERCENT = _ranged(0, 100)
_SIZES = _matches(rf"{_SIZE}(?:,{_SIZE}){{0,2}}", "a size, or read,write[,trim] sizes (4k,64k)")
_SIZE_RANGE = _matches(
    rf"{_SIZE}(?:-{_SIZE})?(?:,{_SIZE}(?:-{_SIZE})?){{0,2}}", "a size or a range (4k-64k)"
)
_BS_RANGE = _matches(
    rf"{_SIZE}-{_SIZE}(?:,{_SIZE}-{_SIZE}){{0,2}}", "a range of sizes (4k-64k, or read,write)"
)
_SPLIT = rf"{_SIZE}/[0-9]{{0,3}}(?::{_SIZE}/[0-9]{{0,3}})*"
_TIME = _matches(r"[0-9]{1,12}(?:us|usec|ms|msec|s|m|h|d)?", "a time (100ms, 2s)")
_RW = _matches(
    r"(?:read|write|randread|randwrite|rw|readwrite|randrw|trim|randtrim|trimwrite|randtrimwrite)"
    r"(?::[0-9]{1,9})?",
    "read, write, randread, randwrite, rw, readwrite, randrw or a trim mix (optionally :N)",
)
ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap")
"""I/O engines a trial may use: the kernel's own I/O paths. No external, exec, net or sg."""


@dataclass(frozen=True)
class Option:
    """An allowed fio option: its canonical name, fio's aliases for it, how its value is checked."""

    name: str
    check: Check
    aliases: tuple[str, ...] = ()


def _flag(name: str, *aliases: str) -> Option:
    def check(value: str | None) -> str | None:
        return None if value is None else _FLAG(value)

    return Option(name, check, aliases)


ALLOWED: tuple[Option, ...] = (
    # the pattern
    Option("rw", _RW, ("readwrite",)),
    Option(
        "rw_sequencer",
        _matches(r"(?:sequential|identical)(?::[0-9]{1,9})?", "sequential or identical"),
    ),
    Option("rwmixread", _PERCENT),
    Option("rwmixwrite", _PERCENT),
    Option("percentage_random", _matches(r"[0-9]{1,3}(?:,[0-9]{1,3}){0,2}", "percentages")),
    Option(
        "random_distribution",
        _matches(
            rf"random|(?:zipf|pareto|normal|gauss):{_DECIMAL}(?::{_DECIMAL})?",
            "random, zipf:THETA, pareto:H, normal:DEV or gauss:DEV",
        ),
    ),
    Option("random_generator", _choice("tausworthe", "lfsr", "tausworthe64")),
    Option("randrepeat", _BOOL),  # fio 3.33 has allrandrepeat as an option of its own
    Option("randseed", _ranged(0, 2**63 - 1)),
    _flag("norandommap"),
    # sizes
    Option("bs", _SIZES, ("blocksize",)),
    Option("bsrange", _BS_RANGE, ("blocksize_range",)),
    Option("bssplit", _matches(rf"{_SPLIT}(?:,{_SPLIT}){{0,2}}", "SIZE/PERCENT:SIZE/PERCENT...")),
    _flag("bs_unaligned", "blocksize_unaligned"),
    Option("ba", _SIZES, ("blockalign",)),
    Option("filesize", _SIZE_RANGE),
    # depths and parallelism
    Option("iodepth", _ranged(1, 4096)),
    Option("iodepth_batch", _ranged(0, 4096), ("iodepth_batch_submit",)),
    Option("iodepth_batch_complete_min", _ranged(0, 4096), ("iodepth_batch_complete",)),
    Option("iodepth_batch_complete_max", _ranged(0, 4096)),
    Option("iodepth_low", _ranged(0, 4096)),
    Option("numjobs", _ranged(1, 256)),
    _flag("thread"),
    Option("nrfiles", _ranged(1, 65536), ("nr_files",)),
    Option("openfiles", _ranged(1, 65536)),
    Option(
        "file_service_type",
        _matches(
            rf"(?:random|roundrobin|sequential)(?::[0-9]{{1,9}})?"
            rf"|(?:zipf|pareto|normal|gauss):{_DECIMAL}",
            "random, roundrobin or sequential (optionally :N), or a distribution",
        ),
    ),
    # engines
    Option("ioengine", _choice(*ENGINES)),
    _flag("hipri"),
    _flag("fixedbufs"),
    _flag("registerfiles"),
    _flag("userspace_reap"),
    Option("io_submit_mode", _choice("inline", "offload")),
    # the page cache, syncing and allocation
    Option("direct", _BOOL),
    Option("buffered", _BOOL),
    Option("invalidate", _BOOL),
    Option("sync", _choice("0", "1", "none", "sync", "dsync")),
    Option("fsync", _ranged(0, 2**31 - 1)),
    Option("fdatasync", _ranged(0, 2**31 - 1)),
    Option("end_fsync", _BOOL),
    Option("fsync_on_close", _BOOL),
    Option("fallocate", _choice("none", "native", "posix", "keep", "truncate", "0", "1")),
    Option("fadvise_hint", _choice("0", "1", "sequential", "random")),
    Option("pre_read", _BOOL),
    Option("overwrite", _BOOL),
    Option("create_on_open", _BOOL),
    # pacing
    Option("thinktime", _TIME),
    Option("thinktime_spin", _TIME),
    Option("thinktime_blocks", _ranged(1, 2**31 - 1)),
    Option("rate", _SIZES),
    Option("rate_min", _SIZES, ("ratemin",)),
    Option("rate_iops", _matches(r"[0-9]{1,9}(?:,[0-9]{1,9}){0,2}", "IOPS, or read,write[,trim]")),
    Option("rate_process", _choice("linear", "poisson")),
    # buffer contents (compressing and deduplicating devices)
    _flag("zero_buffers"),
    _flag("refill_buffers"),
    Option("scramble_buffers", _BOOL),
    Option("buffer_compress_percentage", _PERCENT),
    Option("buffer_compress_chunk", _matches(_SIZE, "a size")),
    Option("dedupe_percentage", _PERCENT),
    _flag("serialize_overlap"),
)
"""Every option a --fio-job may set: patterns, sizes, depths, engines, caching and pacing."""

REPLACED: tuple[Option, ...] = tuple(
    Option(name, lambda value: None, aliases)
    for name, aliases in (
        ("filename", ()), ("directory", ()), ("filename_format", ()), ("size", ()),
        ("io_size", ("io_limit",)), ("offset", ("fileoffset",)), ("offset_increment", ()),
        ("number_ios", ()), ("loops", ()), ("runtime", ("timeout",)), ("time_based", ()),
        ("ramp_time", ()), ("group_reporting", ()), ("percentile_list", ()),
        ("clat_percentiles", ()), ("lat_percentiles", ()), ("name", ()), ("description", ()),
    )
)  # fmt: skip
"""Options iotuner sets itself on every trial: accepted whatever their value, and dropped."""

PLACEMENT: dict[str, Check] = {
    "filename": lambda value: None if value else "expected a file name",
    "directory": lambda value: None if value else "expected a directory",
    "size": _matches(rf"{_SIZE}|[0-9]{{1,3}}%", "a size or a percentage of the file"),
    "offset": _matches(rf"{_SIZE}|[0-9]{{1,3}}%", "a size or a percentage of the file"),
    "offset_increment": _matches(rf"{_SIZE}|[0-9]{{1,3}}%", "a size or a percentage of the file"),
}
"""REPLACED options whose values are kept, when they pass these checks, for a job that only
reads an existing file: the trials read that file where the job places its reads
(tuner/trials/trial.py); a value that does not pass is dropped with the rest. Names are looked
up, never written into a job as they are."""

_BY_SPELLING: dict[str, Option] = {
    spelling: option
    for option in (*ALLOWED, *REPLACED)
    for spelling in (option.name, *option.aliases)
}
_REPLACED_NAMES = frozenset(option.name for option in REPLACED)
_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")
_SECTION = re.compile(r"\[([A-Za-z0-9_.-]{1,64})\]")
_LINE = re.compile(r"([^=\s]+)\s*(?:=\s*(.*))?")
_PRINTABLE = re.compile(r"[\t\x20-\x7e]*")
_WRITES = re.compile(r"write|trim|rw$|readwrite$|randrw$")
_READS = re.compile(r"read|rw$|readwrite$|randrw$")


@dataclass(frozen=True)
class Line:
    """One accepted option: where it was written, how, and what fio calls it."""

    number: int
    spelling: str
    name: str
    value: str | None


@dataclass(frozen=True)
class CheckedJob:
    """A job file that passed the allow-list: its one job's options, as fio will read them.

    `options`: canonical name -> value for every option of ALLOWED the job sets ([global]
    first, the job section over it), None for a flag; `replaced`: the REPLACED options it set,
    which iotuner drops; `placement`: the values of those of them that say where the job's
    I/O goes in its file (PLACEMENT), for a read-only job that reads the user's own file;
    `lines`: what was accepted, section by section, for fio's own view.
    """

    where: str
    section: str
    options: Mapping[str, str | None]
    replaced: tuple[str, ...] = ()
    placement: Mapping[str, str] = field(default_factory=dict)
    lines: tuple[tuple[str, tuple[Line, ...]], ...] = field(default=(), repr=False)

    @property
    def writes(self) -> bool:
        """True when the job writes or trims (see `io_direction`)."""
        return io_direction(self.options)[1]


def check_job(text: str, where: str) -> CheckedJob:
    """The job in `text` (read from `where`) by allow-list; BadInput naming the line at fault.

    Pure: no file, no process. `load_job` adds fio's own view of what was accepted.
    """

    def bad(number: int, why: str) -> BadInput:
        return BadInput(f"--fio-job {where}: line {number}: {why}")

    if len(text.encode()) > MAX_JOB_BYTES:
        raise BadInput(f"--fio-job {where}: larger than {MAX_JOB_BYTES // 1024} KiB")
    sections: list[tuple[str, list[Line]]] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if len(line) > MAX_LINE:
            raise bad(number, f"longer than {MAX_LINE} characters")
        if not _PRINTABLE.fullmatch(line):
            raise bad(number, "holds a control or non-ASCII character")
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            sections.append((_section(line, number, bad), []))
            continue
        if line.startswith("include"):
            raise bad(number, "include is refused: a trial job is one file, read whole by iotuner")
        if not sections:
            raise bad(number, f"{line[:40]!r} comes before any [section]")
        sections[-1][1].append(_option(line, number, bad))
    return _merge(sections, where, bad)


def _section(line: str, number: int, bad: Callable[[int, str], BadInput]) -> str:
    match = _SECTION.fullmatch(line)
    if match is None:
        raise bad(number, f"{line[:40]!r} is not a [section] name of letters, digits, _ . -")
    name = match.group(1)
    # fio treats any section whose name starts with "global" as [global].
    if name.startswith("global") and name != "global":
        raise bad(number, f"[{name}]: fio reads it as [global]; name the job otherwise")
    return name


def _option(line: str, number: int, bad: Callable[[int, str], BadInput]) -> Line:
    match = _LINE.fullmatch(line)
    key, value = (match.group(1), match.group(2)) if match else (line, None)
    if not _KEY.fullmatch(key):
        raise bad(number, f"{key[:40]!r} is not an option name")
    option = _BY_SPELLING.get(key)
    if option is None:
        raise bad(
            number,
            f"option {key} is not allowed in a trial job (iotuner accepts workload options "
            "only: docs/trials.md lists them)",
        )
    if value is not None:
        value = value.strip()
    why = option.check(value)
    if why is not None:
        shown = key if value is None else f"{key}={value[:40]}"
        raise bad(number, f"{shown}: {why}")
    return Line(number, key, option.name, value)


def _merge(
    sections: list[tuple[str, list[Line]]], where: str, bad: Callable[[int, str], BadInput]
) -> CheckedJob:
    jobs = [name for name, _ in sections if name != "global"]
    if len(jobs) != 1:
        found = ", ".join(jobs) or "none"
        raise BadInput(
            f"--fio-job {where}: {len(jobs)} job sections ({found}); a trial runs exactly one "
            "(use numjobs= for parallel copies)"
        )
    names = [name for name, _ in sections]
    if names.index(jobs[0]) != len(names) - 1:
        # A [global] after the job applies to later jobs only: fio and a reader would disagree.
        after = sections[names.index(jobs[0]) + 1][1]
        raise bad(after[0].number if after else 0, "[global] must come before the job section")
    options: dict[str, str | None] = {}
    replaced: dict[str, None] = {}
    placement: dict[str, str] = {}
    for _, lines in sections:
        seen: dict[str, Line] = {}
        for line in lines:
            if line.name in seen:
                first = seen[line.name]
                also = (
                    "" if first.spelling == line.spelling else f" ({line.spelling} is {line.name})"
                )
                raise bad(
                    line.number,
                    f"{line.name} is already set on line {first.number}{also}; set it once",
                )
            seen[line.name] = line
            if line.name in _REPLACED_NAMES:
                replaced[line.name] = None
                check = PLACEMENT.get(line.name)
                # A value no pattern takes (fio's $mb_memory) is dropped like the rest.
                if check is not None and check(line.value) is None:
                    placement[line.name] = line.value or ""
            else:
                options[line.name] = line.value
    return CheckedJob(
        where=where,
        section=jobs[0],
        options=options,
        replaced=tuple(replaced),
        placement=placement,
        lines=tuple((name, tuple(lines)) for name, lines in sections),
    )


def io_direction(options: Mapping[str, str | None]) -> tuple[bool, bool]:
    """(reads, writes) of a job from fio's canonical options (`rw`, fio's default "read").

    The mixes read and write; trims count as writes (they discard data).
    """
    rw = (options.get("rw") or "read").partition(":")[0]
    return _READS.search(rw) is not None, _WRITES.search(rw) is not None


def fio_view(job: CheckedJob, *, timeout_s: float = FIO_SECONDS) -> dict[str, str | None]:
    """What fio itself makes of the accepted lines: canonical name -> value, [global] first
    and the job over it, from `fio --showcmd` on a job file holding only those lines.

    BadInput with fio's first complaint when fio rejects the job (iodepth=0, an option of
    another engine); IotunerError when fio is missing or does not answer in time.
    """
    text = "".join(
        f"[{name}]\n" + "".join(f"{_text(line)}\n" for line in lines) for name, lines in job.lines
    )
    with tempfile.TemporaryDirectory(prefix="iotuner-jobcheck-") as tmp:
        path = Path(tmp, "job.fio")
        path.write_text(text)
        try:
            done = subprocess.run(
                [fio_binary(), "--showcmd", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                cwd=tmp,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            )
        except FileNotFoundError:
            raise IotunerError(FIO_MISSING) from None
        except subprocess.TimeoutExpired:
            raise IotunerError(f"fio --showcmd on {job.where} took over {timeout_s:g} s") from None
    if done.returncode != 0:
        complaint = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), "")
        why = complaint.removeprefix("fio:").strip() or first_error(done.stdout)
        raise BadInput(f"--fio-job {job.where}: fio rejects it: {why[:200]}")
    return _showcmd_options(done.stdout, job.where)


def _text(line: Line) -> str:
    return line.spelling if line.value is None else f"{line.spelling}={line.value}"


def _showcmd_options(output: str, where: str) -> dict[str, str | None]:
    """`fio --ioengine=libaio --name=j --rw=write` -> {"ioengine": "libaio", "rw": "write"}.

    Every accepted value matches a pattern without spaces, so the words split exactly.
    """
    words = output.split()
    if not words or words[0] != "fio":
        raise IotunerError(f"fio --showcmd on {where} printed no command line")
    found: dict[str, str | None] = {}
    for word in words[1:]:
        if not word.startswith("--"):
            raise IotunerError(f"fio --showcmd on {where} printed {word[:40]!r}")
        name, eq, value = word[2:].partition("=")
        if name != "name":
            found[name] = value if eq else None
    return found


def load_job(path: Path) -> CheckedJob:
    """The job file at `path` checked by allow-list, then confirmed by fio's own view.

    The file must be a regular file of at most MAX_JOB_BYTES (a FIFO would block the read).
    BadInput (exit 2) names the file and the line at fault; when fio reads the accepted job
    differently from this module, that is BadInput too, naming the option.
    """
    return _confirmed(check_job(_read_bounded(path), str(path)), path)


def load_jobs(path: Path) -> tuple[CheckedJob, ...]:
    """Each job section of the file at `path` (at most MAX_SECTIONS), checked as `load_job`
    checks a file of [global] and that section alone: a capture's reproduction runs one
    section a process group side by side (`capture --check`); a trial still runs one."""
    return tuple(_confirmed(check_job(part, str(path)), path)
                 for part in split_jobs(_read_bounded(path), str(path)))  # fmt: skip


MAX_SECTIONS = 16
"""Job sections `load_jobs` takes from one file."""


def split_jobs(text: str, where: str) -> list[str]:
    """`text` as one job file a job section: [global] (and what precedes any section) with
    that section, every other section's lines blanked, so a refusal names the file's own line
    numbers. A file of no job section is returned whole (check_job refuses it)."""
    lines = text.split("\n")
    owner: list[str | None] = []  # each line's job section; None for [global] and the head
    current: str | None = None
    starts = 0
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            name = line[1:].partition("]")[0]
            current = None if name.startswith("global") else f"{starts}"
            starts += current is not None
        owner.append(current)
    if starts == 0:
        return [text]
    if starts > MAX_SECTIONS:
        raise BadInput(f"--fio-job {where}: {starts} job sections; at most {MAX_SECTIONS}")
    return ["\n".join(raw if who in (None, f"{job}") else "" for raw, who in zip(lines, owner,
                                                                                strict=True))
            for job in range(starts)]  # fmt: skip


def _confirmed(job: CheckedJob, path: Path) -> CheckedJob:
    """`job` confirmed by fio's own view (see load_job)."""
    seen = fio_view(job)
    ours = _as_fio_prints(job)
    if seen != ours:
        differ = sorted(set(seen.items()) ^ set(ours.items()))
        name = differ[0][0] if differ else "?"
        raise BadInput(
            f"--fio-job {path}: fio reads option {name} as {seen.get(name)!r}, iotuner as "
            f"{ours.get(name)!r}; refusing a job the two read differently"
        )
    unknown = sorted(set(seen) - {option.name for option in (*ALLOWED, *REPLACED)})
    if unknown:
        raise BadInput(f"--fio-job {path}: fio reads option {unknown[0]}, which is not allowed")
    # What the trials run, and whether they write, is fio's reading of the job.
    return replace(job, options={k: v for k, v in seen.items() if k not in _REPLACED_NAMES})


def _as_fio_prints(job: CheckedJob) -> dict[str, str | None]:
    """The accepted options as fio --showcmd prints them: [global], then the job over it."""
    merged: dict[str, str | None] = {}
    for _, lines in job.lines:
        for line in lines:
            merged[line.name] = line.value
    return merged


def _read_bounded(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"--fio-job {path}: no such file") from None
    except OSError as err:
        raise BadInput(f"--fio-job {path}: cannot open: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"--fio-job {path}: not a regular file")
        if info.st_size > MAX_JOB_BYTES:
            raise BadInput(f"--fio-job {path}: larger than {MAX_JOB_BYTES // 1024} KiB")
        data = os.read(fd, MAX_JOB_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_JOB_BYTES:
        raise BadInput(f"--fio-job {path}: larger than {MAX_JOB_BYTES // 1024} KiB")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise BadInput(f"--fio-job {path}: line {line}: holds a non-ASCII byte") from None
