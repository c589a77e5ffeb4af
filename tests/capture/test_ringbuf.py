"""Decoding the kernel's ring-buffer pages: on pages recorded on this kernel, beside the text
the kernel printed for the same events (tests/fixtures/capture/raw/record.py made both)."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest

from tests.capture.samples import LOOP
from tuner.capture.events import (
    Completion,
    Issue,
    _text,
    clean_comm,
    parse_record,
    split,
    trace_lines,
)
from tuner.capture.ringbuf import (
    BadPage,
    Decoder,
    parse_event_format,
    parse_page_format,
)
from tuner.capture.session import Collector, Device
from tuner.errors import BadInput

RAW = Path(__file__).parents[1] / "fixtures" / "capture" / "raw"
DEVICE = Device(name="loop3", major=7, minor=3, size_bytes=64 << 20, kind="ssd")
"""The device the pages were recorded on."""


def _decoder(issue: str | None = None, complete: str | None = None) -> Decoder:
    return Decoder(
        parse_page_format((RAW / "header_page").read_text(), "header_page"),
        parse_event_format(issue or (RAW / "block_rq_issue.format").read_text(), "issue"),
        parse_event_format(complete or (RAW / "block_rq_complete.format").read_text(), "done"),
    )


def _pages() -> list[bytes]:
    decoder = _decoder()
    return [page for cpu in sorted(RAW.glob("mixed.cpu*.raw"))
            for page in decoder.split(cpu.read_bytes())]  # fmt: skip


def _decoded(micro: bool = False) -> tuple[list[Issue], list[Completion]]:
    """Every page's records, the CPUs merged in time order; times rounded to the microsecond
    as the kernel prints them when `micro`."""
    decoder = _decoder()
    issues: list[Issue] = []
    completions: list[Completion] = []
    for page in _pages():
        found, ended = decoder.decode(page)
        issues += found
        completions += ended
    issues.sort(key=lambda r: r[0])
    completions.sort(key=lambda r: r[0])
    if micro:
        issues = [((r[0] + 500) // 1000 * 1000, *r[1:]) for r in issues]  # type: ignore[misc]
        completions = [((r[0] + 500) // 1000 * 1000, *r[1:]) for r in completions]  # type: ignore[misc]
    return issues, completions


def _text_records() -> tuple[list[Issue], list[Completion]]:
    lines = (RAW / "mixed.txt").read_text().splitlines()
    records = [parse_record(line) for line in lines]
    assert None not in records
    return split(r for r in records if r is not None)


def test_every_record_decodes_to_what_the_kernel_printed() -> None:
    issues, completions = _decoded(micro=True)
    t_issues, t_completions = _text_records()
    assert len(issues) == len(t_issues) > 200 and len(completions) == len(t_completions) > 200
    as_text = [(ts, dev, _text(rwbs), sector, size, clean_comm(comm), pid)
               for ts, dev, rwbs, sector, size, comm, pid in issues]  # fmt: skip
    assert as_text == [(*r[:5], clean_comm(r[5]), r[6]) for r in t_issues]
    assert [(*r[:2], _text(r[2]), *r[3:]) for r in completions] == t_completions
    # the pages hold what the recording did: dd's readahead, fio's mix, a flush
    assert {clean_comm(r[5]) for r in issues} >= {"dd", "fio"}
    assert {_text(r[2]) for r in issues} >= {"RA", "R", "WS", "FF"}


def test_the_pages_give_the_statistics_the_text_gives() -> None:
    text = Collector([DEVICE])
    for line in (RAW / "mixed.txt").read_text().splitlines():
        text.line(line)
    pages = Collector([DEVICE])
    pages.add(*_decoded(micro=True))
    a, b = text.fingerprint(2.0).data, pages.fingerprint(2.0).data
    assert a == b
    assert a["events"] == 454 and a["unparsed"] == 0
    dev = a["devices"][0]
    assert {p["comm"] for p in dev["by_process"]} >= {"dd", "fio"}


def test_nanosecond_times_move_no_figure_but_the_finest() -> None:
    """The pages keep nanoseconds where the text rounds to microseconds: the same requests,
    sizes, mix and streams; depth within a hair."""
    micro = Collector([DEVICE])
    micro.add(*_decoded(micro=True))
    nano = Collector([DEVICE])
    nano.add(*_decoded())
    a, b = micro.fingerprint(2.0).busiest(), nano.fingerprint(2.0).busiest()
    assert a is not None and b is not None
    for key in ("requests", "bytes", "sizes", "read_share", "sequential_share", "streams",
                "footprint_bytes", "flushes", "cache"):  # fmt: skip
        assert a[key] == b[key], key
    assert a["queue_depth"]["mean"] == pytest.approx(b["queue_depth"]["mean"], rel=0.01)


def test_a_kept_trace_reads_back_as_the_same_records() -> None:
    issues, completions = _decoded(micro=True)
    records = [parse_record(line.rstrip("\n")) for line in trace_lines(issues, completions)]
    assert None not in records
    back_issues, back_completions = split(r for r in records if r is not None)
    assert back_completions == [(*r[:2], _text(r[2]), *r[3:]) for r in completions]
    assert [(*r[:5], clean_comm(r[5]), r[6]) for r in back_issues] == [
        (*r[:2], _text(r[2]), *r[3:5], clean_comm(r[5]), r[6]) for r in issues
    ]


def _walk(page: bytes) -> list[tuple[int, int]]:
    """(word, type_len) of each record header in a page, walked as the kernel lays them."""
    commit = struct.unpack_from("<Q", page, 8)[0] & 0x3FFFFFFF
    words = memoryview(page).cast("I")
    at, stop, found = 4, (16 + commit) // 4, []
    while at < stop:
        kind = words[at] & 31
        found.append((at, kind))
        at += 1 + (kind if 0 < kind <= 28 else 1 if kind in (30, 31) else words[at + 1] // 4)
    return found


def test_a_time_extend_carries_the_clock_over_a_pause() -> None:
    """The recording paused 0.4 s, more than a record's 27-bit delta (134 ms) holds: the pages
    hold time extends, and the records after them are where the text says (above)."""
    kinds = [kind for page in _pages() for _, kind in _walk(page)]
    assert 30 in kinds
    issues, _ = _decoded(micro=True)
    assert max(b[0] - a[0] for a, b in itertools.pairwise(issues)) > 1 << 27


def test_a_truncated_page_is_refused() -> None:
    page = _pages()[0]
    decoder = _decoder()
    with pytest.raises(BadPage, match="truncated"):
        decoder.decode(page[:200])
    with pytest.raises(BadPage, match="truncated"):
        decoder.decode(page[:10])
    with pytest.raises(BadPage, match="whole pages"):
        list(decoder.split(page + page[:100]))


def test_a_record_running_past_the_page_is_refused() -> None:
    page = bytearray(_pages()[0])
    last, _ = _walk(bytes(page))[-1]
    # the last record's header says it is 28 words long: past the commit
    words = memoryview(page).cast("I")
    words[last] = (words[last] & ~31) | 28
    with pytest.raises(BadPage, match="runs past"):
        _decoder().decode(bytes(page))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("sector;", "start;"), "no field sector"),
        (lambda t: t.replace("offset:16;\tsize:8;", "offset:16;\tsize:4;"), "4 bytes, expected 8"),
        (lambda t: t.replace("offset:24;", "offset:8;"), "order|overlap"),
        (lambda t: t.replace("ID: ", "id "), "no name or ID"),
        (lambda t: "name: x\nID: 3\n", "no field lines"),
    ],
)
def test_an_unknown_format_is_refused(edit: object, message: str) -> None:
    text = (RAW / "block_rq_issue.format").read_text()
    with pytest.raises(BadInput, match=message):
        _decoder(issue=edit(text))  # type: ignore[operator]


def test_a_header_page_it_does_not_know_is_refused() -> None:
    text = (RAW / "header_page").read_text().replace("commit;", "committed;")
    with pytest.raises(BadInput, match="no commit field"):
        parse_page_format(text, "header_page")


def test_the_loop_fixture_device_is_not_the_pages_device() -> None:
    """Records of a device the capture did not name are never counted (the kernel filter
    should have kept them out)."""
    other = Collector([LOOP])
    other.add(*_decoded())
    found = other.fingerprint(2.0)
    assert found.data["events"] == 0 and found.data["unparsed"] == 454


def test_a_larger_sub_buffer_page_decodes_the_same() -> None:
    """Kernels since 6.8 let an instance's pages be larger (buffer_subbuf_size_kb; the capture
    asks for 64 KiB): header_page then says so, and the same records in a 64 KiB page decode
    the same."""
    header = (RAW / "header_page").read_text().replace("size:4080;", "size:65520;")
    big = Decoder(
        parse_page_format(header, "header_page"),
        parse_event_format((RAW / "block_rq_issue.format").read_text(), "issue"),
        parse_event_format((RAW / "block_rq_complete.format").read_text(), "done"),
    )
    assert big.page_bytes == 64 << 10
    page = _pages()[0]
    grown = page + bytes((64 << 10) - len(page))
    assert big.decode(grown) == _decoder().decode(page)
    assert list(big.split(grown * 2)) == [grown, grown]
