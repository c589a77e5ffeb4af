"""A disk-to-network tune: trials are iperf3 transfers from a sender to a receiver.

The search, confirmation and never-worse rule are the disk tune's (tuner/tune/session.py,
`Search`); what differs is the trial: the host settings of both ends are applied through the
TunableEngine (journaled first, restored after every trial), then one transfer runs and its
received Mbit/s, or committed Mbit/s where the receiver writes a file, is the score.

The space is what each end can change for a one-way bulk transfer: the sender's send buffer
(tcp_wmem) and congestion control, the receiver's receive buffer (tcp_rmem), and where the ends
have disks the sender's readahead on its source device and the writeback thresholds the
receiver's writes go through. The sender's receive buffer and the receiver's send buffer carry
only acknowledgements and congestion control acts at the sender, so they are not searched.

A named peer (`tune --peer HOST`) is a receiver out of reach: it runs `iperf3 -s` itself, a
trial runs the client only, and the space is the sender's (this host's) part alone.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tuner.errors import IotunerError
from tuner.lab.model import LabNetwork
from tuner.rules.model import Workload
from tuner.search.fidelity import NOISE_FLOOR, Z, figures
from tuner.search.space import HOST, Point, SearchSpace, SpaceContext, space_for
from tuner.topology.model import Topology
from tuner.topology.walk import reads_enter
from tuner.trials.diskstats import read_diskstats, total
from tuner.trials.flags import PAGE_CACHE, RISING, TIMED_PROBE, Flag
from tuner.trials.targets import TrialTarget
from tuner.trials.transfer import Ends, TransferOptions, TransferResult, run_client, run_transfer
from tuner.trials.transfer_length import (
    RAMP_MOST_S,
    compared_seconds,
    fit_within,
    probe_rtt_period_s,
    screen_discount,
    still_rising,
)
from tuner.trials.trial import TrialResult
from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError
from tuner.tunables.engine import TunableEngine
from tuner.tunables.netns import target_for
from tuner.tune.result import Setting, TrialRecord, TuneResult
from tuner.tune.session import PointTrial, Runner, Search, TuneConfig
from tuner.tune.setup import current_point

RMEM, WMEM = "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"
CONGESTION = "net.ipv4.tcp_congestion_control"
DIRTY = ("vm.dirty_background_bytes", "vm.dirty_bytes")
WINDOW_BDPS = 8
"""The socket buffers' max is searched up to this many bandwidth-delay products: the kernel
advertises about half of a receive buffer (the rest is overhead) and a sender keeps every byte
in flight until it is acknowledged, so filling a path takes about twice its BDP; eight leaves
room for what the search must find out."""
WINDOW_LEAST, WINDOW_MOST = 4 << 20, 1 << 30
LONGER_RAMPS = 2
"""How often a still-rising trial is run again with its ramp doubled (4 x the probe's at most)."""
SOURCE_MARGIN = 1.5
CACHED_BELOW = 0.5
"""A source device that read less than this share of what was sent served it from memory."""


def goodput_mbit(rate_mbit: float, mtu: int) -> float:
    """TCP payload per second at a line rate of Ethernet frames: each frame of MTU + 14 bytes
    carries MTU - 52 bytes of payload (IP and TCP headers with timestamps)."""
    return rate_mbit * (mtu - 52) / (mtu + 14)


@dataclass(frozen=True)
class TransferEnds:
    """Both ends of a transfer tune: where iperf3 runs, the targets their settings take, the
    path's line rate, and the files at each end (None: memory at that end).

    `source` is a scratch file on the sender's disk (its `devices` are what the source's
    readahead acts on); `sink` a private directory on the receiver's file system.
    `receiver` is None for a named peer, whose settings this host cannot reach; `listening`
    says an `iperf3 -s` already runs there (the peer's), so a trial starts the client only.
    `interval_s` is iperf3's report interval (one round trip once the path is measured), and
    `horizon_s` the longest the path's TCP window can still be growing (growth_horizon_s):
    a trial whose ramp outlasts it is not judged still rising.
    """

    ends: Ends
    sender: str
    receiver: str | None
    rate_mbit: float
    mtu: int
    source: TrialTarget | None = None
    sink: str | None = None
    listening: bool = False
    interval_s: float = 1.0
    horizon_s: float = float("inf")

    @property
    def kind(self) -> str:
        """The transfer the tune measures: the files both ends have."""
        return self.options(1, 0).kind

    @property
    def goodput_mbit(self) -> float:
        """The most TCP payload the path carries."""
        return goodput_mbit(self.rate_mbit, self.mtu)

    def options(self, seconds: int, omit: int, *, files: bool = True) -> TransferOptions:
        """One trial's iperf3 options; `files` False for a memory-to-memory trial."""
        send = self.source.path if files and self.source else None
        receive = str(Path(self.sink) / "received") if files and self.sink else None
        return TransferOptions(seconds=seconds, omit=omit, interval=self.interval_s,
                               send_file=send, receive_file=receive)  # fmt: skip


def lab_path(net: LabNetwork) -> TransferEnds:
    """The ends of the lab's path, memory at both (to measure the path before files are
    sized for the trials' length)."""
    return TransferEnds(Ends.of_lab(net), target_for(net.sender), target_for(net.receiver),
                        net.rate_mbit, net.mtu)  # fmt: skip


@contextlib.contextmanager
def lab_ends(net: LabNetwork, seconds: float) -> Iterator[TransferEnds]:
    """The ends of the lab's path, with a source file on the sender's disk (sized for
    `seconds` of the path's rate) and a directory on the receiver's when the lab has them;
    both removed on leaving."""
    with contextlib.ExitStack() as stack:
        source = None
        if net.sender_mount:
            size = int(net.rate_mbit * 1e6 / 8 * seconds * SOURCE_MARGIN) + (16 << 20)
            source = stack.enter_context(TrialTarget.scratch(net.sender_mount, size))
        sink = None
        if net.receiver_mount:
            sink = tempfile.mkdtemp(prefix="iotuner-transfer-", dir=net.receiver_mount)
            stack.callback(shutil.rmtree, sink, True)
        yield replace(lab_path(net), source=source, sink=sink)


def window_high(rate_mbit: float, rtt_ms: float) -> int:
    """The largest socket buffer max a tune tries: WINDOW_BDPS bandwidth-delay products,
    within WINDOW_LEAST and WINDOW_MOST."""
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    return min(max(WINDOW_BDPS * bdp, WINDOW_LEAST), WINDOW_MOST)


def transfer_space(
    topology: Topology | None,
    tunables: Tunables,
    ends: TransferEnds,
    high: int,
    dirtyable: int | None,
) -> SearchSpace:
    """Each end's settings a one-way bulk transfer can feel (the module's docstring), the
    socket buffers' max up to `high` bytes; the disk side needs the host's `topology` (where
    the source's reads enter) and `dirtyable` memory."""
    sys = tunables.sys
    tcp = SpaceContext(tcp=True, tcp_window_high=high)
    spaces = [space_for(sys, {"host": [ends.sender]}, (WMEM, CONGESTION), context=tcp)]
    if ends.receiver is not None:
        spaces.append(space_for(sys, {"host": [ends.receiver]}, (RMEM,), context=tcp))
    if ends.source is not None and topology is not None:
        entry = reads_enter(topology, ends.source.devices[0])
        reading = SpaceContext(reads=True, writes=False, entries=frozenset({entry}),
                               queued=frozenset({entry}))  # fmt: skip
        spaces.append(space_for(sys, {"device": [entry]}, ("block.read_ahead_kb",),
                                context=reading))  # fmt: skip
    if ends.sink is not None and dirtyable:
        # One kernel holds both lab ends: its writeback thresholds are the receiver's.
        writing = SpaceContext(dirtyable=dirtyable, reads=False, writes=True)
        spaces.append(space_for(sys, {"host": [HOST]}, DIRTY, context=writing))
    return joined(spaces)


def joined(spaces: list[SearchSpace]) -> SearchSpace:
    """One space holding the dimensions of each (none named twice)."""
    return SearchSpace(
        tuple(d for s in spaces for d in s.dimensions),
        {k: v for s in spaces for k, v in s.none_depth.items()},
        {k: v for s in spaces for k, v in s.resting.items()},
    )


def bdp_point(space: SearchSpace, baseline: Point, ends: TransferEnds, bdp: int) -> list[Point]:
    """The rules' recommendation (tcp-rmem-below-bdp, tcp-wmem-below-bdp: each end's buffer
    max at least the bandwidth-delay product) as a point; none when the space holds no
    buffer below it."""
    point = dict(baseline)
    for name in ((RMEM, ends.receiver), (WMEM, ends.sender)):
        if name[1] is not None and name in point and int(point[name]) < bdp:
            point[name] = bdp
    if point == baseline:
        return []
    return [space.snap(point)]


def transfer_trial(
    engine: TunableEngine,
    settings: Mapping[tuple[str, str], object],
    ends: TransferEnds,
    options: TransferOptions,
) -> tuple[TransferResult, PointTrial]:
    """Apply `settings`, run one transfer, put the host back whatever happened.

    The source file leaves the page cache before the trial (the sender must read its disk);
    the source's devices are counted, and a trial whose sender read much less than it sent
    is flagged: memory's speed, not the disk's. So is one whose goodput still rose across its
    measured seconds (cut short of its settle point: a transient's figure). The received
    file is removed after it.
    """
    try:
        applied = engine.apply(settings) if settings else []
        had = {(a.key, a.target): a.actual for a in applied}
        devices = ends.source.devices if ends.source and options.send_file else ()
        if options.send_file:
            _uncache(options.send_file)
        before = read_diskstats(devices)
        started = time.monotonic()
        result = (run_client if ends.listening else run_transfer)(ends.ends, options)
        moved = total(read_diskstats(devices), devices) - total(before, devices)
    finally:
        engine.restore()
        if options.receive_file:
            Path(options.receive_file).unlink(missing_ok=True)
    sent = int(result.sent_mbit * 1e6 / 8 * result.seconds)
    flags: tuple[Flag, ...] = ()
    if devices and moved.read_bytes < CACHED_BELOW * sent:
        flags = (Flag(PAGE_CACHE, f"the source device read {moved.read_bytes >> 20} MiB of "
                                  f"the {sent >> 20} MiB sent: served from memory"),)  # fmt: skip
    if options.omit < ends.horizon_s and still_rising(result.intervals_mbit):
        flags += (rising_flag(result, options),)
    # The session scores MB/s (the objective shows them as Mbit/s): what reached its end.
    mbps = result.goodput_mbit / 8
    trial = TrialResult(mbps=mbps, iops=0.0, p99_latency_us=None, fio_bytes=sent,
                        device_bytes=moved.read_bytes if devices else 0,
                        seconds=time.monotonic() - started, flags=flags)  # fmt: skip
    return result, PointTrial(trial, had)


def rising_flag(result: TransferResult, options: TransferOptions) -> Flag:
    """The flag of a trial whose goodput still rose across its measured seconds."""
    third = max(1, len(result.intervals_mbit) // 3)
    first = statistics.median(result.intervals_mbit[:third])
    last = statistics.median(result.intervals_mbit[-third:])
    return Flag(RISING, f"goodput still rose from {first:g} to {last:g} Mbit/s across the "
                        f"{options.seconds} s measured after a {options.omit} s ramp: not "
                        "settled")  # fmt: skip


def buffer_triple(tunables: Tunables, key: str, target: str | None) -> tuple[int, int, int] | None:
    """A tcp_rmem/tcp_wmem triple as it is at `target` (None: unreadable, or a named peer's)."""
    try:
        value = tunables.read(key, target) if target is not None else ()
    except TunableError:
        return None
    if isinstance(value, tuple) and len(value) == 3:
        return int(value[0]), int(value[1]), int(value[2])
    return None


def as_written(result: TuneResult, space: SearchSpace) -> TuneResult:
    """`result` with every point's values as the kernel takes them (a searched tcp_rmem max
    shown with its min and default: `Dimension.whole`), for people and plans."""
    dims = {d.name: d for d in space.dimensions}

    def whole(settings: dict[Setting, Any]) -> dict[Setting, Any]:
        return {n: dims[n].whole(v) if n in dims else v for n, v in settings.items()}

    trials = tuple(replace(t, settings=whole(t.settings)) for t in result.trials)
    return replace(result, baseline_settings=whole(result.baseline_settings),
                   best_settings=whole(result.best_settings), left_out=whole(result.left_out),
                   trials=trials)  # fmt: skip


def _uncache(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def congestion_now(tunables: Tunables, target: str) -> str:
    """The congestion control `target` runs now ('' when unreadable)."""
    try:
        return str(tunables.read(CONGESTION, target))
    except TunableError:
        return ""


def control_of(settings: Mapping[Any, Any], sender: str, now: str) -> str:
    """The congestion control `sender` runs under `settings`: theirs, or `now` (the one in
    force) when they name none."""
    return str(settings.get((CONGESTION, sender), "")) or now


def buffer_max(tunables: Tunables, key: str, target: str | None) -> int:
    """A tcp_rmem/tcp_wmem max as it is at `target` (0: unreadable, or None: a named peer's)."""
    try:
        value = tunables.read(key, target) if target is not None else ()
    except TunableError:
        value = ()
    return int(value[-1]) if isinstance(value, tuple) and value else 0


def windows_now(tunables: Tunables, ends: TransferEnds) -> tuple[int, int]:
    """The sender's tcp_wmem max and the receiver's tcp_rmem max as they are (buffer_max)."""
    return buffer_max(tunables, WMEM, ends.sender), buffer_max(tunables, RMEM, ends.receiver)


def measure_parts(
    engine: TunableEngine,
    ends: TransferEnds,
    seconds: int,
    omit: int,
    settings: Mapping[tuple[str, str], Any],
) -> dict[str, TransferResult]:
    """Each part the ends can measure, once, at `settings` (restored after each): the
    paper's parts, before a tune and after it."""
    return {
        kind: transfer_trial(engine, dict(settings), ends, options)[0]
        for kind, options in part_options(ends, seconds, omit).items()
    }


def search_transfer(
    engine: TunableEngine,
    ends: TransferEnds,
    space: SearchSpace,
    search: TransferSearch,
) -> TuneResult:
    """Search `space` with transfer trials (the Search of a disk tune: baseline, the rules'
    bandwidth-delay point first, confirmation, never worse). IotunerError when the space is
    empty."""
    if not space.dimensions:
        raise IotunerError("nothing to search: every setting is at its bound already")
    baseline = current_point(space, engine.tunables, search.workload, search.dirtyable)
    suggested = bdp_point(space, baseline, ends, search.needed_window)
    options = ends.options(search.seconds, search.omit)

    def sized(ramp: int, measure: int) -> TransferOptions:
        # A --time bound is a ceiling: a trial starting late is cut to what it leaves.
        omit, seconds = fit_within(ramp, measure, session.window_left(0.0))
        return replace(options, omit=omit, seconds=seconds)

    now = congestion_now(engine.tunables, ends.sender)  # the baseline's, before any trial

    def controls(points: Sequence[Point]) -> set[str]:
        return {control_of(space.host_settings(p), ends.sender, now) for p in points}

    def trial(point: Point) -> PointTrial:
        settings = space.host_settings(point)
        algorithm = control_of(settings, ends.sender, now)
        ramp = search.ramps.get(algorithm, options.omit)
        # Screen short, decide long: only confirmation's trials, the claim, measure a control
        # with a timed probe (BBR's PROBE_RTT) over whole periods of it, only where the
        # points it compares differ in congestion control (when all run the same one, each
        # pays the probe alike and the ratio the claim rests on holds without it), and only
        # where the probe costs more than its rounds resolve (decide_seconds); screening
        # keeps the path's length and is scored at the figure a long transfer would have.
        deciding = session.phase == "confirm"
        measure = options.seconds
        if deciding:
            resolvable = resolvable_gain(session.records, search.config.confirm_rounds)
            measure = compared_seconds(options.seconds, algorithm, controls(session.confirming),
                                       search.rtt_ms, resolvable)  # fmt: skip
            if measure != options.seconds:
                search.measures[algorithm] = measure
        ran = sized(ramp, measure)
        done = transfer_trial(engine, settings, ends, ran)[1]
        # The probe ran one congestion control; another may take longer to fill the path
        # (reno on wan-long still rose 20 % after the probe's 4 s): run it again with a longer
        # ramp, within the path's growth horizon, and keep that ramp for the algorithm.
        for _ in range(LONGER_RAMPS):
            if not any(f.kind == RISING for f in done.result.flags):
                break
            longer = min(2 * ramp, RAMP_MOST_S)
            if longer == ramp or ramp >= ends.horizon_s or sized(longer, measure).omit < longer:
                break  # no longer ramp to try, or no time left for one
            ramp = search.ramps[algorithm] = longer
            ran = sized(ramp, measure)
            done = transfer_trial(engine, settings, ends, ran)[1]
        if deciding and measure == options.seconds:
            return done  # one control compared, or a probe below what rounds resolve
        # Screening, or a deciding trial a --time bound cut short of its periods.
        done = screened(done, ran.seconds, algorithm, search.rtt_ms)
        if not deciding and done.result.flags and done.result.flags[-1].kind == TIMED_PROBE:
            search.discounts[algorithm] = screen_discount(ran.seconds, algorithm, search.rtt_ms)
        return done

    # The search plans its time with the trials' real length (the path's, not --runtime's):
    # a --time bound then reserves what confirmation's transfers take.
    config = replace(search.config, runtime_s=float(options.seconds),
                     ramp_s=float(options.omit), decide_runtime_s=None,
                     decide_ramp_s=None)  # fmt: skip
    session = Search(f"{search.label} ({options.kind})", search.workload.name, space,
                     config, search.bound(trial), on_trial=search.on_trial)  # fmt: skip
    return session.run(baseline, suggested)


def resolvable_gain(records: Sequence[TrialRecord], rounds: int) -> float:
    """The least gain confirmation's `rounds` interleaved rounds tell from noise, as a share:
    Z standard deviations of the difference of two means of `rounds` figures, each figure's
    cv the baseline's repeats' (`records`' baseline trials, at least NOISE_FLOOR): the noise
    confirmation is given as its floor. Z is fewer than the t quantile confirmation's
    interval takes with three rounds, so this errs toward measuring a probe it cannot see."""
    base = figures([r.mbps for r in records if r.phase == "baseline" and not r.set_aside])
    cv = max(base.cv if base is not None else 0.0, NOISE_FLOOR)
    return Z * cv * math.sqrt(2 / max(rounds, 2))


def screened(done: PointTrial, measure_s: int, congestion: str, rtt_ms: float) -> PointTrial:
    """A screening trial of `measure_s` measured seconds scored at the figure a long
    transfer would have: below what it measured by screen_discount, with a TIMED_PROBE flag
    saying so and what was measured; unchanged when the control has no timed probe or the
    trial spanned its periods."""
    share = screen_discount(measure_s, congestion, rtt_ms)
    if share <= 0:
        return done
    result = done.result
    period = probe_rtt_period_s(congestion, rtt_ms) or 0.0
    flag = Flag(TIMED_PROBE, f"{congestion} measured {result.mbps * 8:.1f} Mbit/s in "
                             f"{measure_s} s, short of whole periods of its timed probe (one "
                             f"every {period:.1f} s here): scored {share:.1%} below, the "
                             "probe's cost on this path; confirmation's figures "
                             "decide")  # fmt: skip
    return replace(done, result=replace(result, mbps=result.mbps * (1 - share),
                                        flags=(*result.flags, flag)))  # fmt: skip


def decided_seconds(
    search: TransferSearch, tunables: Tunables, ends: TransferEnds, settings: Mapping[Any, Any]
) -> int:
    """The measured seconds confirmation gave the congestion control `settings` run (the
    sender's now, when they name none): what the parts measured at a recommendation take, so
    they measure it as its claim was measured."""
    algorithm = control_of(settings, ends.sender, congestion_now(tunables, ends.sender))
    return search.measures.get(algorithm, search.seconds)


def probe_lines(search: TransferSearch) -> list[str]:
    """For people: each timed-probe control's screening discount and the length
    confirmation decided it at (screen short, decide long)."""
    lines = []
    for algorithm, share in sorted(search.discounts.items()):
        decided = search.measures.get(algorithm)
        how = (f"confirmation measured it over {decided} s, whole periods of the probe"
               if decided else "confirmation measured it at the same length: every point it "
               "compared ran it (each pays the probe alike), or the probe costs less than its "
               "rounds resolve")  # fmt: skip
        lines.append(f"{algorithm}'s screening trials ({search.seconds} s) hold no whole period "
                     f"of its timed probe: scored {share:.1%} below what they measured, the "
                     f"probe's cost on this path, so they are optimistic by it and rank "
                     f"nothing; {how}")  # fmt: skip
    return lines


def part_options(ends: TransferEnds, seconds: int, omit: int) -> dict[str, TransferOptions]:
    """The paper's parts this path can measure: memory to memory always, and each kind the
    ends' files allow."""
    memory = ends.options(seconds, omit, files=False)
    full = ends.options(seconds, omit)
    parts = {memory.kind: memory}
    if full.send_file:
        parts["disk-to-memory"] = replace(memory, send_file=full.send_file)
    if full.receive_file:
        parts["memory-to-disk"] = replace(memory, receive_file=full.receive_file)
    if full.send_file and full.receive_file:
        parts["disk-to-disk"] = full
    return parts


def _unbounded(runner: Runner) -> Runner:
    return runner


@dataclass(frozen=True)
class TransferSearch:
    """How a transfer tune searches: its label (the path, without the trial's kind), the
    workload and config, the window the path needs (the rules' point), the receiver's dirty
    allowance where it writes a file, trial length, the view's callback, and a wrapper
    bounding each trial (a peer tune's overall time). A trial still rising after its ramp
    runs again with the ramp doubled, up to LONGER_RAMPS times, and its congestion control
    keeps that ramp (`ramps`). A congestion control with a timed probe (BBR's PROBE_RTT) is
    screened at the path's length, scored below its figure by the probe's cost (`discounts`),
    and decided in confirmation over whole periods of the probe (`measures`) where the
    probe costs more than confirmation resolves."""

    label: str
    workload: Workload
    config: TuneConfig
    needed_window: int
    seconds: int
    omit: int
    on_trial: Callable[[TrialRecord], None]
    dirtyable: int | None = None
    bound: Callable[[Runner], Runner] = _unbounded
    ramps: dict[str, int] = field(default_factory=dict)
    """The longer ramps congestion controls needed (filled in by the search)."""
    rtt_ms: float = 0.0
    """The path's round trip, which a timed probe's period includes (cycle_seconds)."""
    measures: dict[str, int] = field(default_factory=dict)
    """The longer measured parts congestion controls with a timed probe got in confirmation
    (filled in by the search)."""
    discounts: dict[str, float] = field(default_factory=dict)
    """The share each such control's screening figures were scored below what they measured
    (screen_discount; filled in by the search)."""
