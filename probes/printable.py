"""Captured and user-given text made safe to show: no control characters reach a terminal,
a report or a plan.

A captured host's files (a model string, a host name, a driver's name) and the names in a
capture tree are the capture maker's: an escape sequence in one (ESC [ 2 J, an OSC title, a
C1 CSI) would drive the reader's terminal, a carriage return or backspace would overwrite what
is shown, a newline would forge a line of its own, and a bidi override would reorder it.
`printable` replaces each such character with U+FFFD, so the text stays visibly altered rather
than silently shortened. The probes apply it where captured text enters the model
(probes/hostfs.py); the console printers apply it again where text leaves (tuner/console.py).
"""

from __future__ import annotations

import html
import re

REPLACEMENT = "\ufffd"
"""What stands in for each control character: visible, and never itself a control."""

# C0 controls, DEL, C1 controls (U+0080-U+009F), and the bidi embeddings, overrides, isolates
# and marks (U+061C, U+200E-F, U+202A-E, U+2066-9), which reorder what a reader sees.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
"""As _ANY, less tab and newline: a captured file of several lines keeps its lines."""


def printable(text: str, *, lines: bool = False) -> str:
    """`text` with each control character replaced by U+FFFD.

    With `lines`, tab and newline stay (a mount table, /proc/interrupts); without, the text is
    one line (a host name, a model string, a message).
    """
    return (_BUT_LINES if lines else _ANY).sub(REPLACEMENT, text)


def has_controls(text: str, *, lines: bool = False) -> bool:
    """True when `printable` would change `text`."""
    return (_BUT_LINES if lines else _ANY).search(text) is not None


def html_text(text: str) -> str:
    """`text` for an HTML page: control characters replaced (tab and newline kept), then
    `&`, `<`, `>` and both quotes escaped, so it is safe in element content and attributes."""
    return html.escape(printable(text, lines=True))
