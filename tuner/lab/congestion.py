"""The congestion controls a network lab lends its namespaces, and takes back at `lab down`.

The initial network namespace may make any loaded algorithm its default; any other namespace
only one in the host-wide net.ipv4.tcp_allowed_congestion_control (tcp_cong.c:
tcp_set_default_congestion_control returns EPERM outside init_net for a restricted one). A
real host's tune, TuneD and plans act in its initial namespace, so a lab's ends, which stand
for real hosts, are let do the same: while a network lab is up, every algorithm available
(loaded) but not allowed is added to the host's list, and taken out again when it goes down.

Several labs may be up at once (each in its own state directory), so a name is lent by claim:
a lab records the step in its own record, then writes `CLAIMS/LAB_ID.json` (the names it lent
and its record's path), then widens the list. Going down, it removes its claim and takes out
only the names no other live claim holds; a name allowed before any lab came up is never
claimed, so never taken out. A claim whose lab record is gone (its state directory removed by
hand) is stale: the next lab up or down drops it and takes out its names no live claim holds.
Claims and the list change under one flock on CLAIMS, so two labs never interleave their
read-modify-write of the list.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.lab import system
from tuner.lab.record import LabRecord, Step
from tuner.outfile import write_file

CLAIMS = Path("/run/iotuner-congestion")
PROC_IPV4 = Path("/proc/sys/net/ipv4")
ALLOWED = "tcp_allowed_congestion_control"
AVAILABLE = "tcp_available_congestion_control"
KIND = "congestion"


def _names(key: str) -> list[str]:
    return (PROC_IPV4 / key).read_text().split()


def _set_allowed(names: list[str]) -> None:
    # Only the initial namespace may write the list; a lab built from another one fails here.
    try:
        (PROC_IPV4 / ALLOWED).write_text(" ".join(names) + "\n")
    except OSError as err:
        raise system.LabError(f"cannot write net.ipv4.{ALLOWED} ({err.strerror})") from None


@contextmanager
def _claims_lock() -> Iterator[None]:
    CLAIMS.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(CLAIMS, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for a few small file writes: wait, never refuse
        yield
    finally:
        os.close(fd)


def _claim_path(lab_id: str) -> Path:
    return CLAIMS / f"{lab_id}.json"


def _live(claim: dict[str, object]) -> bool:
    """Whether the lab that wrote `claim` is still recorded (up, building or broken)."""
    try:
        record = json.loads(Path(str(claim["record"])).read_text())
        return bool(record["lab_id"] == claim["lab_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _sort_claims(own: str) -> tuple[set[str], set[str]]:
    """The names live claims other than lab `own`'s hold, and the names stale claims lent;
    stale claims (their lab's record gone, or unreadable) are deleted."""
    held: set[str] = set()
    stale: set[str] = set()
    for path in sorted(CLAIMS.glob("*.json")):
        if path.stem == own:
            continue
        try:
            claim = json.loads(path.read_text())
        except (OSError, ValueError):
            claim = {}
        names = claim.get("names", []) if isinstance(claim, dict) else []
        if isinstance(claim, dict) and _live(claim):
            held.update(str(n) for n in names)
        else:
            with contextlib.suppress(TypeError):
                stale.update(str(n) for n in names)
            path.unlink(missing_ok=True)
    return held, stale


def lend(record: LabRecord, wanted: list[str]) -> list[str]:
    """Add every available congestion control the host does not allow in a namespace to its
    allowed list, for the life of `record`'s lab; the names lent (empty: none was needed).
    LabError (nothing changed) when a name in `wanted` is not even available here."""
    available = _names(AVAILABLE)
    if missing := [n for n in wanted if n not in available]:
        raise system.LabError(
            f"tcp_congestion_control {missing[0]!r} is not available on this host "
            f"(net.ipv4.{AVAILABLE}: {' '.join(available)})"
        )
    with _claims_lock():
        others, stale = _sort_claims(record.lab_id)
        allowed = _names(ALLOWED)
        # A name allowed now that only a gone lab lent is no longer the host's: take it back.
        allowed = [n for n in allowed if n not in stale - others]
        before_labs = [n for n in allowed if n not in others]
        lent = [n for n in available if n not in before_labs]
        if not lent:
            if stale - others:
                _set_allowed(allowed)
            return []
        step = record.intend(Step(KIND, str(_claim_path(record.lab_id)), label="congestion",
                                  detail={"names": lent}))  # fmt: skip
        claim = {"lab_id": record.lab_id, "record": str(record.path), "names": lent}
        write_file(_claim_path(record.lab_id), json.dumps(claim), what="congestion claim")
        _set_allowed([*allowed, *(n for n in lent if n not in allowed)])
        record.finish(step)
    return lent


def undo(step: Step) -> list[str]:
    """Take back the names `step` lent that no other live lab holds, and drop its claim."""
    lab_id = Path(step.target).stem
    names = [str(n) for n in step.detail.get("names", [])]
    with _claims_lock():
        others, stale = _sort_claims(lab_id)
        drop = (set(names) | stale) - others
        allowed = _names(ALLOWED)
        if any(n in drop for n in allowed):
            _set_allowed([n for n in allowed if n not in drop])
        _claim_path(lab_id).unlink(missing_ok=True)
    taken = [n for n in names if n not in others]
    return [f"net.ipv4.{ALLOWED}: {' '.join(taken)} taken back"] if taken else []


def present(step: Step) -> bool:
    """Whether the names `step` lent are still allowed and its claim still written."""
    names = [str(n) for n in step.detail.get("names", [])]
    allowed = _names(ALLOWED)
    return Path(step.target).exists() and all(n in allowed for n in names)
