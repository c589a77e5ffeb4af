"""What the daemon's advise and tune children said, as event figures (tuner/daemon/retune.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.daemon.events import Event, event


def advise_event(workload: str, code: int | None, out: bytes | bytearray, said: str) -> Event:
    """One "advise" event: the findings counted by severity, and the first rule ids."""
    if code not in (0, 1):  # 1: a warning or worse was found, a normal outcome
        message = f"advise for {workload} failed (exit {code}): {said or 'no message'}"
        return event("error", message, workload=workload)
    try:
        findings = json.loads(bytes(out).decode())["findings"]
        rules = [str(f["rule"]) for f in findings]
        severities = [str(f["severity"]) for f in findings]
    except (ValueError, KeyError, TypeError) as err:
        return event("error", f"advise for {workload}: unreadable result ({err})")
    counts = {s: severities.count(s) for s in ("critical", "warning", "info") if s in severities}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no findings"
    if rules:
        summary += f" ({', '.join(rules[:4])}{', ...' if len(rules) > 4 else ''})"
    return event("advise", f"advise for {workload}: {summary}", workload=workload,
                 counts=counts, rules=rules[:10])  # fmt: skip


def tune_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """What an event carries of a `tune --json` document."""
    return {
        "baseline_mbps": float(doc["baseline"]["mbps"]),
        "best_mbps": float(doc["best"]["mbps"]),
        "gain": float(doc["gain"]),
        "ci": [float(doc["ci"][0]), float(doc["ci"][1])],
        "chosen": bool(doc["chosen"]),
        "stop_reason": str(doc["stop_reason"]),
        "trials": len(doc["trials"]),
        "seconds": float(doc["seconds"]),
    }


def online_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """What an event carries of a `tune --online --json` document."""
    high = doc["ci"][1]
    return {
        "online": True,
        "gain": float(doc["gain"]),
        "ci": [float(doc["ci"][0]), None if high is None else float(high)],
        "kept": bool(doc["kept"]),
        "applied": False,  # kept live and journaled by the tune itself: no plan to reload
        "changes": {str(k): v for k, v in doc["changes"].items()},
        "candidates": len(doc["tried"]),
        "worse_seconds": float(doc["worse_seconds"]),
        "seconds": float(doc["elapsed_seconds"]),
        "ended": str(doc["ended"]),
    }


def plan_entries(path: Path) -> int:
    """How many settings the plan changes (0 when it is missing or unreadable)."""
    from tuner.errors import BadInput
    from tuner.plan import read_plan  # the tunables' registry: only once a tune has ended

    try:
        return len(read_plan(path).entries)
    except BadInput:
        return 0
