"""The online benchmark's pgbench mode (`python -m benchmarks.online --app pgbench`).

    python -m benchmarks.online --app pgbench --mix select --start nr_requests=4 --probe
    python -m benchmarks.online --app pgbench --mix select --start nr_requests=4 \\
        --online-time 900 --offline-time 120

PostgreSQL 15 on the lab's `hdd` (ext4), in a memory cgroup of PG_MEMORY, so the database
(scale PG_SCALE, about 300 MB) is well larger than the page cache it gets; pgbench runs
continuously (benchmarks/online_pg.py).

--probe: each --start setting against the lab's own, interleaved (lab, start, lab, start, ...)
with pgbench running, PROBE_S each, to find a start that measurably hurts pgbench.

Otherwise: 1. the harmful start's TPS for six windows (the baseline); 2. `iotuner tune
--online` from it under the running pgbench, its metric pgbench's transactions from its own
progress log, each window's TPS over the baseline's printed; 3. `iotuner capture` of pgbench at
the lab's settings, pgbench stopped, `iotuner tune --capture` on it from the lab's settings
(the offline tune); 4. pgbench's TPS re-measured with the start, the lab's settings, the online
result and the offline one, interleaved twice, each from a fresh pgbench with the database's
pages dropped and a checkpoint: the online result over the offline one is the acceptance's
ratio (>= 0.95).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.online import (
    _capture,
    _offline,
    _offline_settings,
    _online,
    _print_online,
    _queue,
    _set,
)
from benchmarks.online_pg import PORT, SETTINGS, metric_command, progress, window_rates
from benchmarks.pg import Cluster, cluster
from tuner.trials.memcap import memory_cap

PG_SCALE = 20
"""2,000,000 accounts: about 300 MB with the indexes."""
PG_MEMORY = 160 << 20
"""postgres' and pgbench's memory: 16 MB shared buffers, the backends, and a page cache well
short of the database (as issue 32's 1.7 GB database had 448 MB)."""
PROBE_S = 15.0
SETTLE_S = 4.0
"""Seconds of pgbench's log left out after a switch or a start (requests issued before it)."""


def _drop_pages(data: Path) -> None:
    """The database's pages out of the page cache (its own files only, not the host's)."""
    for root, _, names in os.walk(data):
        for name in names:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _since(began: float) -> float:
    """pgbench's clock now (its progress lines count from its start, `began` on ours)."""
    return time.monotonic() - began


def _tps(log: Path, start: float, end: float) -> float:
    """Mean TPS of pgbench's seconds in (start, end]."""
    inside = [tps for (t, tps) in progress(log) if start < t <= end]
    return statistics.fmean(inside) if inside else 0.0


def _fresh(pg: Cluster, data: Path, log: Path, select_only: bool, seconds: float) -> float:
    """TPS of a fresh pgbench for `seconds` after SETTLE_S, its pages dropped first."""
    pg.checkpoint()
    _drop_pages(data)
    with pg.bench(log, select_only):
        time.sleep(SETTLE_S + seconds + 1.5)
    return _tps(log, SETTLE_S, SETTLE_S + seconds)


def run_pgbench(device: str, mount: Path, args: argparse.Namespace, found: dict[str, str]) -> None:
    """The pgbench mode's steps on the mounted lab disk."""
    start = {**found, **dict(kv.split("=", 1) for kv in args.start)}
    select_only = args.mix == "select"
    work = Path(tempfile.mkdtemp(prefix="iotuner-online-pgbench-"))
    log = work / "pgbench.log"
    data = mount / "pgdata"
    print(f"pgbench {'-S' if select_only else 'TPC-B-like'}, scale {PG_SCALE}, "
          f"{PG_MEMORY >> 20} MiB cgroup; lab {found}; start {start}")  # fmt: skip
    with memory_cap(PG_MEMORY) as cap, cluster(mount, cap, PORT, PG_SCALE, SETTINGS) as pg:
        if args.probe:
            _probe(pg, device, data, log, select_only, found, args.probe)
            return
        _set(device, start)
        _drop_pages(data)
        began = time.monotonic()
        with pg.bench(log, select_only):
            time.sleep(SETTLE_S + 6 * args.window + 1.5)
            base = window_rates(progress(log), SETTLE_S, args.window)[:6]
            baseline = statistics.median(base)
            print(f"baseline (start) {baseline:.1f} TPS, windows "
                  f"{', '.join(f'{r:.1f}' for r in base)}")  # fmt: skip
            t0 = _since(began)
            online_out = _online(device, args.window, args.online_time, metric_command(log))
            t1 = _since(began)
            time.sleep(1.5)
            during = window_rates(progress(log), t0, args.window)
            during = during[: int((t1 - t0) // args.window)]
            ratios = [r / baseline for r in during]
            print(f"online tune: {t1 - t0:.0f} s, {len(during)} windows of {args.window:g} s; "
                  "per-window TPS / baseline:")  # fmt: skip
            print("  " + " ".join(f"{r:.2f}" for r in ratios))
            print(f"  lowest x{min(ratios):.3f}; load average {os.getloadavg()[0]:.1f}")
            _print_online(online_out)
            (work / "online.json").write_text(json.dumps(online_out, indent=1))
            online = _queue(device)
            # The offline tune's capture: the same pgbench, at the lab's settings.
            _set(device, found)
            time.sleep(SETTLE_S)
            fingerprint = work / "pgbench-capture.json"
            _capture(device, fingerprint)
        offline_out = _offline(fingerprint, mount, args.offline_time)
        (work / "offline.json").write_text(json.dumps(offline_out, indent=1))
        offline = _offline_settings(found, offline_out)
        print(f"offline tune: {offline} (x{offline_out.get('gain')} {offline_out.get('ci')} "
              f"on its trials, fidelity {offline_out.get('fidelity')})")  # fmt: skip
        settings = {"start": start, "lab": found, "online": online, "offline": offline}
        measured: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(2):
            for name, values in settings.items():
                _set(device, values)
                measured[name].append(_fresh(pg, data, log, select_only, args.remeasure))
        _set(device, found)
        mean = {name: statistics.fmean(v) for name, v in measured.items()}
        for name, values in settings.items():
            print(f"  {name:8} {values}: {', '.join(f'{v:.1f}' for v in measured[name])} TPS")
        print(f"re-measured, interleaved: online / start x{mean['online'] / mean['start']:.3f}, "
              f"offline / start x{mean['offline'] / mean['start']:.3f}, "
              f"online / offline x{mean['online'] / mean['offline']:.3f}; "
              f"load average {os.getloadavg()[0]:.1f}; files in {work}")  # fmt: skip


def _probe(pg: Cluster, device: str, data: Path, log: Path, select_only: bool,
           found: dict[str, str], probes: list[str]) -> None:  # fmt: skip
    """The lab's settings and each probed one, interleaved under one running pgbench."""
    settings = {"lab": found}
    for kv in probes:
        key, value = kv.split("=", 1)
        settings[kv] = {**found, key: value}
    rates: dict[str, list[float]] = {name: [] for name in settings}
    _drop_pages(data)
    began = time.monotonic()
    with pg.bench(log, select_only):
        time.sleep(SETTLE_S + 10)  # the cache under way
        for _ in range(3):
            for name, values in settings.items():
                _set(device, found)  # each from the lab's: scheduler resets nr_requests
                try:
                    _set(device, values)
                except OSError as err:  # the kernel's own bounds: said, and left out
                    print(f"probe {name}: refused by the kernel ({err})")
                    continue
                at = _since(began)
                time.sleep(SETTLE_S + PROBE_S + 1.5)
                rates[name].append(_tps(log, at + SETTLE_S, at + SETTLE_S + PROBE_S))
    _set(device, found)
    lab = statistics.fmean(rates["lab"])
    for name, values in rates.items():
        if not values:
            continue
        print(f"probe {name:22} {', '.join(f'{r:.1f}' for r in values)} TPS, "
              f"x{statistics.fmean(values) / lab:.3f} of the lab's")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f}")
