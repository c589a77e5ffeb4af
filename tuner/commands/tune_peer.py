"""`iotuner tune --workload disk-to-network --peer HOST[:PORT]`: tune this host as the sender
of a bulk transfer to a peer that runs `iperf3 -s`.

The peer is checked first, before anything is changed: one eight-stream iperf3 run measures
the path (tuner/trials/peer.py; an unreachable peer is one line and exit 1). Then, as the lab's
transfer tune does, the parts are measured at the settings found, this host's settings are
searched with iperf3 trials (journaled, restored after every trial, also on Ctrl-C, SIGTERM
and, through the journal, after kill -9), the winner is confirmed against the baseline
interleaved, and the parts are measured again at it. The result is explained in the paper's
terms, naming what the peer would need when the cap is on its side; --plan-out writes this
host's settings as a plan for `iotuner apply`.
"""

from __future__ import annotations

import socket
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuner.commands.transfer_report import report_transfer
from tuner.console import output_console
from tuner.plan import plan_from_tune, write_plan
from tuner.rules.model import Workload
from tuner.search.space import HOST
from tuner.trials.peer import Peer, measure_path
from tuner.trials.route import route_to
from tuner.trials.transfer import TransferResult
from tuner.trials.transfer_length import longest_measure
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.signals import restore_on_signals
from tuner.tunables.sysroot import live_sysroot
from tuner.tune.result import TuneResult
from tuner.tune.session import TuneConfig
from tuner.tune.transfer import (
    WMEM,
    TransferSearch,
    as_written,
    buffer_max,
    decided_seconds,
    measure_parts,
    probe_lines,
    search_transfer,
    transfer_space,
    window_high,
)
from tuner.tune.transfer_explain import (
    MEMORY,
    Windows,
    explain,
    needed_window,
    transfer_document,
)
from tuner.tune.transfer_path import size_trials
from tuner.tune.transfer_peer import bounded, path_rate, peer_ends, peer_path
from tuner.tune.view import TuneView


def tune_peer(
    workload: Workload,
    config: TuneConfig,
    peer: Peer,
    source_dir: str | None,
    *,
    as_json: bool,
    plan_out: Path | None,
) -> None:
    """Tune this host's side of a transfer to `peer` (the module's docstring) and print it."""
    console = output_console(stderr=as_json)
    started = time.monotonic()
    console.print(f"measuring the path to {peer} (iperf3 -s there)", style="dim", highlight=False,
                  markup=False)  # fmt: skip
    measured = measure_path(peer)  # before anything changes: an unreachable peer ends it here
    route = route_to(measured.address)
    with ExitStack() as stack:
        journal = stack.enter_context(Journal())
        engine = stack.enter_context(TunableEngine(live_sysroot(), journal))
        stack.enter_context(restore_on_signals(engine))
        tunables = engine.tunables
        wmem = buffer_max(tunables, WMEM, HOST)
        rate, how = path_rate(measured, wmem, route)
        console.print(f"path: RTT {measured.rtt_ms:g} ms, {measured.rate_mbit:g} Mbit/s over "
                      f"{measured.streams} streams; windows sized for {rate:g} Mbit/s ({how})",
                      style="dim", highlight=False, markup=False)  # fmt: skip
        # The path's RTT is the peer check's (TCP's least, on eight streams).
        sized = size_trials(engine, peer_path(measured, route, rate), window_high(rate,
                            measured.rtt_ms), config.runtime_s, config.ramp_s,
                            (measured.rtt_ms, "TCP's least RTT"))[0]  # fmt: skip
        console.print(sized.line(), style="dim", highlight=False, markup=False)
        seconds, omit = sized.length.measure_s, sized.length.ramp_s
        longest = longest_measure(seconds, measured.rtt_ms)
        ends = stack.enter_context(peer_ends(measured, route, rate, source_dir,
                                             longest + omit))  # fmt: skip
        ends = replace(ends, interval_s=sized.length.interval_s, horizon_s=sized.horizon_s)
        console.print("measuring the parts at the settings found", style="dim")
        before = measure_parts(engine, ends, seconds, omit, {})
        rtt = before[MEMORY].min_rtt_ms or measured.rtt_ms
        # The topology says where the source's reads enter.
        topology = probe_with_settings(tunables.sys.fs()) if ends.source else None
        space = transfer_space(topology, tunables, ends, window_high(rate, rtt), None)
        view = stack.enter_context(TuneView(console, config.budget, enabled=console.is_terminal))
        search = TransferSearch(f"this host -> {peer}", workload, config,
                                needed_window(rate, rtt), seconds, omit, view.trial,
                                bound=lambda runner: bounded(runner, started),
                                rtt_ms=rtt)  # fmt: skip
        result = search_transfer(engine, ends, space, search)
        for line in probe_lines(search):
            console.print(line, style="dim", highlight=False, markup=False)
        after: dict[str, TransferResult] = {}
        if result.chosen:
            console.print("measuring the parts at the recommended settings", style="dim")
            best = space.host_settings(result.best_settings)
            decided = decided_seconds(search, engine.tunables, ends, best)
            after = measure_parts(engine, ends, decided, omit, best)
        carried = _most_carried(measured.rate_mbit, before, after, result)
        windows = Windows(wmem, 0, before[MEMORY].max_snd_wnd_bytes)
        explanation = explain(carried, carried, windows, before, after, peer=str(peer))
        result = as_written(result, space)
    document = transfer_document(result, explanation)
    document["trial_length"] = {
        **sized.document(),
        "longer_ramps_s": dict(search.ramps),
        "longer_measures_s": dict(search.measures),
        "screen_discounts": {k: round(v, 4) for k, v in search.discounts.items()},
    }
    document["peer"] = {"peer": str(peer), "address": ends.ends.address,
                        "interface": route.interface if route else None,
                        "windows_sized_for_mbit": rate, "how": how}  # fmt: skip
    if plan_out is not None:
        write_plan(_plan(result, document), plan_out)
    report_transfer(console, result, explanation, document, as_json, lab=False)
    if plan_out is not None and not as_json:
        console.print(f"plan written to {plan_out}", highlight=False, markup=False)


def _most_carried(
    preflight: float,
    before: dict[str, TransferResult],
    after: dict[str, TransferResult],
    result: TuneResult,
) -> float:
    """The most any memory-to-memory run to the peer carried (Mbit/s received): the path
    carries at least that. Search trials score MB/s of what reached the peer."""
    figures = [preflight, before[MEMORY].goodput_mbit]
    if MEMORY in after:
        figures.append(after[MEMORY].goodput_mbit)
    if before.keys() == {MEMORY}:  # the trials were memory to memory too
        figures += [t.mbps * 8 for t in result.trials if not t.set_aside]
    return round(max(figures), 1)


def _plan(result: TuneResult, document: dict[str, Any]) -> Any:
    """This host's confirmed changes as a plan (triples as lists, as a plan writes them)."""
    measured = {k: v for k, v in document.items() if k != "trials"}
    changes = {slot: list(v) if isinstance(v, tuple) else v
               for slot, v in result.changes().items()}  # fmt: skip
    baseline = {slot: list(v) if isinstance(v, tuple) else v
                for slot, v in result.baseline_settings.items()}  # fmt: skip
    return plan_from_tune(changes, baseline, socket.gethostname(), result.workload, measured)
