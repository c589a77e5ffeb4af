"""`iotuner tune --workload disk-to-network`: tune both ends of a bulk transfer on the lab's path.

The ends are the network lab's namespaces: the lab that is up (`iotuner lab up SPEC` with a
`network:`), or, when none is, `wan-old-buffers` brought up for the tune and torn down after.
The path is measured first (its RTT, and where a run at the largest window stops rising:
tuner/tune/transfer_path.py) and every trial lasts as long as that path needs.
Before the search, the paper's parts are measured at the settings found (memory to memory,
and disk to memory, memory to disk, disk to disk where the ends have disks); after it, at the
recommended settings. Both ends' settings are journaled and restored after every trial, as in
a disk tune, also on Ctrl-C, SIGTERM and, through the journal, after kill -9.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from tuner.commands.transfer_report import report_transfer
from tuner.console import output_console
from tuner.errors import BadInput
from tuner.lab.model import LabNetwork
from tuner.lab.session import lab_session
from tuner.lab.status import lab_status
from tuner.rules.model import Workload
from tuner.trials.transfer_length import longest_measure
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.signals import restore_on_signals
from tuner.tunables.sysroot import live_sysroot
from tuner.tune.session import TuneConfig
from tuner.tune.setup import host_dirtyable_bytes
from tuner.tune.transfer import (
    TransferSearch,
    as_written,
    decided_seconds,
    lab_ends,
    lab_path,
    measure_parts,
    probe_lines,
    search_transfer,
    transfer_space,
    window_high,
    windows_now,
)
from tuner.tune.transfer_explain import (
    MEMORY,
    Windows,
    explain,
    needed_window,
    transfer_document,
)
from tuner.tune.transfer_path import measure_rtt, size_trials
from tuner.tune.view import TuneView

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
    console = output_console(stderr=as_json)
    with ExitStack() as stack:
        spec, net = stack.enter_context(_network(console))
        journal = stack.enter_context(Journal())
        engine = stack.enter_context(TunableEngine(live_sysroot(), journal))
        stack.enter_context(restore_on_signals(engine))
        tunables = engine.tunables
        console.print("measuring the path (its RTT, then one run at the largest window the "
                      "search tries)", style="dim")  # fmt: skip
        path = lab_path(net)
        path_rtt = measure_rtt(engine, path)
        sized = size_trials(engine, path, window_high(net.rate_mbit, path_rtt[0]),
                            config.runtime_s, config.ramp_s, path_rtt)[0]  # fmt: skip
        console.print(sized.line(), style="dim", highlight=False, markup=False)
        seconds, omit = sized.length.measure_s, sized.length.ramp_s
        longest = longest_measure(seconds, sized.probe.rtt_ms)
        ends = stack.enter_context(lab_ends(net, longest + omit))
        ends = replace(ends, interval_s=sized.length.interval_s, horizon_s=sized.horizon_s)
        wmem, rmem = windows_now(tunables, ends)
        console.print("measuring the parts at the settings found", style="dim")
        before = measure_parts(engine, ends, seconds, omit, {})
        rtt = before[MEMORY].min_rtt_ms or before[MEMORY].rtt_ms
        # The topology says where the source's reads enter and how much memory may be dirty.
        topology = probe_with_settings(tunables.sys.fs()) if ends.source or ends.sink else None
        dirtyable = host_dirtyable_bytes(topology) if topology and ends.sink else None
        space = transfer_space(topology, tunables, ends, window_high(net.rate_mbit, rtt),
                               dirtyable)  # fmt: skip
        view = stack.enter_context(TuneView(console, config.budget, enabled=console.is_terminal))
        search = TransferSearch(f"{net.sender} -> {net.receiver_address} (lab {spec})",
                                workload, config, needed_window(net.rate_mbit, rtt), seconds,
                                omit, view.trial, dirtyable, rtt_ms=rtt)  # fmt: skip
        result = search_transfer(engine, ends, space, search)
        for line in probe_lines(search):
            console.print(line, style="dim", highlight=False, markup=False)
        after = {}
        if result.chosen:
            console.print("measuring the parts at the recommended settings", style="dim")
            best = space.host_settings(result.best_settings)
            decided = decided_seconds(search, tunables, ends, best)
            after = measure_parts(engine, ends, decided, omit, best)
        windows = Windows(wmem, rmem, before[MEMORY].max_snd_wnd_bytes)
        explanation = explain(net.rate_mbit, ends.goodput_mbit, windows, before, after)
        result = as_written(result, space)
    document = transfer_document(result, explanation)
    document["trial_length"] = {
        **sized.document(),
        "longer_ramps_s": dict(search.ramps),
        "longer_measures_s": dict(search.measures),
        "screen_discounts": {k: round(v, 4) for k, v in search.discounts.items()},
    }
    report_transfer(console, result, explanation, document, as_json, lab=True)  # the lab's two ends
