"""Gathering what the report shows: probe the host, run the rule base, load saved results.

Saved results belong to the host they were measured on: a report of another host (a capture,
a copied state directory) leaves them out and says so; a result saved by an older iotuner,
which recorded no host, is shown only on the live host, labelled as such.
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
from tuner.results import MEASURED_ON, load_result
from tuner.rules.engine import evaluate
from tuner.rules.installed import check_workload, load_rule_base
from tuner.topology.model import Machine
from tuner.tunables.observe import probe_with_settings


def gather(root: Path, workload: str) -> ReportInputs:
    """Probe `root`, evaluate the rule base for `workload`, and read the saved results."""
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
        doc, note = this_hosts(name, load_result(name), identity, fs.is_live)
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
    name: str, doc: dict[str, Any] | None, host: HostIdentity, live: bool
) -> tuple[dict[str, Any] | None, str | None]:
    """The saved result `name` if it was measured on `host`, and what to say about it."""
    if doc is None:
        return None, None
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


def write_report(root: Path, workload: str, out: Path) -> ReportInputs:
    """Write the report page for `root` to `out` (atomically) and return what it shows."""
    inputs = gather(root, workload)
    write_file(out, render_page(inputs), mode=0o644, what="report")
    return inputs
