"""Shell completion's word lists: workloads, rule ids, lab specs and devices (issue 30).

Each function takes what the user typed so far and returns the words that start with it;
typer calls them (`autocompletion=`) when the shell asks, after `iotuner --install-completion`.
A completion never fails: a broken rule base or an unreadable /sys completes nothing.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tuner.errors import IotunerError

_SYS_BLOCK = Path("/sys/block")


def workloads(incomplete: str) -> list[str]:
    """The workload names of the installed rule base."""
    from tuner.rules.installed import load_rule_base

    try:
        names = [w.name for w in load_rule_base().workloads]
    except (IotunerError, OSError):
        return []
    return [n for n in names if n.startswith(incomplete)]


def workloads_or_list(incomplete: str) -> list[str]:
    """The workloads, and `list` (tune --workload list prints them)."""
    return [w for w in [*workloads(""), "list"] if w.startswith(incomplete)]


def rule_ids(incomplete: str) -> list[str]:
    """The rule ids of the installed rule base."""
    from tuner.rules.installed import load_rule_base

    try:
        ids = [r.id for r in load_rule_base().rules]
    except (IotunerError, OSError):
        return []
    return [i for i in ids if i.startswith(incomplete)]


def lab_specs(incomplete: str) -> list[str]:
    """The built-in lab specs, and .yaml files below the directory being typed."""
    from tuner.lab import builtin_spec_names

    found = [n for n in builtin_spec_names() if n.startswith(incomplete)]
    head = Path(incomplete).parent if "/" in incomplete else Path(".")
    try:
        files = [str(p) if "/" in incomplete else p.name for p in head.iterdir()
                 if p.suffix in (".yaml", ".yml")]  # fmt: skip
    except OSError:
        files = []
    return found + sorted(f for f in files if f.startswith(incomplete))


def devices(incomplete: str) -> list[str]:
    """Block devices as /dev paths (what --target and --destroy-data take), or a directory
    being typed (--target also takes one)."""
    try:
        names = sorted(os.listdir(_SYS_BLOCK))
    except OSError:
        names = []
    found = [f"/dev/{n}" for n in names if f"/dev/{n}".startswith(incomplete)]
    if incomplete.startswith("/") and not incomplete.startswith("/dev/"):
        head = Path(incomplete).parent
        with contextlib.suppress(OSError):
            found += sorted(str(p) + "/" for p in head.iterdir()
                            if p.is_dir() and str(p).startswith(incomplete))  # fmt: skip
    return found
