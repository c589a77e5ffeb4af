"""What the running kernel was built with: its configuration, and the modules it can load.

A setting that names a kernel component (a qdisc for net.core.default_qdisc) can be set only
when the kernel has it: built in (CONFIG_X=y), or a module it loads on demand (CONFIG_X=m with
the module's file under /lib/modules/RELEASE). The configuration is /proc/config.gz
(CONFIG_IKCONFIG_PROC) or, as distributions ship it, /boot/config-RELEASE.

Read below a SysRoot, so a fixture tree or a capture answers as the live host does. The
compressed file is hostile input like any captured file: only a regular file is opened, at
most MAX_COMPRESSED bytes are read and at most MAX_CONFIG bytes decompressed.
"""

from __future__ import annotations

import os
import stat
import zlib
from dataclasses import dataclass

from tuner.tunables.sysroot import SysRoot

MAX_COMPRESSED = 1 << 20
"""/proc/config.gz of a distribution kernel is about 60 KB."""
MAX_CONFIG = 4 << 20
"""Its text is about 250 KB."""
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


@dataclass(frozen=True)
class KernelConfig:
    """The CONFIG_ symbols that are set ("y" or "m"), and the file they were read from."""

    source: str
    symbols: dict[str, str]

    def state(self, symbol: str) -> str | None:
        """ "y", "m", or None when the symbol is not set (CONFIG_ prefix optional)."""
        name = symbol if symbol.startswith("CONFIG_") else f"CONFIG_{symbol}"
        return self.symbols.get(name)


def release(sys: SysRoot) -> str | None:
    """The running kernel's release (proc/sys/kernel/osrelease), if it is a plain name."""
    text = sys.read("proc/sys/kernel/osrelease")
    if not text or "/" in text or text in (".", "..") or not text.isprintable():
        return None
    return text


def parse_config(text: str) -> dict[str, str]:
    """The `CONFIG_X=y|m` lines of a kernel configuration (others and comments left out)."""
    symbols = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.startswith("CONFIG_") and value in ("y", "m"):
            symbols[name] = value
    return symbols


def kernel_config(sys: SysRoot) -> KernelConfig | None:
    """The configuration of the kernel below `sys`: /proc/config.gz, else
    /boot/config-RELEASE; None when neither is there (or cannot be read)."""
    text = _gunzip(sys, "proc/config.gz")
    source = "proc/config.gz"
    if text is None:
        name = release(sys)
        source = f"boot/config-{name}"
        text = sys.read(source) if name else None
    if text is None:
        return None
    return KernelConfig(sys.shown(source), parse_config(text))


def module_file(sys: SysRoot, subdir: str, module: str) -> str | None:
    """The module's file under /lib/modules/RELEASE/kernel/SUBDIR (as the host names it), or
    None when the running kernel has no such module to load."""
    name = release(sys)
    if name is None:
        return None
    for suffix in MODULE_SUFFIXES:
        rel = f"lib/modules/{name}/kernel/{subdir}/{module}{suffix}"
        if sys.exists(rel):
            return sys.shown(rel)
    return None


def modules_dir(sys: SysRoot) -> str | None:
    """/lib/modules/RELEASE when it is there (the kernel has loadable modules installed)."""
    name = release(sys)
    rel = f"lib/modules/{name}"
    return sys.shown(rel) if name and sys.exists(rel) else None


def _gunzip(sys: SysRoot, rel: str) -> str | None:
    """A gzip-compressed regular file's text, within the bounds; None otherwise."""
    path = sys.path(rel)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_COMPRESSED and (chunk := os.read(fd, MAX_COMPRESSED + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_COMPRESSED:
        return None
    inflate = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    try:
        text = inflate.decompress(data, MAX_CONFIG)
    except zlib.error:
        return None
    if inflate.unconsumed_tail:
        return None  # more than MAX_CONFIG: not a kernel configuration
    return text.decode("utf-8", errors="replace")
