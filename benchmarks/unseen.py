"""The tune judged on environments nobody chose: drawn labs and workloads (issue 29).

    python -m benchmarks.unseen [--draws 40] [--seed 0] [--quick] [--seeds 3,17]
                                [--first K --count N] [--rounds 3] [--budget N]
                                [--out FILE] [--resume FILE [--mix-commits]]
    python -m benchmarks.unseen --summary FILE [FILE ...]

Draw i is seed S + i (or each of --seeds): tuner/lab/generate.py's environment, printed as a
lab spec (replay it with `iotuner lab up FILE`), and tuner/lab/generate_jobs.py's workload for
it. For each draw, as root, on its own lab (up for the draw, down after it):

1. `iotuner tune` as a user runs it (`--target ... --fio-job JOB --plan-out PLAN --json`, the
   drawn page cache as `--cache-memory`; a path: `--workload disk-to-network`), timed;
2. a coarse grid: read_ahead_kb x scheduler (and max_sectors_kb back at the device's limit
   when the start cut it), each point once under plain fio (a path: TCP buffers x congestion
   control under iperf3);
3. interleaved rounds (D P T G, P T G D, ...), caches dropped before every run: the defaults
   (the drawn start), the tune's plan applied by `iotuner apply` (rolled back after), TuneD's
   throughput-performance (network-throughput for a path) and the grid's best, under plain
   fio in the benchmark's own memory cgroup (claims.py's machinery), or iperf3 (a path, through
   tuner.trials.transfer, as benchmarks/transfer_tune.py measures).

A side whose settings are what the host holds already (the tune kept the defaults, TuneD's
readahead no larger than the start's, the grid's best the start itself) is the defaults: it
is measured once, as the defaults, and its row says so. A grid point that differs only in
read_ahead_kb is the same point for a job readahead never meets (direct I/O, a pure writer).

`--out FILE` is rewritten (atomically) after every draw, each draw with its index, seed and
the commit it ran at; `--resume FILE` skips the draws already in it and refuses draws of
another commit (`--mix-commits` allows them); `--first K --count N` runs draws K..K+N-1 of
the sequence; `--summary FILE...` judges one or several such files together and names every
commit they cover. Each draw records where its time went (lab up, files, tune, warm, grid,
rounds, lab down).

One row per draw and the summary the issue asks for: never below 0.98 x the defaults, claim
within 10 % of the re-measurement, at least 0.95 of the grid's best, at least 1.0 and 1.2 x
TuneD, tune time by family, and the seed of every failing draw. TuneD's vm writeback ratios
(host-wide) are written only for writing workloads, through the journaled engine, and put
back after each run. These are lab figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import claims, transfer_tune, tuned_profile
from benchmarks.tune import live_engine
from tuner.errors import BadInput
from tuner.lab.generate import Environment
from tuner.lab.generate_jobs import Workload, draw_pair
from tuner.trials.diskstats import read_diskstats
from tuner.tunables.base import TunableError
from tuner.tunables.naming import HOST

DEFAULT_STATE = "/tmp/iotuner-bench-unseen-state"
SIDES = ("defaults", "plan", "tuned", "grid")
NEVER_WORSE = claims.NEVER_WORSE
WITHIN = claims.WITHIN
GRID_VS = 0.95
REPO = Path(__file__).resolve().parents[1]
PHASES = ("lab up", "files", "tune", "warm", "grid", "rounds", "lab down")
Setting = tuple[str, str]
Settings = dict[Setting, Any]


@dataclass(frozen=True)
class Plan:
    """How hard to measure."""

    rounds: int = 3
    runtime_s: float = 8.0
    ramp_s: float = 2.0
    budget: int | None = None
    quick: bool = False
    sides: tuple[str, ...] = SIDES  # the CI slice measures the defaults and the plan only
    time_s: float | None = None  # the tune's --time: the CI slice bounds its whole tune

    @property
    def fio(self) -> claims.Plan:
        """claims.py's plan for plain fio runs."""
        return claims.Plan(self.rounds, self.runtime_s, self.ramp_s, self.budget)


