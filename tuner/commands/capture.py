"""`iotuner capture`: fingerprint what devices are asked; reproduce it; check a reproduction."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tuner.console import output_console
from tuner.errors import BadInput

if TYPE_CHECKING:
    from tuner.trials.targets import TrialTarget


def capture(
    device: Annotated[
        list[str] | None,
        typer.Option("--device", help="A block device to capture (/dev/sdb or sdb); repeat it."),
    ] = None,
    seconds: Annotated[
        float, typer.Option(help="How long to capture (with --check: at most this long).")
    ] = 60.0,
    out: Annotated[
        Path | None,
        typer.Option(help="Write the fingerprint (with --reproduce: the fio job) to this file."),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(help="Also keep the raw trace_pipe lines here (at most 64 MiB)."),
    ] = None,
    reproduce: Annotated[
        Path | None,
        typer.Option(help="Write the fio job reproducing this fingerprint (to --out or stdout)."),
    ] = None,
    region: Annotated[
        str | None,
        typer.Option(
            help="With --reproduce or --replay-trace: the region the job may use, e.g. 1GiB."
        ),
    ] = None,
    check: Annotated[
        Path | None,
        typer.Option(help="Run this fio job on the one --device while capturing it."),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(help="With --check: the original fingerprint to print side by side."),
    ] = None,
    target: Annotated[
        Path | None,
        typer.Option(
            "--target",
            help="With --check: run the job on a scratch file in this directory (a file "
            "system like the application's) instead of a raw --device.",
        ),
    ] = None,
    destroy_data: Annotated[
        bool,
        typer.Option("--destroy-data", help="With --check: the job may write to the device."),
    ] = False,
    replay_trace: Annotated[
        Path | None,
        typer.Option(help="Replay this trace (--trace) on the one --device while capturing it."),
    ] = None,
    speed: Annotated[
        float, typer.Option(help="With --replay-trace: replay this many times as fast.")
    ] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Record what block devices are asked (kernel tracepoints, a tracefs instance of its
    own), as a fingerprint of statistics; write the fio job that reproduces a fingerprint;
    check a reproduction by capturing it, side by side with the original.

    Statistics only, never file names or contents (docs/capture.md). Needs root to capture.

    Exit codes: 0 done, 1 the capture or fio failed, 2 bad input.
    """
    from tuner.outfile import check_output_path

    for path, option in ((out, "--out"), (trace, "--trace")):
        if path is not None:
            check_output_path(path, option)
    if reproduce is not None:
        if device or check or against or trace or replay_trace:
            raise BadInput("--reproduce takes only --out and --region")
        _reproduce(reproduce, out, region)
        return
    if region is not None and replay_trace is None:
        raise BadInput("--region goes with --reproduce or --replay-trace")
    if target is not None:
        if check is None or device or destroy_data:
            raise BadInput("--target DIR goes with --check JOB, without --device or "
                           "--destroy-data (a scratch file is iotuner's own)")  # fmt: skip
        _check(check, [], seconds, out, trace, against, False, as_json, target)
        return
    if not device:
        raise BadInput("name a device to capture: --device /dev/sdb (repeat it for more)")
    if replay_trace is not None:
        if check is not None:
            raise BadInput("--check JOB and --replay-trace TRACE: one at a time")
        _replay(replay_trace, device, speed, _region(region), out, trace, against,
                destroy_data, as_json)  # fmt: skip
        return
    if speed != 1.0:
        raise BadInput("--speed goes with --replay-trace")
    if check is None and (against is not None or destroy_data):
        raise BadInput("--against and --destroy-data go with --check JOB or --replay-trace")
    if check is not None:
        _check(check, device, seconds, out, trace, against, destroy_data, as_json)
        return
    from tuner.capture.session import capture as run
    from tuner.capture.session import device as resolve

    devices = [resolve(d) for d in device]
    found = _with_trace(trace, lambda f: run(devices, seconds, trace=f))
    _write(found.to_json(), out)
    if as_json or out is None:
        if out is None:
            return
        typer.echo(found.to_json(), nl=False)
        return
    _summary(found.data)


def _with_trace(trace: Path | None, body: Any) -> Any:
    if trace is None:
        return body(None)
    import os

    try:
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)  # fmt: skip
    except OSError as err:
        raise BadInput(f"--trace {trace}: cannot write it ({err.strerror})") from None
    with os.fdopen(fd, "wb") as f:
        return body(f)


def _write(text: str, out: Path | None) -> None:
    from tuner.outfile import write_file

    if out is None:
        sys.stdout.write(text)
    else:
        write_file(out, text, mode=0o644, what="capture")


def _reproduce(path: Path, out: Path | None, region: str | None) -> None:
    from tuner.capture.fingerprint import load
    from tuner.capture.reproduce import job_text

    found = load(path)
    _write(job_text(found, _region(region), title=_printable(path.name)), out)


