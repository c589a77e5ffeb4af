"""`iotuner tune --workload disk-to-network`: tune both ends of a bulk transfer on the lab's path.

The ends are the network lab's namespaces: the lab that is up (`iotuner lab up SPEC` with a
`network:`), or, when none is, `wan-old-buffers` brought up for the tune and torn down after.
Before the search, the paper's parts are measured at the settings found (memory to memory,
and disk to memory, memory to disk, disk to disk where the ends have disks); after it, at the
recommended settings. Both ends' settings are journaled and restored after every trial, as in
a disk tune, also on Ctrl-C, SIGTERM and, through the journal, after kill -9.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tuner.errors import BadInput, IotunerError
from tuner.lab.model import LabNetwork
from tuner.lab.session import lab_session
from tuner.lab.status import lab_status
from tuner.results import save_result
from tuner.rules.model import Workload
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.signals import restore_on_signals
from tuner.tunables.sysroot import live_sysroot
from tuner.tune.result import TuneResult, result_document
from tuner.tune.session import Search, TuneConfig
from tuner.tune.setup import current_point, host_dirtyable_bytes
from tuner.tune.transfer import (
    TransferEnds,
    as_written,
    bdp_point,
    lab_ends,
    part_options,
    transfer_space,
    transfer_trial,
    window_high,
    windows_now,
)
from tuner.tune.transfer_explain import (
    MEMORY,
    Explanation,
    Windows,
    explain,
    explanation_document,
    explanation_lines,
    needed_window,
)
from tuner.tune.view import TuneView, print_changes, render_summary

WORKLOAD = "disk-to-network"
LAB = "wan-old-buffers"
"""The lab a transfer tune brings up when none is: a 200 Mbit/s, 100 ms path between two
hosts with Linux 2.6's socket buffers (tuner/lab/specs/wan-old-buffers.yaml)."""


@contextmanager
def _network(console: Console) -> Iterator[tuple[str, LabNetwork]]:
    """The lab's path: the lab that is up, or LAB for the length of the tune."""
    lab = lab_status()
    if lab is not None:
        if lab.network is None:
            raise BadInput(
                f"the lab that is up ({lab.spec_name}) has no network path: bring up one "
                f"with a network: map (`iotuner lab up {LAB}`), or `iotuner lab down` first"
            )
        yield lab.spec_name, lab.network
        return
    console.print(f"no network lab is up: bringing up the lab's {LAB}", style="dim")
    with lab_session(LAB) as fresh:
        assert fresh.network is not None  # the spec has a network: map
        yield fresh.spec_name, fresh.network
    console.print("lab torn down", style="dim")


def tune_transfer(
    workload: Workload,
    config: TuneConfig,
    *,
    as_json: bool,
    plan_out: Path | None,
) -> None:
    """Tune the lab's transfer path (the module's docstring) and print the result."""
    if plan_out is not None:
        raise BadInput(
            "--plan-out: the lab's namespaces are gone after the tune, so a plan naming them "
            "could not be applied; the result (--json) names the settings for your hosts"
        )
    console = Console(stderr=as_json)
    seconds, omit = max(1, round(config.runtime_s)), round(config.ramp_s)
    with ExitStack() as stack:
        spec, net = stack.enter_context(_network(console))
        ends = stack.enter_context(lab_ends(net, seconds + omit))
        journal = stack.enter_context(Journal())
        engine = stack.enter_context(TunableEngine(live_sysroot(), journal))
        stack.enter_context(restore_on_signals(engine))
        tunables = engine.tunables
        wmem, rmem = windows_now(tunables, ends)
        console.print("measuring the parts at the settings found", style="dim")
        before = measure_parts(engine, ends, seconds, omit, {})
        rtt = before[MEMORY].min_rtt_ms or before[MEMORY].rtt_ms
        # The topology says where the source's reads enter and how much memory may be dirty.
        topology = probe_with_settings(tunables.sys.fs()) if ends.source or ends.sink else None
        dirtyable = host_dirtyable_bytes(topology) if topology and ends.sink else None
        space = transfer_space(topology, tunables, ends, window_high(net.rate_mbit, rtt),
                               dirtyable)  # fmt: skip
        if not space.dimensions:
            raise IotunerError("nothing to search: every setting is at its bound already")
        baseline = current_point(space, tunables, workload, dirtyable)
        suggested = bdp_point(space, baseline, ends, needed_window(net.rate_mbit, rtt))
        options = ends.options(seconds, omit)
        view = stack.enter_context(TuneView(console, config.budget, enabled=console.is_terminal))
        label = f"{net.sender} -> {net.receiver_address} (lab {spec}, {options.kind})"
        session = Search(label, workload.name, space, config,
                         lambda point: transfer_trial(engine, space.host_settings(point), ends,
                                                      options)[1],
                         on_trial=view.trial)  # fmt: skip
        result = session.run(baseline, suggested)
        after = {}
        if result.chosen:
            console.print("measuring the parts at the recommended settings", style="dim")
            best = space.host_settings(result.best_settings)
            after = measure_parts(engine, ends, seconds, omit, best)
        windows = Windows(wmem, rmem, before[MEMORY].max_snd_wnd_bytes)
        explanation = explain(net.rate_mbit, ends.goodput_mbit, windows, before, after)
        result = as_written(result, space)
    document = transfer_document(result, explanation)
    save_result("tune", document)
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    console.print(render_summary(result))
    console.print(explanation_table(explanation))
    print_changes(console, result)


def measure_parts(
    engine: TunableEngine,
    ends: TransferEnds,
    seconds: int,
    omit: int,
    settings: dict[tuple[str, str], Any],
) -> dict[str, Any]:
    """Each part the ends can measure, once, at `settings` (restored after each): the
    paper's parts, before a tune and after it."""
    return {
        kind: transfer_trial(engine, dict(settings), ends, options)[0]
        for kind, options in part_options(ends, seconds, omit).items()
    }


def transfer_document(result: TuneResult, explanation: Explanation) -> dict[str, Any]:
    """The `iotuner tune --json` document of a transfer tune: a tune's, plus `transfer`."""
    document = result_document(result)
    document["transfer"] = explanation_document(explanation)
    return document


def explanation_table(explanation: Explanation) -> Table:
    """The explanation's rows under the summary."""
    table = Table(title="the path, in the terms of Hughes-Jones & Dallison", title_justify="left")
    table.add_column("")
    table.add_column("")
    for label, text in explanation_lines(explanation):
        table.add_row(label, text)
    return table