@dataclass
class Draw:
    """What one draw claimed and measured."""

    seed: int
    family: str
    start: str
    workload: str
    summary: str
    unit: str = "MB/s"
    chosen: bool = False
    claimed: float = 1.0
    ci: tuple[float, float] = (1.0, 1.0)
    changes: list[str] = field(default_factory=list)
    grid_best: str = ""
    samples: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    tune_s: float = 0.0
    seconds: float = 0.0
    cause: str | None = None
    refused: str | None = None  # the tune recommended nothing (exit 1): the host as it was
    at_least: bool = False  # the tune's start was a transient: its claim is a lower bound
    # The device's MB/s over each of the defaults' plain-fio runs (read from /proc/diskstats
    # beside fio, which stays plain): the start's ceiling, as the tune's at-least claim uses.
    device: list[float] = field(default_factory=list)
    index: int = 0  # the draw's place in its run's sequence (seed = the run's --seed + index)
    commit: str = ""  # the code it ran at (commit_of)
    plan: str = ""  # how hard it was measured (Plan's repr): a resumed run must match it
    phases: dict[str, float] = field(default_factory=dict)  # PHASES -> seconds
    same: dict[str, str] = field(default_factory=dict)  # side -> the side measured for it

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Draw:
        """A draw as `--out` wrote it (JSON turns its tuples to lists)."""
        fields = dict(doc)
        fields["ci"] = tuple(fields.get("ci", (1.0, 1.0)))
        return cls(**fields)

    def mean(self, side: str) -> float | None:
        """Mean of a side's samples; None before it is measured."""
        values = self.samples[side]
        return statistics.fmean(values) if values else None

    def over(self, top: str, bottom: str) -> float | None:
        """Mean of `top` over mean of `bottom`."""
        a, b = self.mean(top), self.mean(bottom)
        return None if a is None or not b else a / b

    @property
    def measured(self) -> float | None:
        """The re-measured gain: the plan's mean over the defaults'."""
        return self.over("plan", "defaults")

    @property
    def bars(self) -> list[float]:
        """What the plan is judged against, round by round: the defaults' figures, or for an
        at-least claim each run's ceiling (the device's rate when fio got less: a start whose
        readahead was still in flight when the run ended, as the tune's claim counts it)."""
        if not self.at_least:
            return self.samples["defaults"]
        rates = self.device + [0.0] * (len(self.samples["defaults"]) - len(self.device))
        return [max(d, rate) for d, rate in zip(self.samples["defaults"], rates, strict=False)]

    @property
    def judged(self) -> float | None:
        """The re-measured gain the claim is held to: the plan's mean over the bars'."""
        plan, bars = self.samples["plan"], self.bars
        if not plan or not bars or not statistics.fmean(bars):
            return None
        return statistics.fmean(plan) / statistics.fmean(bars)

    @property
    def round_gains(self) -> list[float]:
        """The plan over the bars round by round (both measured in the same round)."""
        pairs = zip(self.samples["plan"], self.bars, strict=False)
        return [p / d for p, d in pairs if d > 0]

    def failures(self) -> list[str]:
        """The targets this draw misses, in words ([] when it meets them all)."""
        if self.cause is not None:
            return [self.cause]
        gain, out = self.measured, []
        if gain is None:
            return ["not measured"]
        if self.refused is not None:
            out.append(f"tune refused: {self.refused}")
        if self.chosen and gain < NEVER_WORSE:
            out.append(f"worse: x{gain:.3f} of the defaults")
        judged = self.judged or gain
        if abs(judged / self.claimed - 1) > WITHIN:
            least = " at least" if self.at_least else ""
            out.append(f"claim{least} x{self.claimed:.3f}, measured x{judged:.3f}")
        grid = self.over("plan", "grid")
        if grid is not None and grid < GRID_VS:
            out.append(f"x{grid:.3f} of the grid's best")
        tuned = self.over("plan", "tuned")
        if tuned is not None and tuned < 1.0:
            out.append(f"x{tuned:.4f} of TuneD")
        return out


def holds_under_load(draw: Draw, margin: float = WITHIN) -> list[str]:
    """What a tolerance under load can hold (the CI slice): never worse than the defaults
    within the rounds' spread (the best round's gain at least 0.98, or the defaults kept), and
    the claim's interval within `margin` of the rounds' gains. [] when both hold."""
    if draw.cause is not None:
        return [draw.cause]
    gains = draw.round_gains
    if not gains:
        return ["not measured"]
    out = []
    if draw.chosen and max(gains) < NEVER_WORSE:
        out.append(f"worse in every round: {', '.join(f'x{g:.3f}' for g in gains)}")
    low, high = draw.ci if draw.chosen else (1.0, 1.0)
    if high < min(gains) * (1 - margin) or low > max(gains) * (1 + margin):
        out.append(f"claim {low:.3f}-{high:.3f} outside the rounds' {min(gains):.3f}-"
                   f"{max(gains):.3f} by more than {margin:.0%}")  # fmt: skip
    return out


