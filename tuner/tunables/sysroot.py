"""SysRoot: where the tunables read and write a host's /sys and /proc, bound to a root directory.

On the live host the root is `/`; in tests it is a writable fixture tree with the same layout,
so every tunable runs unchanged on both. Reads go through `probes.hostfs.HostFS` (symbolic links
followed inside the root, absolute targets re-rooted); writes resolve their directory the same
way and then write the leaf in one `write(2)`, as the kernel's attribute files expect.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from probes.host_root import LIVE_ROOT
from probes.hostfs import HostFS

LinkLimits = Callable[[str], tuple[int | None, int | None]]
"""An interface name -> (min_mtu, max_mtu), either None where unknown."""


class SysRoot:
    """Read and write attribute files below `root` ("sys/block/sda/queue/scheduler")."""

    def __init__(self, root: str | Path = Path("/"), *, link_limits: LinkLimits | None = None):
        self.root = Path(root)
        self._root_str = str(self.root).rstrip("/")
        self.is_live = self.root.resolve() == Path("/")
        # sysfs keeps the MTU limits of an interface to itself; netlink has them. A fixture
        # root has no netlink, so its tests say what the limits are.
        if link_limits is None:
            link_limits = netlink_mtu_limits if self.is_live else _unknown_limits
        self.link_limits = link_limits

    def fs(self) -> HostFS:
        """A fresh reader: HostFS caches path resolution, and a write or a new device may
        change what a path resolves to, so nothing is carried over between operations."""
        return HostFS(self.root)

    def read(self, rel: str) -> str | None:
        """An attribute's text, stripped; None when it is missing or unreadable."""
        return self.fs().read(rel)

    def exists(self, rel: str) -> bool:
        """True when `rel` exists below the root (links followed inside it)."""
        return self.fs().exists(rel)

    def listdir(self, rel: str) -> list[str]:
        """Sorted entries of a directory below the root; empty when it is missing."""
        return self.fs().listdir(rel)

    def shown(self, rel: str) -> str:
        """How a path is named in messages: as the host sees it ("/proc/irq/36/...")."""
        return "/" + rel.strip("/")

    def path(self, rel: str) -> str | None:
        """The real file below the root for `rel` (its directory resolved inside the root)."""
        head, _, leaf = rel.strip("/").rpartition("/")
        base = self.fs().realpath(head) if head else ""
        if base is None:
            return None
        return f"{self._root_str}/{base}/{leaf}" if base else f"{self._root_str}/{leaf}"

    def writable(self, rel: str) -> bool | None:
        """Whether the file's mode lets its owner write it; None when it is missing.

        The kernel creates an attribute read-only (0444) when it will refuse every write, as
        /proc/irq/N/smp_affinity_list of a managed interrupt: the mode says EPERM in advance.
        """
        path = self.path(rel)
        if path is None:
            return None
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None
        return bool(mode & stat.S_IWUSR)

    def write(self, rel: str, text: str) -> None:
        """Write `text` (a newline added) to an existing attribute; OSError as the kernel says.

        No O_CREAT: a missing attribute is an error, never a new file in /sys. O_TRUNC is a
        no-op on sysfs and procfs and makes fixture files behave like them.
        """
        path = self.path(rel)
        if path is None:
            raise FileNotFoundError(2, "No such file or directory", self.shown(rel))
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, f"{text}\n".encode())
        finally:
            os.close(fd)


def live_sysroot() -> SysRoot:
    """The live machine's /sys and /proc, to read and write: what a live-only command builds
    once at its boundary and passes down (probes.host_root.live_host is its read-only twin)."""
    return SysRoot(LIVE_ROOT)


def _unknown_limits(name: str) -> tuple[int | None, int | None]:
    return None, None


def netlink_mtu_limits(name: str) -> tuple[int | None, int | None]:
    """min_mtu and max_mtu of an interface from `ip -d -j link show` (0 means unlimited)."""
    ip = shutil.which("ip")
    if ip is None:
        return None, None
    try:
        out = subprocess.run(
            [ip, "-d", "-j", "link", "show", "dev", name],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        info = json.loads(out)[0]
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError):
        return None, None
    low, high = info.get("min_mtu"), info.get("max_mtu")
    return (
        low if isinstance(low, int) else None,
        high if isinstance(high, int) and high > 0 else None,
    )
