"""`--root`: the directory a command probes, given as a directory or a `--gather` capture."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from probes.gather import extract_capture, is_capture
from tuner.errors import BadInput


def open_root(root: Path, stack: ExitStack) -> Path:
    """The directory to probe: as given, or a capture unpacked until `stack` closes."""
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
