"""Build small /sys and /proc trees on disk for probe tests: real files and links, no patching."""

from __future__ import annotations

import os
from pathlib import Path


class SysTree:
    """A root directory being filled with files and symbolic links, paths relative to it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def file(self, rel: str, content: str | int = "") -> SysTree:
        """Write a file (a trailing newline is added, as sysfs does)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{content}\n")
        return self

    def files(self, base: str, values: dict[str, str | int]) -> SysTree:
        """Write several attributes of one directory."""
        for name, value in values.items():
            self.file(f"{base}/{name}", value)
        return self

    def dir(self, rel: str) -> SysTree:
        """Create an empty directory."""
        (self.root / rel).mkdir(parents=True, exist_ok=True)
        return self

    def link(self, rel: str, target: str) -> SysTree:
        """Create a symbolic link at `rel` pointing to `target` (relative or absolute)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        os.symlink(target, path)
        return self

    def link_to(self, rel: str, target_rel: str) -> SysTree:
        """Create a link at `rel` to `target_rel`, written relative as the kernel does."""
        start = os.path.dirname(rel) or "."
        return self.link(rel, os.path.relpath(target_rel, start))
