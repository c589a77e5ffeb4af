"""`iotuner rules list|show`: the rule base, documented from its own YAML."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from tuner import completion
from tuner.cli_help import Command, Group, examples
from tuner.codec import encode
from tuner.console import output_console
from tuner.errors import BadInput
from tuner.rules.installed import load_rule_base
from tuner.rules.markdown import rule_base_markdown, rule_markdown
from tuner.rules.view import print_wrapped

app = typer.Typer(
    help="List and show the rules iotuner applies. Exit codes: 0 ok, 2 bad input.",
    epilog=examples("rules"),
    no_args_is_help=True,
    cls=Group,
)


@app.command(name="list", cls=Command, epilog=examples("list"))
def list_rules(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rules as JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option(help="Print the rule catalogue as Markdown (docs/rules.md).")
    ] = False,
) -> None:
    """Every rule: id, severity, lesson, what it applies to, its title and workloads.

    Exit codes: 0 listed, 2 the rule base does not load (the line names file and line).
    """
    base = load_rule_base()
    if as_json:
        sys.stdout.write(json.dumps(encode(base.rules), indent=2) + "\n")
    elif markdown:
        sys.stdout.write(rule_base_markdown(base))
    else:
        # A list, not a table: a table cuts ids to fit 80 columns, and two rules then read alike.
        console = output_console()
        console.print(f"{len(base.rules)} rules (`iotuner rules show ID` for one)", style="bold")
        for rule in base.rules:
            head = Text.assemble(
                (rule.id, "bold"), f"  {rule.severity}  {rule.lesson}  applies to {rule.applies_to}"
            )
            console.print(head, soft_wrap=True, highlight=False)
            workloads = ", ".join(rule.workloads)
            print_wrapped(console, Text(f"{rule.title} (workloads: {workloads})"), 4)


@app.command(name="show", cls=Command, epilog=examples("show"))
def show_rule(
    rule_id: Annotated[
        str,
        typer.Argument(
            help="The rule's id (see `iotuner rules list`).", autocompletion=completion.rule_ids
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the rule as JSON.")] = False,
) -> None:
    """One rule in full: condition, evidence, recommendation, sources with their quotes.

    Exit codes: 0 shown, 2 no such rule or the rule base does not load.
    """
    base = load_rule_base()
    rule = base.rule(rule_id)
    if rule is None:
        raise BadInput(f"no rule {rule_id!r} (see `iotuner rules list`)")
    if as_json:
        sys.stdout.write(json.dumps(encode(rule), indent=2) + "\n")
    else:
        from rich.markdown import Markdown

        Console().print(Markdown(rule_markdown(rule)))
