"""Block request events as the capture takes them, and one line of tracefs `trace_pipe` text.

The statistics take issues and completions as plain tuples (`Issue`, `Completion`), from the
ring buffer's pages (tuner/capture/ringbuf.py) or from a kept trace's text (`parse_record`,
`split`); `requests` pairs them into one record a request (who, where, how big, issued and
completed), for a replay. The kernel prints the text (6.x, include/trace/events/block.h) as

    fio-3833    [001] ..... 26029.539263: block_rq_issue: 7,7 R 4096 () 7904 + 8 be,0,4 [fio]
    ksoftirqd/1-22 [001] ..s.. 26029.540386: block_rq_complete: 7,7 R () 7904 + 8 be,0,4 [0]

(older kernels leave out the ioprio triple). The comm in brackets on an issue is the task
that issued the request; a completion runs in whatever context the interrupt lands in, so only
its device, sector and flags are read. Anything else (another event, a lost-events notice, a
truncated line) is None: a capture counts such lines and never stops on one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

SECTOR = 512

_EVENT = re.compile(
    r"\s*(?P<task>.{1,16}?)-(?P<pid>\d{1,10})\s+(?:\(\s*[-\d]+\)\s+)?\[\d{1,5}\]\s+\S{1,8}\s+"
    r"(?P<ts>\d{1,12}\.\d{1,9}): (?P<event>block_rq_issue|block_rq_complete): "
    r"(?P<major>\d{1,4}),(?P<minor>\d{1,7}) (?P<rwbs>[A-Z]{1,9}) "
    r"(?:(?P<bytes>\d{1,12}) )?\((?P<cmd>[^)]{0,64})\) (?P<sector>\d{1,20}) \+ (?P<nr>\d{1,10})"
    r"(?: [a-z]{1,8},\d{1,4},\d{1,4})? \[(?P<tail>[^\]]{0,16})\]\s*"
)
_OPS = "WDRFN"


@dataclass(frozen=True)
class Flags:
    """A request's rwbs string read as the kernel writes it (block/blk-core.c blk_fill_rwbs):
    an optional F (a preflush), the operation (W write, R read, D discard, F flush, N other),
    then F (FUA), A (readahead), S (sync), M (metadata)."""

    op: str
    preflush: bool
    fua: bool
    readahead: bool
    sync: bool

    @property
    def is_read(self) -> bool:
        """A read request."""
        return self.op == "R"

    @property
    def is_write(self) -> bool:
        """A write request (discards are counted apart, as neither)."""
        return self.op == "W"


_KNOWN: dict[str, Flags | None] = {}


def parse_rwbs(rwbs: str) -> Flags | None:
    """The flags of an rwbs string ("WFS", "RA", "FF"), or None when it is not one."""
    # A capture sees a handful of distinct strings, millions of times: each is read once.
    if rwbs in _KNOWN:
        return _KNOWN[rwbs]
    flags = _parse_rwbs(rwbs)
    if len(_KNOWN) < 1024:
        _KNOWN[rwbs] = flags
    return flags


def _parse_rwbs(rwbs: str) -> Flags | None:
    rest = rwbs
    preflush = False
    if len(rest) >= 2 and rest[0] == "F" and rest[1] in _OPS:
        preflush, rest = True, rest[1:]
    if not rest or rest[0] not in _OPS:
        return None
    op = rest[0]
    if rest[1:2] == "E":  # DE: secure erase, a discard
        rest = rest[1:]
    tail = rest[1:]
    if any(c not in "FASM" for c in tail):
        return None
    return Flags(op=op, preflush=preflush, fua="F" in tail, readahead="A" in tail,
                 sync="S" in tail)  # fmt: skip


@dataclass(frozen=True)
class Event:
    """One block request event: issued (`issue`) or completed, on device (major, minor).

    `size` is the request's bytes (nr_sector x 512; an issue's own byte count where it
    differs, as for a flush of 0 sectors); `comm` and `pid` are the issuing task's, empty and
    0 on a completion.
    """

    issue: bool
    ts: float
    major: int
    minor: int
    flags: Flags
    sector: int
    size: int
    comm: str
    pid: int


Record = tuple[int, bool, int, "str | bytes", int, int, "str | bytes", int]
"""One event of a trace_pipe line: (time ns, issued?, dev_t, rwbs, sector, bytes, comm, pid);
a completion's comm is empty and its pid 0. dev_t is the kernel's (major << 20 | minor)."""
Issue = tuple[int, int, "str | bytes", int, int, "str | bytes", int]
"""An issue as the statistics take it, from text or ring-buffer pages alike: (time ns,
dev_t, rwbs, sector, bytes, comm, pid). rwbs and comm are text from a trace_pipe line, the
kernel's NUL-padded bytes from a page (tuner/capture/ringbuf.py)."""
Completion = tuple[int, int, "str | bytes", int, int]
"""A completion as the statistics take it: (time ns, dev_t, rwbs, sector, bytes)."""


def split(records: Iterable[Record]) -> tuple[list[Issue], list[Completion]]:
    """Records (in time order) as the statistics take them: issues and completions apart."""
    issues: list[Issue] = []
    completions: list[Completion] = []
    for ts, issue, dev, rwbs, sector, size, comm, pid in records:
        if issue:
            issues.append((ts, dev, rwbs, sector, size, comm, pid))
        else:
            completions.append((ts, dev, rwbs, sector, size))
    return issues, completions


