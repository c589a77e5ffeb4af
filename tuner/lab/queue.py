"""Queue settings of the loop devices the lab takes: read what was there, reset, restore.

Loop devices keep read_ahead_kb, scheduler, nr_requests and max_sectors_kb after they are
detached, so a reused /dev/loopN carries an earlier user's settings (one was found here with
max_sectors_kb 6, which splits every request into 6 KiB pieces). The lab resets each device it
takes to the kernel's loop defaults and, on `down`, restores what it found.
"""

from __future__ import annotations

from pathlib import Path

from tuner.lab.system import SYS_BLOCK

# Restore order matters: nr_requests' limit depends on the scheduler; on a rotational device
# (kernel 6.17+) marking it rotational or writing max_sectors_kb raises read_ahead_kb, so that
# goes last (tuner.tunables.table.apply_rank keeps the same order).
SETTINGS = (
    "rotational",
    "scheduler",
    "nr_requests",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
    "read_ahead_kb",
)


def _queue(device: str) -> Path:
    return SYS_BLOCK / Path(device).name / "queue"


def read_queue(device: str) -> dict[str, str]:
    """The device's current settings (scheduler: the active one), those that can be read."""
    found = {}
    for name in SETTINGS:
        try:
            value = (_queue(device) / name).read_text().strip()
        except OSError:
            continue
        if name == "scheduler" and "[" in value:
            value = value.split("[", 1)[1].split("]", 1)[0]
        found[name] = value
    return found


def defaults(device: str) -> dict[str, str]:
    """The kernel's settings for a fresh loop device, in restore order."""
    queue = _queue(device)
    wanted = {"rotational": "0", "scheduler": "none"}
    tags = SYS_BLOCK / Path(device).name / "mq" / "0" / "nr_tags"
    if tags.exists():  # with scheduler none, nr_requests is the tag set's depth
        wanted["nr_requests"] = tags.read_text().strip()
    max_hw = queue / "max_hw_sectors_kb"
    if max_hw.exists():
        wanted["max_sectors_kb"] = max_hw.read_text().strip()
    wanted["nomerges"] = "0"
    wanted["rq_affinity"] = "1"
    wanted["read_ahead_kb"] = "128"
    return wanted


def write_queue(device: str, settings: dict[str, str]) -> list[str]:
    """Write settings in SETTINGS order; the ones the kernel refused, as 'name=value: why'."""
    refused = []
    for name in SETTINGS:
        if name not in settings:
            continue
        try:
            (_queue(device) / name).write_text(settings[name])
        except OSError as err:
            refused.append(f"{Path(device).name} {name}={settings[name]}: {err.strerror}")
    return refused
