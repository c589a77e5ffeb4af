"""SysRoot: where the tunables read and write a host's /sys and /proc, bound to a root directory.

On the live host the root is `/`; in tests it is a writable fixture tree with the same layout,
so every tunable runs unchanged on both. Reads go through `probes.hostfs.HostFS` (symbolic links
followed inside the root, absolute targets re-rooted); writes resolve their directory the same
way and then write the leaf in one `write(2)`, as the kernel's attribute files expect.

What only a command shows or changes (a NIC's rings and coalescing, `ethtool -g` / `-G`) goes
the same way: `command` reads through HostFS (run live, or the captured output elsewhere), and
`run` changes it, on the live host only.

A sysctl the kernel keeps per network namespace is read and written inside the namespace by a
child: `nsenter --net=/run/netns/NAME -- sysctl ...` (`netns_read`, `netns_write`), an
allow-listed argv with no shell, a timeout and a bound on what it prints, on the live host only.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

from probes.host_root import LIVE_ROOT
from probes.hostfs import HostFS, digits, valid_ifname
from tuner.tunables.netns import NETNS_DIR, valid_name

LinkLimits = Callable[[str], tuple[int | None, int | None]]
"""An interface name -> (min_mtu, max_mtu), either None where unknown."""

WRITE_COMMANDS: dict[tuple[str, str], frozenset[str]] = {
    ("ethtool", "-G"): frozenset({"rx", "tx"}),
    ("ethtool", "-C"): frozenset({"rx-usecs", "tx-usecs"}),
}
"""The commands `SysRoot.run` runs, with the fields each may set: `ethtool -G IFACE rx N`."""
WRITE_TIMEOUT = 30.0
"""Seconds a write command may take: a ring change resets the NIC's queues, and some drivers
(mlx5, ice) take seconds to bring them back."""


NETNS_SYSCTLS: dict[str, bool] = {
    "net.ipv4.tcp_rmem": True,
    "net.ipv4.tcp_wmem": True,
    "net.ipv4.tcp_congestion_control": True,
    "net.ipv4.tcp_allowed_congestion_control": False,
}
"""The sysctls `netns_read` reads inside a namespace, and whether `netns_write` may set them."""
_NETNS_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ ]{0,63}")
"""What a namespace's sysctl is set to: up to three numbers, or an algorithm's name."""
NETNS_TIMEOUT = 10.0
"""Seconds entering a namespace and reading or writing one sysctl may take (milliseconds
normally; a stuck /proc or a hung nsenter must not hang a tune)."""
MAX_NETNS_OUTPUT = 4096
"""The most `sysctl -n` may print for one key: a kernel file of a few words."""
SAFE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
"""Where the commands are looked up, whatever PATH the caller has."""
INIT_NET_INO = 0xEFFFFFF9
"""The inode of the initial network namespace's /proc/PID/ns/net on kernels that number the
initial namespaces (include/linux/proc_ns.h, PROC_NET_INIT_INO; 6.18 here); older kernels
number it like any other, and the namespace of PID 1 stands in for it."""


NS_GET_ID = 0x8008B70D
"""ioctl(2) on a namespace file: its 64-bit id, unique since boot and never given again
(include/uapi/linux/nsfs.h, _IOR(0xb7, 0xd, __u64); Linux 6.18 here). A kernel without it
answers ENOTTY, and the namespace's inode number stands in, which a later namespace may
be given once this one is gone."""


class CommandFailed(OSError):
    """A write command refused, failed, or not run here; its message says why in one line."""


class NamespaceGone(CommandFailed):
    """The network namespace a target names is not (or no longer) under /run/netns."""


class SysRoot:
    """Read and write attribute files below `root` ("sys/block/sda/queue/scheduler")."""

    def __init__(
        self,
        root: str | Path = Path("/"),
        *,
        link_limits: LinkLimits | None = None,
        reader: HostFS | None = None,
    ):
        self.root = Path(root)
        # A probe passes its own reader, so what the tunables read is in its capture.
        self._reader = reader
        self._root_str = str(self.root).rstrip("/")
        self.is_live = self.root.resolve() == Path("/")
        # sysfs keeps the MTU limits of an interface to itself; netlink has them. A fixture
        # root has no netlink, so its tests say what the limits are.
        if link_limits is None:
            link_limits = netlink_mtu_limits if self.is_live else _unknown_limits
        self.link_limits = link_limits

    def fs(self) -> HostFS:
        """A fresh reader: HostFS caches path resolution, and a write or a new device may
        change what a path resolves to, so nothing is carried over between operations. A
        SysRoot made over a probe's reader (read-only use) shares that one instead."""
        return self._reader if self._reader is not None else HostFS(self.root)

    def command(self, argv: tuple[str, ...]) -> str | None:
        """A read command's output (`ethtool -g eth0`): run on the live host, the captured
        output below any other root; None when it cannot be had (HostFS.command)."""
        return self.fs().command(argv)

    def run(self, argv: tuple[str, ...]) -> None:
        """Run one write command of WRITE_COMMANDS (`ethtool -G eth0 rx 4096`), live only.

        CommandFailed, one line, when the command is not allowed, the root is not the live
        host, the program is missing, it times out or exits non-zero (its first line of
        output says why: "Operation not supported", "Invalid argument").
        """
        if (
            len(argv) != 5
            or argv[3] not in WRITE_COMMANDS.get((argv[0], argv[1]), frozenset())
            or not valid_ifname(argv[2])
            or not digits(argv[4])
        ):
            raise CommandFailed(f"not an allowed command: {' '.join(argv)[:80]!r}")
        shown = " ".join(argv)
        if not self.is_live:
            raise CommandFailed(f"{shown}: commands run on the live host only")
        _child(shown, [_program(shown, argv[0]), *argv[1:]], WRITE_TIMEOUT)

    def netns_read(self, name: str, key: str) -> str:
        """One sysctl of NETNS_SYSCTLS as namespace `name` holds it (`sysctl -n KEY` run
        inside it), stripped. NamespaceGone when /run/netns/NAME is not there, CommandFailed
        (one line) for anything else: not allowed, not the live host, no answer, refused."""
        shown = f"sysctl -n {key} in netns {name}"
        if key not in NETNS_SYSCTLS:
            raise CommandFailed(f"not an allowed namespace read: {shown[:80]!r}")
        return self._in_netns(name, shown, ["-n", key])

    def netns_write(self, name: str, key: str, text: str) -> None:
        """Set one writable sysctl of NETNS_SYSCTLS inside namespace `name` (`sysctl -q -w
        KEY=TEXT` run inside it); the errors of `netns_read`."""
        shown = f"sysctl -w {key}={text} in netns {name}"
        if not NETNS_SYSCTLS.get(key) or not _NETNS_VALUE.fullmatch(text):
            raise CommandFailed(f"not an allowed namespace write: {shown[:80]!r}")
        self._in_netns(name, shown, ["-q", "-w", f"{key}={text}"])

    def _in_netns(self, name: str, shown: str, args: list[str]) -> str:
        """`sysctl ARGS` run inside namespace `name` by nsenter; what it printed."""
        if not valid_name(name):
            raise CommandFailed(f"not a namespace name: {name[:70]!r}")
        if not self.is_live:
            raise CommandFailed(f"{shown}: namespaces are entered on the live host only")
        where = f"{NETNS_DIR}/{name}"
        if not self.exists(where):
            raise NamespaceGone(f"no network namespace {name} ({self.shown(where)})")
        nsenter, sysctl = _program(shown, "nsenter"), _program(shown, "sysctl")
        argv = [nsenter, f"--net={self.shown(where)}", "--", sysctl, *args]
        out = _child(shown, argv, NETNS_TIMEOUT)
        if len(out) > MAX_NETNS_OUTPUT:
            raise CommandFailed(f"{shown}: printed more than {MAX_NETNS_OUTPUT} bytes")
        return out.decode("utf-8", errors="replace").strip()

    def netns_id(self, name: str | None) -> int | None:
        """Which network namespace a per-namespace value lives in: namespace `name`
        (/run/netns/NAME), or this process's own for None. Its id (NS_GET_ID), or its inode
        number on a kernel without one; None below a fixture root, for a namespace that is not
        there, or a file under /run/netns that is not a namespace (a bind mount of nsfs).

        A journaled original carries it, so that a rollback run from another namespace, or
        after NAME was deleted and made again, does not write it into the wrong one."""
        if not self.is_live or (name is not None and not valid_name(name)):
            return None
        own = f"{self._root_str}/proc/self/ns/net"
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
        # /proc/self/ns/net is the kernel's own link; a link planted under /run/netns is not.
        where, flags = (
            (own, flags)
            if name is None
            else (f"{self._root_str}/{NETNS_DIR}/{name}", flags | os.O_NOFOLLOW)
        )
        try:
            fd = os.open(where, flags)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            # Every namespace file is on nsfs's one superblock: a planted regular file is not.
            if info.st_dev != os.stat(own).st_dev or not stat.S_ISREG(info.st_mode):
                return None
            try:
                (number,) = struct.unpack("=Q", fcntl.ioctl(fd, NS_GET_ID, bytes(8)))
                return int(number)
            except OSError:
                return info.st_ino
        except OSError:
            return None
        finally:
            os.close(fd)

    def in_initial_netns(self) -> bool:
        """Whether this process runs in the host's own network namespace, where /proc/sys/net
        is the host's (True for a fixture root: it describes a host).

        Inside another one (`ip netns exec NAME iotuner ...`, a container) /proc/sys/net is
        that namespace's: the per-namespace keys are read and written there, the host-wide
        ones (net.core.rmem_max) belong to the host, and only the congestion controls of
        tcp_allowed_congestion_control may be made the default (EPERM for the others).
        A process whose PID 1 it cannot see, or whose PID 1 is elsewhere, is inside one; a
        container sharing its PID 1's namespace on a kernel without INIT_NET_INO is taken
        for the host.
        """
        if not self.is_live:
            return True
        try:
            own = os.stat(f"{self._root_str}/proc/self/ns/net").st_ino
        except OSError:
            return True
        if own == INIT_NET_INO:
            return True
        try:
            return own == os.stat(f"{self._root_str}/proc/1/ns/net").st_ino
        except OSError:
            return False

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


def _program(shown: str, name: str) -> str:
    """The absolute path of `name` on SAFE_PATH; CommandFailed when it is not installed."""
    program = shutil.which(name, path=SAFE_PATH)
    if program is None:
        raise CommandFailed(f"{shown}: {name} is not installed")
    return program


def _child(shown: str, argv: list[str], timeout: float) -> bytes:
    """Run `argv` (no shell, no stdin, C locale, SAFE_PATH) within `timeout`; its stdout.
    CommandFailed naming `shown` and the last line it said when it fails."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env={"LC_ALL": "C", "PATH": SAFE_PATH},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"{shown}: no answer in {timeout:.0f} s") from None
    except OSError as err:
        raise CommandFailed(f"{shown}: {err.strerror}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout)[:MAX_NETNS_OUTPUT].decode("utf-8", errors="replace")
        said = said.strip()
        first = said.splitlines()[-1][:120] if said else f"exit status {done.returncode}"
        raise CommandFailed(f"{shown}: {first}")
    return done.stdout


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