# -- a disk draw ------------------------------------------------------------------------------


def run_disk(env: Environment, work: Workload, plan: Plan, tmp: Path, engine: Any) -> Draw:
    """Tune, grid, and the four settings interleaved on the draw's own lab."""
    draw = _draw(env, work)
    with timed_lab(draw, lab(env.spec_text)) as status:
        dev = status["lab"]["disks"][0]["device"]
        mnt = status["lab"]["mountpoint"] or ""
        with phase(draw, "files"):
            for name, size in work.files:
                subprocess.run(["dd", "if=/dev/urandom", f"of={mnt}/{name}", "bs=1M",
                                f"count={size >> 20}", "oflag=direct", "status=none"],
                               check=True)  # fmt: skip
            if "directory={mnt}/small" in work.job:
                Path(mnt, "small").mkdir(exist_ok=True)
        job = tmp / f"drawn-{env.seed}.fio"
        job.write_text(work.job_text(dev, mnt))
        plan_file = tmp / f"drawn-{env.seed}-plan.yaml"
        args = ["tune", "--target", dev if work.target == "dev" else mnt, "--fio-job", str(job),
                "--plan-out", str(plan_file), "--json"]  # fmt: skip
        if work.cache_memory is not None:
            args += ["--cache-memory", str(work.cache_memory)]
        if plan.budget is not None:
            args += ["--budget", str(plan.budget)]
        if plan.time_s is not None:
            args += ["--time", f"{plan.time_s:g}"]
        with phase(draw, "tune"):
            if not _tune(draw, args):
                return draw
        # The draw as a claims row: plain fio's ramp and its memory cgroup follow the claims
        # benchmark's rules (fio's own memory grows with its jobs; only a random reader in a
        # cache gets the cache-filling ramp).
        row = claims.ClaimRow(f"seed-{env.seed}", "", work.job, work.target,
                              cache_memory=work.cache_memory, timed=work.timed)  # fmt: skip
        limit = row.cgroup_limit
        name = Path(dev).name
        with claims.memory_cgroup(limit) as cgroup:

            def measure() -> float:
                if cgroup is not None and limit is not None:
                    # Room for the readahead in flight under the settings now in force.
                    read_ahead = int(Path("/sys/block", name, "queue/read_ahead_kb").read_text())
                    claims.set_memory_limit(cgroup, limit + row.in_flight_bytes(read_ahead))
                return claims.plain_fio(job, plan.fio, row, cgroup, draw.unit)

            def run(settings: Settings) -> float:
                return _with(engine, settings, measure)

            def defaults() -> float:
                figure, rate = _device_rate(name, lambda: run({}))
                draw.device.append(rate if draw.unit == "MB/s" else 0.0)
                return figure

            with phase(draw, "warm"):
                run({})  # lays files out and warms the lab; not counted
            best: Settings = {}
            if "grid" in plan.sides:
                with phase(draw, "grid"):
                    points = disk_grid(name, plan.quick, readahead_inert(work.job))
                    best = _grid(draw, points, run)
            conf = tmp / f"drawn-{env.seed}-conf"
            conf.mkdir(exist_ok=True)

            def plan_side() -> float:
                claims.iotuner("apply", str(plan_file), "--conf-root", str(conf))
                try:
                    return run({})
                finally:
                    claims.iotuner("rollback")

            tuned = tuned_disk(name, work)
            sides: dict[str, Callable[[], float]] = {
                "defaults": defaults,
                "plan": plan_side,
                "tuned": lambda: run(tuned),
                "grid": lambda: run(best),
            }
            # A side that is the start measures the start: once, as the defaults.
            same = {side: "defaults" for side, settings in (("tuned", tuned), ("grid", best))
                    if is_start(engine, settings)}  # fmt: skip
            if not draw.chosen:
                same["plan"] = "defaults"  # kept or refused: the host as it was
            with phase(draw, "rounds"):
                _rounds(draw, {k: v for k, v in sides.items() if k in plan.sides}, plan.rounds,
                        same)  # fmt: skip
    return draw


def readahead_inert(job: str) -> bool:
    """Whether read_ahead_kb cannot change what `job` does: readahead feeds the page cache on
    buffered reads and mmap faults only, so a direct job or a pure writer never meets it."""
    direct = re.search(r"^direct=1$", job, re.MULTILINE) is not None
    writes = re.search(r"^rw=(?:rand)?write$", job, re.MULTILINE) is not None
    return direct or writes


