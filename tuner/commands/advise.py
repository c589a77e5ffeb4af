"""`iotuner advise`: what the papers' lessons say about this host, with evidence and sources."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from probes.host_root import open_root
from probes.hostfs import HostFS
from tuner import completion
from tuner.apply.identity import nameless_disks
from tuner.arguments import number_value, path_value
from tuner.codec import encode
from tuner.console import output_console, print_warning
from tuner.errors import BadInput
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.outfile import check_output_path
from tuner.plan import Plan, write_plan
from tuner.rules.engine import Evaluation, evaluate
from tuner.rules.installed import check_path_options, check_workload, load_rule_base
from tuner.rules.to_plan import plan_from_findings
from tuner.rules.view import (
    inconclusive,
    print_changes,
    print_explanations,
    print_findings,
    print_summary,
    unevaluated,
)
from tuner.topology.model import Machine
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.registry import TUNABLES

if TYPE_CHECKING:
    from tuner.trials.peer import PathMeasurement

# The papers study sequential I/O and the tune's main job streams reads: advice for one workload
# at a time, because advice for different workloads contradicts itself (readahead up or down).
DEFAULT_WORKLOAD = "stream-read"


def advise(
    root: Annotated[
        Path,
        typer.Option(
            help="Root to probe: a directory, or a capture made by probe --gather.",
            parser=path_value("--root"),
        ),
    ] = Path("/"),
    workload: Annotated[
        str,
        typer.Option(
            help="The workload to advise for: see `iotuner workloads`.",
            autocompletion=completion.workloads,
        ),
    ] = DEFAULT_WORKLOAD,
    as_json: Annotated[bool, typer.Option("--json", help="Print findings as JSON.")] = False,
    explain: Annotated[
        bool, typer.Option(help="Also list the rules that did not fire, and why.")
    ] = False,
    link_gbps: Annotated[
        float | None,
        typer.Option(
            help="Network path rate, Gb/s (for socket buffers).",
            parser=number_value("--link-gbps", 0.001, 100_000),
        ),
    ] = None,
    rtt_ms: Annotated[
        float | None,
        typer.Option(
            help="Network round-trip time, ms (for socket buffers).",
            parser=number_value("--rtt-ms", 0, 1_000_000),
        ),
    ] = None,
    peer: Annotated[
        str | None,
        typer.Option(
            help="Measure RTT and rate to HOST[:PORT] running `iperf3 -s` (port 5201 unless "
            "given; about 8 s) instead of --link-gbps and --rtt-ms.",
            metavar="HOST[:PORT]",
        ),
    ] = None,
    plan_out: Annotated[
        Path | None,
        typer.Option(
            help="Write the recommended settings as a plan (YAML).",
            parser=path_value("--plan-out"),
        ),
    ] = None,
    match_by: Annotated[
        str,
        typer.Option(
            "--match-by",
            help="How --plan-out's entries find a disk with no WWN, serial, by-path or loop "
            "backing file: `id` (default: apply refuses them) or `name` (its kernel name, "
            "which another disk may have after a reboot).",
            metavar="id|name",
        ),
    ] = "id",
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when there is a warning or critical finding (as `git diff --exit-code`).",
        ),
    ] = False,
    rules: Annotated[
        Path | None, typer.Option(help="Use the rules in this directory instead.", hidden=True)
    ] = None,
) -> None:
    """Run the rule base over the host: findings grouped by severity, each with its source.

    Exit codes: 0 advised (findings or not, so `advise --plan-out p.yaml && iotuner apply
    p.yaml` composes), 1 a warning or critical finding with --exit-code, or with it a root
    where fewer than half the rules could run (said first, in one line), or a --peer that could
    not be measured (unreachable, no `iperf3 -s`), 2 bad input (a broken rule file, an unknown
    workload, a missing --root, a malformed --peer).
    """
    base = load_rule_base(rules)
    check_workload(base, workload)
    target = None
    if peer is not None:
        # Only --peer runs iperf3: its trial module (and the lab model of a network path under
        # it) is imported for it alone.
        from tuner.trials.peer import parse_peer

        target = parse_peer(peer)
    if target is not None and (link_gbps is not None or rtt_ms is not None):
        raise BadInput("--peer measures the path: give it or --link-gbps and --rtt-ms, not both")
    if target is not None and root != Path("/"):
        raise BadInput(f"--peer measures from this host; it cannot go with --root {root}")
    if match_by not in ("id", "name"):
        raise BadInput(f"--match-by {match_by}: use id or name")
    # Before --peer measures anything: for this workload it would be measured for nothing.
    path_flags = {"--link-gbps": link_gbps, "--rtt-ms": rtt_ms, "--peer": peer}
    check_path_options(base, workload, [f for f, v in path_flags.items() if v is not None])
    if plan_out is not None:
        check_output_path(plan_out, "--plan-out")
    # Measured first: an unreachable peer fails before the probe's work.
    measured = None
    if target is not None:
        from tuner.trials.peer import measure_path

        measured = measure_path(target)
    if measured is not None:
        link_gbps, rtt_ms = measured.rate_mbit / 1000, measured.rtt_ms
    with ExitStack() as stack:
        fs = HostFS(open_root(root, stack))
        topology = probe_with_settings(fs)
        nameless = nameless_disks(fs)
    targets = collect(topology, FactOptions(link_gbps=link_gbps, rtt_ms=rtt_ms, live=fs.is_live))
    result = evaluate(base, targets, workload)
    host = next((m.name for m in topology.of_type(Machine)), "host")
    if plan_out is not None:
        plan = plan_from_findings(result.findings, host, workload)
        write_plan(_matched(plan, nameless, match_by), plan_out)
    cap = measured.send_cap_mbit(topology.tcp.tcp_wmem_max) if measured is not None else None
    partial = inconclusive(result.explanations)
    if partial is not None and not as_json:
        # First, before the workload line: everything after it is about a host that may not be one.
        print_warning(partial.line(str(root) if root != Path("/") else "this host"))
    if as_json:
        document = _document(result, workload, explain, measured, cap)
        document["inconclusive"] = None if partial is None else encode(partial)
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        console = output_console()
        console.print(f"workload: {workload} (choose with --workload)", style="dim", markup=False)
        if measured is not None:
            console.print(_measured_line(measured), highlight=False)
            if cap is not None:
                console.print(_capped_line(measured, cap), highlight=False)
        print_findings(console, result.findings)
        if explain:
            print_explanations(console, result.explanations)
        print_summary(console, result.findings, result.explanations, explain)
        if print_changes(console, result.findings) and plan_out is None:
            console.print(
                "iotuner advise --plan-out plan.yaml writes them as a plan for iotuner apply",
                style="dim",
                highlight=False,
            )
        if plan_out is not None:
            console.print(f"plan written to {plan_out}", highlight=False, markup=False)
    # A run that could not look is no pass for a script that asked findings to fail.
    failing = any(f.severity in ("critical", "warning") for f in result.findings)
    if exit_code and (failing or partial is not None):
        raise typer.Exit(1)


def _matched(plan: Plan, nameless: set[str], match_by: str) -> Plan:
    """The plan with its entries for disks that have nothing stable marked `match: name` (with
    --match-by name), and one warning per such disk either way: without it apply refuses them."""
    entries = []
    warned: set[str] = set()
    for entry in plan.entries:
        disk = entry.target.removeprefix("/dev/")
        if disk not in nameless or TUNABLES[entry.key].persist != "udev":
            entries.append(entry)
            continue
        if disk not in warned:
            warned.add(disk)
            print_warning(
                f"{disk} has no WWN, serial, by-path or loop backing file: "
                + (
                    "its plan entries match it by kernel name (--match-by name), which "
                    "another disk may have after a reboot"
                    if match_by == "name"
                    else "apply will refuse its plan entries; --match-by name matches it by "
                    "kernel name instead (unstable across reboots)"
                )
            )
        entries.append(replace(entry, match="name") if match_by == "name" else entry)
    return replace(plan, entries=tuple(entries))


def _capped_line(measured: PathMeasurement, cap: float) -> str:
    """Why the measured rate is a floor: this host's send buffers held the run back."""
    return (
        f"the rate is a floor: this host's send buffers allow {measured.streams} streams "
        f"{cap:g} Mbit/s on this RTT, so the path may be faster and need a larger window; "
        "raise them (the findings below) and measure again"
    )


