"""The host a command works on: the live machine (`live_host`, the one place that names `/`),
or `--root`, a directory or a `--gather` capture (`open_root`).

Every live-only command calls `live_host()` (or `tuner.tunables.sysroot.live_sysroot()` to
write) at its boundary and passes what it got down; nothing below constructs a reader of `/`
itself (tests/test_host_access.py keeps it so).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from probes.gather import extract_capture, is_capture
from probes.hostfs import HostFS
from tuner.errors import BadInput

LIVE_ROOT = Path("/")
"""The live machine's root: the only spelling of `/` as a host root in production code."""


def live_host() -> HostFS:
    """A fresh reader of the live machine's /sys and /proc.

    Fresh each call: HostFS caches path resolution, and devices come and go while a command
    runs (a lab's loop devices, partitions), so a long-lived reader would miss them.
    """
    return HostFS(LIVE_ROOT)


def open_root(root: Path, stack: ExitStack) -> Path:
    """The directory to probe: as given, or a capture unpacked until `stack` closes.

    Any error looking at `root` itself (a component over 255 bytes, a loop of links, no
    permission) is BadInput naming it, not a traceback; so is a root without a `sys/` tree (an
    empty directory, the folder above a capture), which would otherwise probe to an all-clear.
    """
    try:
        top = _open_root(root, stack)
        if not (top / "sys").is_dir():
            raise BadInput(f"--root {root}: no sys/ tree, so not a host's root{_hint(top)}")
        return top
    except OSError as err:
        raise BadInput(f"--root {root}: {err.strerror or err}") from None


def _hint(top: Path) -> str:
    """Where a root one level down is, when the user named the folder above a capture."""
    try:
        below = sorted(p for p in top.iterdir() if (p / "sys").is_dir())[:3]
    except OSError:
        return ""
    if not below:
        return " (an empty directory probes to an all-clear that means nothing)"
    return " (did you mean " + " or ".join(str(p) for p in below) + "?)"


def _open_root(root: Path, stack: ExitStack) -> Path:
    if root.is_dir():
        return root
    if is_capture(root):
        try:
            top, holder = extract_capture(root)
        except ValueError as err:
            raise BadInput(str(err)) from None
        stack.callback(holder.cleanup)
        return top
    if not root.exists():
        raise BadInput(f"--root {root}: no such directory")
    raise BadInput(f"--root {root}: not a directory or a capture archive")
