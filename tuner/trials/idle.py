"""The gate of `tune --idle-below`: before each trial, wait until the target's devices are idle.

Utilisation is the share of a ~1 s sample during which a device had a request in flight
(/proc/diskstats io_ticks), as `iostat -x` shows it in %util.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tuner.errors import IotunerError
from tuner.trials.activity import activity
from tuner.trials.diskstats import DISKSTATS, read_counters

BUSY = "busy: still at or above"
"""Words every DevicesBusy message holds, for whoever reads it from a child's stderr."""


class DevicesBusy(IotunerError):
    """The devices stayed busier than allowed for the whole wait; exit code 1."""


def utilisation(
    devices: Iterable[str],
    seconds: float = 1.0,
    path: Path = DISKSTATS,
) -> dict[str, float]:
    """Each found device's utilisation in percent over `seconds` (two reads of the file)."""
    names = tuple(devices)
    before, started = read_counters(names, path), time.monotonic()
    time.sleep(seconds)
    after, took = read_counters(names, path), time.monotonic() - started
    return {
        name: activity(before[name], after[name], took).util_percent
        for name in names
        if name in before and name in after
    }


def wait_until_idle(
    devices: Iterable[str],
    below_percent: float,
    bound_s: float,
    *,
    sample_s: float = 1.0,
    path: Path = DISKSTATS,
    on_wait: Callable[[str], None] = lambda message: None,
) -> float:
    """Return once every device was below `below_percent` utilisation over one `sample_s`
    sample; the seconds it took. DevicesBusy when they were not within `bound_s`.

    `on_wait` hears one line the first time a sample is too busy (to tell the user why a
    trial does not start).
    """
    names = tuple(devices)
    started = time.monotonic()
    told = False
    while True:
        found = utilisation(names, sample_s, path)
        busy = {name: util for name, util in found.items() if util >= below_percent}
        waited = time.monotonic() - started
        if not busy:
            return waited
        shown = ", ".join(f"{name} {util:.0f}%" for name, util in sorted(busy.items()))
        if waited >= bound_s:
            raise DevicesBusy(
                f"{shown} {BUSY} {below_percent:g}% utilisation after {waited:.0f} s of waiting"
            )
        if not told:
            told = True
            on_wait(f"waiting for {shown} to drop below {below_percent:g}% utilisation")
