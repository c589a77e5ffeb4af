"""The one place iotuner prints an error or a warning: a styled prefix, then the message as text.

A message carries what the user typed and what a file held (a path, a target, a workload, a
kernel string). Printed as rich markup, `[/]` in it raised MarkupError inside the error printer
itself and `[red]` vanished (issue 27); here the message is a `Text`, never parsed, and its
control characters are replaced (probes/printable.py), so it stays the one line it was.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.text import Text

from probes.hostfs import digits
from probes.printable import printable


def plain(value: object) -> Text:
    """Any value as a rich Text that no markup is parsed in and no control character reaches."""
    return Text(printable(str(value)))


def plain_cells(*values: object) -> list[Text]:
    """A table row's cells as `plain` text: a rich Table parses a str cell as markup."""
    return [value if isinstance(value, Text) else plain(value) for value in values]


def print_error(message: object, console: Console | None = None) -> None:
    """`iotuner: MESSAGE` on stderr (or `console`), the prefix in bold red, the message literal."""
    _print(Text("iotuner: ", style="bold red"), message, console)


def print_warning(message: object, console: Console | None = None) -> None:
    """`warning: MESSAGE` on stderr (or `console`), the prefix in yellow, the message literal."""
    _print(Text("warning: ", style="yellow"), message, console)


def _print(prefix: Text, message: object, console: Console | None) -> None:
    out = console if console is not None else Console(stderr=True)
    out.print(prefix + plain(message), soft_wrap=True, highlight=False)


PIPED_WIDTH = 1 << 20
"""The width a text view gets when it is not on a terminal: wider than any record, so a table
row, a tree node or a value stays on one line, whole (as lsblk and lstopo print to a pipe), and
`iotuner probe | grep vda` keeps the disk's file system. Rich would otherwise take 80 columns,
wrap rows onto a second line and cut values with an ellipsis."""


def output_console(stderr: bool = False) -> Console:
    """The console a command prints its text view on: the terminal's width on a terminal (or
    the width COLUMNS names), one record per line, never wrapped or cut, anywhere else (a pipe,
    a file)."""
    console = Console(stderr=stderr)
    if console.is_terminal or digits(os.environ.get("COLUMNS", "")):
        return console
    return Console(stderr=stderr, width=PIPED_WIDTH)
