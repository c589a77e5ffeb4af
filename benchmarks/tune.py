"""`iotuner tune` measured: against the defaults, TuneD and an exhaustive grid; replays; time.

    python -m benchmarks.tune [--quick] [--labs single-disk,...] [--workloads stream-read,...]
    python -m benchmarks.tune --modelled all|hdd-streams,...   (the modelled devices' rows)
    python -m benchmarks.tune --landscape FILE [FILE ...]      (replay only; no root needed)

One run, as root, on the lab (loop devices over /dev/shm, block throttling):

1. For each lab (single-disk, three-disks-one-bus, stripe) and workload (stream-read,
   stream-write): the real tune search (default budget and trial length) on the lab's first
   disk, or on a scratch file on its file system; an exhaustive grid over the same space; then
   the defaults, TuneD's throughput-performance settings, iotuner's result and the grid's best
   measured side by side, interleaved, with the tune's trial length. Each grid is saved as a
   landscape (JSON) for 2; every grid is measured in two passes (--grid-repeats), so a
   replayed trial draws one of two real samples.
2. Replays of the recorded landscapes: iotuner's optimiser and random search over 20 seeds, how
   many reach 95 % of the grid optimum within 15 trials.
3. The wall time of a whole default `iotuner tune` (the main job: lab hdd, concurrent-streams).

With --modelled, step 1 runs the rows of benchmarks/modelled_rows.py instead: each on its
modelled lab (hdd, ssd, raid5, raid0-one-bus, raid0-wide), its workload on the lab's disk
itself, its grid over the dimensions that matter there.

Every point is journaled and restored after its trial (TunableEngine); the labs are torn down
after their rows, also on Ctrl-C or SIGTERM. State (journal, lab record) goes to
$IOTUNER_STATE_DIR, /tmp/iotuner-bench-tune-state when unset.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from benchmarks.modelled_rows import ROWS, ModelledRow, row_named
from benchmarks.tune_replay import BUDGET, SEEDS, TARGET, ReplayResult, replay, within_target
from benchmarks.tune_row import Plan, Row, RowResult, bench_spec, trial_target, tune_defaults
from benchmarks.tuned_profile import DIRTY_SYSCTLS
from tuner.search.replay import Landscape

LABS = ("single-disk", "three-disks-one-bus", "stripe")
WORKLOADS = ("stream-read", "stream-write")
DEFAULT_STATE = "/tmp/iotuner-bench-tune-state"


def log(line: str) -> None:
    """Progress, to stderr (the tables go to stdout)."""
    print(line, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smaller grids and 2 side-by-side rounds (about 40 min)",
    )
    parser.add_argument("--labs", default=",".join(LABS), help="comma-separated lab specs")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument(
        "--modelled",
        help="rows on modelled devices instead of the labs: all, or some of "
        + ", ".join(r.name for r in ROWS),
    )
    parser.add_argument("--repeats", type=int, help="side-by-side rounds (default 3, quick 2)")
    parser.add_argument("--grid-repeats", type=int, default=2, help="passes over each grid")
    parser.add_argument("--runtime", type=float, help="trial seconds (default: tune's default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tunes")
    parser.add_argument("--tune-budget", type=int, help="tune's --budget (default: its own)")
    parser.add_argument(
        "--landscapes",
        type=Path,
        default=Path("/tmp/iotuner-bench-landscapes"),
        help="where the recorded grids are saved",
    )
    parser.add_argument("--out", type=Path, help="write every figure as JSON here")
    parser.add_argument("--no-main-job", action="store_true", help="skip step 3")
    parser.add_argument(
        "--landscape", type=Path, nargs="+", help="only replay these saved landscapes (step 2)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.landscape:
        landscapes = {str(path): Landscape.load(path) for path in args.landscape}
        print(replay_table(landscapes, {name: replay(ls) for name, ls in landscapes.items()}))
        return
    if os.geteuid() != 0:
        sys.exit("benchmarks.tune: needs root (the lab, sysctls, drop_caches)")
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    labs = [name for name in args.labs.split(",") if name]
    workloads = [name for name in args.workloads.split(",") if name]
    _, tune_runtime = tune_defaults()
    repeats = args.repeats or (2 if args.quick else 3)
    plan = Plan(
        repeats=repeats,
        grid_repeats=args.grid_repeats,
        runtime_s=args.runtime or tune_runtime,
        quick=args.quick,
        seed=args.seed,
        tune_budget=args.tune_budget,
    )
    found = read_sysctls()
    started = time.monotonic()
    log(f"state in {os.environ['IOTUNER_STATE_DIR']}; {plan}")
    if args.modelled:
        names = [r.name for r in ROWS] if args.modelled == "all" else args.modelled.split(",")
        rows = run_modelled([row_named(name) for name in names if name], plan, args)
    else:
        rows = run_rows(labs, workloads, plan, args)
    landscapes = {f"{r.lab}/{r.workload}": r.landscape for r in rows}
    replays = {name: replay(ls) for name, ls in landscapes.items()}
    with _terminate_as_interrupt():
        main_job = None if args.no_main_job else time_main_job()
    total = time.monotonic() - started
    print(rows_table(rows, modelled=bool(args.modelled)))
    print(settings_table(rows))
    print(replay_table(landscapes, replays))
    if main_job is not None:
        print(main_job_table(main_job))
    print(f"\nwhole benchmark: {total / 60:.1f} min, {sum(r.flagged for r in rows)} trials flagged")
    left = read_sysctls()
    if left != found:
        print(f"WARNING: vm sysctls were {found} before and are {left} now", file=sys.stderr)
    if args.out is not None:
        args.out.write_text(json.dumps(document(rows, replays, main_job, total, plan), indent=1))
        log(f"figures written to {args.out}")


def run_rows(
    labs: list[str], workloads: list[str], plan: Plan, args: argparse.Namespace
) -> list[RowResult]:
    """Step 1: every (lab, workload) row, each lab up for its rows and down after them."""
    from tuner.rules.installed import load_rule_base

    base = load_rule_base()
    args.landscapes.mkdir(parents=True, exist_ok=True)
    rows: list[RowResult] = []
    with live_engine() as engine:
        for lab_name in labs:
            for name in workloads:
                workload = base.workload(name)
                if workload is None:
                    sys.exit(f"benchmarks.tune: no workload {name!r}")
                log(f"\n== {lab_name} / {name}")
                with lab(lab_name, workload) as up, trial_target(up, workload, plan) as target:
                    log(f"  target {target.path} ({', '.join(target.devices)})")
                    result = Row(lab_name, workload, target, engine, base, plan).run()
                rows.append(result)
                path = args.landscapes / f"{lab_name}-{name}.json"
                result.landscape.save(path)
                log(f"  row done in {result.seconds / 60:.1f} min; landscape saved to {path}")
                if args.out is not None:  # so far, in case the run does not finish
                    args.out.write_text(json.dumps(document(rows, {}, None, 0.0, plan), indent=1))
    return rows


def run_modelled(
    modelled: list[ModelledRow], plan: Plan, args: argparse.Namespace
) -> list[RowResult]:
    """Step 1 with --modelled: each row on its own modelled lab, up for the row only."""
    from tuner.lab import lab_down, lab_up
    from tuner.lab.spec import load_spec
    from tuner.rules.installed import load_rule_base

    base = load_rule_base()
    args.landscapes.mkdir(parents=True, exist_ok=True)
    rows: list[RowResult] = []
    with live_engine() as engine:
        for spec in modelled:
            workload = spec.workload(base)
            log(f"\n== {spec.name}: {spec.lab} / {workload.name} {workload.fio}")
            log(f"  grid over {', '.join(spec.grid)}: {spec.why}")
            lab_spec = load_spec(spec.lab)
            first = lab_spec.disks[0]
            if spec.fs is not None:
                first = replace(first, fs=spec.fs)
            if spec.disk_mib is not None:
                first = replace(first, size_bytes=spec.disk_mib << 20)
            lab_spec = replace(lab_spec, disks=(first, *lab_spec.disks[1:]))
            up = lab_up(lab_spec)
            try:
                if spec.precondition_mib:
                    precondition(up.disks[0].device, spec.precondition_mib)
                with trial_target(up, workload, plan) as target:
                    log(f"  target {target.path} ({', '.join(target.devices)})")
                    row = Row(spec.lab, workload, target, engine, base, plan, levels=spec.levels,
                              cache=spec.cache(first.size_bytes))  # fmt: skip
                    result = replace(row.run(), workload=spec.name)
            finally:
                lab_down()
            rows.append(result)
            path = args.landscapes / f"{spec.name}.json"
            result.landscape.save(path)
            log(f"  row done in {result.seconds / 60:.1f} min; landscape saved to {path}")
            if args.out is not None:
                args.out.write_text(json.dumps(document(rows, {}, None, 0.0, plan), indent=1))
    return rows


@contextmanager
def live_engine() -> Iterator[Any]:
    """The live host's engine for a whole run: journaled, and restored on a signal too."""
    from tuner.tunables.engine import TunableEngine
    from tuner.tunables.journal import Journal
    from tuner.tunables.signals import restore_on_signals
    from tuner.tunables.sysroot import live_sysroot

    with ExitStack() as stack:
        journal = stack.enter_context(Journal())
        engine = stack.enter_context(TunableEngine(live_sysroot(), journal))
        stack.enter_context(restore_on_signals(engine))
        yield engine


