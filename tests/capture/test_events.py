"""Parsing trace_pipe lines: the kernel's rwbs flags and the two block request events."""

from __future__ import annotations

import pytest

from tests.capture.samples import FIXTURES
from tuner.capture.events import parse_line, parse_record, parse_rwbs, trace_requests

ISSUE = (
    "             fio-3833    [001] ..... 26029.539263: block_rq_issue: 7,7 R 4096 () 7904 "
    "+ 8 be,0,4 [fio]"
)
COMPLETE = (
    "     ksoftirqd/1-22      [001] ..s.. 26029.540386: block_rq_complete: 7,7 R () 7904 + 8 "
    "be,0,4 [0]"
)


@pytest.mark.parametrize(
    ("rwbs", "op", "preflush", "fua", "readahead", "sync"),
    [
        ("R", "R", False, False, False, False),
        ("RA", "R", False, False, True, False),
        ("WS", "W", False, False, False, True),
        ("WFS", "W", False, True, False, True),  # a FUA write
        ("FWS", "W", True, False, False, True),  # a write after a cache flush
        ("FF", "F", True, False, False, False),  # a flush request
        ("F", "F", False, False, False, False),
        ("WSM", "W", False, False, False, True),
        ("DS", "D", False, False, False, True),
    ],
)
def test_rwbs_flags_read_as_the_kernel_writes_them(
    rwbs: str, op: str, preflush: bool, fua: bool, readahead: bool, sync: bool
) -> None:
    flags = parse_rwbs(rwbs)
    assert flags is not None
    assert (flags.op, flags.preflush, flags.fua, flags.readahead, flags.sync) == (
        op, preflush, fua, readahead, sync
    )  # fmt: skip


@pytest.mark.parametrize("rwbs", ["", "X", "RX", "WW", "AR"])
def test_strings_that_are_not_rwbs_are_refused(rwbs: str) -> None:
    assert parse_rwbs(rwbs) is None


def test_an_issue_names_its_task_and_a_completion_does_not() -> None:
    issue, done = parse_line(ISSUE), parse_line(COMPLETE)
    assert issue is not None and done is not None
    assert (issue.issue, issue.comm, issue.pid, issue.sector, issue.size) == (
        True, "fio", 3833, 7904, 4096
    )  # fmt: skip
    assert (done.issue, done.comm, done.pid, done.sector, done.size) == (False, "", 0, 7904, 4096)
    assert (issue.major, issue.minor) == (7, 7)


def test_kernel_threads_fold_into_one_name_per_kind() -> None:
    line = ISSUE.replace("[fio]", "[kworker/u8:3]")
    event = parse_line(line)
    assert event is not None and event.comm == "kworker/u8"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "CPU:1 [LOST 120 EVENTS]",
        ISSUE.replace("block_rq_issue", "block_rq_insert"),
        ISSUE[:80],
        ISSUE.replace("7904 + 8", "7904 + x"),
        ISSUE.replace(" R 4096", " Q 4096"),
        "x" * 5000,
    ],
)
def test_other_lines_are_not_events(line: str) -> None:
    assert parse_line(line) is None


def test_every_recorded_line_parses() -> None:
    for path in sorted(FIXTURES.glob("*.txt")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            assert parse_line(line) is not None, f"{path.name}:{number}: {line}"


def test_a_trace_reads_back_as_requests_with_their_issue_and_completion() -> None:
    """The per-request records a replay takes: who, where, how big, issued and completed."""
    lines = (FIXTURES / "raw" / "mixed.txt").read_text().splitlines()
    found = list(trace_requests(lines))
    assert len(found) == 225 - 4  # every read and write issued; the 4 flushes are not requests
    done = [r for r in found if r.completed_ns is not None]
    assert len(done) == len(found)
    assert all(r.completed_ns is not None and r.completed_ns >= r.issued_ns for r in done)
    dd = next(r for r in found if r.comm == "dd")
    assert (dd.major, dd.minor, dd.rwbs, dd.size) == (7, 3, "RA", 16384)
    assert dd.sector == 65536 and dd.pid > 0
    assert {r.comm for r in found} >= {"dd", "fio"}


def test_a_request_never_seen_completed_is_kept_last() -> None:
    issue = parse_record(ISSUE)
    assert issue is not None
    (only,) = trace_requests([ISSUE])
    assert only.completed_ns is None and only.issued_ns == issue[0]
