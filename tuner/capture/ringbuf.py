"""The kernel's ring-buffer pages (tracefs per_cpu/cpuN/trace_pipe_raw) decoded into block
request records, laid out as the tracefs format files say.

A read of trace_pipe_raw returns one sub-buffer page: a header (events/header_page: a u64
timestamp, a commit word holding the bytes of events and two flag bits, then the data), then
events, each a 32-bit header (type_len: 5 bits, time_delta: 27 bits; kernel/trace/
ring_buffer.c) followed by its record:

- type_len 1..28: a record of type_len x 4 bytes; 0: a longer record, its length in the next
  word; 29: padding (a discarded event; time_delta 0: the rest of the page is empty);
  30: a time extend (the delta's upper bits in the next word); 31: an absolute time stamp.
- a record starts with common_type (the event's ID) and common_pid; the block events' fields
  (dev, sector, nr_sector, bytes, rwbs, comm) are where events/block/*/format puts them.

Each record is touched once, by one precompiled struct; the result is the same tuple the
text parser makes (tuner/capture/events.py: Issue, Completion), in nanoseconds of the
instance's trace clock. Anything that does not add up (a page shorter than its commit says, a
record running past it, a format without a field the capture reads) is refused.
"""

from __future__ import annotations

import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from tuner.capture.events import Completion, Issue
from tuner.errors import BadInput

ISSUE_FIELDS = ("common_pid", "dev", "sector", "nr_sector", "bytes", "rwbs", "comm")
COMPLETE_FIELDS = ("dev", "sector", "nr_sector", "rwbs")
_SIZES = {"common_type": 2, "common_pid": 4, "dev": 4, "sector": 8, "nr_sector": 4, "bytes": 4}
_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
_FIELD = re.compile(
    r"\s*field:(?P<decl>[^;]{1,200});\s*offset:(?P<offset>\d{1,6});\s*size:(?P<size>\d{1,6});"
    r"\s*signed:(?P<signed>[01]);"
)
MISSED_FLAGS = (1 << 31) | (1 << 30)
"""The commit word's top bits: events were lost before this page (RB_MISSED_EVENTS), and
their count is stored after the data (RB_MISSED_STORED)."""
TS_SHIFT = 27
TS_MSB = 0xF8 << 56
"""An absolute time stamp keeps 59 bits; the top 5 come from the page's own."""


@dataclass(frozen=True)
class Field:
    """One field of a record: where it is and how wide."""

    offset: int
    size: int
    signed: bool


@dataclass(frozen=True)
class EventFormat:
    """An event's ID and its fields, as events/<system>/<event>/format says."""

    name: str
    id: int
    fields: dict[str, Field]


@dataclass(frozen=True)
class PageFormat:
    """Where a page's time stamp, commit word and data are (events/header_page)."""

    timestamp: Field
    commit: Field
    data: Field


def _fields(text: str, where: str) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for line in text.splitlines():
        found = _FIELD.match(line)
        if found is None:
            continue
        decl = found["decl"].strip()
        name = re.sub(r"\[\d*\]$", "", decl.split()[-1]) if decl.split() else ""
        fields[name] = Field(int(found["offset"]), int(found["size"]), found["signed"] == "1")
    if not fields:
        raise BadInput(f"{where}: not a tracefs format file (no field lines)")
    return fields


def parse_event_format(text: str, where: str) -> EventFormat:
    """An event's format file read; BadInput when it is not one."""
    name = re.search(r"^name: (\S{1,64})$", text, re.M)
    ident = re.search(r"^ID: (\d{1,6})$", text, re.M)
    if name is None or ident is None:
        raise BadInput(f"{where}: not a tracefs event format (no name or ID line)")
    return EventFormat(name=name[1], id=int(ident[1]), fields=_fields(text, where))


def parse_page_format(text: str, where: str) -> PageFormat:
    """events/header_page read; BadInput unless it has a u64 time stamp, a commit word of 4 or
    8 bytes and the data after them."""
    fields = _fields(text, where)
    try:
        page = PageFormat(fields["timestamp"], fields["commit"], fields["data"])
    except KeyError as err:
        raise BadInput(f"{where}: header_page has no {err.args[0]} field") from None
    if page.timestamp.size != 8 or page.commit.size not in (4, 8) or page.data.offset % 4:
        raise BadInput(
            f"{where}: a header_page this decoder does not know "
            f"(timestamp {page.timestamp.size} bytes, commit {page.commit.size})"
        )
    return page


def _struct(event: EventFormat, names: tuple[str, ...], where: str) -> struct.Struct:
    """A struct reading `names` (given in offset order) from a record of `event`, its
    common_type skipped as padding (the decoder reads it first, to know the record)."""
    spans: list[tuple[int, int, str, str]] = []
    for name in (*names, "common_type"):
        field = event.fields.get(name)
        if field is None:
            raise BadInput(f"{where}: {event.name} has no field {name}: an unknown format")
        if name in ("rwbs", "comm"):
            if not 2 <= field.size <= 64:
                raise BadInput(f"{where}: {event.name}.{name} is {field.size} bytes: unknown")
            code = f"{field.size}s"
        elif _SIZES[name] != field.size:
            raise BadInput(f"{where}: {event.name}.{name} is {field.size} bytes, "
                           f"expected {_SIZES[name]}: an unknown format")  # fmt: skip
        else:
            code = _CODES[field.size].lower() if field.signed else _CODES[field.size]
        spans.append((field.offset, field.size, code, name))
    spans.sort()
    if [name for *_, name in spans if name != "common_type"] != list(names):
        raise BadInput(f"{where}: {event.name}'s fields are in an order this decoder does not "
                       "know: an unknown format")  # fmt: skip
    fmt, at = "<" if sys.byteorder == "little" else ">", 0
    for offset, size, code, name in spans:
        if offset < at:
            raise BadInput(f"{where}: {event.name}'s fields overlap: an unknown format")
        fmt += (f"{offset - at}x" if offset > at else "") + (
            f"{size}x" if name == "common_type" else code
        )
        at = offset + size
    return struct.Struct(fmt)