def is_start(engine: Any, settings: Settings) -> bool:
    """Whether `settings` are what the host holds now (each key reads back as the value would
    once written): such a side is the start, measured as the defaults. An empty set is."""
    tunables = engine.tunables
    try:
        for (key, target), value in settings.items():
            wanted = tunables.expected(key, target, tunables.validate(key, target, value))
            if tunables.read(key, target) != wanted:
                return False
    except (TunableError, OSError):
        return False  # unreadable here: measure it rather than assume
    return True


def _device_rate(device: str, measure: Callable[[], float]) -> tuple[float, float]:
    """`measure`'s figure and the device's MB/s (read + written) over the whole of it: fio's
    exit waits for readahead it started, so the device's bytes after fio's window count."""
    before, started = read_diskstats([device]).get(device), time.monotonic()
    figure = measure()
    after, took = read_diskstats([device]).get(device), time.monotonic() - started
    if before is None or after is None or took <= 0:
        return figure, 0.0
    moved = after - before
    return figure, (moved.read_bytes + moved.write_bytes) / took / 1e6


@contextlib.contextmanager
def lab(spec_text: str) -> Iterator[dict[str, Any]]:
    """claims.lab, with `down` tried again: once, after a RAID set behind a bus had taken
    fdatasync appends (seed 1), the first `down` left the lab broken and the next draw's `up`
    was refused; a second `down` a moment later removed it."""
    try:
        with claims.lab(spec_text) as status:
            yield status
    finally:
        for _ in range(5):
            done = claims.iotuner("lab", "status", check=False)
            if done.returncode == 0 and done.stdout.strip() == "no lab":
                break
            down = claims.iotuner("lab", "down", check=False)
            claims.log(f"  lab down again: exit {down.returncode} {down.stderr.strip()[-200:]}")
            time.sleep(2)


@contextlib.contextmanager
def phase(draw: Draw, name: str) -> Iterator[None]:
    """The time spent inside, added to the draw's `name` phase (where a draw's time goes)."""
    started = time.monotonic()
    try:
        yield
    finally:
        draw.phases[name] = draw.phases.get(name, 0.0) + time.monotonic() - started


@contextlib.contextmanager
def timed_lab(draw: Draw, up: contextlib.AbstractContextManager[Any]) -> Iterator[Any]:
    """`up`'s lab, its bring-up timed as "lab up" and its teardown as "lab down"."""
    started = time.monotonic()
    closing = started
    try:
        with up as value:
            draw.phases["lab up"] = time.monotonic() - started
            try:
                yield value
            finally:
                closing = time.monotonic()
    finally:
        draw.phases["lab down"] = time.monotonic() - closing


def disk_grid(device: str, quick: bool, inert: bool = False) -> list[Settings]:
    """Readahead x scheduler, and max_sectors_kb back at the device's limit when a start
    cut it (a scheduler written resets nr_requests): the knobs a rule base or TuneD turns.
    `inert`: readahead cannot matter to the job (readahead_inert), so it stays the start's."""
    queue = Path("/sys/block", device, "queue")
    readaheads = (128, 4096, 16384) if quick else (128, 1024, 4096, 16384)
    if inert:
        readaheads = (int((queue / "read_ahead_kb").read_text()),)
    schedulers = ("none", "mq-deadline") if quick else ("none", "mq-deadline", "bfq")
    limit = int((queue / "max_hw_sectors_kb").read_text())
    sectors = {int((queue / "max_sectors_kb").read_text()), limit}
    points = []
    for kb in sorted(sectors):
        for scheduler in schedulers:
            for readahead in readaheads:
                points.append({("block.scheduler", device): scheduler,
                               ("block.max_sectors_kb", device): kb,
                               ("block.read_ahead_kb", device): readahead})  # fmt: skip
    return points


def tuned_disk(device: str, work: Workload) -> Settings:
    """TuneD throughput-performance: readahead at least 4096 KB; its writeback ratios for a
    writing workload only (host-wide; they do not touch a reader)."""
    current = int(Path("/sys/block", device, "queue/read_ahead_kb").read_text())
    settings: Settings = {("block.read_ahead_kb", device): max(current, 4096)}
    if work.target == "mnt" and "rw=read" not in work.job:
        settings.update({(f"vm.{k}", HOST): v for k, v in tuned_profile.DIRTY_RATIOS.items()})
    return settings


# -- a network draw ---------------------------------------------------------------------------


