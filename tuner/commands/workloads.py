"""`iotuner workloads`: the workload profiles, one line each (as `tuned-adm list`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from tuner.rules.installed import load_rule_base
from tuner.rules.model import RuleBase


def workloads(
    as_json: Annotated[bool, typer.Option("--json", help="Print the workloads as JSON.")] = False,
) -> None:
    """List the workloads advise and tune take (--workload NAME), one line each.

    Exit codes: 0 listed, 2 bad input (a broken rule file).
    """
    base = load_rule_base()
    if as_json:
        doc = [{"name": w.name, "description": w.description, "rules": rule_count(base, w.name)}
               for w in base.workloads]  # fmt: skip
        sys.stdout.write(json.dumps({"workloads": doc}, indent=2) + "\n")
        return
    for line in workload_lines(base):
        typer.echo(line)


def workload_lines(base: RuleBase) -> list[str]:
    """`NAME  first sentence of its description`, names aligned; what `tune --workload list`
    prints too."""
    width = max((len(w.name) for w in base.workloads), default=0)
    return [f"{w.name:<{width}}  {first_sentence(w.description)}" for w in base.workloads]


def first_sentence(text: str) -> str:
    """The description's first sentence, on one line."""
    flat = " ".join(text.split())
    head, dot, _ = flat.partition(". ")
    return head + ("." if dot else "")


def rule_count(base: RuleBase, workload: str) -> int:
    """How many rules concern the workload."""
    return sum(1 for r in base.rules if workload in r.workloads or "all" in r.workloads)
