"""A modelled disk's two processes: the nbdkit server running its model (`hdd.c`, `ssd.c`,
`raid.c`), and nbdfuse, which shows the server's disk as one file a loop device can be
attached to.

Both are found again by an argument only they carry (the server's socket path, the FUSE file's
path; both unique to one lab), never by name alone, so `lab down` finds them after any crash,
also when `lab up` was killed before it could write their pids down.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from probes.hostfs import digits
from tuner.lab import system
from tuner.lab.modelled import Model, plugin_params, plugin_source

# Compiled by nbdkit's cc plugin at start (each includes disk.h from beside it); no libm
# needed (sqrt is a single instruction).
PLUGIN_CFLAGS = "EXTRA_CFLAGS=-O2 -fno-math-errno"
# nbdfuse sends one command at a time on each connection, and its FUSE loop runs at most 10
# worker threads (libfuse's default; nbdfuse 1.14 cannot change it): 16 connections let all
# 10 commands reach the model at once, which is as deep as a drive's queue gets on this route.
# nbdkit starts its worker threads per connection up front: a few each are enough.
FUSE_CONNECTIONS = 16
SERVER_THREADS = 4
START_TIMEOUT_S = 60.0
PACKAGES = "nbdkit, nbdkit-plugin-dev, libnbd-bin, fuse3, gcc, libc6-dev and util-linux"
MODELLED_NEEDS = f"modelled disks need {PACKAGES}"
STOP_TIMEOUT_S = 5.0
FUSE_FILE = "disk"


def server_command(
    model: Model,
    size_bytes: int,
    data: Path,
    socket: Path,
    pidfile: Path,
    bus: tuple[str, float] | None = None,
) -> list[str]:
    """nbdkit serving the model over `data` on a Unix socket; `bus` (its word's file, its
    MB/s) when the disk sits on a modelled bus.

    nbdkit forks into the background itself (and writes `pidfile` once it serves): run in the
    foreground as a child of iotuner, it ends when iotuner does (seen here with nbdkit 1.32).
    """
    return [
        "nbdkit", "--unix", str(socket), "--pidfile", str(pidfile), "--log=stderr",
        "--threads", str(SERVER_THREADS), "cc", str(plugin_source(model)), PLUGIN_CFLAGS,
        *plugin_params(model, size_bytes, str(data)),
        *([f"bus_file={bus[0]}", f"bus_mbps={bus[1]:g}"] if bus else []),
    ]  # fmt: skip


def fuse_command(socket: Path, mountpoint: Path, pidfile: Path) -> list[str]:
    """nbdfuse showing the server's disk as `mountpoint/disk`; it writes `pidfile` once ready."""
    return [
        "nbdfuse", "-C", str(FUSE_CONNECTIONS), "-P", str(pidfile),
        str(mountpoint / FUSE_FILE), "--unix", str(socket),
    ]  # fmt: skip


def server_cpu(index: int) -> int:
    """The CPU the `index`-th modelled disk's nbdkit and nbdfuse both run on: the CPUs iotuner
    may use, taken from the last one down, round and round.

    The pair hands every reply across a socket: on one CPU the wakeup needs no interrupt
    between CPUs (a VM exit on a VM) and the bytes nbdkit just wrote are still in that CPU's
    cache when nbdfuse copies them. Measured on the 2-core VM, the hdd's outer stream cost
    about 9 % less of a core so (docs/lab.md). From the last CPU down because the first
    usually takes more of the interrupts; one pair per CPU while there are CPUs to spare.
    """
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1 - index % len(cpus)]


def start(
    cmd: list[str],
    log: Path,
    pidfile: Path,
    what: str,
    cpu: int | None = None,
    needs: str = MODELLED_NEEDS,
) -> int:
    """Start `cmd` in its own session (it outlives iotuner), on `cpu` alone when given
    (util-linux taskset; the threads it makes inherit it); the pid it writes once ready.

    LabError with the last line of the process's log if it fails or is not ready in time, or
    saying what the lab `needs` if a program it runs (`cmd`'s, and taskset for `cpu`) is not
    installed.
    """
    for program in (cmd[0], *(["taskset"] if cpu is not None else [])):
        if shutil.which(program) is None:
            raise system.LabError(
                f"{what}: {program} not found ({needs}; scripts/setup installs them)"
            )
    if cpu is not None:
        cmd = ["taskset", "--cpu-list", str(cpu), *cmd]
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
            )
        except OSError as err:
            raise system.LabError(
                f"{what}: {err.strerror} ({needs}; scripts/setup installs them)"
            ) from None
    deadline = time.monotonic() + START_TIMEOUT_S
    while (pid := _pid_in(pidfile)) is None:
        if proc.poll() not in (None, 0):  # 0: nbdkit's parent, once its daemon is forked
            raise system.LabError(f"{what} exited ({proc.returncode}): {_last_line(log)}")
        if time.monotonic() > deadline:
            raise system.LabError(f"{what} was not ready after {START_TIMEOUT_S:.0f} s")
        time.sleep(0.02)
    return pid


def processes_with(argument: str, program: str) -> list[int]:
    """Pids of `program` processes that have `argument` among their arguments."""
    wanted = argument.encode()
    return _processes(program, lambda argv: wanted in argv)


def processes_using(directory: str, program: str) -> list[int]:
    """Pids of `program` processes with an argument naming something below `directory`."""
    prefix = directory.rstrip("/").encode() + b"/"
    return _processes(program, lambda argv: any(a.startswith(prefix) for a in argv))


def _processes(program: str, match: Callable[[list[bytes]], bool]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not digits(entry.name):
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == program.encode() and match(argv[1:]):
            found.append(int(entry.name))
    return found


def stop(argument: str, program: str) -> list[int]:
    """End every `program` process carrying `argument`: SIGTERM, then SIGKILL; the pids ended."""
    pids = processes_with(argument, program)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    return pids


def _pid_in(pidfile: Path) -> int | None:
    try:
        text = pidfile.read_text().strip()
    except OSError:
        return None
    return int(text) if digits(text) else None  # None too while it is being written


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"