def run_network(env: Environment, plan: Plan, engine: Any) -> Draw:
    """A bulk transfer on the drawn path: the tune, a grid of buffers x congestion control,
    and the four settings interleaved, memory to memory under iperf3."""
    draw = _draw(env, None)
    draw.unit = "Mbit/s"
    with timed_lab(draw, transfer_tune.lab(env.spec_text, env.name)) as up:
        net = up.network
        started = time.monotonic()
        budget = plan.budget or (8 if plan.quick else 16)
        try:
            with phase(draw, "tune"):
                _, doc = transfer_tune.timed_tune(budget, plan.time_s)
        except SystemExit as err:
            draw.cause = f"tune failed: {str(err)[-200:]}"
            return draw
        draw.tune_s = time.monotonic() - started
        _claim(draw, doc)
        ours = transfer_tune.tune_changes(doc, net)
        rtt_s = float(env.spec_text.split("rtt_ms: ", 1)[1].split()[0]) / 1e3
        # Past slow start: a few dozen round trips at least (12 s at 400 ms).
        seconds = max(5, math.ceil(30 * rtt_s))

        def run(settings: Settings) -> float:
            done = transfer_tune.transfer(engine, settings, net, seconds)
            return float(done.received_mbit)

        best: Settings = {}
        if "grid" in plan.sides:
            with phase(draw, "grid"):
                grid = [transfer_tune.by_end(net, point) for point in network_grid(plan.quick)]
                best = _grid(draw, grid, run)
        tuned = transfer_tune.by_end(net, transfer_tune.TUNED)
        side_settings = {"plan": ours, "tuned": tuned, "grid": best}
        sides: dict[str, Callable[[], float]] = {
            "defaults": lambda: run({}),
            "plan": lambda: run(ours),
            "tuned": lambda: run(tuned),
            "grid": lambda: run(best),
        }
        same = {side: "defaults" for side, settings in side_settings.items()
                if is_start(engine, settings)}  # fmt: skip
        with phase(draw, "rounds"):
            _rounds(draw, {k: v for k, v in sides.items() if k in plan.sides}, plan.rounds, same)
    return draw


def network_grid(quick: bool) -> list[dict[str, str]]:
    """Buffers' ceilings (4-64 MiB) x congestion control (cubic, bbr)."""
    ceilings = (4 << 20, 64 << 20) if quick else (4 << 20, 16 << 20, 64 << 20)
    return [
        {"net.ipv4.tcp_rmem": f"4096 131072 {top}", "net.ipv4.tcp_wmem": f"4096 16384 {top}",
         "net.ipv4.tcp_congestion_control": control}
        for top in ceilings
        for control in ("cubic", "bbr")
    ]  # fmt: skip


# -- shared steps -----------------------------------------------------------------------------


def _draw(env: Environment, work: Workload | None) -> Draw:
    workload = "disk-to-network" if work is None else work.family
    summary = env.summary + ("" if work is None else f" / {work.summary}")
    return Draw(env.seed, env.family, env.start, workload, summary)


def _tune(draw: Draw, args: list[str]) -> bool:
    """Run the tune as a user does; False (and the cause) when it failed."""
    claims.log(f"  iotuner {' '.join(args)}")
    started = time.monotonic()
    done = claims.iotuner(*args, check=False)
    draw.tune_s = time.monotonic() - started
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    if done.returncode == 1 and "nothing is recommended" in last:
        # The host stays as it was: measure what that left against TuneD and the grid.
        draw.refused = last.removeprefix("iotuner: ").split("; nothing is recommended")[0]
        claims.log(f"  tune refused: {draw.refused}")
        return True
    if done.returncode != 0:
        draw.cause = f"tune exit {done.returncode}: {last}"
        claims.log(f"  {draw.cause}")
        return False
    _claim(draw, json.loads(done.stdout))
    return True


def _claim(draw: Draw, doc: Mapping[str, Any]) -> None:
    draw.unit = doc.get("unit") or draw.unit
    draw.chosen = bool(doc["chosen"])
    draw.claimed = float(doc["gain"]) if draw.chosen else 1.0
    draw.at_least = draw.chosen and bool(doc.get("at_least"))
    draw.ci = (float(doc["ci"][0]), float(doc["ci"][1])) if draw.chosen else (1.0, 1.0)
    draw.changes = [f"{c['key']}={c['value']}" for c in doc["changes"]]
    claims.log(f"  claimed x{draw.claimed:.3f} ({draw.unit}); changes {draw.changes or 'none'}; "
               f"{draw.tune_s:.0f} s")  # fmt: skip


