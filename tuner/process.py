"""Who a process is: its start time and the boot it runs in, so a reused pid is not taken for it."""

from __future__ import annotations

from pathlib import Path


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start, clock ticks after boot); None if gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def boot_id() -> str | None:
    """This boot's random id; a session of another boot has lost its runtime values anyway."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
