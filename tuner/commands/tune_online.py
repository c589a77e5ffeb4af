"""`iotuner tune --online`: tune a device's queue settings on its live workload, safely.

The options are checked before anything changes (BadInput, exit 2): the device, the bounds,
the application metric (read once). Then tuner/online/session.py alternates slices; every
change goes through the journaled engine, restored on Ctrl-C and SIGTERM, and by the journal's
recovery after kill -9. Only a gain whose interval is above 1 is kept.
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from tuner.console import output_console
from tuner.errors import BadInput
from tuner.online.latency import LatencySampler, device_numbers
from tuner.online.metric import Metric, MetricError, command_metric, prometheus_metric
from tuner.online.session import Engines, OnlineConfig, OnlineResult, OnlineTune, Tried
from tuner.online.slices import SliceFigures
from tuner.plan import plan_from_tune, write_plan
from tuner.results import save_result
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.signals import restore_on_signals
from tuner.tunables.sysroot import live_sysroot

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}")
ONLINE_TIME_S = 900.0
"""The acceptance's fifteen minutes: an online tune ends within them unless --time says."""
WORSE_SHARE = 0.1
"""Without --max-worse, a tenth of --time may go to candidates that measure worse."""


def device_name(text: str, sys_block: Path = Path("/sys/block")) -> str:
    """The kernel name of a whole block device given as NAME or /dev/NAME, else BadInput."""
    name = text.removeprefix("/dev/")
    if not _NAME.fullmatch(name):
        raise BadInput(f"--device {text[:60]!r}: give a block device such as sdb or /dev/sdb")
    if not (sys_block / name / "queue").is_dir():
        if Path("/sys/class/block", name, "partition").exists():
            raise BadInput(f"--device {name}: a partition; its queue is the whole disk's: name it")
        raise BadInput(f"--device {name}: no such block device with a request queue")
    return name


def make_metric(
    metric: str | None, kind: str, prometheus: tuple[str, str] | None, slice_s: float
) -> Metric | None:
    """The application metric from the options, read once to check it (BadInput when the
    first read fails: nothing has changed yet)."""
    if metric is not None and prometheus is not None:
        raise BadInput("give --metric or --prometheus, not both")
    # A read must end well inside a slice: half of it, at most 5 s.
    timeout = min(5.0, slice_s / 2)
    found = None
    if metric is not None:
        found = command_metric(metric, kind, timeout)
    elif prometheus is not None:
        found = prometheus_metric(*prometheus, timeout=timeout)
    if found is not None:
        try:
            found.read()
        except MetricError as err:
            raise BadInput(f"the metric's first read failed: {err}") from None
    return found


def tune_online(
    device: str,
    *,
    slice_s: float,
    latency_bound: float,
    time_s: float | None,
    max_worse_s: float | None,
    metric: Metric | None,
    as_json: bool,
    plan_out: Path | None,
) -> None:
    """Run the online tune on `device` and report it (see the module's docstring)."""
    total = ONLINE_TIME_S if time_s is None else time_s
    worse = WORSE_SHARE * total if max_worse_s is None else max_worse_s
    if total < 4 * slice_s:
        raise BadInput(
            f"--time {total:g}: an online tune needs at least four slices ({4 * slice_s:g} s)"
        )
    config = OnlineConfig(slice_s=slice_s, latency_bound=latency_bound, time_s=total,
                          max_worse_s=worse)  # fmt: skip
    console = output_console(stderr=as_json)
    numbers = device_numbers(device)
    with ExitStack() as stack:
        journal = stack.enter_context(Journal())
        held = stack.enter_context(TunableEngine(live_sysroot(), journal))
        trial = stack.enter_context(TunableEngine(live_sysroot(), journal))
        stack.enter_context(restore_on_signals(Engines(trial, held)))
        sampler = None
        if numbers is not None:
            sampler = LatencySampler.open(*numbers)
            if sampler is not None:
                stack.enter_context(sampler)
        if sampler is None:
            console.print("tracefs not available: the latency bound is checked on time in "
                          "queue per request (diskstats)", style="dim")  # fmt: skip
        session = OnlineTune(device, held, trial, config, metric=metric, sampler=sampler,
                             on_slice=lambda s: _slice_line(console, s),
                             on_verdict=lambda t: _verdict_line(console, t))  # fmt: skip
        result = session.run()
    document = result_document(result)
    if plan_out is not None:
        host = Path("/proc/sys/kernel/hostname").read_text().strip() or "host"
        changes = {(k, device): v for k, v in result.changes().items()}
        found = {(k, device): v for k, v in result.found.items()}
        write_plan(plan_from_tune(changes, found, host, "online", document), plan_out)
    save_result("tune-online", document, devices=[device])
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        _summary(console, result)