def _with(engine: Any, settings: Settings, measure: Callable[[], float]) -> float:
    """`measure` with `settings` applied through the journaled engine, restored after."""
    try:
        if settings:
            engine.apply(settings)
        return measure()
    finally:
        if settings:
            engine.restore()


def _grid(draw: Draw, points: list[Settings], run: Callable[[Settings], float]) -> Settings:
    """Each point once; the best one's settings."""
    scored = []
    for point in points:
        figure = run(point)
        scored.append((figure, point))
        claims.log(f"    grid {figure:10.1f} {draw.unit}  {_short(point)}")
    figure, best = max(scored, key=lambda pair: pair[0])
    draw.grid_best = _short(best)
    return best


def _rounds(
    draw: Draw,
    sides: Mapping[str, Callable[[], float]],
    rounds: int,
    same: Mapping[str, str] | None = None,
) -> None:
    """Every side once per round, the order rotating so none always goes first; a side in
    `same` is not run: it gets the figures of the side it names (the same settings)."""
    same = {side: other for side, other in (same or {}).items() if side in sides}
    names = [side for side in sides if side not in same]
    for number in range(rounds):
        shift = number % len(names)
        for side in names[shift:] + names[:shift]:
            draw.samples[side].append(sides[side]())
            claims.log(
                f"    round {number + 1} {side:<8} {draw.samples[side][-1]:10.1f} {draw.unit}"
            )
    for side, other in same.items():
        draw.samples[side] = list(draw.samples[other])
        draw.same[side] = other
        claims.log(f"    {side} is the {other}: its figures are theirs")


def _short(point: Settings) -> str:
    return " ".join(f"{k.split('.')[-1]}={v}" for (k, _), v in sorted(point.items()))


# -- output -----------------------------------------------------------------------------------


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _side_ratio(d: Draw, side: str) -> str:
    """The plan over `side`, marked when that side was the start (measured as the defaults)."""
    mark = " (the start)" if d.same.get(side) == "defaults" else ""
    return _ratio(d.over("plan", side)) + mark


