"""What `ethtool -g IFACE` (ring sizes) and `ethtool -c IFACE` (interrupt coalescing) print.

ethtool 6.x has no --json for these two, so the text is parsed: "Name:<tabs>value" lines, a
value of "n/a" where the driver does not report (or support) the field. The text comes from
the live host or from a capture (sos report's layout, `sos_commands/networking/ethtool_-g_eth0`)
and is hostile there: every parser returns None or an error string, never raises, and looks at
no more than MAX_LINES lines of at most MAX_LINE characters.
"""

from __future__ import annotations

from dataclasses import dataclass

from probes.hostfs import digits

MAX_LINES = 200
"""`ethtool -c` prints about 35 lines, `-g` about 15: more is not ethtool's output."""
MAX_LINE = 200
MAX_VALUE = 2**32 - 1
"""Ring sizes and coalescing parameters are u32 in the kernel's ethtool structures."""
_MAXIMUMS = "Pre-set maximums:"
_CURRENT = "Current hardware settings:"


@dataclass(frozen=True)
class Rings:
    """One interface's ring sizes: the driver's pre-set maximums and the current sizes, by
    field ("RX", "TX", "RX Mini", "RX Jumbo"); None where ethtool shows n/a."""

    maximum: dict[str, int | None]
    current: dict[str, int | None]


def _fields(text: str) -> list[tuple[str, str]] | None:
    """The "Name: value" pairs of ethtool's output, in order; None when it is too long."""
    lines = text.splitlines()
    if len(lines) > MAX_LINES or any(len(line) > MAX_LINE for line in lines):
        return None
    pairs = []
    for line in lines:
        name, colon, value = line.partition(":")
        if colon:
            pairs.append((name.strip(), value.strip()))
    return pairs


def _number(value: str) -> int | str | None:
    """An ethtool value: an int, None for n/a, or "" when it is neither."""
    if value == "n/a":
        return None
    if digits(value) and len(value) <= 10 and int(value) <= MAX_VALUE:
        return int(value)
    return ""


def failure(text: str) -> str | None:
    """The driver's or ethtool's reason when the output says the query failed, else None:
    "Operation not supported" from "netlink error: Operation not supported" or
    "Cannot get device ring settings: Operation not supported"."""
    for line in text.splitlines()[:MAX_LINES]:
        line = line.strip()[:MAX_LINE]
        if line.startswith(("netlink error:", "Cannot get")):
            return line.rpartition(":")[2].strip() or line
    return None


def parse_rings(text: str) -> Rings | None:
    """The rings `ethtool -g` reports, or None when `text` is not that output."""
    pairs = _fields(text)
    if pairs is None:
        return None
    section: dict[str, int | None] | None = None
    maximum: dict[str, int | None] = {}
    current: dict[str, int | None] = {}
    for name, value in pairs:
        if f"{name}:" == _MAXIMUMS:
            section = maximum
        elif f"{name}:" == _CURRENT:
            section = current
        elif section is not None and name in ("RX", "TX", "RX Mini", "RX Jumbo"):
            number = _number(value)
            if number == "":
                return None
            section.setdefault(name, number if isinstance(number, int) else None)
    if "RX" not in maximum or "RX" not in current:
        return None
    return Rings(maximum, current)


def parse_coalesce(text: str) -> dict[str, int | None] | None:
    """The numeric parameters `ethtool -c` reports ("rx-usecs": 0, "rx-usecs-irq": None for
    n/a), or None when `text` is not that output. "Adaptive RX: off  TX: n/a" is left out."""
    pairs = _fields(text)
    if pairs is None or not any(name.startswith("Coalesce parameters") for name, _ in pairs):
        return None
    found: dict[str, int | None] = {}
    for name, value in pairs:
        if not name or " " in name or name in found:
            continue
        number = _number(value)
        if number == "":
            continue  # "off", or a field a later ethtool prints in words
        found[name] = number if isinstance(number, int) else None
    return found or None
