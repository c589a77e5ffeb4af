"""The fingerprint read back: by allow-list, bounded, refused in one line; and its distance."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.capture.samples import FIXTURES, LOOP, collect
from tests.cli import iotuner
from tuner.capture.fingerprint import MAX_BYTES, check, distance, load
from tuner.capture.session import Collector
from tuner.errors import BadInput


def _doc(name: str = "random-mix") -> dict[str, Any]:
    return copy.deepcopy(dict(collect(name)[1].data))


def test_a_written_fingerprint_reads_back_the_same(tmp_path: Path) -> None:
    found = collect("buffered-streams")[1]
    path = tmp_path / "fp.json"
    path.write_text(found.to_json())
    assert load(path).data == found.data


def test_it_holds_statistics_only() -> None:
    text = collect("fdatasync")[1].to_json()
    # no file, no directory, no offset of a request: the captures ran on /tmp/... files
    assert "/tmp" not in text and "sector" not in text


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    where = doc
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("version",), 2, "version"),
        (("schema",), "other", "schema"),
        (("devices", 0, "read_share"), 1.5, "out of range"),
        (("devices", 0, "read_share"), "0.5", "expected a number"),
        (("devices", 0, "requests"), True, "whole number"),
        (("devices", 0, "requests"), 1.5, "whole number"),
        (("devices", 0, "sizes", "read"), {"4095": 1.0}, "power-of-two"),
        (("devices", 0, "sizes", "read"), {"../x": 1.0}, "power-of-two"),
        (("devices", 0, "class"), "tape", "expected one of"),
        (("devices", 0, "device"), "sda\nb", "device name"),
        (("devices", 0, "by_process", 0, "comm"), "x" * 40, "process name"),
        (("devices", 0, "file"), "/etc/passwd", "not a fingerprint field"),
        (("devices",), [{}] * 17, "more than 16"),
        (("kernel",), "6.18; rm -rf /", "kernel release"),
        (("devices", 0, "read_ahead_kb"), -1, "out of range"),
        (("devices", 0, "read_ahead_kb"), "128", "whole number"),
        (("devices", 0, "by_process", 0, "read_ahead_kb"), 128, "not a fingerprint field"),
    ],
)
def test_a_wrong_field_is_refused_naming_it(path: tuple[Any, ...], value: Any, says: str) -> None:
    doc = _set(_doc(), path, value)
    with pytest.raises(BadInput) as err:
        check(doc, "fp.json")
    message = str(err.value)
    assert says in message and "\n" not in message
    assert message.startswith("fp.json")


def test_the_devices_readahead_is_kept_and_may_be_absent() -> None:
    """Fingerprints written before it was recorded still load; a recorded one reads back."""
    doc = _doc()
    assert "read_ahead_kb" not in check(doc, "old.json").devices[0]
    doc["devices"][0]["read_ahead_kb"] = 128
    assert check(doc, "new.json").devices[0]["read_ahead_kb"] == 128


def test_a_missing_field_is_refused() -> None:
    doc = _doc()
    del doc["devices"][0]["streams"]
    with pytest.raises(BadInput, match=r"fp.json.devices\[0\].streams: missing"):
        check(doc, "fp.json")


@pytest.mark.parametrize(
    "text", ["", "[]", "{", '{"version": NaN}', "1e999", "[" * 100000, "\ud800"]
)
def test_text_that_is_not_a_fingerprint_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fp.json"
    path.write_text(text, errors="surrogatepass")
    with pytest.raises(BadInput):
        load(path)


def test_a_large_file_or_a_fifo_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(" " * (MAX_BYTES + 1))
    with pytest.raises(BadInput, match="larger than"):
        load(big)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        load(fifo)


def test_the_command_refuses_a_bad_fingerprint_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fp.json"
    path.write_text(json.dumps(_set(_doc(), ("version",), 9)))
    done = iotuner("capture", "--reproduce", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "version" in done.stderr
    assert done.stdout == ""


def test_distance_tells_workloads_apart() -> None:
    mix, streams, writes = (collect(n)[1] for n in ("random-mix", "buffered-streams", "fdatasync"))
    assert distance(mix, mix) == 0
    assert distance(mix, streams) == distance(streams, mix)
    for other in (streams, writes):
        assert distance(mix, other) > 0.25
    assert distance(streams, writes) > 0.25


def test_a_recording_cut_short_is_near_the_whole() -> None:
    whole = collect("buffered-streams")[1]
    lines = (FIXTURES / "buffered-streams.txt").read_text().splitlines()
    part = Collector([LOOP])
    for line in lines[: len(lines) * 2 // 3]:
        part.line(line)
    near = distance(whole, part.fingerprint(2.0))
    assert near < 0.1
    assert near < distance(whole, collect("random-mix")[1]) / 3


def test_an_idle_capture_is_far_from_a_busy_one() -> None:
    doc = _doc()
    idle = _set(copy.deepcopy(doc), ("devices",), [])
    assert distance(check(idle, "a"), check(doc, "b")) == 1.0
    assert distance(check(idle, "a"), check(idle, "b")) == 0.0
