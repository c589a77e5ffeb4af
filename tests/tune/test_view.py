"""What a person reads after a tune: the summary, and the changes whole on lines of their own."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from tuner.trials.flags import PAGE_CACHE, Flag
from tuner.tune.result import TrialRecord, TuneResult, result_document
from tuner.tune.view import print_changes, render_summary

RA, TCP = ("block.read_ahead_kb", "loop0"), ("net.ipv4.tcp_rmem", "host")


def result(chosen: bool) -> TuneResult:
    base = {RA: 128, TCP: (4096, 131072, 6291456)}
    best = {RA: 4096, TCP: (4096, 131072, 125000000)}
    trials = (
        TrialRecord(1, base, 52.4, None, 4.0, "baseline", amplification=0.97),
        TrialRecord(
            2,
            {RA: 40960, TCP: base[TCP]},
            900.0,
            None,
            4.0,
            "search",
            flags=(Flag(PAGE_CACHE, "device moved 9% of fio's bytes: page cache"),),
            told="penalised",
            set_aside=True,
        ),
        TrialRecord(3, base, 52.5, None, 4.0, "confirm", amplification=0.97),
        TrialRecord(4, best, 99.8, None, 4.0, "confirm", amplification=1.0),
    )
    return TuneResult("/dev/loop0", "stream-read", "throughput", base, 52.5, 0.004, best, 99.8,
                      0.004, 1.901, (1.88, 1.93), chosen, "trial budget spent", trials)  # fmt: skip


def printed(width: int, draw: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False)
    draw(console)  # type: ignore[operator]
    return out.getvalue()


def test_the_changes_print_whole_at_80_columns_piped() -> None:
    text = printed(80, lambda c: print_changes(c, result(True)))
    assert text.splitlines()[1:] == [
        "changes (2)",
        "block.read_ahead_kb=4096 on loop0 (was 128)",
        "net.ipv4.tcp_rmem=4096 131072 125000000 (was 4096 131072 6291456)",
    ]
    assert printed(80, lambda c: print_changes(c, result(False))) == ""


def test_the_summary_names_what_was_set_aside_and_the_amplification() -> None:
    text = printed(120, lambda c: c.print(render_summary(result(True))))
    assert "set aside" in text and "page-cache #2" in text
    assert "52.5 MB/s (cv 0.4%), the device moved 0.97 bytes per byte" in text


def test_a_kept_baseline_says_whether_the_best_tried_was_slower_or_within_noise() -> None:
    slower = dataclasses.replace(result(False), gain=0.901, ci=(0.889, 0.913))
    text = printed(120, lambda c: c.print(render_summary(slower)))
    assert "best tried" in text
    assert "kept the baseline: the best tried measured slower than it" in text
    level = dataclasses.replace(result(False), gain=1.004, ci=(0.99, 1.02))
    assert "no gain beyond the noise" in printed(120, lambda c: c.print(render_summary(level)))
    assert "recommended" in printed(120, lambda c: c.print(render_summary(result(True))))


def test_the_summary_shows_a_target_and_values_holding_markup_as_text() -> None:
    # A fio job's target and a scheduler value are the user's and the host's: `[/]` in the
    # title or a cell was a MarkupError, and "[mq-deadline]" lost its brackets (issue 27).
    sched = ("block.scheduler", "loop0")
    chosen = result(True)
    odd = dataclasses.replace(
        chosen,
        target="/srv/[/]data",
        baseline_settings={**chosen.baseline_settings, sched: "[none]"},
        best_settings={**chosen.best_settings, sched: "[mq-deadline]"},
    )
    text = printed(200, lambda c: c.print(render_summary(odd)))
    assert "tune stream-read on /srv/[/]data" in text
    assert "[none] -> [mq-deadline]" in text


def test_an_at_least_gain_says_it_is_a_lower_bound() -> None:
    """A transient start (tuner/search/confirm.py, transient_ceiling): the reader is told the
    gain is over what the device read for the start, not its figure."""
    bounded = dataclasses.replace(result(True), at_least=True)
    text = " ".join(printed(200, lambda c: c.print(render_summary(bounded))).split())
    assert "x1.901, 95% interval x1.880 .. x1.930, at least:" in text
    plain = " ".join(printed(200, lambda c: c.print(render_summary(result(True)))).split())
    assert "at least" not in plain


def test_a_judged_job_says_which_profile_it_was_judged_as() -> None:
    """A user's --fio-job is judged by what it does (tuner/trials/jobkind.py): the reader sees
    which profile's rules gave its starting point, in the summary and in --json."""
    judged = dataclasses.replace(
        result(True), judged="judged as concurrent-streams: 12 buffered sequential readers"
    )
    text = " ".join(printed(200, lambda c: c.print(render_summary(judged))).split())
    assert "judged as concurrent-streams: 12 buffered sequential readers" in text
    assert result_document(judged)["judged"] == judged.judged
    assert "judged as" not in printed(200, lambda c: c.print(render_summary(result(True))))
    assert result_document(result(True))["judged"] is None
