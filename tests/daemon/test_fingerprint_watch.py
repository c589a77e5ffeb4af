"""The counter fingerprint and the "moved" decision, on /proc/diskstats recorded every 0.5 s
on a loop device while fio ran A (4 KiB random reads, 16 deep), B (1 MiB sequential reads,
2 deep) and A again, on a shared machine (load average about 18): A's own rate swung by a
factor of two from one interval to the next (tests/fixtures/daemon/diskstats-a-b-a.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

from tuner.daemon.fingerprint_watch import (
    CounterPrint,
    FingerprintWatch,
    counter_print,
    moves,
    prints_of,
)
from tuner.trials.activity import Activity, activity
from tuner.trials.diskstats import read_counters

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "daemon"


def recorded(tmp_path: Path) -> list[tuple[float, Activity]]:
    """The recording as (time, activity of the interval ending then), read through the same
    /proc/diskstats parser the daemon uses."""
    text = (FIXTURES / "diskstats-a-b-a.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    out: list[tuple[float, Activity]] = []
    before = None
    for row in rows:
        path = tmp_path / "diskstats"
        path.write_text(row["line"] + "\n")
        now = read_counters(["loopX"], path)["loopX"]
        if before is not None:
            out.append((row["t"], activity(before[1], now, row["t"] - before[0])))
        before = (row["t"], now)
    return out


def replay(tmp_path: Path, window: int = 3) -> list[tuple[float, str]]:
    """The recording through a watch, a capture taken whenever one is due."""
    watch = FingerprintWatch(window, history=1200)
    due = []
    for t, item in recorded(tmp_path):
        why = watch.add(counter_print([item], 0.5))
        if why is not None:
            due.append((t, why))
            watch.captured()
    return due


def test_a_b_a_gives_three_captures_and_none_for_a_rate_swinging_under_load(
    tmp_path: Path,
) -> None:
    due = replay(tmp_path)
    assert [t for t, _ in due] == [3.523, 14.094, 23.109], due
    first, to_b, back_to_a = (why for _, why in due)
    assert first.startswith("a workload held")
    assert "queue depth" in to_b
    assert "request size 391 -> 4 KiB" in back_to_a and "queue depth" in back_to_a


def test_the_counter_print_is_what_the_fingerprint_calls_them(tmp_path: Path) -> None:
    prints = prints_of({"loopX": [a for _, a in recorded(tmp_path)]}, 0.5)
    a_part, b_part = prints[2:10], prints[24:34]
    assert {round(p.request_kb) for p in a_part} == {4}
    assert {round(p.request_kb) for p in b_part} == {512}  # 1 MiB reads split by the loop device
    assert all(p.read_share == 1.0 for p in prints)
    assert min(p.depth for p in a_part) > max(p.depth for p in b_part)
    assert counter_print([Activity(0, 0, 0, 0, 0, 0, 0, 0)], 0.5) is None  # idle: no print


def steady(requests: float, request_kb: float = 16.0, depth: float = 1.0) -> CounterPrint:
    return CounterPrint(request_kb, 0.5, depth, requests / 5, requests)


def test_a_few_requests_a_interval_are_not_a_move_but_many_are() -> None:
    """Identical intervals have no spread: the counting noise (1/sqrt(N)) is the floor. A rate
    up 30 % over 20 requests an interval is counting noise; over 20,000 it is a move."""
    few = [steady(20)] * 5
    assert moves(few, [steady(26)] * 3) == []
    many = [steady(20_000)] * 5
    (moved,) = moves(many, [steady(26_000)] * 3)
    assert moved.feature == "request rate" and moved.z > 4


def test_nothing_moves_before_a_reference_exists() -> None:
    watch = FingerprintWatch(window=3, history=20)
    reasons = [watch.add(steady(1000)) for _ in range(3)]
    assert reasons[:2] == [None, None] and reasons[2] is not None  # the first workload
    watch.captured()
    # One more interval than the window: a reference of one, too few to judge by.
    assert watch.add(steady(1000, request_kb=512)) is None
    assert watch.add(None) is None  # an idle interval is neither evidence nor a break
