"""What a person watches during a tune: a progress bar and a live trial table on a terminal,
one plain line per trial when piped (tuner/tune/progress.py says what the lines hold)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tuner.console import plain, plain_cells
from tuner.tunables.access import format_value
from tuner.tune import guards
from tuner.tune.objective import objective_named
from tuner.tune.progress import TrialProgress, duration
from tuner.tune.result import TrialRecord, TuneResult

_SHOWN = 12  # the last trials stay on screen; the JSON has them all


def _short(settings: dict[tuple[str, str], Any]) -> str:
    return "  ".join(
        f"{key.split('.')[-1]}={format_value(value)}" for (key, _), value in settings.items()
    )


class TuneView:
    """A live display when `enabled` (a terminal); with `lines`, one plain line per trial
    instead (piped output: no control characters); silent with neither."""

    def __init__(self, console: Console, budget: int, enabled: bool, lines: bool = False) -> None:
        self.console = console
        self.enabled = enabled
        self.lines = lines and not enabled
        self.records: list[TrialRecord] = []
        self.best = 0.0
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("trial {task.completed} of ~{task.total}"),
            TextColumn("{task.fields[length]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[left]}"),
            console=console,
        )
        self.task = self.bar.add_task("tuning", total=budget, length="", left="")
        self.heard = False  # whether the search reports its progress (TrialProgress)
        self.live = Live(self._render(), console=console, refresh_per_second=4, transient=False)

    def __enter__(self) -> TuneView:
        if self.enabled:
            self.live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.enabled:
            self.live.__exit__(kind, error, trace)

    def trial(self, record: TrialRecord) -> None:
        """Show one finished trial in the table."""
        self.records.append(record)
        if not self.heard and record.phase in ("initial", "search"):
            self.bar.advance(self.task)  # a search that reports no progress: its budget
        if not record.set_aside:
            self.best = max(self.best, record.mbps)
        self.bar.update(self.task, description=f"best {self.best:.1f} MB/s")
        if self.enabled:
            self.live.update(self._render())

    def progress(self, where: TrialProgress) -> None:
        """Trial n of about N, its length and the time left: the bar, or one plain line."""
        self.heard = True
        self.bar.update(self.task, completed=where.number, total=where.total,
                        length=f"{where.phase} {where.length.describe()}",
                        left=f"about {duration(where.left_s)} left")  # fmt: skip
        if self.enabled:
            self.live.update(self._render())
        elif self.lines:
            self.console.print(plain(where.line()), soft_wrap=True, highlight=False)

    def _render(self) -> Group:
        table = Table(expand=True)
        for column in ("#", "phase", "settings", "MB/s", "IOPS", "device/app", "s", "note"):
            table.add_column(column)
        for r in self.records[-_SHOWN:]:
            style = "bold green" if r.mbps == self.best and not r.set_aside else ""
            note = f"{r.flagged} ({r.told})" if r.flags and r.told != "-" else r.flagged or ""
            table.add_row(*plain_cells(str(r.number), r.phase, _short(r.settings), f"{r.mbps:.1f}",
                          f"{r.iops:.0f}", _amplification(r.amplification),
                          f"{r.seconds:.1f}", note), style=style)  # fmt: skip
        return Group(self.bar, table)


def _amplification(value: float | None) -> str:
    return "-" if value is None else f"x{value:.2f}"


def render_summary(result: TuneResult) -> Table:
    """The outcome in one table: baseline, best, gain with its interval, what would change,
    and what was set aside and why."""
    shown = objective_named(result.objective).shown
    table = Table(title=plain(f"tune {result.workload} on {result.target}"), title_justify="left")
    table.add_column("")
    table.add_column("value")
    for label, settings, score, cv, mbps in (
        ("baseline", result.baseline_settings, result.baseline_score, result.baseline_cv,
         result.baseline_mbps),
        ("best" if result.chosen else "best tried", result.best_settings, result.best_score,
         result.best_cv, result.best_mbps),
    ):  # fmt: skip
        figure = f"{shown(score)} (cv {cv:.1%})"
        if result.unit != "MB/s":
            figure += f", {mbps:.1f} MB/s"
        amp = result.amplification_of(settings)
        if amp is not None:
            figure += f", the device moved {amp:.2f} bytes per byte read or written"
        table.add_row(*plain_cells(label, figure))
    table.add_row(
        *plain_cells(
            "gain",
            f"x{result.gain:.3f}, 95% interval x{result.ci[0]:.3f} .. x{result.ci[1]:.3f}"
            + (
                ", at least: the baseline's window closed with its readahead still in flight, "
                "so the gain is over what the device read for it"
                if result.at_least
                else ""
            ),
        )
    )
    if result.chosen:
        verdict = "recommended"
    elif result.ci[1] < 1.0:
        verdict = "kept the baseline: the best tried measured slower than it"
    else:
        verdict = "kept the baseline: no gain beyond the noise"
    table.add_row(*plain_cells("verdict", verdict))
    for (key, target), value in result.changes().items():
        table.add_row(
            *plain_cells(
                f"{key} on {target}",
                f"{format_value(result.baseline_settings.get((key, target)))} -> "
                f"{format_value(value)}",
            )
        )
    if result.left_out:
        table.add_row(*plain_cells("left out", f"{_short(result.left_out)} (no measurable gain)"))
    if result.cache_note:
        table.add_row(*plain_cells("cache", result.cache_note))
    if result.judged:
        table.add_row(*plain_cells("workload", result.judged))
    aside = result.set_aside()
    if aside:
        reasons: dict[str, list[str]] = {}
        for record in aside:
            for flag in guards.disqualifying(record.flags):
                reasons.setdefault(flag.kind, []).append(f"#{record.number}")
        table.add_row(
            *plain_cells(
                "set aside",
                f"{len(aside)} trial(s) whose figures were not the device's, never a winner: "
                + "; ".join(f"{kind} {' '.join(numbers)}" for kind, numbers in reasons.items()),
            )
        )
    for refusal in result.refused:
        table.add_row(*plain_cells("refused", refusal))
    if result.screen is not None and result.decide is not None:
        table.add_row(*plain_cells("trials' length",
                                   f"searched at {result.screen.describe()}, confirmed at "
                                   f"{result.decide.describe()} (ramp + measured): the claim "
                                   "is the confirmation's"))  # fmt: skip
    for settings, differs in result.disagreements:
        table.add_row(*plain_cells("short and long disagree",
                                   f"{_short(settings)}: {differs.line()}"))  # fmt: skip
    if result.budget:
        table.add_row(*plain_cells("time plan", result.budget))
    table.add_row(
        *plain_cells(
            "trials", f"{len(result.trials)} in {result.seconds:.0f} s ({result.stop_reason})"
        )
    )
    return table


def print_changes(console: Console, result: TuneResult) -> None:
    """The recommended changes as a plain block after the summary, one whole, copy-pasteable
    line each ('block.read_ahead_kb=4096 on loop0 (was 128)'), as advise ends; nothing when
    the baseline is kept."""
    changes = result.changes()
    if not changes:
        return
    console.print()
    console.print(Text(f"changes ({len(changes)})", style="bold"))
    for (key, target), value in changes.items():
        where = "" if target == "host" else f" on {target}"
        was = format_value(result.baseline_settings.get((key, target)))
        console.print(Text(f"{key}={format_value(value)}{where} (was {was})"), soft_wrap=True,
                      highlight=False)  # fmt: skip
