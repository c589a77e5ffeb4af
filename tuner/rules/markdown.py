"""The rule catalogue as Markdown: `docs/rules.md` is this, generated from the YAML."""

from __future__ import annotations

from tuner.rules.lessons import LESSONS
from tuner.rules.model import Rule, RuleBase, Setting, SettingRec

HEADER = """# Rule catalogue

Generated from `rules/*.yaml` by `iotuner rules list --markdown > docs/rules.md`; do not edit by
hand. How to write a rule: [rules-format.md](rules-format.md). Sources are cited by authors,
title and year; the papers (`rules/papers.yaml`) are listed first.
"""


def rule_base_markdown(base: RuleBase) -> str:
    """The whole catalogue: the papers, the workloads, then the rules grouped by lesson."""
    parts = [
        HEADER,
        "\n## Papers\n\n| id | authors | title | year | venue |\n|---|---|---|---|---|\n",
    ]
    parts += [
        f"| `{p.id}` | {p.full_authors()} | *{p.title}* | {p.year} | {p.venue} |\n"
        for p in base.papers
    ]
    parts.append("\n## Workloads\n\n| workload | description |\n|---|---|\n")
    parts += [f"| `{w.name}` | {w.description} |\n" for w in base.workloads]
    parts.append("\n## Rules by lesson\n")
    for lesson, meaning in LESSONS.items():
        rules = [r for r in base.rules if r.lesson == lesson]
        parts.append(f"\n### `{lesson}`: {meaning}\n")
        parts += [f"\n{rule_markdown(r, level=4)}" for r in rules]
    return "".join(parts)


def rule_markdown(rule: Rule, level: int = 2) -> str:
    """One rule: heading, facts of its condition, evidence, recommendation, sources."""
    lines = [
        f"{'#' * level} `{rule.id}`: {rule.title}\n",
        f"- severity **{rule.severity}**, lesson `{rule.lesson}`, applies to `{rule.applies_to}`, "
        f"workloads {', '.join(f'`{w}`' for w in rule.workloads)}",
        f"- when: {' and '.join(f'`{c.text}`' for c in rule.when) or 'always'}",
        f"- evidence: {rule.evidence}",
        f"- recommendation: {rule.recommend}",
    ]
    if rule.settings:
        lines.append(f"- settings: {', '.join(_setting(s) for s in rule.settings)}")
    for source in rule.sources:
        lines.append(f'- source: {source.citation()}: "{source.quote}"')
    lines.append(f"- defined in `rules/{rule.file}`, line {rule.line}")
    return "\n".join(lines) + "\n"


def _setting(rec: SettingRec | Setting) -> str:
    for bound in ("value", "at_least", "at_most"):
        value = getattr(rec, bound, None)
        if value is not None:
            return f"`{rec.key}` {bound.replace('_', ' ')} {value}"
    span = rec.range
    return f"`{rec.key}` searched in {list(span) if span else '?'}"
