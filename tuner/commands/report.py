"""`iotuner report`: one self-contained HTML page of the host and what iotuner measured on it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from tuner.arguments import path_value
from tuner.console import output_console
from tuner.outfile import check_output_path

DEFAULT_OUT = Path("iotuner-report.html")


def report(
    out: Annotated[
        Path, typer.Option(help="Where to write the HTML page.", parser=path_value("--out"))
    ] = DEFAULT_OUT,
    root: Annotated[
        Path,
        typer.Option(
            help="Root to probe: a directory, or a capture made by probe --gather.",
            parser=path_value("--root"),
        ),
    ] = Path("/"),
    workload: Annotated[
        str, typer.Option(help="The workload the findings are for (as in advise).")
    ] = "stream-read",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what the page holds as JSON.")
    ] = False,
    include_lab: Annotated[
        bool,
        typer.Option(
            "--include-lab", help="Also show results measured on the lab (a modelled disk)."
        ),
    ] = False,
) -> None:
    """Draw the topology (coloured by findings), the findings, and the saved results of
    bottleneck (scaling curves), sweep (heatmaps) and tune (convergence, before/after).

    Results are the last document each of those commands saved under the state directory
    (results/*.json), with the host it was measured on, when, by which command and whether on
    the lab: a report of another host (--root) leaves them out and says so, as it does results
    measured on the lab unless --include-lab; each result shown is dated; a section without
    one says how to make it. Exit codes: 0 page written, 2 bad input.
    """
    check_output_path(out, "--out")
    # matplotlib takes a second to import: only `report` pays for it.
    from tuner.report.build import write_report

    inputs = write_report(root, workload, out, include_lab)
    summary = {
        "out": str(out),
        "host": inputs.host,
        "workload": inputs.workload,
        "findings": len(inputs.findings),
        "scaling_curves": len(inputs.scaling),
        "sweeps": len(inputs.sweeps),
        "tune_trials": len(inputs.tune.trials) if inputs.tune else 0,
        "notes": [note for _, note in inputs.notes],
    }
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return
    made = {"bottleneck": inputs.scaling, "sweep": inputs.sweeps, "tune": inputs.tune}
    notes = dict(inputs.notes)
    missing = [name for name, present in made.items() if not present and name not in notes]
    console = output_console()
    console.print(f"report written to {out}", highlight=False, markup=False)
    for note in notes.values():
        console.print(note, style="dim", highlight=False, markup=False)
    if missing:
        console.print(f"no saved results for this host yet from: {', '.join(missing)}", style="dim")
