"""A trial that met a fault of its device: an I/O error, a device gone, a trial that stalled.

Unlike a flag (tuner/trials/flags.py), which says a trial's figures may not be the device's, a
fault ends the trial and the command that ran it: there is no figure, and the device may be
failing. The command stops, its engine restores every setting it changed (journaled first), and
it reports one line naming the device, the fault and the trial (exit code 1, docs/trials.md
"Faults").
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.errors import IotunerError
from tuner.tunables.diskseq import disk_sequence
from tuner.tunables.sysroot import live_sysroot

IO_ERROR = "I/O error"
"""fio got EIO from the device (a bad region, a server or link that went away)."""
GONE = "device gone"
"""The device's sysfs entry disappeared, or its size fell to 0 (a loop device detached, an
nbd device disconnected, a medium removed: the node stays, the disk behind it does not)."""
STALLED = "trial stalled"
"""fio did not finish within the trial's time bound."""

KINDS = (IO_ERROR, GONE, STALLED)

_EIO_MARKS = ("Input/output error", "err=5/", "error=5")
_GONE_MARKS = ("No such device", "No such file or directory", "err=19/", "error=19")


class TrialFault(IotunerError):
    """A trial ended by a fault of `device` (one of KINDS); exit code 1.

    `trial` and `phase` are filled in by whoever counts trials (Tune.measure) and `command`,
    `outcome` by the command that reports it; the message is always one line.
    """

    def __init__(
        self,
        device: str,
        kind: str,
        detail: str,
        *,
        trial: int | None = None,
        phase: str | None = None,
        command: str | None = None,
        outcome: str | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}")
        self.device, self.kind, self.detail = device, kind, " ".join(detail.split())
        self.trial, self.phase = trial, phase
        self.command, self.outcome = command, outcome
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """'tune: loop3: I/O error during trial 7 (search) (fio: ...); settings restored...'"""
        where = "" if self.trial is None else f" during trial {self.trial}"
        if self.phase:
            where += f" ({self.phase})"
        head = f"{self.command}: " if self.command else ""
        tail = f"; {self.outcome}" if self.outcome else ""
        return f"{head}{self.device}: {self.kind}{where} ({self.detail}){tail}"

    def at(self, trial: int, phase: str) -> TrialFault:
        """The same fault, numbered as the trial it ended."""
        return TrialFault(self.device, self.kind, self.detail, trial=trial, phase=phase,
                          command=self.command, outcome=self.outcome)  # fmt: skip

    def reported(self, command: str, outcome: str) -> TrialFault:
        """The same fault as `command` reports it, with what it did about it."""
        return TrialFault(self.device, self.kind, self.detail, trial=self.trial,
                          phase=self.phase, command=command, outcome=outcome)  # fmt: skip

    def __str__(self) -> str:
        return self.message


def is_fault(line: str) -> bool:
    """Whether a command's one-line error is a TrialFault's (the daemon reads its child's)."""
    return any(f": {kind} during trial " in line for kind in KINDS)


def device_name(path: str) -> str:
    """How a fault names its target: a device node by its kernel name, anything else whole."""
    return os.path.basename(path) if path.startswith("/dev/") else path


def why_gone(name: str) -> str | None:
    """Why the block device `name` (a kernel name) is gone, or None while it is there."""
    entry = f"/sys/class/block/{name}"
    if not os.path.lexists(entry):
        return f"no {entry}"
    try:
        sectors = Path(entry, "size").read_text().strip()
    except OSError:
        return None if os.path.lexists(entry) else f"no {entry}"
    if sectors == "0":
        return f"{entry}/size is 0: detached, disconnected or without its medium"
    return None


def gone_devices(devices: tuple[str, ...]) -> list[str]:
    """Those of `devices` (kernel names) that are gone (why_gone)."""
    return [name for name in devices if why_gone(name) is not None]


def require_present(devices: tuple[str, ...], attachments: tuple[int | None, ...] = ()) -> None:
    """TrialFault (device gone) unless every one of `devices` is there, and still the
    attachment it was when the tune began (`attachments`: each one's diskseq then, None where
    the kernel has none): checked before a trial writes settings, so none is written to a
    device that has gone, nor to another device that took its name since (a loop device
    detached and attached again by another process), which fio would then read or write."""
    for name in devices:
        why = why_gone(name)
        if why is not None:
            raise TrialFault(name, GONE, why)
    for name, then in zip(devices, attachments, strict=False):
        if then is None:
            continue
        now = disk_sequence(live_sysroot(), name)
        if now != then:
            shown = "none" if now is None else str(now)
            why = f"replaced since the tune began (diskseq {then} then, {shown} now)"
            raise TrialFault(name, GONE, why)


def classify(path: str, output: str, devices: tuple[str, ...] = ()) -> str | None:
    """The fault behind a failed fio run on `path` (its `devices`' kernel names), None when
    fio failed for another reason (a bad job: BadInput's or the caller's business).

    Gone before EIO: a device whose server went away answers EIO until its node goes, and
    then the node's absence is the truer account.
    """
    if gone_devices(devices):
        return GONE
    if not devices and path.startswith("/dev/") and not os.path.lexists(path):
        return GONE
    if any(mark in output for mark in _EIO_MARKS):
        return IO_ERROR
    if any(mark in output for mark in _GONE_MARKS) and path in output:
        return GONE
    return None


_ON_FILE = re.compile(r"on file (/dev/[^\s:]+)")


def faulty_device(output: str, what: str, devices: tuple[str, ...] = ()) -> str:
    """The device a fault names: a gone one of `devices`, else the file fio's error names
    (a job over several devices: bottleneck), else `what`."""
    missing = gone_devices(devices)
    if missing:
        return missing[0]
    found = _ON_FILE.search(output)
    return device_name(found.group(1) if found else what)


_OS_FAULTS = {errno.EIO: IO_ERROR, errno.ENODEV: GONE, errno.ENXIO: GONE}


@contextmanager
def os_faults(path: str, devices: tuple[str, ...] = ()) -> Iterator[None]:
    """Turn an OSError of the device's own making (EIO, ENODEV, ENXIO) in the block into a
    TrialFault: iotuner's own calls on the device around fio (the sync before a trial, the
    exclusive open of a written device) meet a failing device first as often as fio does."""
    try:
        yield
    except OSError as err:
        kind = _OS_FAULTS.get(err.errno or 0)
        if kind is None:
            raise
        if gone_devices(devices):
            kind = GONE
        where = faulty_device("", err.filename or path, devices)
        raise TrialFault(where, kind, f"{err.strerror} on {err.filename or path}") from None
