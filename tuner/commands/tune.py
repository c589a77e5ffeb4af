"""`iotuner tune`: find, by real trials, the settings that make a workload fastest here."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from probes.host_root import live_host
from probes.hostfs import digits
from tuner import completion
from tuner.console import output_console
from tuner.errors import BadInput, IotunerError
from tuner.lab.session import lab_session
from tuner.outfile import check_output_path
from tuner.plan import plan_from_tune, write_plan
from tuner.results import save_result
from tuner.rules.installed import check_workload, load_rule_base
from tuner.rules.model import RuleBase, Workload
from tuner.search.space import APP, APP_MAX_BS, APP_MAX_NUMJOBS
from tuner.topology.model import Machine
from tuner.trials.dataset import CacheModel, job_data_set
from tuner.trials.faults import TrialFault
from tuner.trials.fio import file_count, is_buffered, reads, writes
from tuner.trials.idle import wait_until_idle
from tuner.trials.jobfile import load_fio_job
from tuner.trials.peer import parse_peer
from tuner.trials.placement import check_placement
from tuner.trials.targets import TrialTarget
from tuner.trials.trial import reads_own_region, user_region_bytes
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.observe import probe_with_settings
from tuner.tunables.signals import restore_on_signals
from tuner.tunables.sysroot import live_sysroot
from tuner.tune.objective import OBJECTIVES, objective_for
from tuner.tune.result import result_document
from tuner.tune.setup import prepare_tune
from tuner.tune.view import TuneView, print_changes, render_summary
from tuner.units import parse_size

MAIN_JOB_LAB = "hdd"
MAIN_JOB_WORKLOAD = "concurrent-streams"
"""The main job (`iotuner tune` with no target): a modelled hard disk (tuner/lab/specs/hdd.yaml)
read by four buffered sequential readers at once, where every switch between streams is a
seek and the readahead window decides how much each seek brings (docs/tune.md)."""
MAIN_JOB_TIME_S = 165.0
"""The main job's time, unless --time says otherwise, counted from the command's start (the
lab's setup included): the plan (tuner/search/budget.py) reserves confirmation's long trials
and gives the search the rest, and the lab's teardown (2-4 s) follows, so the whole job ends
within three minutes (issues 18 and 28)."""
DECIDE_FACTOR = 2.0
"""Confirmation's trials, without --decide-runtime, measure twice --runtime after twice
--ramp: the main job's four readers measured x1.57 in 3 s trials and x1.90 in 10 s ones (the
defaults' figure falls as the transient passes, docs/benchmarks.md), so a claim made on the
screening length understates or overstates what a longer run sees. Twice the length halves
the transient's weight at twice the cost of the few confirmation trials only."""
DEFAULT_WORKLOAD = "stream-read"
TRANSFER_WORKLOAD = "disk-to-network"
"""Without --target, this workload tunes a transfer between the network lab's two ends
(tuner/commands/tune_transfer.py); with one, it reads the target as a sender's disk would.
With --peer it tunes this host as the sender to that peer (tuner/commands/tune_peer.py)."""
IDLE_WAIT_S = 60.0
"""How long --idle-below waits before a trial for the devices to get idle (then it stops)."""


def tune(
    target: Annotated[
        str | None,
        typer.Option(
            help="A block device or a directory for a scratch file; default: the lab.",
            autocompletion=completion.devices,
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            help=f"Workload profile to optimise; default {DEFAULT_WORKLOAD}, or "
            f"{MAIN_JOB_WORKLOAD} on the main job (no --target); `list` lists them.",
            autocompletion=completion.workloads_or_list,
        ),
    ] = None,
    fio_job: Annotated[
        Path | None, typer.Option(help="Your own fio job file instead of a workload profile.")
    ] = None,
    capture: Annotated[
        Path | None,
        typer.Option(
            help="A fingerprint (iotuner capture --out): tune on its reproduction; the result "
            "names its fidelity."
        ),
    ] = None,
    budget: Annotated[int, typer.Option(help="Most search trials.", min=3)] = 16,
    time_s: Annotated[
        float | None,
        typer.Option(
            "--time",
            help="End the whole tune (search and confirmation) within this many seconds; "
            "main job: 165 s, all in 3 min.",
            min=1,
        ),
    ] = None,
    app_params: Annotated[
        bool, typer.Option(help="Also search block size, queue depth, jobs, direct I/O.")
    ] = False,
    objective: Annotated[
        str,
        typer.Option(
            help="auto (IOPS for random requests of 64 KiB or less, MB/s otherwise), "
            "throughput (MB/s), iops or latency (p99)."
        ),
    ] = "auto",
    destroy_data: Annotated[
        str | None,
        typer.Option(
            help="A device whose data may be destroyed: write trials go to it.",
            autocompletion=completion.devices,
        ),
    ] = None,
    runtime: Annotated[
        float, typer.Option(help="Seconds measured per search (screening) trial.", min=1)
    ] = 3.0,
    decide_runtime: Annotated[
        float | None,
        typer.Option(
            help="Seconds measured per confirmation trial, whose figures are the claim "
            "(its ramp twice --ramp); default twice --runtime.",
            min=1,
        ),
    ] = None,
    ramp: Annotated[
        float,
        typer.Option(
            help="Seconds each trial runs before it is measured (fio ramp_time).", min=0, max=60
        ),
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the search.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    plan_out: Annotated[Path | None, typer.Option(help="Write the result as a plan.")] = None,
    idle_below: Annotated[
        float | None,
        typer.Option(
            help="Run a trial only once the target's devices are below this % utilisation; "
            f"busy for {IDLE_WAIT_S:.0f} s stops the search.",
            min=0.1,
            max=100,
        ),
    ] = None,
    io_cap: Annotated[
        int | None, typer.Option(help="The most MB (10^6 bytes) one trial may move.", min=1)
    ] = None,
    data_set: Annotated[
        str | None,
        typer.Option(
            help="Production's working set (512M, 40G); default: what the --fio-job names."
        ),
    ] = None,
    cache_memory: Annotated[
        str | None,
        typer.Option(
            help="Memory production leaves to the page cache (4G); default: this host's "
            "MemAvailable."
        ),
    ] = None,
    peer: Annotated[
        str | None,
        typer.Option(
            help=f"With --workload {TRANSFER_WORKLOAD}: tune this host as the sender to "
            "HOST[:PORT] running `iperf3 -s` (port 5201 unless given); --target DIR gives "
            "the transfer a source file there.",
            metavar="HOST[:PORT]",
        ),
    ] = None,
    online: Annotated[
        bool,
        typer.Option(
            help="Tune --device on its live workload: candidates in short slices alternating "
            "with the settings in force (docs/online.md)."
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(
            help="With --online: the block device whose workload is live.",
            autocompletion=completion.devices,
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            help="With --online: a command printing the application's figure "
            "(higher is better), run without a shell."
        ),
    ] = None,
    metric_kind: Annotated[
        str,
        typer.Option(help="counter (its rate over a slice is the figure) or gauge."),
    ] = "counter",
    prometheus: Annotated[
        tuple[str, str] | None,
        typer.Option(
            help="With --online: URL QUERY of a Prometheus server (a gauge).", metavar="URL QUERY"
        ),
    ] = None,
    slice_s: Annotated[
        float,
        typer.Option("--slice", help="With --online: seconds per slice.", min=2, max=600),
    ] = 10.0,
    latency_bound: Annotated[
        float,
        typer.Option(
            help="With --online: the largest p99 latency rise a candidate may show "
            "(0.2: 20 %); a slice past it ends at once.",
            min=0.01,
            max=10,
        ),
    ] = 0.2,
    max_worse: Annotated[
        float | None,
        typer.Option(
            help="With --online: the most seconds on settings that measure worse; "
            "default a tenth of --time.",
            min=0,
        ),
    ] = None,
) -> None:
    """Measure the baseline, search host settings with short fio trials, confirm the winner.

    Without --target, brings up the lab's modelled hard disk, tunes four concurrent sequential
    readers there (unless --workload or --fio-job says otherwise) and tears it down. Every
    setting changed during trials is journaled first and restored at the end (also on Ctrl-C
    and SIGTERM; after kill -9, by the next iotuner command or `iotuner rollback`).
    With --workload disk-to-network and no --target, tunes a bulk transfer between the
    network lab's two ends instead (the lab that is up, or wan-old-buffers for the length of
    the tune): iperf3 trials scored in Mbit/s received (committed to the receiver's disk where
    it has one), both ends' TCP buffers and congestion control searched, and the result
    explained as Hughes-Jones and Dallison did: the window the path needs, the window the
    hosts allow, the part that caps the transfer and what would lift it.
    With --peer HOST[:PORT] as well, this host is the sender and HOST, running `iperf3 -s`,
    the receiver: the path is measured first (an unreachable peer is exit 1 before anything
    changes), only this host's settings are searched (tcp_wmem, congestion control, and
    readahead under a --target directory's source file), the explanation names what the
    peer would need when the cap is on its side, and --plan-out writes this host's plan.
    A read-only --fio-job naming an existing file reads that file. A buffered reader's trials
    cache the share of their data production's page cache holds (--data-set, --cache-memory).
    Exit codes: 0 done, 1 a trial failed (a fault of the device: an I/O error, the device
    gone, a stalled trial, reported in one line with settings restored), the baseline could
    not be measured honestly (its trials flagged: page cache...), --idle-below found the
    devices busy before the baseline, or the --peer could not be reached or the transfer
    tune passed its time bound, 2 bad input (a malformed --peer among it).
    """
    if workload == "list":
        # As `iotuner workloads` (and `tuned-adm list`): nothing is tuned, no root needed.
        from tuner.commands.workloads import workload_lines

        for line in workload_lines(load_rule_base()):
            typer.echo(line)
        return
    if online or device is not None:
        _online(online, device, metric, metric_kind, prometheus, slice_s, latency_bound,
                max_worse, time_s, as_json, plan_out,
                others=(target, workload, fio_job, destroy_data, peer, idle_below, io_cap,
                        data_set, cache_memory))  # fmt: skip
        return
    if metric is not None or prometheus is not None or max_worse is not None:
        raise BadInput("--metric, --prometheus and --max-worse go with --online")
    began = time.monotonic()
    named = parse_peer(peer) if peer is not None else None
    if objective not in ("auto", *OBJECTIVES):
        raise BadInput(f"--objective {objective}: use auto, {', '.join(OBJECTIVES)}")
    if os.geteuid() != 0:
        raise BadInput("tune changes kernel settings and drops caches: run it as root")
    if plan_out is not None:
        check_output_path(plan_out, "--plan-out")
    base = load_rule_base()
    main_job = target is None and destroy_data is None
    default = MAIN_JOB_WORKLOAD if main_job else DEFAULT_WORKLOAD
    captured = None
    if capture is not None:
        if fio_job is not None or workload is not None or peer is not None:
            raise BadInput("--capture is the workload: give no --workload, --fio-job or --peer")
        from tuner.capture.workload import capture_workload

        chosen, captured = capture_workload(capture)
    else:
        chosen = _workload(base, workload or default, fio_job)
    if main_job and named is None and not chosen.files:
        # First, before the lab is built or the search imported: on a production host a bare
        # `tune` would otherwise look like it tunes that host.
        Console(stderr=as_json).print(_lab_notice(chosen), soft_wrap=True, highlight=False,
                                      markup=False)  # fmt: skip
    # scikit-optimize and scipy take seconds to import: only `tune` pays for them.
    from tuner.tune.session import Tune, TuneConfig

    if named is not None:
        _peer_only(chosen, fio_job, destroy_data, target)
        _transfer_only(objective, app_params, idle_below, io_cap, data_set, cache_memory)
        from tuner.commands.tune_peer import tune_peer
        from tuner.tune.objective import TRANSFER

        config = TuneConfig(budget=budget, time_s=time_s, runtime_s=runtime, ramp_s=ramp,
                            objective=TRANSFER, seed=seed)  # fmt: skip
        tune_peer(chosen, config, named, target, as_json=as_json, plan_out=plan_out)
        return
    if chosen.name == TRANSFER_WORKLOAD and fio_job is None and main_job:
        _transfer_only(objective, app_params, idle_below, io_cap, data_set, cache_memory)
        from tuner.commands.tune_transfer import tune_transfer
        from tuner.tune.objective import TRANSFER

        config = TuneConfig(budget=budget, time_s=time_s, runtime_s=runtime, ramp_s=ramp,
                            objective=TRANSFER, seed=seed)  # fmt: skip
        tune_transfer(chosen, config, as_json=as_json, plan_out=plan_out)
        return
    cap = None if io_cap is None else io_cap * 10**6
    goal = objective_for(chosen.fio) if objective == "auto" else objective
    console = output_console(stderr=as_json)
    went: list[tuple[str, str]] = []  # values whose device went before they could be restored
    try:
        with ExitStack() as stack:
            trial_target = stack.enter_context(
                _target(target, destroy_data, chosen, console, app_params)
            )
            fidelity = None
            if captured is not None:
                # Before any setting changes: the reproduction as the defaults run it.
                from tuner.capture.workload import measure_fidelity

                fidelity = measure_fidelity(captured, chosen, trial_target)
                console.print(f"reproduction of {capture}: fidelity {fidelity['fidelity']:.1%} "
                              "(the largest difference in request sizes, read share, streams "
                              "and queue depth)", style="dim", highlight=False)  # fmt: skip
            cache = cache_model(chosen, trial_target, data_set, cache_memory)
            if cache is not None:
                console.print(cache.describe(), style="dim", highlight=False)
            if cache is not None and cache.fits and is_buffered(chosen.fio):
                ramp = 0.0  # the warm-up is what is measured: a ramp would hide it
            timed = main_job and time_s is None
            decide = DECIDE_FACTOR * runtime if decide_runtime is None else decide_runtime
            config = TuneConfig(budget=budget, time_s=MAIN_JOB_TIME_S if timed else time_s,
                                runtime_s=runtime, ramp_s=ramp, objective=goal, seed=seed,
                                io_cap_bytes=cap, cache=cache, decide_runtime_s=decide,
                                decide_ramp_s=DECIDE_FACTOR * ramp, started=began)  # fmt: skip
            journal = stack.enter_context(Journal())
            engine = stack.enter_context(TunableEngine(live_sysroot(), journal))
            went = engine.gone
            stack.enter_context(restore_on_signals(engine))
            live = engine.tunables.sys
            setup = prepare_tune(base, probe_with_settings(live.fs()), trial_target.devices, chosen,
                                 engine.tunables, app=app_params,
                                 read_devices=trial_target.raw_devices)  # fmt: skip
            view = stack.enter_context(TuneView(console, budget, enabled=console.is_terminal,
                                                lines=not console.is_terminal))  # fmt: skip
            gate = _idle_gate(trial_target.devices, idle_below, console)
            session = Tune(trial_target, chosen, setup.space, engine, config, on_trial=view.trial,
                           before_trial=gate, on_progress=view.progress)  # fmt: skip
            result = replace(session.run(setup.baseline, setup.suggested), judged=chosen.judged)
    except TrialFault as fault:
        # The engine's exit has restored every setting by now and emptied its journal; those
        # of a device that went went with it (journaled "gone").
        outcome = "settings restored" + (", those on the gone device went with it" if went else "")
        outcome += ", no plan written" if plan_out else ""
        raise fault.reported("tune", outcome) from None
    host = next((m.name for m in setup.topology.of_type(Machine)), "host")
    if plan_out is not None:
        measured = result_document(result)
        measured.pop("trials")
        measured["target"] = trial_target.directory or trial_target.path  # for apply --measure
        # Application parameters are the user's to set (the measured block shows them);
        # a plan holds host tunables only.
        changes = {slot: v for slot, v in result.changes().items() if slot[1] != APP}
        write_plan(plan_from_tune(changes, result.baseline_settings, host,
                                  chosen.name, measured), plan_out)  # fmt: skip
    document = result_document(result)
    if fidelity is not None:
        document["capture"] = fidelity
    save_result("tune", document, devices=list(trial_target.devices),
                lab=main_job)  # fmt: skip  # for `iotuner report`
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        console.print(render_summary(result))
        print_changes(console, result)
        if fidelity is not None:
            console.print(f"tuned on the reproduction of {capture}, fidelity "
                          f"{fidelity['fidelity']:.1%}", highlight=False)  # fmt: skip


def _online(
    online: bool,
    device: str | None,
    metric: str | None,
    metric_kind: str,
    prometheus: tuple[str, str] | None,
    slice_s: float,
    latency_bound: float,
    max_worse: float | None,
    time_s: float | None,
    as_json: bool,
    plan_out: Path | None,
    others: tuple[object, ...],
) -> None:
    """`tune --online`: checked here, run by tuner/commands/tune_online.py."""
    if not online or device is None:
        raise BadInput("--online tunes a live --device: give both")
    if any(option is not None for option in others):
        raise BadInput(
            "--online tunes the workload the device already runs: --target, --workload, "
            "--fio-job, --destroy-data, --peer, --idle-below, --io-cap, --data-set and "
            "--cache-memory concern trials"
        )
    from tuner.commands.tune_online import device_name, make_metric, tune_online

    name = device_name(device)
    if os.geteuid() != 0:
        raise BadInput("tune --online changes kernel settings: run it as root")
    if plan_out is not None:
        check_output_path(plan_out, "--plan-out")
    found = make_metric(metric, metric_kind, prometheus, slice_s)
    tune_online(name, slice_s=slice_s, latency_bound=latency_bound, time_s=time_s,
                max_worse_s=max_worse, metric=found, as_json=as_json,
                plan_out=plan_out)  # fmt: skip


def _peer_only(
    workload: Workload, fio_job: Path | None, destroy_data: str | None, target: str | None
) -> None:
    """BadInput unless --peer comes with what a transfer to it can use."""
    if workload.name != TRANSFER_WORKLOAD or fio_job is not None:
        raise BadInput(f"--peer tunes a transfer to the peer: give --workload {TRANSFER_WORKLOAD}"
                       " (and no --fio-job)")  # fmt: skip
    if destroy_data is not None:
        raise BadInput("--peer sends from memory or from a scratch file in a --target "
                       "directory; --destroy-data has nothing to do there")  # fmt: skip
    if target is not None and not Path(target).is_dir():
        raise BadInput(f"--target {target}: with --peer, a directory for the source file")


def _transfer_only(objective: str, app: bool, *options: object) -> None:
    """BadInput when a transfer tune is given an option that concerns fio's trials only."""
    if objective != "auto" or app or any(option is not None for option in options):
        raise BadInput(
            f"--workload {TRANSFER_WORKLOAD} on the lab or with --peer tunes a transfer (its "
            "score is Mbit/s received): --objective, --app-params, --idle-below, --io-cap, "
            "--data-set and --cache-memory concern fio's trials"
        )


def _idle_gate(
    devices: tuple[str, ...], below: float | None, console: Console
) -> Callable[[], object]:
    """What runs before each trial: nothing, or with --idle-below a wait for idle devices."""
    if below is None:
        return lambda: None

    def say(message: str) -> None:
        console.print(message, style="dim", highlight=False, markup=False)

    return lambda: wait_until_idle(devices, below, IDLE_WAIT_S, on_wait=say)


def _workload(base: RuleBase, name: str, fio_job: Path | None) -> Workload:
    if fio_job is not None:
        return load_fio_job(fio_job)
    check_workload(base, name)
    found = base.workload(name)
    assert found is not None  # check_workload raised otherwise
    return found


def _lab_notice(workload: Workload) -> str:
    """What a tune with no target tunes, and how to name one instead."""
    if workload.name == TRANSFER_WORKLOAD:
        return (
            "tuning a transfer between the network lab's two ends (namespaces on this host), "
            "not this host's network: name a receiver with --peer HOST[:PORT]"
        )
    return (
        f"tuning the built-in modelled hard disk (lab {MAIN_JOB_LAB}, held in memory), "
        "not this host's disks: name one with --target DEVICE|DIRECTORY"
    )


@contextmanager
def _target(
    target: str | None, destroy_data: str | None, workload: Workload, console: Console, app: bool
) -> Iterator[TrialTarget]:
    """The trial target: the user's own file (a read-only --fio-job naming one), the lab
    (main job), a device, or a scratch file in a directory."""
    if target is None and destroy_data is None and not workload.files:
        console.print(f"no --target: bringing up the lab's {MAIN_JOB_LAB}", style="dim")
        with lab_session(MAIN_JOB_LAB) as lab:
            # The lab's disks are iotuner's own, made for trials: writes may go there.
            yield TrialTarget.device(lab.disks[0].device, destroy_data=True)
        console.print("lab torn down", style="dim")
        return
    if workload.files and not writes(workload.fio):
        yield _users_file(workload, target, app)
        return
    path = target or destroy_data
    assert path is not None
    if Path(path).is_dir():
        # The job's own data set when it names one (a 256 MiB write burst is not a 1 GiB
        # one: the dirty thresholds treat them differently), else the default scratch size.
        size = (
            job_data_set({**workload.fio, **workload.region})
            if file_count(workload.fio) == 1
            else None
        )
        with TrialTarget.scratch(path, size) as scratch:
            yield scratch
        return
    device = TrialTarget.device(
        path, destroy_data=destroy_data is not None and destroy_data == path
    )
    if writes(workload.fio) and not device.writable:
        raise BadInput(
            f"{path}: {workload.name} writes; name the device with --destroy-data "
            "if its data may be destroyed, or give a directory for a scratch file"
        )
    yield device


def _users_file(workload: Workload, target: str | None, app: bool) -> TrialTarget:
    """The one existing file a read-only --fio-job names, as the trial target: its trials read
    the user's own data. With --target, the file must lie there (a directory above it, or the
    device its file system is on)."""
    if len(workload.files) > 1:
        raise BadInput(
            f"{workload.name} reads {len(workload.files)} files ({', '.join(workload.files)}); "
            "a trial reads one: give the job one filename="
        )
    found = TrialTarget.file(workload.files[0])
    # Before any trial, for every point the search may try: its numjobs and bs too.
    jobs, block = (APP_MAX_NUMJOBS, APP_MAX_BS) if app else (None, None)
    check_placement(workload.region, workload.fio, found.size_bytes, found.path, jobs=jobs,
                    block=block)  # fmt: skip
    if target is None:
        return found
    where = Path(target)
    if where.is_dir():
        inside = Path(found.path).is_relative_to(where.resolve())
    else:
        device = TrialTarget.device(target)
        inside = bool(set(device.devices) & set(found.devices))
    if not inside:
        raise BadInput(f"--target {target}: {workload.name} reads {found.path}, which is not there")
    return found


def cache_model(
    workload: Workload, target: TrialTarget, data_set: str | None, cache_memory: str | None
) -> CacheModel | None:
    """Production's data set and page cache for a buffered reader (None for other jobs, and
    when neither the job, the target nor --data-set says how large the data set is)."""
    if not (is_buffered(workload.fio) and reads(workload.fio)):
        if data_set is not None or cache_memory is not None:
            raise BadInput(
                "--data-set and --cache-memory concern buffered reads; this job "
                "does not read through the page cache"
            )
        return None
    size = _size_option("--data-set", data_set)
    cache = _size_option("--cache-memory", cache_memory) or host_cache_bytes()
    if size is None and reads_own_region(target, workload):
        size = user_region_bytes(workload, target)  # the part of the file or device it reads
    elif size is None:
        size = job_data_set({**workload.fio, **workload.region})
    if size is None and cache_memory is None:
        return None
    return CacheModel(size, cache)


def _size_option(option: str, text: str | None) -> int | None:
    """A size option's bytes (None when not given); BadInput naming the option."""
    try:
        return None if text is None else parse_size(text)
    except ValueError as err:
        raise BadInput(f"{option}: {err}") from None


def host_cache_bytes() -> int:
    """This host's MemAvailable: what its page cache may grow to without taking memory from
    the processes running now."""
    text = live_host().read("proc/meminfo") or ""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name == "MemAvailable" and fields and digits(fields[0]):
            return int(fields[0]) * 1024
    raise IotunerError("/proc/meminfo has no MemAvailable: give --cache-memory")
