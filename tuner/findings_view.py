"""Findings as people read them: a rich table grouped by severity, and the explain table."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tuner.rules.model import Explanation, Finding, Setting

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def source_label(finding: Finding) -> str:
    """The first source as a citation: authors, title, year and where in the paper."""
    return finding.sources[0].citation() if finding.sources else ""


def setting_label(setting: Setting) -> str:
    """One setting as 'block.read_ahead_kb=4096 (was 128)'."""
    if setting.bound == "range" and setting.range is not None:
        return f"{setting.key} in [{setting.range[0]}, {setting.range[1]}] (search)"
    was = "" if setting.current is None else f" (was {setting.current})"
    return f"{setting.key}={setting.value}{was}"


def render_findings(findings: tuple[Finding, ...]) -> RenderableType:
    """One table per severity, most severe first."""
    if not findings:
        return Text("No findings: nothing the rule base knows to improve on this host.")
    tables: list[RenderableType] = []
    for severity in ("critical", "warning", "info"):
        rows = [f for f in findings if f.severity == severity]
        if not rows:
            continue
        table = Table(title=f"{severity} ({len(rows)})", title_style=_STYLE[severity],
                      title_justify="left", show_lines=True, expand=True)  # fmt: skip
        table.add_column("rule and target", ratio=2)
        table.add_column("evidence", ratio=4)
        table.add_column("recommendation", ratio=4)
        table.add_column("source", ratio=2)
        for f in rows:
            recommendation = f.recommendation
            if f.settings:
                recommendation += "\n" + "\n".join(setting_label(s) for s in f.settings)
            table.add_row(
                Text.assemble((f.rule, "bold"), f"\n[{f.lesson}]\n", (f.target, "cyan")),
                f.evidence,
                recommendation,
                source_label(f),
            )
        tables.append(table)
    return Group(*tables)


def render_explanations(explanations: tuple[Explanation, ...]) -> RenderableType:
    """Every rule with what happened to it."""
    table = Table(title="rules", title_justify="left", expand=True)
    table.add_column("rule", ratio=2)
    table.add_column("outcome", ratio=1)
    table.add_column("why", ratio=5)
    for e in explanations:
        style = "bold" if e.status == "fired" else "dim" if e.status == "other workload" else ""
        table.add_row(Text(e.rule, style=style), e.status, e.detail)
    return table
