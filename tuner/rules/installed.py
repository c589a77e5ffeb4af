"""The installed rule base, loaded once per command, with loader errors as bad input (exit 2)."""

from __future__ import annotations

import re
from pathlib import Path

from tuner.errors import BadInput
from tuner.resources import rules_dir
from tuner.rules.loader import RuleError, load_rules
from tuner.rules.model import Rule, RuleBase

PATH_FACTS = re.compile(r"\b(link_gbps|rtt_ms|bdp_bytes)\b")
"""The facts made from --link-gbps, --rtt-ms or --peer (tuner/facts/catalog.py)."""


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


def check_path_options(base: RuleBase, workload: str, given: list[str]) -> None:
    """BadInput when network path options are given (`given`: their flags) for a workload no
    rule of which reads the path: they would be ignored, and the advice would look as if they
    had counted. Which workloads take them is read from the rules, not listed here."""
    if not given or any(r.concerns(workload) and _reads_path(r) for r in base.rules):
        return
    users = sorted({w for r in base.rules if _reads_path(r) for w in r.workloads})
    raise BadInput(
        f"{given[0]}: no rule for workload {workload} uses the network path; it matters for "
        f"--workload {', '.join(users) or '(none)'}: drop it or name that workload"
    )


def _reads_path(rule: Rule) -> bool:
    texts = [c.text for c in rule.when] + [rule.evidence, rule.recommend]
    return any(PATH_FACTS.search(t) for t in texts)