def result_document(result: OnlineResult) -> dict[str, Any]:
    """The result as JSON: what was tried, each slice, the time on worse settings, the kept
    setting and its gain with its interval."""
    return {
        "device": result.device,
        "found": result.found,
        "reached": result.reached,
        "kept": result.kept,
        "changes": result.changes(),
        "gain": round(result.gain, 4),
        "ci": [round(result.low, 4), round(result.high, 4) if result.high < 1e9 else None],
        "worse_seconds": round(result.worse_s, 2),
        "elapsed_seconds": round(result.elapsed_s, 2),
        "ended": result.ended,
        "metric": result.metric,
        "traced_latency": result.traced,
        "tried": [_tried(t) for t in result.tried],
        "slices": [s.as_json() for s in result.slices],
    }


def _tried(t: Tried) -> dict[str, Any]:
    high = round(t.high, 4) if t.high < 1e9 else None
    return {"setting": t.candidate.label, "outcome": t.outcome, "gain": round(t.gain, 4),
            "ci": [round(t.low, 4), high], "why": t.why}  # fmt: skip


def _slice_line(console: Console, s: SliceFigures) -> None:
    p99 = ", ".join(f"{k}K {v:.1f} ms" for k, v in s.p99_ms.items()) or "-"
    metric = f", metric {s.metric:.4g}" if s.metric is not None else ""
    stopped = f"  STOPPED: {s.stopped}" if s.stopped else ""
    console.print(
        f"{s.setting:<34} {s.seconds:5.1f} s  {s.mbps:8.2f} MB/s  {s.iops:8.1f} IOPS  "
        f"svc {s.service_ms:6.2f} ms  queue {s.queue_ms:7.2f} ms  p99 {p99}{metric}{stopped}",
        highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip


def _verdict_line(console: Console, t: Tried) -> None:
    high = f"{t.high:.3f}" if t.high < 1e9 else "inf"
    why = f": {t.why}" if t.why else ""
    console.print(f"-> {t.candidate.label}: {t.outcome}, x{t.gain:.3f} ({t.low:.3f}-{high}){why}",
                  style="bold", highlight=False, markup=False, soft_wrap=True)  # fmt: skip


def _summary(console: Console, result: OnlineResult) -> None:
    changes = ", ".join(f"{k}={v}" for k, v in result.changes().items())
    high = f"{result.high:.3f}" if result.high < 1e9 else "inf"
    if result.kept:
        line = f"kept {changes}: x{result.gain:.3f} (95% CI {result.low:.3f}-{high})"
    elif result.reached != result.found:
        line = (f"kept the settings found: what was reached measured x{result.gain:.3f} "
                f"(95% CI {result.low:.3f}-{high}), not above 1")  # fmt: skip
    else:
        line = "kept the settings found: no candidate was better"
    console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"{len(result.tried)} candidate(s), {len(result.slices)} slices in "
        f"{result.elapsed_s:.0f} s, {result.worse_s:.0f} s on worse settings; ended: "
        f"{result.ended}", highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip
