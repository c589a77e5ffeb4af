"""Queue settings of the loop devices the lab takes: read what was there, reset, restore.

Loop devices keep read_ahead_kb, scheduler, nr_requests and max_sectors_kb after they are
detached, so a reused /dev/loopN carries an earlier user's settings (one was found here with
max_sectors_kb 6, which splits every request into 6 KiB pieces). The lab resets each device it
takes to the kernel's loop defaults and, on `down`, restores what it found.

Reads and writes go through the tunables like any other change: each value is checked by its
tunable and its original journaled (state_dir()/state.db) before the kernel file changes, so a
`lab up` killed mid-reset is put back by the next command's recovery or `iotuner rollback`;
once written, the lab's values are journaled as kept, as an applied plan's are. `rotational`
is no tunable (nothing outside the lab changes it): it is written through the same SysRoot,
and the lab's record alone holds its original.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tuner.tunables.access import Tunables
from tuner.tunables.base import TunableError
from tuner.tunables.engine import TunableEngine
from tuner.tunables.journal import Journal
from tuner.tunables.sysroot import SysRoot, live_sysroot

ROTATIONAL = "rotational"
KEYS = {
    "scheduler": "block.scheduler",
    "nr_requests": "block.nr_requests",
    "max_sectors_kb": "block.max_sectors_kb",
    "nomerges": "block.nomerges",
    "rq_affinity": "block.rq_affinity",
    "read_ahead_kb": "block.read_ahead_kb",
}
"""Each queue attribute the lab sets, and the registry key whose tunable reads and writes it."""

# Restore order matters: nr_requests' limit depends on the scheduler; on a rotational device
# (kernel 6.17+) marking it rotational or writing max_sectors_kb raises read_ahead_kb, so that
# goes last (tuner.tunables.table.apply_rank keeps the same order).
SETTINGS = (
    ROTATIONAL,
    "scheduler",
    "nr_requests",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
    "read_ahead_kb",
)


@contextmanager
def queue_engine() -> Iterator[TunableEngine]:
    """The live host's tunables engine, journaling into the state directory's journal."""
    with Journal() as journal, TunableEngine(live_sysroot(), journal) as engine:
        yield engine


def _rotational(device: str) -> str:
    return f"sys/block/{Path(device).name}/queue/{ROTATIONAL}"


def read_queue(tunables: Tunables, device: str) -> dict[str, str]:
    """The device's current settings (scheduler: the active one), those that can be read."""
    name = Path(device).name
    found = {}
    for attr in SETTINGS:
        if attr == ROTATIONAL:
            text = tunables.sys.read(_rotational(name))
            if text is not None:
                found[attr] = text
            continue
        try:
            found[attr] = str(tunables.read(KEYS[attr], name))
        except TunableError:
            continue
    return found


def defaults(host: SysRoot, device: str) -> dict[str, str]:
    """The kernel's settings for a fresh loop device, in restore order."""
    block = f"sys/block/{Path(device).name}"
    wanted = {ROTATIONAL: "0", "scheduler": "none"}
    tags = host.read(f"{block}/mq/0/nr_tags")
    if tags is not None:  # with scheduler none, nr_requests is the tag set's depth
        wanted["nr_requests"] = tags
    max_hw = host.read(f"{block}/queue/max_hw_sectors_kb")
    if max_hw is not None:
        wanted["max_sectors_kb"] = max_hw
    wanted["nomerges"] = "0"
    wanted["rq_affinity"] = "1"
    wanted["read_ahead_kb"] = "128"
    return wanted


def write_queue(engine: TunableEngine, device: str, settings: Mapping[str, str]) -> list[str]:
    """Write settings in SETTINGS order, each journaled first and then kept; the ones refused,
    as 'name=value: why' (the rest are still written)."""
    name = Path(device).name
    refused = []
    for attr in SETTINGS:
        if attr not in settings:
            continue
        value = settings[attr]
        try:
            if attr == ROTATIONAL:
                engine.tunables.sys.write(_rotational(name), value)
            else:
                engine.apply({(KEYS[attr], name): value})
        except OSError as err:
            refused.append(f"{name} {attr}={value}: {err.strerror}")
        except TunableError as err:
            refused.append(f"{name} {attr}={value}: {err}")
    engine.keep()
    return refused
