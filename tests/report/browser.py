"""Rendering a page in headless Chromium: a screenshot and what the page said on its console."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.image import imread

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Chromium logs every console message (console.log/error, uncaught exceptions, resources that
# failed to load) as "...:INFO:CONSOLE(line)] "message", source: URL (line)" with --v=0.
_CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]\s*(.*)")


@dataclass(frozen=True)
class Rendered:
    """A page as Chromium drew it: the screenshot, and its console messages."""

    screenshot: Path
    console: tuple[str, ...]
    stderr: str


def render(page: Path, workdir: Path, width: int = 1200, height: int = 2400) -> Rendered:
    """Load `page` in a fresh headless Chromium profile and screenshot it."""
    assert CHROMIUM is not None, "no chromium on PATH"
    shot = workdir / f"{page.stem}.png"
    profile = workdir / f"{page.stem}-profile"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           f"--screenshot={shot}", f"--window-size={width},{height}",
           page.resolve().as_uri()]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert shot.exists(), f"chromium wrote no screenshot (exit {proc.returncode}):\n{proc.stderr}"
    console = tuple(m.group(1) for m in map(_CONSOLE.search, proc.stderr.splitlines()) if m)
    return Rendered(shot, console, proc.stderr)


def pixel_spread(png: Path) -> float:
    """Standard deviation of the screenshot's pixel values: 0 for a blank (one-colour) page."""
    return float(np.asarray(imread(png), dtype=float)[..., :3].std())