def table(draws: Sequence[Draw]) -> str:
    """One row per draw."""
    lines = [
        "| seed | environment | start | workload | unit | tune's changes | claimed (95 % CI) "
        "| measured | plan/grid | plan/TuneD | tune s | draw s | holds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in draws:
        least = ">= " if d.at_least else ""
        claim = (
            f"{least}x{d.claimed:.3f} ({d.ci[0]:.3f}-{d.ci[1]:.3f})" if d.chosen else "x1 (kept)"
        )
        fails = d.failures()
        holds = "yes" if not fails else "**NO**: " + "; ".join(fails)
        measured = _ratio(d.measured)
        if d.at_least:
            measured += f" (over the start's device rate: {_ratio(d.judged)})"
        lines.append(
            f"| {d.seed} | {d.family} | {d.start} | {d.workload} | {d.unit} "
            f"| {', '.join(d.changes) or '-'} | {claim} | {measured} "
            f"| {_side_ratio(d, 'grid')} | {_side_ratio(d, 'tuned')} "
            f"| {d.tune_s:.0f} | {d.seconds:.0f} | {holds} |"
        )
    return "\n".join(lines)


def summary(draws: Sequence[Draw]) -> str:
    """The issue's targets, counted, the tune time by family, and the failing seeds."""
    n = len(draws)
    measured = [d for d in draws if d.measured is not None and d.cause is None]

    def count(test: Callable[[Draw], bool]) -> int:
        return sum(1 for d in measured if test(d))

    def ratio(d: Draw, top: str, bottom: str) -> float:
        return d.over(top, bottom) or 0.0

    lines = [
        f"\n{n} draws, {len(measured)} measured",
        f"- never below {NEVER_WORSE} x the defaults: "
        f"{count(lambda d: not d.chosen or ratio(d, 'plan', 'defaults') >= NEVER_WORSE)} of {n}",
        f"- claim within {WITHIN:.0%} of the re-measurement: "
        f"{count(lambda d: abs((d.judged or 0.0) / d.claimed - 1) <= WITHIN)} of {n}",
        f"- at least {GRID_VS} of the grid's best: "
        f"{count(lambda d: ratio(d, 'plan', 'grid') >= GRID_VS)} of {n}",
        f"- at least 1.0 x TuneD: {count(lambda d: ratio(d, 'plan', 'tuned') >= 1.0)} of {n}",
        f"- at least 1.2 x TuneD: {count(lambda d: ratio(d, 'plan', 'tuned') >= 1.2)} of {n}",
        "- tune time by family (median, min-max s):",
    ]
    families = sorted({d.workload for d in draws})
    for family in families:
        times = [d.tune_s for d in draws if d.workload == family and d.tune_s > 0]
        if times:
            lines.append(f"  - {family}: {statistics.median(times):.0f} "
                         f"({min(times):.0f}-{max(times):.0f}), {len(times)} draws")  # fmt: skip
    slow = [d.seed for d in draws if d.tune_s > 600]
    lines.append(f"- tunes over 10 minutes: {slow or 'none'}")
    walls = [d.seconds for d in draws if d.seconds > 0]
    if walls:
        long = [d.seed for d in draws if d.seconds > 600] or "none"
        lines.append(f"- a whole draw (lab, tune, grid, rounds): median "
                     f"{statistics.median(walls):.0f} s, {min(walls):.0f}-{max(walls):.0f}; "
                     f"over 10 minutes: {long}")  # fmt: skip
    spent = {name: [d.phases[name] for d in draws if name in d.phases] for name in PHASES}
    medians = [f"{name} {statistics.median(t):.0f}" for name, t in spent.items() if t]
    if medians:
        lines.append(f"- where a draw's time goes (median s): {', '.join(medians)}")
    commits = Counter(d.commit or "unrecorded" for d in draws)
    lines.append("- commits: " + ", ".join(f"{c} ({n} draws)" for c, n in sorted(commits.items())))
    failing = [d.seed for d in draws if d.failures()]
    lines.append(f"- failing seeds: {', '.join(map(str, failing)) or 'none'}")
    return "\n".join(lines)


def run_draws(
    seeds: Sequence[int],
    plan: Plan,
    out: Path | None = None,
    *,
    indices: Sequence[int] | None = None,
    kept: Sequence[Draw] = (),
    commit: str = "",
) -> list[Draw]:
    """Every seed's draw on its own lab, in this process (`indices`: each one's place in the
    run's sequence); `kept` (earlier draws of a resumed run) and each new draw written to
    `out` as it ends. The new draws."""
    draws: list[Draw] = []
    places = list(indices) if indices is not None else list(range(len(seeds)))
    with tempfile.TemporaryDirectory(prefix="iotuner-unseen-") as tmp, live_engine() as engine:
        for seed, index in zip(seeds, places, strict=True):
            env, work = draw_pair(seed)
            claims.log(f"\n== draw {index}, seed {seed}: {env.summary} / {work.summary}\n"
                       f"{env.spec_text}")  # fmt: skip
            if work.job:
                claims.log(work.job)
            started = time.monotonic()
            try:
                if env.network:
                    draw = run_network(env, plan, engine)
                else:
                    draw = run_disk(env, work, plan, Path(tmp), engine)
            except Exception as err:  # one draw's failure is its row, not the end of the run
                draw = _draw(env, None if env.network else work)
                draw.cause = f"{type(err).__name__}: {str(err).strip()[-200:]}"
                claims.log(f"  {draw.cause}")
            draw.seconds = time.monotonic() - started
            draw.index, draw.commit, draw.plan = index, commit, str(plan)
            claims.log(f"  draw {index} (seed {seed}) took {draw.seconds:.0f} s: "
                       + ", ".join(f"{k} {v:.0f}" for k, v in draw.phases.items()))  # fmt: skip
            draws.append(draw)
            if out is not None:
                save(out, [*kept, *draws])
    return draws


def save(path: Path, draws: Sequence[Draw]) -> None:
    """Every draw to `path` as JSON, atomically: a run stopped mid-write leaves the last whole
    file, which `--resume` reads."""
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as part:
        json.dump([asdict(d) for d in draws], part, indent=1)
        part.flush()
        os.fsync(part.fileno())
    os.replace(part.name, path)


def load(path: Path) -> list[Draw]:
    """The draws an `--out` file holds; BadInput naming the file when it is not one."""
    try:
        docs = json.loads(path.read_text())
        if not isinstance(docs, list):
            raise TypeError("not a list of draws")
        return [Draw.from_doc(doc) for doc in docs]
    except (OSError, ValueError, TypeError) as err:
        raise BadInput(f"{path}: not a file of unseen draws ({err})".splitlines()[0]) from None


def commit_of(root: Path = REPO) -> str:
    """The code a draw runs at: HEAD's commit, "-dirty" when tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=False)  # fmt: skip
        return done.stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def to_run(args: argparse.Namespace, kept: Sequence[Draw]) -> list[tuple[int, int]]:
    """(index, seed) of every draw this run owes: the sequence, or its --first/--count slice,
    less the draws `kept` already holds."""
    if args.seeds:
        seeds = [int(s) for s in args.seeds.split(",") if s]
        wanted = list(enumerate(seeds))
    else:
        total = args.draws or (6 if args.quick else 40)
        first = args.first or 0
        count = args.count if args.count is not None else total - first
        wanted = [(i, args.seed + i) for i in range(first, first + count)]
    done = {d.seed for d in kept}
    return [(i, seed) for i, seed in wanted if seed not in done]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, help="how many (default 40; --quick 6)")
    parser.add_argument("--seed", type=int, default=0, help="draw i is seed + i")
    parser.add_argument("--seeds", help="these seeds instead, comma-separated")
    parser.add_argument("--first", type=int, help="the first draw's index of this slice")
    parser.add_argument("--count", type=int, help="how many draws this slice runs")
    parser.add_argument(
        "--quick", action="store_true", help="budget 8, 5 s runs, 2 rounds, a smaller grid"
    )
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; --quick 2)")
    parser.add_argument("--budget", type=int, help="tune's --budget (default: its own)")
    parser.add_argument("--time", type=float, help="tune's --time, seconds (default: none)")
    parser.add_argument("--out", type=Path, help="every draw as JSON here, after each draw")
    parser.add_argument("--resume", type=Path, help="skip the draws this --out file holds")
    parser.add_argument(
        "--mix-commits", action="store_true", help="resume a file of draws at another commit"
    )
    parser.add_argument(
        "--summary", type=Path, nargs="+", metavar="FILE", help="judge these --out files"
    )
    args = parser.parse_args(argv)
    for name in ("draws", "first", "count", "rounds", "budget"):
        value = getattr(args, name)
        if value is not None and (value < 0 or (value == 0 and name not in ("first", "count"))):
            parser.error(f"--{name} {value}: out of range")
    return args


@contextlib.contextmanager
def _state() -> Iterator[None]:
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    claims.iotuner("rollback")  # a run killed with a plan applied left it journaled
    yield


def report(draws: Sequence[Draw]) -> None:
    """The table and the summary of `draws`, in the sequence's order."""
    ordered = sorted(draws, key=lambda d: (d.index, d.seed))
    print(table(ordered))
    print(summary(ordered))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        _main(args)
    except BadInput as err:
        print(f"benchmarks.unseen: {err}", file=sys.stderr)
        sys.exit(2)


def _main(args: argparse.Namespace) -> None:
    if args.summary:
        by_seed: dict[int, Draw] = {}
        for path in args.summary:
            for d in load(path):
                if d.seed in by_seed:
                    raise BadInput(f"{path}: seed {d.seed} is in two of the files")
                by_seed[d.seed] = d
        report(list(by_seed.values()))
        return
    if os.geteuid() != 0:
        sys.exit("benchmarks.unseen: needs root (the labs, apply, drop_caches)")
    plan = Plan(
        rounds=args.rounds or (2 if args.quick else 3),
        runtime_s=5.0 if args.quick else 8.0,
        budget=args.budget or (8 if args.quick else None),
        quick=args.quick,
        time_s=args.time,
    )
    commit = commit_of()
    kept = load(args.resume) if args.resume is not None else []
    others = sorted({d.commit for d in kept} - {commit})
    if others and not args.mix_commits:
        raise BadInput(f"{args.resume} holds draws at {', '.join(others)}, this is {commit} "
                       "(--mix-commits to add to it anyway)")  # fmt: skip
    plans = sorted({d.plan for d in kept} - {str(plan)})
    if plans:
        raise BadInput(f"{args.resume} was measured with {plans[0]}, this run with {plan}")
    out = args.out or args.resume
    owed = to_run(args, kept)
    started = time.monotonic()
    with _state():
        draws = run_draws([s for _, s in owed], plan, out, indices=[i for i, _ in owed],
                          kept=kept, commit=commit)  # fmt: skip
    report([*kept, *draws])
    print(f"\n{len(draws)} new draws in {(time.monotonic() - started) / 60:.1f} min "
          f"(seeds {', '.join(str(s) for _, s in owed)}; {len(kept)} resumed; {plan})")  # fmt: skip


if __name__ == "__main__":
    main()
