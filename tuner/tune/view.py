"""What a person watches during a tune: a progress bar over the budget and a live trial table."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tuner.tune.result import TrialRecord, TuneResult

_SHOWN = 12  # the last trials stay on screen; the JSON has them all


def _short(settings: dict[tuple[str, str], Any]) -> str:
    return "  ".join(f"{key.split('.')[-1]}={value}" for (key, _), value in settings.items())


class TuneView:
    """A live display; silent when `enabled` is False (--json, or output is not a terminal)."""

    def __init__(self, console: Console, budget: int, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self.records: list[TrialRecord] = []
        self.best = 0.0
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} trials"),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.progress.add_task("tuning", total=budget)
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
        """Show one finished trial and advance the bar."""
        self.records.append(record)
        if record.phase in ("initial", "search"):
            self.progress.advance(self.task)
        self.best = max(self.best, record.mbps)
        self.progress.update(self.task, description=f"best {self.best:.1f} MB/s")
        if self.enabled:
            self.live.update(self._render())

    def _render(self) -> Group:
        table = Table(expand=True)
        for column in ("#", "phase", "settings", "MB/s", "s", "note"):
            table.add_column(column)
        for r in self.records[-_SHOWN:]:
            style = "bold green" if r.mbps == self.best else ""
            table.add_row(str(r.number), r.phase, _short(r.settings), f"{r.mbps:.1f}",
                          f"{r.seconds:.1f}", r.flagged or "", style=style)  # fmt: skip
        return Group(self.progress, table)


def render_summary(result: TuneResult) -> Table:
    """The outcome in one table: baseline, best, gain with its interval, what would change."""
    table = Table(title=f"tune {result.workload} on {result.target}", title_justify="left")
    table.add_column("")
    table.add_column("value")
    table.add_row("baseline", f"{result.baseline_mbps:.1f} MB/s (cv {result.baseline_cv:.1%})")
    table.add_row("best", f"{result.best_mbps:.1f} MB/s (cv {result.best_cv:.1%})")
    table.add_row(
        "gain",
        f"x{result.gain:.3f}, 95% interval x{result.ci[0]:.3f} .. x{result.ci[1]:.3f}",
    )
    verdict = "recommended" if result.chosen else "kept the baseline: no gain beyond the noise"
    table.add_row("verdict", verdict)
    for (key, target), value in result.changes().items():
        table.add_row(
            f"{key} on {target}", f"{result.baseline_settings.get((key, target))} -> {value}"
        )
    if result.left_out:
        table.add_row("left out", f"{_short(result.left_out)} (no measurable gain)")
    table.add_row(
        "trials", f"{len(result.trials)} in {result.seconds:.0f} s ({result.stop_reason})"
    )
    return table