def _region(region: str | None) -> int | None:
    from tuner.units import parse_size

    try:
        return None if region is None else parse_size(region)
    except ValueError:
        raise BadInput(f"--region {str(region)[:40]!r}: expected a size (1GiB, 512M)") from None


def _printable(text: str) -> str:
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in text)[:80]


def _check(
    job_path: Path,
    device: list[str],
    seconds: float,
    out: Path | None,
    trace: Path | None,
    against: Path | None,
    destroy_data: bool,
    as_json: bool,
    directory: Path | None = None,
) -> None:
    from tuner.capture.check import run_sections_captured
    from tuner.capture.fingerprint import load
    from tuner.trials.fio import fio_size
    from tuner.trials.jobcheck import load_jobs
    from tuner.trials.targets import TrialTarget

    if directory is None and len(device) != 1:
        raise BadInput("--check runs the job on one --device")
    original = load(against) if against is not None else None
    jobs = load_jobs(job_path)
    writes = any(job.writes for job in jobs)
    if writes and directory is None and not destroy_data:
        raise BadInput(f"--check {job_path}: the job writes; add --destroy-data to let it "
                       f"write to {device[0]}")  # fmt: skip
    sections = []
    for job in jobs:
        region = None
        if "size" in job.placement:
            with contextlib.suppress(ValueError):
                region = fio_size(job.placement["size"])
        sections.append((job.section, job.options, region))
    if len({name for name, _, _ in sections}) != len(sections):
        raise BadInput(f"--check {job_path}: two job sections of one name")

    def run(target: TrialTarget) -> Any:
        return _with_trace(
            trace,
            lambda f: run_sections_captured(sections, target, seconds, writes=writes, trace=f),
        )

    if directory is None:
        found = run(_target(device[0], writes))
    else:
        # The sections' regions, or the default scratch file when a section names none.
        size = sum(r for _, _, r in sections if r is not None)
        whole = size if all(r is not None for _, _, r in sections) else None
        with TrialTarget.scratch(directory, whole) as scratch:
            found = run(scratch)
    _report(found, original, out, as_json, groups=True)


def _replay(
    trace_path: Path,
    device: list[str],
    speed: float,
    region_bytes: int | None,
    out: Path | None,
    trace: Path | None,
    against: Path | None,
    destroy_data: bool,
    as_json: bool,
) -> None:
    from tuner.capture.fingerprint import load
    from tuner.capture.replay import replay_captured

    if len(device) != 1:
        raise BadInput("--replay-trace replays onto one --device")
    if trace is not None and trace.resolve() == trace_path.resolve():
        raise BadInput("--trace would overwrite the --replay-trace it replays: name another")
    original = load(against) if against is not None else None
    target = _target(device[0], destroy_data)
    found, _ = _with_trace(
        trace,
        lambda f: replay_captured(
            trace_path,
            target,
            speed=speed,
            region_bytes=region_bytes,
            may_write=destroy_data,
            trace=f,
        ),
    )
    _report(found, original, out, as_json)


def _target(name: str, writes: bool) -> TrialTarget:
    """The --device a --check or --replay-trace job runs on, as a trial target (written to
    only when `writes`)."""
    from tuner.capture.session import device as resolve
    from tuner.trials.targets import TrialTarget

    return TrialTarget.device(f"/dev/{resolve(name).name}", destroy_data=writes)


def _report(
    found: Any, original: Any, out: Path | None, as_json: bool, groups: bool = False
) -> None:
    """The capture `found`, alone or beside `original`; with `groups` (a reproduction's
    check) beside the process group it reproduces where it reproduces one, the device's
    own fidelity printed too."""
    if out is not None:
        _write(found.to_json(), out)
    if original is None:
        if as_json:
            typer.echo(found.to_json(), nl=False)
        else:
            _summary(found.data)
        return
    from tuner.capture.compare import application, compare, fidelity

    against = application(original) if groups else original
    rows = compare(against, found)
    whole = fidelity(compare(original, found))
    if as_json:
        typer.echo(json.dumps({"fidelity": fidelity(rows), "against": against.where,
                               "device_fidelity": whole, "rows": [r.__dict__ for r in rows]},
                              indent=1))  # fmt: skip
        return
    from tuner.capture.view import render_compare

    render_compare(output_console(), rows, fidelity(rows))
    if against is not original:
        output_console().print(f"against {against.where}; against the whole device "
                               f"(every process group): fidelity {whole:.1%}",
                               style="dim", highlight=False, markup=False)  # fmt: skip


def _summary(data: dict[str, Any]) -> None:
    from tuner.capture.view import render_fingerprint

    render_fingerprint(output_console(), data)
