"""Gathering what the report shows: probe the host, run the rule base, load saved results."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from probes.host import probe_host
from probes.hostfs import HostFS
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.host_root import open_root
from tuner.report.data import scaling_curves, sweep_grids, tune_run
from tuner.report.page import ReportInputs, render_page
from tuner.results import load_result
from tuner.rulebase import check_workload, load_rule_base
from tuner.rules.engine import evaluate
from tuner.topology import Machine


def gather(root: Path, workload: str) -> ReportInputs:
    """Probe `root`, evaluate the rule base for `workload`, and read the saved results."""
    base = load_rule_base()
    check_workload(base, workload)
    with ExitStack() as stack:
        fs = HostFS(open_root(root, stack))
        topology = probe_host(fs)
    targets = collect(topology, FactOptions(live=fs.is_live))
    findings = evaluate(base, targets, workload).findings
    host = next((m.name for m in topology.of_type(Machine)), "host")
    return ReportInputs(
        host=host,
        workload=workload,
        topology=topology,
        findings=findings,
        scaling=tuple(scaling_curves(load_result("bottleneck"))),
        sweeps=tuple(sweep_grids(load_result("sweep"))),
        tune=tune_run(load_result("tune")),
    )


def write_report(root: Path, workload: str, out: Path) -> ReportInputs:
    """Write the report page for `root` to `out` (atomically) and return what it shows."""
    inputs = gather(root, workload)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(render_page(inputs))
    tmp.replace(out)
    return inputs
