"""`iotuner man`: the manual page, wherever iotuner was installed.

pip puts the page in <prefix>/share/man/man1 (pyproject.toml), where `man iotuner` finds it for
an install into /usr/local; inside a venv or with pipx man does not look there, so this command
shows the same page (written from the command line, tuner/manpage.py) through `man -l`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup


def man(
    ctx: typer.Context,
    roff: Annotated[
        bool, typer.Option("--roff", help="Print the page's roff source instead of showing it.")
    ] = False,
) -> None:
    """Show the manual page (as `man iotuner`); piped or with --roff, print its roff source.

    Exit codes: 0 shown.
    """
    from tuner.manpage import manpage

    # The page is written from the command tree this command runs in: the root app imports the
    # commands, never the reverse (pyproject.toml's layers).
    root = ctx.find_root().command
    if not isinstance(root, TyperGroup):
        raise TypeError(f"iotuner man runs under iotuner's root group, not {type(root).__name__}")
    page = manpage(root)
    viewer = shutil.which("man")
    if roff or viewer is None or not sys.stdout.isatty():
        sys.stdout.write(page)
        return
    subprocess.run([viewer, "-l", "-"], input=page, text=True, check=False)
