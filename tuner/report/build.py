"""Gathering what the report shows: probe the host, run the rule base, load saved results.

Saved results belong to the host they were measured on: a report of another host (a capture,
a copied state directory) leaves them out and says so; a result saved by an older iotuner,
which recorded no host, is shown only on the live host, labelled as such. A result measured on
the lab (a tune of the modelled disk, a lab disk) is not this host's figure: left out, and
said, unless asked for (`report --include-lab`). Every result shown says when, by which
command and on which devices it was measured.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from probes.host_root import open_root
from probes.hostfs import HostFS
from probes.identity import HostIdentity, identity_from, identity_of
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.outfile import write_file
from tuner.report.data import scaling_curves, sweep_grids, tune_run
from tuner.report.page import ReportInputs, render_page
from tuner.results import MEASURED_ON, ORIGIN, load_result
from tuner.rules.engine import evaluate
from tuner.rules.installed import check_workload, load_rule_base
from tuner.topology.model import Machine
from tuner.tunables.observe import probe_with_settings


def gather(root: Path, workload: str, include_lab: bool = False) -> ReportInputs:
    """Probe `root`, evaluate the rule base for `workload`, and read the saved results
    (those measured on the lab only with `include_lab`)."""
    base = load_rule_base()
    check_workload(base, workload)
    with ExitStack() as stack:
        fs = HostFS(open_root(root, stack))
        topology = probe_with_settings(fs)
    targets = collect(topology, FactOptions(live=fs.is_live))
    findings = evaluate(base, targets, workload).findings
    host = next((m.name for m in topology.of_type(Machine)), "host")
    identity = identity_of(topology)
    docs: dict[str, dict[str, Any] | None] = {}
    notes: list[tuple[str, str]] = []
    for name in ("bottleneck", "sweep", "tune"):
        doc, note = this_hosts(name, load_result(name), identity, fs.is_live, include_lab)
        docs[name] = doc
        if note:
            notes.append((name, note))
    return ReportInputs(
        host=host,
        workload=workload,
        topology=topology,
        findings=findings,
        scaling=tuple(scaling_curves(docs["bottleneck"])),
        sweeps=tuple(sweep_grids(docs["sweep"])),
        tune=tune_run(docs["tune"]),
        notes=tuple(notes),
    )


def this_hosts(
    name: str,
    doc: dict[str, Any] | None,
    host: HostIdentity,
    live: bool,
    include_lab: bool = False,
) -> tuple[dict[str, Any] | None, str | None]:
    """The saved result `name` if it was measured on `host` (and not on the lab, unless
    `include_lab`), and what to say about it: where it came from, or why it is left out."""
    if doc is None:
        return None, None
    shown, why = _of_host(name, doc, host, live)
    if shown is None:
        return None, why
    made = provenance(doc)
    if made.get("lab") is True and not include_lab:
        return None, (
            f"The saved {name} result was measured on the lab ({describe(made)}), not on this "
            "host's own devices: not shown (`iotuner report --include-lab` shows it)."
        )
    said = f"Measured {describe(made)}." if made else "The saved result records no date."
    return shown, f"{why} {said}" if why else said


def provenance(doc: dict[str, Any]) -> dict[str, Any]:
    """The result's origin as saved (tuner/results.py), {} when it records none."""
    found = doc.get(ORIGIN)
    return found if isinstance(found, dict) else {}


def describe(made: dict[str, Any]) -> str:
    """`2026-11-28 09:50 UTC by `iotuner tune ...` on sdb, in the lab` from an origin."""
    parts = []
    stamp = made.get("saved_at")
    if isinstance(stamp, str):
        parts.append(stamp.replace("T", " ").removesuffix("+00:00") + " UTC")
    command = made.get("command")
    if isinstance(command, str):
        parts.append(f"by `{command}`")
    devices = [d for d in made.get("devices") or [] if isinstance(d, str)]
    if devices:
        parts.append("on " + ", ".join(devices))
    if made.get("lab") is True:
        parts.append("in the lab")
    return " ".join(parts) or "at an unknown time"


def _of_host(
    name: str, doc: dict[str, Any], host: HostIdentity, live: bool
) -> tuple[dict[str, Any] | None, str | None]:
    measured = identity_from(doc.get(MEASURED_ON))
    if measured is None:
        if live:
            return doc, f"The saved {name} result records no host (saved by an older iotuner)."
        return None, (
            f"The saved {name} result records no host (saved by an older iotuner), so it is not "
            "shown for a capture."
        )
    if not measured.matches(host):
        kernel = f", kernel {measured.kernel}" if measured.kernel else ""
        return None, (
            f"The saved {name} result was measured on {measured.hostname}{kernel}, not on "
            f"{host.hostname}: not shown."
        )
    return doc, None


def write_report(root: Path, workload: str, out: Path, include_lab: bool = False) -> ReportInputs:
    """Write the report page for `root` to `out` (atomically) and return what it shows."""
    inputs = gather(root, workload, include_lab)
    write_file(out, render_page(inputs), mode=0o644, what="report")
    return inputs
