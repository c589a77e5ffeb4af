"""HostFS: the one read-only gateway through which every probe sees a host.

A HostFS is bound to a root directory: `/` on the live host, an extracted `iotuner probe
--gather` archive, or a captured tree in the tests. Paths given to it are always relative to
that root ("sys/block/sda/size"); symbolic links inside the tree are followed inside the tree,
with absolute targets re-rooted, so a capture behaves like the machine it came from.

Nothing here raises for a missing or broken file: reads return None and, where the caller
says the value was expected, a one-line warning naming the path goes into `warnings`. Every
path that was touched is remembered so `--gather` can capture exactly what the probes read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_MAX_LINK_HOPS = 40


class HostFS:
    """Read-only access to a host's /sys and /proc below a root directory."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self._root_str = str(self.root).rstrip("/")
        self.warnings: list[str] = []
        self.touched: set[str] = set()
        self._real: dict[str, str | None] = {}  # resolved prefixes, see _step

    @property
    def is_live(self) -> bool:
        """True when the root is this machine's own `/`."""
        return self.root.resolve() == Path("/")

    def warn(self, message: str) -> None:
        """Record a one-line warning (duplicates are kept once)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def _abs(self, rel: str) -> str:
        return f"{self._root_str}/{rel.lstrip('/')}"

    # -- path resolution -------------------------------------------------------------------

    def realpath(self, rel: str) -> str | None:
        """Resolve every link in `rel` inside the root; None for a dangling or looping path."""
        real: str | None = ""
        for part in rel.split("/"):
            if real is None:
                return None
            real = self._step(real, part, 0)
        return real

    def _step(self, base: str, name: str, hops: int) -> str | None:
        """Resolve one component below `base`, itself already free of links.

        Each distinct prefix is looked at once per run: sysfs paths share long prefixes, and
        re-resolving them on every attribute read dominated the probe's time.
        """
        if name in ("", "."):
            return base
        if name == "..":
            return base.rpartition("/")[0]
        key = f"{base}/{name}" if base else name
        if key in self._real:
            return self._real[key]
        if hops > _MAX_LINK_HOPS:
            return None
        self.touched.add(key)
        try:
            st = os.lstat(f"{self._root_str}/{key}")
        except OSError:
            self._real[key] = None
            return None
        result: str | None = key
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(f"{self._root_str}/{key}")
            # An absolute target names the captured machine's own root: re-root it here.
            result = "" if target.startswith("/") else base
            for part in target.split("/"):
                if result is None:
                    break
                result = self._step(result, part, hops + 1)
        self._real[key] = result
        return result

    def readlink(self, rel: str) -> str | None:
        """The raw target of a link, or None when `rel` is not a link."""
        rel = rel.strip("/")
        self.touched.add(rel)
        try:
            return os.readlink(self._abs(rel))
        except OSError:
            return None

    def link_name(self, rel: str) -> str | None:
        """The last component of a link's resolved target (a driver's name, a device's)."""
        target = self.realpath(rel)
        if target is None:
            return None
        return target.rpartition("/")[2]

    # -- directories -----------------------------------------------------------------------

    def exists(self, rel: str) -> bool:
        """True when `rel` (links followed inside the root) exists."""
        return self.realpath(rel) is not None

    def is_dir(self, rel: str) -> bool:
        """True when `rel` resolves to a directory."""
        real = self.realpath(rel)
        return real is not None and os.path.isdir(self._abs(real))

    def listdir(self, rel: str) -> list[str]:
        """Sorted entries of a directory; empty when it is missing or unreadable."""
        real = self.realpath(rel)
        if real is None:
            return []
        try:
            names = sorted(os.listdir(self._abs(real)))
        except NotADirectoryError:
            return []
        except OSError as err:
            self.warn(f"{rel}: cannot list ({err.strerror})")
            return []
        # A replay must list the same entries, so each one is part of what was read.
        self.touched.add(real)
        self.touched.update(f"{real}/{name}" for name in names)
        return names

    # -- files -----------------------------------------------------------------------------

    def read(self, rel: str, *, expected: bool = False) -> str | None:
        """A file's text with surrounding white space stripped, or None.

        With `expected`, a missing file is worth a warning; an unreadable one always is, except
        for write-only attributes and the kernel's refusals (EINVAL, EIO, ENODEV...), which say
        the attribute does not apply to this device.
        """
        real = self.realpath(rel)
        if real is None:
            if expected:
                self.warn(f"{rel}: missing")
            return None
        try:
            with open(self._abs(real), "rb") as fh:
                data = fh.read()
        except IsADirectoryError:
            self.warn(f"{rel}: is a directory, expected a file")
            return None
        except PermissionError:
            if expected:
                self.warn(f"{rel}: not readable (permission denied)")
            return None
        except OSError as err:
            if expected:
                self.warn(f"{rel}: cannot read ({err.strerror})")
            return None
        self.touched.add(real)
        return data.decode("utf-8", errors="replace").strip()

    def read_int(self, rel: str, *, expected: bool = False, base: int = 10) -> int | None:
        """A file holding one integer (decimal, or hex with base=16 or a 0x prefix), or None."""
        text = self.read(rel, expected=expected)
        if text is None:
            return None
        try:
            return int(text, 0 if text.lower().startswith("0x") else base)
        except ValueError:
            self.warn(f"{rel}: expected an integer, got {_quote(text)}")
            return None

    def read_lines(self, rel: str, *, expected: bool = False) -> list[str]:
        """A file's non-empty lines; empty when the file is missing."""
        text = self.read(rel, expected=expected)
        return [line for line in (text or "").splitlines() if line.strip()]


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU list such as "0-3,8,10-11"; raises ValueError when malformed."""
    cpus: set[int] = set()
    for chunk in text.replace("\n", ",").split(","):
        chunk = chunk.strip()
        if not chunk:
            continue
        if "-" in chunk:
            low, _, high = chunk.partition("-")
            first, last = int(low), int(high.split(":")[0])
            if last < first:
                raise ValueError(f"range {chunk!r} runs backwards")
            cpus.update(range(first, last + 1))
        else:
            cpus.add(int(chunk))
    return tuple(sorted(cpus))


def parse_cpumask(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU mask such as "00000000,000000ff"; raises ValueError when malformed."""
    words = [w.strip() for w in text.strip().split(",")]
    if not words or any(not w for w in words):
        raise ValueError("empty mask word")
    value = int("".join(words), 16)
    return tuple(bit for bit in range(value.bit_length()) if value >> bit & 1)


def read_cpulist(fs: HostFS, rel: str, *, expected: bool = False) -> tuple[int, ...] | None:
    """A file holding a CPU list, or None (with a warning when it is malformed)."""
    text = fs.read(rel, expected=expected)
    if text is None:
        return None
    try:
        return parse_cpulist(text)
    except ValueError:
        fs.warn(f"{rel}: expected a CPU list, got {_quote(text)}")
        return None


def read_cpumask(fs: HostFS, rel: str, *, expected: bool = False) -> tuple[int, ...] | None:
    """A file holding a hexadecimal CPU mask, or None (with a warning when it is malformed)."""
    text = fs.read(rel, expected=expected)
    if text is None:
        return None
    try:
        return parse_cpumask(text)
    except ValueError:
        fs.warn(f"{rel}: expected a CPU mask, got {_quote(text)}")
        return None
