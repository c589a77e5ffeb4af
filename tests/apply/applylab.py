"""Helpers for the tests that run the iotuner_apply role for real on lab loop devices.

A plan file for one loop device, snapshots of its queue and of a configuration root (to say
"nothing changed" byte for byte), a read-only bind mount that makes the kernel refuse one write,
and udev rules installed where `udevadm test` reads them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

QUEUE = ("scheduler", "read_ahead_kb", "nr_requests")


def write_plan(path: Path, entries: list[dict[str, Any]]) -> Path:
    """A plan file as `advise --plan-out` writes them (docs/plan-format.md)."""
    plan = {
        "plan_version": 1,
        "created": "2026-11-22T07:10:00+00:00",
        "host": "lab",
        "source": "tune",
        "workload": "stream-read",
        "entries": [{"current": None, "reason": "test", **e} for e in entries],
        "search": [],
        "measured": None,
    }
    path.write_text("# iotuner plan: see docs/plan-format.md\n" + yaml.safe_dump(plan))
    return path


def block_entries(dev: str) -> list[dict[str, Any]]:
    """Scheduler, readahead (4093: the kernel keeps 4092) and depth for one loop device."""
    return [
        {"key": "block.scheduler", "target": dev, "value": "mq-deadline"},
        {"key": "block.read_ahead_kb", "target": dev, "value": 4093},
        {"key": "block.nr_requests", "target": dev, "value": 64},
    ]


APPLIED = {"scheduler": "mq-deadline", "read_ahead_kb": "4092", "nr_requests": "64"}
"""What the loop's queue reads once block_entries are applied."""


SYSCTL = "net.ipv4.tcp_congestion_control"
"""The sysctl the lab tests persist: at the value it has, so only its file is written. Not a
vm.dirty_* one: other tests on this shared machine change those for a while, and an apply
racing with them would write the value back under their feet."""


def sysctl_entry() -> dict[str, Any]:
    """SYSCTL at the value it has now."""
    value = Path("/proc/sys/" + SYSCTL.replace(".", "/")).read_text().strip()
    return {"key": SYSCTL, "target": "host", "value": value}


def queue(dev: str) -> dict[str, str]:
    """The loop's queue settings, the active scheduler by its name."""
    found = {}
    for name in QUEUE:
        text = Path(f"/sys/block/{dev}/queue/{name}").read_text().strip()
        if name == "scheduler":
            text = text.split("[", 1)[1].split("]", 1)[0]
        found[name] = text
    return found


def backing_file(dev: str) -> str:
    """The file a loop device reads, as the udev rule matches it."""
    return Path(f"/sys/block/{dev}/loop/backing_file").read_text().strip()


def tree(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every file and link below `root`: (kind, bytes or link target, mode), by relative path."""
    found: dict[str, tuple[str, bytes | str, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        mode = os.lstat(path).st_mode & 0o7777
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path), 0)
        elif path.is_file():
            found[rel] = ("file", path.read_bytes(), mode)
    return found


@contextmanager
def refused(path: str | Path) -> Iterator[None]:
    """Make writes to `path` (a file or a directory) fail with EROFS, for real: a read-only
    bind mount of it over itself, which no root privilege gets past. Reads go on as before."""
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=False)


@contextmanager
def udev_rules(text: str) -> Iterator[None]:
    """`text` as a rules file in /run/udev/rules.d (where udevadm reads rules), removed after,
    with the database entries `udevadm test` writes below /run/udev (stale ones would give
    the next loop device with that number another device's properties)."""
    run = Path("/run/udev")
    had = {p for p in run.rglob("*")} if run.exists() else None
    rules_dir = run / "rules.d"
    rules_dir.mkdir(parents=True, exist_ok=True)
    path = rules_dir / f"99-iotuner-test-{uuid.uuid4().hex[:8]}.rules"
    path.write_text(text)
    try:
        yield
    finally:
        if had is None:
            shutil.rmtree(run, ignore_errors=True)
        else:
            added = sorted(set(run.rglob("*")) - had, key=lambda p: len(p.parts), reverse=True)
            for item in added:
                if item.is_dir() and not item.is_symlink():
                    item.rmdir()
                else:
                    item.unlink(missing_ok=True)
