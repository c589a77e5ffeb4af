"""Findings as people read them: a list grouped by severity, a plain block of changes, and why
rules did not fire.

A list, not a table: a table at 80 columns (or in a file, where rich assumes 80) cuts rule ids
and values to fit its columns. Here prose wraps at spaces under its label, and the lines that
carry something to copy (a rule id, `key=value`) are printed whole, never wrapped or cut: a
terminal may fold them, but what is copied or written to a file is the line as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from tuner.facts.catalog import unknown_hint
from tuner.plan import PlanEntry, SearchRange
from tuner.rules.model import Explanation, Finding, Setting
from tuner.rules.to_plan import plan_from_findings

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_INDENT = 4
_OUTCOMES = (
    ("fired", "fired"),
    ("facts unknown", "could not be evaluated: facts unknown"),
    ("condition false", "condition false"),
    ("no targets", "no targets on this host"),
    ("other workload", "for other workloads"),
)


def source_label(finding: Finding) -> str:
    """The first source as a citation: authors, title, year and where in the paper."""
    return finding.sources[0].citation() if finding.sources else ""


def setting_label(setting: Setting) -> str:
    """One setting as 'block.read_ahead_kb=4096 on sda (was 128)'."""
    where = "" if setting.target == "host" else f" on {setting.target}"
    if setting.bound == "range" and setting.range is not None:
        return f"{setting.key} in [{setting.range[0]}, {setting.range[1]}]{where} (left to tune)"
    was = "" if setting.current is None else f" (was {setting.current})"
    return f"{setting.key}={setting.value}{where}{was}"


def entry_label(entry: PlanEntry) -> str:
    """A change of the plan as 'net.core.rmem_max=125000000 (was 212992)', target when not host."""
    where = "" if entry.target == "host" else f" on {entry.target}"
    was = "" if entry.current is None else f" (was {entry.current})"
    return f"{entry.key}={entry.value}{where}{was}"


def range_label(search: SearchRange) -> str:
    """A range left to the search, as 'block.nr_requests in [32, 1024] on sda'."""
    where = "" if search.target == "host" else f" on {search.target}"
    return f"{search.key} in [{search.low}, {search.high}]{where}"


def print_findings(console: Console, findings: tuple[Finding, ...]) -> None:
    """Every finding, most severe first: heading, evidence, recommendation, settings, source."""
    for severity in ("critical", "warning", "info"):
        rows = [f for f in findings if f.severity == severity]
        if not rows:
            continue
        console.print(Text(f"{severity.upper()} ({len(rows)})", style=_STYLE[severity]))
        for finding in rows:
            _print_finding(console, finding)


def _print_finding(console: Console, f: Finding) -> None:
    heading = Text.assemble(
        (f.rule, "bold"), " on ", (f.target, "cyan"), (f"  [{f.lesson}]", "dim")
    )
    console.print(heading, soft_wrap=True)
    _paragraph(console, "", f.title)
    _paragraph(console, "evidence: ", f.evidence)
    _paragraph(console, "recommend: ", f.recommendation)
    for setting in f.settings:
        console.print(Text(" " * _INDENT + "set: " + setting_label(setting)), soft_wrap=True)
    for citation in citations(f):
        _paragraph(console, "source: ", citation)
    console.print()


def citations(finding: Finding) -> list[str]:
    """One citation per paper, its places in it joined: '..., (2005), Section II.C; Table 1'."""
    places: dict[str, list[str]] = {}
    works: dict[str, str] = {}
    for source in finding.sources:
        works.setdefault(source.paper, source.citation().removesuffix(f", {source.where}"))
        places.setdefault(source.paper, []).append(source.where)
    return [f"{works[paper]}, {'; '.join(where)}" for paper, where in places.items()]


def _paragraph(console: Console, label: str, text: str, indent: int = _INDENT) -> None:
    """Prose under the heading, wrapped at spaces, its continuation lines indented."""
    print_wrapped(console, Text.assemble((label, "dim"), text), indent)


def print_wrapped(console: Console, text: Text, indent: int, hang: int | None = None) -> None:
    """`text` wrapped at spaces to the console's width, its first line indented by `indent`
    and the others by `hang` (default: the same), no line padded with trailing spaces."""
    hang = indent if hang is None else hang
    for number, line in enumerate(text.wrap(console, max(20, console.width - max(indent, hang)))):
        line.rstrip()
        margin = indent if number == 0 else hang
        console.print(Text(" " * margin) + line, soft_wrap=True, highlight=False)


def print_changes(console: Console, findings: tuple[Finding, ...]) -> int:
    """The plain block of changes (what --plan-out writes), one per line; returns how many."""
    plan = plan_from_findings(findings, "host", None)
    if not plan.entries and not plan.search:
        return 0
    console.print()
    if plan.entries:
        console.print(Text(f"changes ({len(plan.entries)})", style="bold"))
        for entry in plan.entries:
            console.print(Text(entry_label(entry)), soft_wrap=True, highlight=False)
    if plan.search:
        console.print(Text(f"left to `iotuner tune` ({len(plan.search)})", style="bold"))
        for search in plan.search:
            console.print(Text(range_label(search)), soft_wrap=True, highlight=False)
    return len(plan.entries)


def unevaluated(explanations: tuple[Explanation, ...]) -> list[tuple[list[str], str]]:
    """Rules whose facts were unknown, grouped by what would let them run: [(rule ids, hint)]."""
    groups: dict[str, list[str]] = {}
    for e in explanations:
        if e.status != "facts unknown":
            continue
        hints = "; ".join(sorted({unknown_hint(fact) for fact in e.unknown})) or e.detail
        groups.setdefault(hints, []).append(e.rule)
    return [(rules, hint) for hint, rules in groups.items()]


@dataclass(frozen=True)
class Inconclusive:
    """A run where most rules for the workload found nothing to look at or lacked facts: a root
    that is not a host (a capture of the wrong thing, no disks), which must never read as clean."""

    ran: int
    concerned: int
    missing: tuple[str, ...]

    def line(self, root: str) -> str:
        """The one line advise prints before anything else."""
        what = ", ".join(f"no {kind}" for kind in self.missing) or "facts unknown"
        return (
            f"only {self.ran} of the {self.concerned} rules for this workload could run on "
            f"{root} ({what}): not a verdict on a host; is it the host's root or capture?"
        )


def inconclusive(explanations: tuple[Explanation, ...]) -> Inconclusive | None:
    """The run's coverage when fewer than half the rules concerned ran on a target, else None.

    Half, because a real host lacks some kinds of target (a VM has no PCIe paths, few hosts
    have arrays) but still gives most rules something to look at: this VM runs 16 of 25.
    """
    concerned = [e for e in explanations if e.status != "other workload"]
    ran = [e for e in concerned if e.status not in ("no targets", "facts unknown")]
    if 2 * len(ran) >= len(concerned):
        return None
    missing = sorted({e.detail.split(" no ", 1)[1].removesuffix(" targets")
                      for e in concerned if e.status == "no targets"})  # fmt: skip
    return Inconclusive(len(ran), len(concerned), tuple(missing))


def print_summary(
    console: Console,
    findings: tuple[Finding, ...],
    explanations: tuple[Explanation, ...],
    explained: bool = False,
) -> None:
    """How many rules ran, and which could not be evaluated and what would let them."""
    ran = [e for e in explanations if e.status not in ("other workload", "facts unknown")]
    groups = unevaluated(explanations)
    skipped = sum(len(rules) for rules, _ in groups)
    # An inconclusive run has said so on its first line; "no findings" would read as clean.
    if not findings and inconclusive(explanations) is None:
        what = "rule" if len(ran) == 1 else "rules"
        console.print(
            f"No findings from the {len(ran)} {what} that could be evaluated on this host.",
            highlight=False,
        )
    if not skipped:
        return
    what = "rule" if skipped == 1 else "rules"
    more = "" if explained else "; details with --explain"
    console.print(
        Text(f"{skipped} {what} could not be evaluated (facts unknown{more}):"),
        style="yellow" if not findings else "",
    )
    for rules, hint in groups:
        print_wrapped(console, Text.assemble((", ".join(rules), "bold"), f": {hint}"), 2, 4)


def print_explanations(console: Console, explanations: tuple[Explanation, ...]) -> None:
    """Every rule with what happened to it, grouped by outcome."""
    for status, title in _OUTCOMES:
        rows = [e for e in explanations if e.status == status]
        if rows:
            console.print(Text(f"rules {title} ({len(rows)})", style="bold"))
            for line in _explanation_lines(rows):
                print_wrapped(console, line, 2, 4)
    others = [e for e in explanations if e.status not in {s for s, _ in _OUTCOMES}]
    for line in _explanation_lines(others):
        print_wrapped(console, line, 2, 4)


def _explanation_lines(rows: list[Explanation]) -> Iterator[Text]:
    # Text, not markup: a condition such as "component in [bridge, root_port]" is not a style.
    for e in rows:
        yield Text.assemble((e.rule, "bold"), ": ", e.detail)
