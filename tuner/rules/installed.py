"""The installed rule base, loaded once per command, with loader errors as bad input (exit 2)."""

from __future__ import annotations

from pathlib import Path

from tuner.errors import BadInput
from tuner.resources import rules_dir
from tuner.rules.loader import RuleError, load_rules
from tuner.rules.model import RuleBase


def load_rule_base(directory: Path | None = None) -> RuleBase:
    """Rules from `directory` (default: the installed rule base); BadInput on any error."""
    try:
        return load_rules(directory or rules_dir())
    except RuleError as err:
        raise BadInput(str(err)) from None


def check_workload(base: RuleBase, workload: str | None) -> None:
    """BadInput naming the known workloads when `workload` is not one of them."""
    if workload is not None and base.workload(workload) is None:
        known = ", ".join(w.name for w in base.workloads)
        raise BadInput(f"--workload {workload}: unknown workload (known: {known})")
