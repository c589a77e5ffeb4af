"""HostFS: the one read-only gateway through which every probe sees a host.

A HostFS is bound to a root directory: `/` on the live host, an extracted `iotuner probe
--gather` archive, or a captured tree in the tests. Paths given to it are always relative to
that root ("sys/block/sda/size"); symbolic links inside the tree are followed inside the tree,
with absolute targets re-rooted, so a capture behaves like the machine it came from.

Nothing here raises for a missing or broken file: reads return None and, where the caller
says the value was expected, a one-line warning naming the path goes into `warnings`. Every
path that was touched is remembered so `--gather` can capture exactly what the probes read.

A captured tree is hostile input (docs/security.md): only regular files are read (a FIFO
would block forever), never more than MAX_FILE_BYTES of one, integers are ASCII digits within
the caller's plausible range (and 64 bits), CPU lists and masks stop at MAX_CPUS, and one
reader keeps at most MAX_CPU_ENTRIES CPU numbers from all of them.

Some state is only shown by a command (a NIC's rings: `ethtool -g`). `command` runs the few
read-only commands of READ_COMMANDS on the live host and remembers their output, which `--gather`
stores where sos report does (`sos_commands/networking/ethtool_-g_eth0`); on any other root it
reads that file instead, with the bounds of any captured file.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable
from itertools import compress
from pathlib import Path
from typing import TypeVar

from probes.printable import has_controls, printable

_MAX_LINK_HOPS = 40
_PAGE = 4096
MAX_CPUS = 1 << 16
"""CPU numbers run below this (the kernel's NR_CPUS tops out at 8192): a larger one in a list or
a mask is malformed, not a reason to allocate billions of entries."""
MAX_CPU_ENTRIES = 1 << 22
"""The most CPU numbers one reader keeps from all its distinct CPU lists and masks together (32
MiB of references): 300 interrupts affine to "0-65535" each would otherwise hold 1.5 GiB. Equal
lists are one tuple and count once, so a real host (thousands of interrupts on the same CPUs, or
each on one) stays far below it."""
MAX_FILE_BYTES = 64 << 20
"""The most one file may hold: /proc/interrupts of a thousand-CPU host is a few MB."""
S64_MIN = -(1 << 63)
U64_MAX = (1 << 64) - 1
"""The widest integers a kernel attribute holds (s64, u64)."""
_BLANK = " \t\n\r\x0b\x0c\x00"
"""Stripped from both ends of what a file holds: some kernels end attributes in "\n\0"."""
_DECIMAL = re.compile(r"[-+]?[0-9]+")
_HEX = re.compile(r"(0[xX])?[0-9a-fA-F]+")
_CPU_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+)/([0-9]+))?)?")
_MASK_WORD = re.compile(r"[0-9a-fA-F]{1,16}")
T = TypeVar("T")

READ_COMMANDS: dict[str, frozenset[str]] = {"ethtool": frozenset({"-g", "-c"})}
"""The commands `HostFS.command` runs, and their only allowed option: each reads, none writes."""
COMMAND_TIMEOUT = 5.0
"""Seconds a read command may take: ethtool answers in milliseconds unless a driver hangs."""
MAX_COMMAND_BYTES = 1 << 20
"""The most a command's output may hold: `ethtool -c` prints under 1 KB."""
CAPTURED_COMMANDS = "sos_commands/networking"
"""Where a capture keeps command output: sos report's directory, so its archives replay too."""
_IFNAME_BAD = frozenset("/: \t\n\r\x0b\x0c")


def valid_ifname(name: object) -> bool:
    """True for a name the kernel could give an interface (net/core/dev.c dev_valid_name: 1 to
    15 bytes, not "." or "..", no "/", ":" or white space), printable ASCII and not starting
    with "-" (it is a command's argument): anything else is refused before a command runs."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 15
        and name not in (".", "..")
        and name.isascii()
        and name.isprintable()
        and not name.startswith("-")
        and not _IFNAME_BAD.intersection(name)
    )


def command_capture_path(argv: tuple[str, ...]) -> str:
    """Where a capture holds `argv`'s output: ("ethtool", "-g", "eth0") ->
    "sos_commands/networking/ethtool_-g_eth0", as sos report names it."""
    return f"{CAPTURED_COMMANDS}/{'_'.join(argv)}"


class NotRegularFile(OSError):
    """A FIFO, socket or device where a kernel attribute file should be."""


class HostFS:
    """Read-only access to a host's /sys and /proc below a root directory."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self._root_str = str(self.root).rstrip("/")
        self.warnings: list[str] = []
        self.touched: set[str] = set()
        self._real: dict[str, str | None] = {}  # resolved prefixes, see _step
        self._whole: dict[str, str | None] = {}  # resolved paths as callers spelled them
        self.outputs: dict[str, bytes] = {}  # command outputs by capture path, see command()
        self.cpu_sets: dict[str, tuple[int, ...]] = {}  # CPU lists by their text, see read_cpulist
        self.cpu_entries = 0  # CPU numbers held in cpu_sets, at most MAX_CPU_ENTRIES

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
        if rel in self._whole:
            return self._whole[rel]
        real: str | None = ""
        for part in rel.split("/"):
            if real is None:
                break
            real = self._step(real, part, 0)
        self._whole[rel] = real
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
            return printable(os.readlink(self._abs(rel)))
        except OSError:
            return None

    def link_name(self, rel: str) -> str | None:
        """The last component of a link's resolved target (a driver's name, a device's)."""
        target = self.realpath(rel)
        if target is None:
            return None
        return printable(target.rpartition("/")[2])

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
            # sys/class/block as a file would hide every disk without a word.
            self.warn(f"{rel}: not a directory; its entries are not read")
            return []
        except OSError as err:
            self.warn(f"{rel}: cannot list ({err.strerror})")
            return []
        if any(has_controls(name) for name in names):
            # No kernel names a device, a driver or an attribute so: such an entry was put in
            # the capture, and its name would carry escape sequences to the terminal.
            self.warn(f"{rel}: entries whose names hold control characters; skipped")
            names = [name for name in names if not has_controls(name)]
        # A replay must list the same entries, so each one is part of what was read.
        self.touched.add(real)
        self.touched.update(f"{real}/{name}" for name in names)
        return names

    # -- files -----------------------------------------------------------------------------

    def read(self, rel: str, *, expected: bool = False) -> str | None:
        """A file's text with surrounding white space stripped, or None.

        A missing or unreadable file gives a warning only with `expected`: most attributes are
        optional, and the kernel refuses reads of some (EINVAL, EIO) to say they do not apply.
        A directory where a file should be always gives one.
        """
        real = self._file_path(rel)
        data: bytes | None = None
        error: OSError | None = None
        if real is not None:
            try:
                data = self._read_leaf(real)
            except OSError as err:
                if err.errno == errno.ELOOP:  # the leaf itself is a link: resolve it fully
                    real = self.realpath(rel)
                    try:
                        data = None if real is None else self._read_leaf(real, follow=True)
                    except OSError as again:
                        error = again
                else:
                    error = err
        if data is not None and real is not None:
            self.touched.add(real)
            return _text(data)
        if isinstance(error, IsADirectoryError):
            self.warn(f"{rel}: is a directory, expected a file")
        elif isinstance(error, NotRegularFile):
            self.warn(f"{rel}: {error.strerror}")
        elif expected:
            if error is None or error.errno == errno.ENOENT:
                self.warn(f"{rel}: missing")
            else:
                self.warn(f"{rel}: cannot read ({error.strerror})")
        return None

    def _file_path(self, rel: str) -> str | None:
        """`rel` with its directory resolved; the last component is left for the open to judge."""
        head, _, leaf = rel.strip("/").rpartition("/")
        if leaf in ("", ".", ".."):
            return self.realpath(rel)
        base = self.realpath(head) if head else ""
        if base is None:
            return None
        return f"{base}/{leaf}" if base else leaf

    def _read_leaf(self, real: str, *, follow: bool = False) -> bytes:
        # O_NOFOLLOW spares an lstat per attribute: almost every leaf is a plain file, and a
        # link shows up as ELOOP, which read() then resolves inside the root. O_NONBLOCK: a
        # FIFO planted in a capture opens at once instead of waiting for a writer forever.
        flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
        fd = os.open(self._abs(real), flags)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            if not stat.S_ISREG(mode):
                raise NotRegularFile(errno.EINVAL, "not a regular file")
            first = os.read(fd, _PAGE)
            # A sysfs attribute is at most one page and comes whole in one read; /proc's
            # seq_files may stop short of the end, so only they are read until EOF.
            if len(first) < _PAGE and real.startswith("sys/"):
                return first
            chunks = [first]
            size = len(first)
            while chunk := os.read(fd, 65536):
                size += len(chunk)
                if size > MAX_FILE_BYTES:
                    raise NotRegularFile(
                        errno.EFBIG, f"larger than {MAX_FILE_BYTES} bytes; not read"
                    )
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    # -- commands ----------------------------------------------------------------------------

    def command(self, argv: tuple[str, ...]) -> str | None:
        """The output of one read-only command of READ_COMMANDS (stdout and stderr together,
        as sos report keeps them, so a driver's "Operation not supported" travels with it).

        Live: the command runs (no shell, COMMAND_TIMEOUT, at most MAX_COMMAND_BYTES) once per
        reader and its output is remembered for `--gather`. Elsewhere: the captured file is
        read like any other. None when the command is missing, times out, says nothing or was
        not captured. ValueError for a command or option outside the allow-list (a caller's
        bug); an interface name the kernel could not have given is refused with None.
        """
        if len(argv) != 3 or argv[1] not in READ_COMMANDS.get(argv[0], frozenset()):
            raise ValueError(f"not an allowed read command: {' '.join(argv)[:80]!r}")
        if not valid_ifname(argv[2]):
            self.warn(f"{argv[0]} {argv[1]}: {argv[2]!r} is not an interface name; not run")
            return None
        rel = command_capture_path(argv)
        if not self.is_live:
            return self.read(rel)
        if rel not in self.outputs:
            data = _run_read(argv)
            if data is None:
                return None
            self.outputs[rel] = data
        return _text(self.outputs[rel]) or None

    def read_int(
        self,
        rel: str,
        *,
        expected: bool = False,
        base: int = 10,
        low: int | None = None,
        high: int | None = None,
    ) -> int | None:
        """A file holding one integer (decimal, or hex with base=16 or a 0x prefix), or None.

        A value outside [low, high] is impossible on a real host (readahead -128, a NUMA node
        2^64-1): it becomes a warning and None, never a fact the rules act on. Without bounds,
        the range of a 64-bit kernel integer still holds: a 400-digit number would overflow
        the float every size and rate is shown through.
        """
        text = self.read(rel, expected=expected)
        if text is None:
            return None
        try:
            value = parse_int(text, base)
        except ValueError:
            self.warn(f"{rel}: expected an integer, got {_quote(text)}")
            return None
        if (low is not None and value < low) or (high is not None and value > high):
            self.warn(f"{rel}: {value} is implausible (expected {_bounds(low, high)}); ignored")
            return None
        if not S64_MIN <= value <= U64_MAX:
            shown = str(value)[:20] + "..."
            self.warn(f"{rel}: {shown} is implausible (more than 64 bits); ignored")
            return None
        return value

    def read_lines(self, rel: str, *, expected: bool = False) -> list[str]:
        """A file's non-empty lines; empty when the file is missing."""
        text = self.read(rel, expected=expected)
        return [line for line in (text or "").splitlines() if line.strip()]


def _text(data: bytes) -> str:
    """A captured file's or command's bytes as the text the probes see: UTF-8 (bad bytes
    replaced), surrounding blanks stripped, and every control character but tab and newline
    replaced with U+FFFD (probes/printable.py): captured text reaches the model, and through it
    a terminal, a report or a plan, without an escape sequence in it."""
    return printable(data.decode("utf-8", errors="replace").strip(_BLANK), lines=True)


def _run_read(argv: tuple[str, ...]) -> bytes | None:
    """Run an allowed read command on the live host; its output, or None."""
    program = shutil.which(argv[0])
    if program is None:
        return None
    try:
        done = subprocess.run(
            [program, *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=COMMAND_TIMEOUT,
            env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout
    if not out or len(out) > MAX_COMMAND_BYTES:
        return None
    return out


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _bounds(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f"{low} or more" if low is not None else f"{high} or less"


def digits(text: str) -> bool:
    """True for a non-empty run of ASCII digits: what int() may be given after this check.

    str.isdigit() is also true for "²" and "٣", which int() refuses or reads as 3: every
    "is it a number" test on host or user text goes through here (tests/test_hostile_code.py).
    """
    return text.isascii() and text.isdigit()


def parse_int(text: str, base: int = 10) -> int:
    """An integer in ASCII digits (hex with base=16 or a 0x prefix); ValueError otherwise.

    Stricter than int(): no "²" or "٣" (int() takes any Unicode digit), no "1_000", no spaces.
    """
    text = text.strip(_BLANK)
    if base == 16 or text[:2].lower() == "0x":
        if not _HEX.fullmatch(text):
            raise ValueError(f"not a hexadecimal integer: {text!r}")
        return int(text, 16)
    if base != 10 or not _DECIMAL.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU list such as "0-3,8,10-11" or "0-7:2/4" (the first 2 of every 4);
    raises ValueError when malformed or naming a CPU at or beyond MAX_CPUS.

    Ranges are marked in a bitmap by slice, never expanded one by one: a 64 KiB list of
    "0-65535" repeated took 24 s that way, and now takes milliseconds.
    """
    bits = bytearray()
    for chunk in text.strip(_BLANK).replace("\n", ",").split(","):
        chunk = chunk.strip(" \t")
        if not chunk:
            continue
        match = _CPU_RANGE.fullmatch(chunk)
        if match is None:
            raise ValueError(f"not a CPU or a range of CPUs: {_quote(chunk)}")
        if any(len(part) > 6 for part in match.groups() if part):
            raise ValueError(f"{_quote(chunk)} names CPUs beyond {MAX_CPUS - 1}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last >= MAX_CPUS:
            raise ValueError(f"{chunk!r} names CPUs beyond {MAX_CPUS - 1}")
        if last < first:
            raise ValueError(f"range {chunk!r} runs backwards")
        used, group = (int(match.group(3)), int(match.group(4))) if match.group(3) else (1, 1)
        if not 0 < used <= group:
            raise ValueError(f"group {chunk!r} is not USED/SIZE with 0 < USED <= SIZE")
        if len(bits) <= last:
            bits.extend(bytes(last + 1 - len(bits)))
        _mark(bits, first, last, min(used, group), group)
    return tuple(compress(_numbers(len(bits)), bits))


def _mark(bits: bytearray, first: int, last: int, used: int, group: int) -> None:
    """Set the first `used` of every `group` CPUs from `first` to `last`, with at most
    sqrt(MAX_CPUS) slice assignments: by offset when `used` is small, by group when not."""
    end = last + 1
    if used == group:
        bits[first:end] = b"\x01" * (end - first)
        return
    if used * group <= end - first:
        for offset in range(used):
            start = first + offset
            if start < end:
                bits[start:end:group] = b"\x01" * len(range(start, end, group))
        return
    for start in range(first, end, group):
        stop = min(start + used, end)
        bits[start:stop] = b"\x01" * (stop - start)


_NUMBER_TABLE: list[int] = []


def _numbers(count: int) -> list[int]:
    """0..count-1 as one shared set of int objects: every CPU tuple refers to these rather
    than holding its own copies (28 bytes each above 256)."""
    if len(_NUMBER_TABLE) < count:
        _NUMBER_TABLE.extend(range(len(_NUMBER_TABLE), count))
    return _NUMBER_TABLE


def parse_cpumask(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU mask such as "00000000,000000ff"; raises ValueError when malformed
    or wider than MAX_CPUS bits."""
    words = [w.strip(" \t") for w in text.strip(_BLANK).split(",")]
    if not words or any(not _MASK_WORD.fullmatch(w) for w in words):
        raise ValueError("a mask word is not 1 to 16 hexadecimal digits")
    value = int("".join(words), 16)
    if value.bit_length() > MAX_CPUS:
        raise ValueError(f"the mask names CPUs beyond {MAX_CPUS - 1}")
    width = value.bit_length()
    # Bit by bit from a string, not by shifting a 65,536-bit integer once per CPU.
    flags = bytes(c == "1" for c in reversed(format(value, "b")))
    return tuple(compress(_numbers(width), flags))


def parse_value(
    fs: HostFS, rel: str, text: str | None, parse: Callable[[str], T], what: str
) -> T | None:
    """`parse(text)`, or None: absent text quietly, a ValueError as a warning naming `rel`."""
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError:
        fs.warn(f"{rel}: expected {what}, got {_quote(text)}")
        return None


def read_cpulist(fs: HostFS, rel: str, *, expected: bool = False) -> tuple[int, ...] | None:
    """A file holding a CPU list, or None (with a warning when it is malformed, or when the
    reader already holds MAX_CPU_ENTRIES CPU numbers: see `_held`)."""
    return _held(fs, rel, fs.read(rel, expected=expected), parse_cpulist, "a CPU list")


def read_cpumask(fs: HostFS, rel: str, *, expected: bool = False) -> tuple[int, ...] | None:
    """A file holding a hexadecimal CPU mask, or None (with a warning when it is malformed or
    over the budget, as read_cpulist)."""
    return _held(fs, rel, fs.read(rel, expected=expected), parse_cpumask, "a CPU mask")


def _held(
    fs: HostFS,
    rel: str,
    text: str | None,
    parse: Callable[[str], tuple[int, ...]],
    what: str,
) -> tuple[int, ...] | None:
    """The CPUs of `text`, one shared tuple per distinct text and kind, within the reader's
    budget of MAX_CPU_ENTRIES numbers."""
    if text is None:
        return None
    key = f"{what}\0{text}"
    if key in fs.cpu_sets:
        return fs.cpu_sets[key]
    cpus = parse_value(fs, rel, text, parse, what)
    if cpus is None:
        return None
    if fs.cpu_entries + len(cpus) > MAX_CPU_ENTRIES:
        fs.warn(
            f"{rel}: CPU lists of this host name over {MAX_CPU_ENTRIES} CPUs in all (the budget "
            "of one probe); this one and later ones are not read"
        )
        return None
    fs.cpu_entries += len(cpus)
    fs.cpu_sets[key] = cpus
    return cpus