def parse_record(line: str) -> Record | None:
    """The record of one trace_pipe line, or None when the line is not a block request event
    (rwbs is checked by whoever reads it: parse_rwbs)."""
    match = _EVENT.fullmatch(line)
    if match is None:
        return None
    issue = match["event"] == "block_rq_issue"
    nr = int(match["nr"])
    size = nr * SECTOR
    if issue and match["bytes"] is not None and nr == 0:
        size = int(match["bytes"])
    seconds, fraction = match["ts"].split(".")
    ts = int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0"))
    dev = (int(match["major"]) << 20) | int(match["minor"])
    return (ts, issue, dev, match["rwbs"], int(match["sector"]), size,
            match["tail"] if issue else "", int(match["pid"]) if issue else 0)  # fmt: skip


def event(record: Record) -> Event | None:
    """The Event of a record (from either source), or None when its rwbs is not one."""
    ts, issue, dev, rwbs, sector, size, comm, pid = record
    flags = parse_rwbs(_text(rwbs))
    if flags is None:
        return None
    return Event(issue=issue, ts=ts / 1e9, major=dev >> 20, minor=dev & 0xFFFFF, flags=flags,
                 sector=sector, size=size, comm=clean_comm(comm) if issue else "",
                 pid=pid)  # fmt: skip


def parse_line(line: str) -> Event | None:
    """The event on one trace_pipe line, or None when the line is not a block request event."""
    record = parse_record(line)
    return None if record is None else event(record)


def trace_lines(issues: Iterable[Issue], completions: Iterable[Completion]) -> list[str]:
    """Issues and completions as trace_pipe prints them, in time order (the time rounded to
    the microsecond, as the kernel does), so a trace kept from the ring buffer's pages reads
    back with `parse_record`."""
    lines = []
    for ts, dev, rwbs, sector, size, comm, pid in issues:
        task = _text(comm).replace("\n", "?") or "?"
        lines.append((ts, f"{task}-{pid} [000] ..... {_when(ts)}: block_rq_issue: "
                          f"{dev >> 20},{dev & 0xFFFFF} {_text(rwbs)} {size} () {sector} + "
                          f"{size >> 9} [{task}]\n"))  # fmt: skip
    for ts, dev, rwbs, sector, size in completions:
        lines.append((ts, f"<idle>-0 [000] ..... {_when(ts)}: block_rq_complete: "
                          f"{dev >> 20},{dev & 0xFFFFF} {_text(rwbs)} () {sector} + "
                          f"{size >> 9} [0]\n"))  # fmt: skip
    lines.sort(key=lambda line: line[0])
    return [line for _, line in lines]


def _when(ts: int) -> str:
    us = (ts + 500) // 1000
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


def _text(raw: str | bytes) -> str:
    """A record's string field as text: a page's bytes end at their first NUL."""
    if isinstance(raw, str):
        return raw
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def clean_comm(comm: str | bytes) -> str:
    """A comm as a fingerprint may hold it (from text or a page's bytes): printable ASCII, no
    digits' run tail (kworker/u8:2 and kworker/u8:3 are the same kind of task)."""
    return _clean(_text(comm))


def _clean(comm: str) -> str:
    """A comm as a fingerprint may hold it: printable ASCII, no digits' run tail (kworker/u8:2
    and kworker/u8:3 are the same kind of task)."""
    text = "".join(c if c.isascii() and c.isprintable() else "?" for c in comm)[:16]
    return re.sub(r"[:/]\d[\d:]*$", "", text) or "?"


@dataclass(frozen=True)
class Request:
    """One block request: the task that issued it, where and how big, its rwbs, and when it
    was issued and completed (ns of the trace clock; None when its completion was not seen)."""

    comm: str
    pid: int
    major: int
    minor: int
    rwbs: str
    sector: int
    size: int
    issued_ns: int
    completed_ns: int | None


PENDING = 4096
"""Requests awaiting their completion that `requests` holds (the least recent go, as the
statistics' own table does)."""


def requests(issues: Iterable[Issue], completions: Iterable[Completion]) -> Iterator[Request]:
    """Each request of a capture, issues paired with completions as the statistics pair
    them: by device, start sector and operation, the completion after the issue (an issue
    first at the same time). Yielded in completion order; then those never seen completed,
    in issue order. Both inputs in time order, as a trace or the ring buffer gives them."""
    pending: dict[tuple[int, int, str], Issue] = {}
    ended = iter(completions)
    done = next(ended, None)

    def complete(record: Completion) -> Request | None:
        ts, dev, rwbs, sector, _ = record
        flags = parse_rwbs(_text(rwbs))
        issue = pending.pop((dev, sector, flags.op), None) if flags else None
        return None if issue is None else _request(issue, ts)

    for issue in issues:
        while done is not None and done[0] < issue[0]:
            found = complete(done)
            if found is not None:
                yield found
            done = next(ended, None)
        flags = parse_rwbs(_text(issue[2]))
        if flags is None or not (flags.is_read or flags.is_write) or issue[4] <= 0:
            continue
        key = (issue[1], issue[3], flags.op)
        if key not in pending and len(pending) >= PENDING:
            del pending[next(iter(pending))]
        pending[key] = issue
    while done is not None:
        found = complete(done)
        if found is not None:
            yield found
        done = next(ended, None)
    for issue in pending.values():
        yield _request(issue, None)


def _request(issue: Issue, completed: int | None) -> Request:
    ts, dev, rwbs, sector, size, comm, pid = issue
    return Request(comm=clean_comm(comm), pid=pid, major=dev >> 20, minor=dev & 0xFFFFF,
                   rwbs=_text(rwbs), sector=sector, size=size, issued_ns=ts,
                   completed_ns=completed)  # fmt: skip


def trace_requests(lines: Iterable[str]) -> Iterator[Request]:
    """The requests of a kept trace (`iotuner capture --trace`), as `requests` pairs them."""
    return requests(*split(r for r in map(parse_record, lines) if r is not None))
