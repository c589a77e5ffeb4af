"""`iotuner rules list|show`: the rule base, documented from its own YAML."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tuner.codec import encode
from tuner.errors import BadInput
from tuner.rulebase import load_rule_base
from tuner.rules.markdown import rule_base_markdown, rule_markdown

app = typer.Typer(help="List and show the rules iotuner applies.", no_args_is_help=True)


@app.command(name="list")
def list_rules(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rules as JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option(help="Print the rule catalogue as Markdown (docs/rules.md).")
    ] = False,
) -> None:
    """Every rule: id, lesson, severity, what it applies to, its workloads and title."""
    base = load_rule_base()
    if as_json:
        sys.stdout.write(json.dumps(encode(base.rules), indent=2) + "\n")
    elif markdown:
        sys.stdout.write(rule_base_markdown(base))
    else:
        table = Table(title=f"{len(base.rules)} rules", title_justify="left")
        for column in ("id", "lesson", "severity", "applies to", "workloads", "title"):
            table.add_column(column)
        for rule in base.rules:
            table.add_row(rule.id, rule.lesson, rule.severity, rule.applies_to,
                          ", ".join(rule.workloads), rule.title)  # fmt: skip
        Console().print(table)


@app.command(name="show")
def show_rule(
    rule_id: Annotated[str, typer.Argument(help="The rule's id (see `iotuner rules list`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the rule as JSON.")] = False,
) -> None:
    """One rule in full: condition, evidence, recommendation, sources with their quotes."""
    base = load_rule_base()
    rule = base.rule(rule_id)
    if rule is None:
        raise BadInput(f"no rule {rule_id!r} (see `iotuner rules list`)")
    if as_json:
        sys.stdout.write(json.dumps(encode(rule), indent=2) + "\n")
    else:
        from rich.markdown import Markdown

        Console().print(Markdown(rule_markdown(rule)))
