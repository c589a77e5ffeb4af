"""One line of tracefs `trace_pipe` text: a block_rq_issue or block_rq_complete event.

The kernel prints them (6.x, include/trace/events/block.h) as

    fio-3833    [001] ..... 26029.539263: block_rq_issue: 7,7 R 4096 () 7904 + 8 be,0,4 [fio]
    ksoftirqd/1-22 [001] ..s.. 26029.540386: block_rq_complete: 7,7 R () 7904 + 8 be,0,4 [0]

(older kernels leave out the ioprio triple). The comm in brackets on an issue is the task
that issued the request; a completion runs in whatever context the interrupt lands in, so only
its device, sector and flags are read. Anything else (another event, a lost-events notice, a
truncated line) is None: a capture counts such lines and never stops on one.
"""

from __future__ import annotations

import re
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


def parse_line(line: str) -> Event | None:
    """The event on one trace_pipe line, or None when the line is not a block request event."""
    match = _EVENT.fullmatch(line)
    if match is None:
        return None
    flags = parse_rwbs(match["rwbs"])
    if flags is None:
        return None
    issue = match["event"] == "block_rq_issue"
    nr = int(match["nr"])
    size = nr * SECTOR
    if issue and match["bytes"] is not None and nr == 0:
        size = int(match["bytes"])
    comm = _clean(match["tail"]) if issue else ""
    return Event(issue=issue, ts=float(match["ts"]), major=int(match["major"]),
                 minor=int(match["minor"]), flags=flags, sector=int(match["sector"]),
                 size=size, comm=comm, pid=int(match["pid"]) if issue else 0)  # fmt: skip


def _clean(comm: str) -> str:
    """A comm as a fingerprint may hold it: printable ASCII, no digits' run tail (kworker/u8:2
    and kworker/u8:3 are the same kind of task)."""
    text = "".join(c if c.isascii() and c.isprintable() else "?" for c in comm)[:16]
    return re.sub(r"[:/]\d[\d:]*$", "", text) or "?"
