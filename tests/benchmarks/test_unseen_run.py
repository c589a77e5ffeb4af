"""The unseen benchmark's run in slices: its draws saved after each one, a resumed run skipping
what a file holds (and refusing another commit's draws), a slice of the sequence, a summary
over several files; and the pace cuts: a side that is the start measured once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import unseen
from benchmarks.unseen import (
    Draw,
    _rounds,
    is_start,
    load,
    parse_args,
    readahead_inert,
    save,
    to_run,
)
from tests.sysfs_tree import SysTree


def done(seed: int, index: int, commit: str = "abc", gain: float = 1.0) -> Draw:
    made = Draw(seed, "hdd", "kernel", "random-readers", "x", index=index, commit=commit)
    made.samples.update(defaults=[10.0, 10.0], plan=[10.0 * gain] * 2, tuned=[10.0], grid=[10.0])
    made.seconds, made.tune_s = 200.0 + seed, 90.0
    made.phases = {"lab up": 3.0, "tune": 90.0, "grid": 60.0, "rounds": 40.0}
    return made


def test_a_saved_run_loads_as_it_was_written(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    first = done(3, 3)
    first.ci, first.same = (0.9, 1.1), {"grid": "defaults"}
    first.tune = {"chosen": False, "trials": [{"number": 1, "flags": ["readahead"]}]}
    save(path, [first, done(4, 4)])
    again = load(path)
    assert again == [first, done(4, 4)] and again[0].ci == (0.9, 1.1)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no part file left behind
    # a file written before draws kept their tune's own --json still loads
    old = json.loads(path.read_text())
    for doc in old:
        doc.pop("tune")
    path.write_text(json.dumps(old))
    assert load(path)[0].tune is None


def test_a_file_that_is_not_a_run_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    for text in ("{}", '[{"seed": 1, "bogus": 2}]', "not json\nat all"):
        path.write_text(text)
        with pytest.raises(unseen.BadInput, match="not a file of unseen draws") as err:
            load(path)
        assert "\n" not in str(err.value)


def test_a_slice_and_a_resume_run_only_the_draws_owed() -> None:
    args = parse_args(["--draws", "40", "--seed", "100", "--first", "10", "--count", "3"])
    assert to_run(args, []) == [(10, 110), (11, 111), (12, 112)]
    assert to_run(args, [done(111, 11)]) == [(10, 110), (12, 112)]
    whole = parse_args(["--draws", "5", "--seed", "7"])
    assert to_run(whole, [done(7, 0), done(9, 2)]) == [(1, 8), (3, 10), (4, 11)]
    with pytest.raises(SystemExit):
        parse_args(["--count", "-1"])


def test_a_resume_refuses_another_commits_draws_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    save(path, [done(0, 0, commit="0123456789ab")])
    monkeypatch.setattr(unseen.os, "geteuid", lambda: 0)
    monkeypatch.setattr(unseen, "commit_of", lambda: "fedcba987654")
    with pytest.raises(SystemExit) as exit_:
        unseen.main(["--draws", "2", "--resume", str(path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "0123456789ab" in err and "fedcba987654" in err and "--mix-commits" in err
    assert len(err.splitlines()) == 1
    assert len(load(path)) == 1  # the file as it was


def test_a_summary_judges_several_files_and_names_their_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "a.json", tmp_path / "b.json"
    save(one, [done(0, 0, "aaa"), done(1, 1, "aaa", gain=0.9)])
    save(two, [done(2, 2, "bbb")])
    unseen.main(["--summary", str(two), str(one)])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "seed" not in line]
    assert [row.split("|")[1].strip() for row in rows] == ["0", "1", "2"]  # the sequence's order
    assert "3 draws, 3 measured" in out
    assert "commits: aaa (2 draws), bbb (1 draws)" in out
    assert "where a draw's time goes (median s): lab up 3, tune 90, grid 60, rounds 40" in out
    save(two, [done(1, 1, "bbb")])
    with pytest.raises(SystemExit) as exit_:
        unseen.main(["--summary", str(one), str(two)])
    assert exit_.value.code == 2 and "seed 1 is in two" in capsys.readouterr().err


def test_a_side_that_is_the_start_is_measured_once_as_the_defaults() -> None:
    made = Draw(1, "hdd", "kernel", "streams", "x")
    runs: list[str] = []

    def side(name: str, figure: float) -> object:
        return lambda: runs.append(name) or figure

    sides = {"defaults": side("defaults", 10.0), "plan": side("plan", 20.0),
             "tuned": side("tuned", 5.0), "grid": side("grid", 30.0)}  # fmt: skip
    _rounds(made, sides, 3, {"tuned": "defaults"})  # type: ignore[arg-type]
    assert runs.count("tuned") == 0 and runs.count("defaults") == 3
    assert made.samples["tuned"] == made.samples["defaults"] == [10.0] * 3
    assert made.same == {"tuned": "defaults"}
    assert "(the start)" in unseen.table([made]).splitlines()[2]
    assert json.loads(json.dumps(made.same)) == {"tuned": "defaults"}


def test_readahead_is_inert_for_direct_jobs_and_writers_only() -> None:
    assert readahead_inert("rw=randread\nioengine=libaio\ndirect=1\n")
    assert readahead_inert("rw=write\nbs=4k\ndirect=0\nfdatasync=1\n")
    assert not readahead_inert("rw=read\nbs=1m\ndirect=0\n")
    assert not readahead_inert("rw=randread\nioengine=mmap\n")
    assert not readahead_inert("rw=randrw\nrwmixread=80\ndirect=0\nfsync=1\n")


def test_the_start_is_told_from_a_change_on_a_fixture_host(host: SysTree) -> None:
    """TuneD's 4096 KB on a start already at 4096 KB is the start; 8192 is not, nor is a
    scheduler the disk is not running, nor a setting the host cannot read."""
    from tuner.tunables.engine import TunableEngine

    host.file("sys/block/sda/queue/read_ahead_kb", 4096)
    engine = TunableEngine(host.root, None)
    ra, sched = ("block.read_ahead_kb", "sda"), ("block.scheduler", "sda")
    assert is_start(engine, {}) and is_start(engine, {ra: 4096, sched: "mq-deadline"})
    assert not is_start(engine, {ra: 8192})
    assert not is_start(engine, {ra: 4096, sched: "bfq"})
    assert not is_start(engine, {("block.read_ahead_kb", "nosuchdisk"): 4096})