class BadPage(BadInput):
    """A ring-buffer page that does not add up."""


class Decoder:
    """Block request records out of ring-buffer pages laid out as the format files say."""

    def __init__(self, page: PageFormat, issue: EventFormat, complete: EventFormat,
                 where: str = "tracefs") -> None:  # fmt: skip
        if issue.id == complete.id:
            raise BadInput(f"{where}: block_rq_issue and block_rq_complete share ID {issue.id}")
        self.page = page
        self.issue_id, self.complete_id = issue.id, complete.id
        self.issue = _struct(issue, ISSUE_FIELDS, where)
        self.complete = _struct(complete, COMPLETE_FIELDS, where)
        self.type_offset = issue.fields["common_type"].offset
        if complete.fields["common_type"].offset != self.type_offset or self.type_offset % 4:
            raise BadInput(f"{where}: common_type is not where this decoder reads it")
        self.order = "<" if sys.byteorder == "little" else ">"
        self.other = 0
        """Records of other events (none reach the capture's own instance)."""

    def decode(self, page: bytes) -> tuple[list[Issue], list[Completion]]:
        """The block request issues and completions of one page, each in the order the CPU
        wrote them; BadPage when the page does not add up."""
        data = self.page.data.offset
        if len(page) < data or len(page) % 4:
            raise BadPage(f"a ring-buffer page of {len(page)} bytes: truncated")
        ts = struct.unpack_from(self.order + "Q", page, self.page.timestamp.offset)[0]
        code = "Q" if self.page.commit.size == 8 else "I"
        commit = struct.unpack_from(self.order + code, page, self.page.commit.offset)[0]
        end = data + (commit & 0xFFFFFFFF & ~MISSED_FLAGS)
        if end > len(page):
            raise BadPage(f"a ring-buffer page holds {len(page) - data} bytes of events, its "
                          f"commit says {end - data}: truncated")  # fmt: skip
        words = memoryview(page).cast("I")
        issues: list[Issue] = []
        completions: list[Completion] = []
        issued, completed = issues.append, completions.append
        issue, complete = self.issue.unpack_from, self.complete.unpack_from
        # common_type, where the record's word says it; the records' lengths in words
        shift = 0 if sys.byteorder == "little" else 16
        issue_id, complete_id = self.issue_id << shift, self.complete_id << shift
        mask = 0xFFFF << shift
        iwords, cwords = -(-self.issue.size // 4), -(-self.complete.size // 4)
        tword = self.type_offset >> 2
        w, stop = data >> 2, end >> 2  # in 4-byte words: the ring buffer's alignment
        try:
            while w < stop:
                head = words[w]
                kind = head & 31
                if kind and kind < 29:
                    ts += head >> 5
                    at = w + 1
                    w = at + kind
                elif kind == 0:
                    ts += head >> 5
                    length = words[w + 1] >> 2
                    if length < 1:
                        raise BadPage(f"a record of {length * 4} bytes at {w * 4}: not a page")
                    at = w + 2
                    w += 1 + length
                elif kind == 30:  # time extend
                    ts += (words[w + 1] << TS_SHIFT) + (head >> 5)
                    w += 2
                    continue
                elif kind == 29:  # padding: a discarded record, or (delta 0) the page's end
                    if head >> 5 == 0:
                        break
                    w += 1 + (words[w + 1] >> 2)
                    continue
                else:  # 31: an absolute time stamp
                    ts = ((words[w + 1] << TS_SHIFT) + (head >> 5)) | (ts & TS_MSB)
                    w += 2
                    continue
                kind = words[at + tword] & mask
                if kind == issue_id and w - at >= iwords:
                    pid, dev, sector, nr, size, rwbs, comm = issue(page, at << 2)
                    issued((ts, dev, rwbs, sector, nr << 9 or size, comm, pid))
                elif kind == complete_id and w - at >= cwords:
                    dev, sector, nr, rwbs = complete(page, at << 2)
                    completed((ts, dev, rwbs, sector, nr << 9))
                else:
                    self.other += 1
        except (IndexError, struct.error):
            w = len(words) + 1  # a record ran past the page itself
        if w > stop:
            # checked once: a page with a record past its events is refused whole
            raise BadPage(f"a record runs past the page's events ({end})")
        return issues, completions

    def split(self, pages: bytes) -> Iterator[bytes]:
        """The pages of a file of whole pages (each `page_bytes` long), one at a time."""
        size = self.page_bytes
        if len(pages) % size:
            raise BadPage(f"{len(pages)} bytes are not whole pages of {size}: truncated")
        for at in range(0, len(pages), size):
            yield pages[at : at + size]

    @property
    def page_bytes(self) -> int:
        """A page's length: its header and data, as header_page says."""
        return self.page.data.offset + self.page.data.size