def precondition(device: str, mib: int) -> None:
    """Write `mib` MiB to the start of the lab's disk, direct, in 1 MiB requests."""
    log(f"  preconditioning {device}: {mib} MiB written")
    subprocess.run(
        ["fio", "--name=precondition", f"--filename={device}", "--rw=write", "--bs=1M",
         "--direct=1", "--ioengine=libaio", "--iodepth=4", f"--size={mib}M"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip


@contextmanager
def lab(name: str, workload: Any) -> Iterator[Any]:
    """The row's lab (bench_spec), up for the block and torn down after it, however it ends."""
    from tuner.lab import lab_down, lab_up

    spec = bench_spec(name, workload)
    built = lab_up(spec)
    try:
        yield built
    finally:
        lab_down()


def time_main_job() -> dict[str, Any]:
    """Step 3: a whole default `iotuner tune` (no target) in a subprocess, timed end to end."""
    from tuner.lab import lab_down

    log("\n== the main job: iotuner tune --json")
    command = [sys.executable, "-m", "tuner.cli", "tune", "--json"]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate()
    except BaseException:
        # The tune restores its settings and tears its lab down on SIGTERM; give it the time.
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=300)
        raise
    finally:
        lab_down()  # nothing to do unless the tune left its lab behind
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"benchmarks.tune: iotuner tune failed ({proc.returncode}): {stderr}")
    doc = json.loads(stdout)
    searched = [t for t in doc["trials"] if t["phase"] in ("initial", "search")]
    return {
        "command": "iotuner tune --json",
        "wall_s": round(wall, 1),
        "tune_s": doc["seconds"],
        "trials": len(doc["trials"]),
        "search_trials": len(searched),
        "trial_s_median": sorted(t["seconds"] for t in doc["trials"])[len(doc["trials"]) // 2],
        "stop_reason": doc["stop_reason"],
        "baseline_mbps": doc["baseline"]["mbps"],
        "best_mbps": doc["best"]["mbps"],
        "gain": doc["gain"],
        "ci": doc["ci"],
        "chosen": doc["chosen"],
        "changes": doc["changes"],
    }


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so the main job's child is stopped and cleaned up."""

    def interrupt(signo: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def read_sysctls() -> dict[str, str]:
    """The vm writeback sysctls, to check that the run left them as it found them."""
    return {name: Path(f"/proc/sys/vm/{name}").read_text().strip() for name in DIRTY_SYSCTLS}


# -- output -------------------------------------------------------------------------------


def _mbps(row: RowResult, name: str) -> str:
    measured = row.measured[name]
    return f"{measured.mbps:.3g} ({measured.cv:.1%})"


def rows_table(rows: list[RowResult], modelled: bool = False) -> str:
    """Step 1 as Markdown: MB/s (cv) of each setting and the ratios with their targets (the
    modelled rows': issue 18's, with iotuner against the defaults beside them)."""
    grid_target, tuned_target = ("0.97", "1.2") if modelled else ("0.95", "1.0")
    defaults = " iotuner/defaults (>= 0.98) |" if modelled else ""
    lines = [
        f"\n| lab | workload | defaults | TuneD | iotuner | grid best "
        f"| iotuner/grid (>= {grid_target}) | iotuner/TuneD (>= {tuned_target}) |{defaults}"
        " grid | tune |",
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if modelled else ""),
    ]
    for r in rows:
        grid = f"{len(r.landscape.points)} x {len(r.landscape.samples[0])}"
        tune = f"{len(r.tune_trials)} trials, {r.tune_seconds:.0f} s"
        against = f" {r.ratio('iotuner', 'defaults'):.3f} |" if modelled else ""
        lines.append(
            f"| {r.lab} | {r.workload} | {_mbps(r, 'defaults')} | {_mbps(r, 'tuned')} "
            f"| {_mbps(r, 'iotuner')} | {_mbps(r, 'grid')} | {r.ratio('iotuner', 'grid'):.3f} "
            f"| {r.ratio('iotuner', 'tuned'):.3f} |{against} {grid} | {tune} |"
        )
    return "\n".join(lines)


def _changed(row: RowResult, name: str) -> str:
    baseline = {tuple(t[:2]): t[2] for t in row.landscape.meta["baseline"]}
    settings = row.measured[name].settings
    parts = [
        f"{key.split('.')[-1]} {value}"
        for (key, target), value in settings.items()
        if baseline.get((key, target)) != value
    ]
    return ", ".join(parts) or "(defaults)"


def settings_table(rows: list[RowResult]) -> str:
    """What iotuner recommended and what the grid found, as changes from the defaults."""
    lines = ["\n| lab | workload | iotuner's settings | grid best |", "|---|---|---|---|"]
    for r in rows:
        verdict = "" if r.tune_chosen else " (kept the baseline)"
        ours, grid = _changed(r, "iotuner"), _changed(r, "grid")
        lines.append(f"| {r.lab} | {r.workload} | {ours}{verdict} | {grid} |")
    return "\n".join(lines)


def replay_table(landscapes: dict[str, Landscape], replays: dict[str, list[ReplayResult]]) -> str:
    """Step 2 as Markdown: seeds reaching the target within the budget, per optimiser."""
    lines = [
        f"\nReplay: {SEEDS} seeds, {BUDGET} trials, target {TARGET:.0%} of the grid optimum",
        "\n| landscape | grid points x repeats | points >= target | iotuner | random "
        "| iotuner without the rules' point | iotuner median trials | random median trials "
        "| iotuner mean best | random mean best |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, results in replays.items():
        ls = landscapes[name]
        by = {r.optimizer: r for r in results}
        ours, rand, bare = by["iotuner"], by["random"], by["no-rules"]
        lines.append(
            f"| {name} | {len(ls.points)} x {min(len(s) for s in ls.samples)} "
            f"| {within_target(ls)} | {ours.hits}/{SEEDS} | {rand.hits}/{SEEDS} "
            f"| {bare.hits}/{SEEDS} "
            f"| {ours.median_trials} | {rand.median_trials} "
            f"| {sum(ours.best_fraction) / SEEDS:.3f} | {sum(rand.best_fraction) / SEEDS:.3f} |"
        )
    return "\n".join(lines)


def main_job_table(job: dict[str, Any]) -> str:
    """Step 3 in one line, with its target."""
    return (
        f"\nMain job `{job['command']}`: {job['wall_s']:.0f} s wall (target < 180 s), "
        f"{job['trials']} trials ({job['search_trials']} searched, median "
        f"{job['trial_s_median']:.1f} s each), {job['stop_reason']}; baseline "
        f"{job['baseline_mbps']} MB/s, best {job['best_mbps']} MB/s, gain x{job['gain']} "
        f"(95% {job['ci'][0]}-{job['ci'][1]})"
    )


def document(
    rows: list[RowResult],
    replays: dict[str, list[ReplayResult]],
    main_job: dict[str, Any] | None,
    total: float,
    plan: Plan,
) -> dict[str, Any]:
    """Every figure of the run, for --out."""
    return {
        "plan": asdict(plan),
        "seconds": round(total, 1),
        "rows": [
            {
                "lab": r.lab,
                "workload": r.workload,
                "target": r.target,
                "dimensions": [f"{k}@{t}" for k, t in r.space.names()],
                "grid_points": len(r.landscape.points),
                "measured": {
                    name: {
                        "settings": [[k, t, v] for (k, t), v in m.settings.items()],
                        # Four significant digits: a RAID-5 small writer moves 0.16 MB/s.
                        "samples": [float(f"{s:.4g}") for s in m.samples],
                        "mbps": float(f"{m.mbps:.4g}"),
                        "cv": round(m.cv, 4),
                    }
                    for name, m in r.measured.items()
                },
                "iotuner_over_grid": round(r.ratio("iotuner", "grid"), 4),
                "iotuner_over_tuned": round(r.ratio("iotuner", "tuned"), 4),
                "iotuner_over_defaults": round(r.ratio("iotuner", "defaults"), 4),
                "tune": {
                    "trials": len(r.tune_trials),
                    "seconds": round(r.tune_seconds, 1),
                    "chosen": r.tune_chosen,
                    "stop_reason": r.tune_stop,
                },
                "seconds": round(r.seconds, 1),
                "flagged": r.flagged,
            }
            for r in rows
        ],
        "replay": {
            name: {
                r.optimizer: {
                    "hits": r.hits,
                    "reached": list(r.reached),
                    "best_fraction": [round(b, 4) for b in r.best_fraction],
                }
                for r in results
            }
            for name, results in replays.items()
        },
        "main_job": main_job,
    }


if __name__ == "__main__":
    main()