def _measured_line(measured: PathMeasurement) -> str:
    return (
        f"path to {measured.peer} measured: RTT {measured.rtt_ms:g} ms (TCP's least smoothed "
        f"RTT), rate {measured.rate_mbit:g} Mbit/s (received; {measured.how})"
    )


def _document(
    result: Evaluation,
    workload: str,
    explain: bool,
    measured: PathMeasurement | None,
    send_cap_mbit: float | None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "workload": workload,
        "findings": [
            {
                "rule": f.rule,
                "title": f.title,
                "lesson": f.lesson,
                "severity": f.severity,
                "target": f.target,
                "evidence": f.evidence,
                "recommendation": f.recommendation,
                "settings": encode(f.settings),
                "sources": encode(f.sources),
                "workloads": list(f.workloads),
            }
            for f in result.findings
        ],
    }
    if measured is not None:
        doc["measured"] = {
            "peer": str(measured.peer),
            "rtt_ms": measured.rtt_ms,
            "rtt_how": "the least smoothed RTT TCP saw (iperf3 min_rtt)",
            "rate_mbit": measured.rate_mbit,
            "rate_how": measured.how,
            "retransmits": measured.retransmits,
            # Set when this host's send buffers held the run back: the rate is then a floor.
            "send_cap_mbit": send_cap_mbit,
        }
    doc["unevaluated"] = [
        {"rules": rules, "hint": hint} for rules, hint in unevaluated(result.explanations)
    ]
    if explain:
        doc["explanations"] = encode(result.explanations)
    return doc
