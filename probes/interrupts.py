"""Parsing /proc/interrupts: the CPU header, then one line per interrupt.

A numeric line reads `N: count... chip [hwirq] [trigger] action[, action]`, where the middle
columns differ by kernel and architecture:

     36:     0   6334  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0     (x86, 4.x and later)
     56:     0      0  PCI-MSI-edge      eth0-rx-0                           (x86, before 4.x)
     11:    12     12  GICv3  27 Level     arch_timer                        (arm64)

Named lines (NMI, LOC, ERR...) are per-CPU event counters, not interrupt lines, and are skipped.
Counts come out indexed by CPU number: entry c is CPU c's count, for CPUs 0 up to the highest
the header names; CPUs the header leaves out (offline) count 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probes.hostfs import MAX_CPUS

_CPU = re.compile(r"CPU([0-9]{1,9})$")
_IRQ = re.compile(r"[0-9]{1,9}")
_COUNT = re.compile(r"[0-9]{1,20}")
# The hwirq number and trigger that follow the chip: "4-edge", "27", "Level", "-fasteoi".
_HWIRQ = re.compile(r"^(\d+(-[A-Za-z]+)?|-[A-Za-z]+|[Ll]evel|[Ee]dge)$")
_MSI_CHIP = re.compile(r"PCI-MSIX?-([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


@dataclass(frozen=True)
class InterruptLine:
    """One numeric line of /proc/interrupts."""

    irq: int
    counts: tuple[int, ...]
    chip: str | None
    actions: str


def parse_header(line: str) -> tuple[int, ...] | None:
    """The CPU numbers the header names, in order ("CPU0 CPU2" -> (0, 2)); None if it is not one.

    ValueError for a CPU at or beyond MAX_CPUS: the counts are indexed by CPU number, so such a
    header would ask for an array of that size.
    """
    cpus: list[int] = []
    for word in line.split():
        match = _CPU.match(word)
        if match is None:
            return None
        cpus.append(int(match.group(1)))
        if cpus[-1] >= MAX_CPUS:
            raise ValueError(f"CPU header names CPU {cpus[-1]}, beyond {MAX_CPUS - 1}")
    return tuple(cpus) or None


def parse_interrupts(text: str) -> tuple[list[InterruptLine], list[str]]:
    """The numeric interrupt lines of /proc/interrupts and one problem text per line skipped."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return [], ["empty"]
    try:
        cpus = parse_header(lines[0])
    except ValueError as err:
        return [], [str(err)]
    if cpus is None:
        return [], [f"no CPU header line, got {lines[0].strip()[:40]!r}"]
    width = max(cpus) + 1
    found: list[InterruptLine] = []
    problems: list[str] = []
    for line in lines[1:]:
        key, colon, rest = line.partition(":")
        key = key.strip()
        numeric = _IRQ.fullmatch(key) is not None
        if colon and key.isascii() and key.isprintable() and " " not in key and not numeric:
            continue  # an architecture counter (NMI, LOC, ERR, I/O...)
        if not colon or not numeric:
            problems.append(f"line not understood: {line.strip()[:40]!r}")
            continue
        words = rest.split()
        counted = words[: len(cpus)]
        values = [int(w) for w in counted] if all(_COUNT.fullmatch(w) for w in counted) else []
        if len(values) < len(cpus):
            problems.append(f"IRQ {key}: counts for {len(cpus)} CPUs expected; line skipped")
            continue
        counts = [0] * width
        for cpu, value in zip(cpus, values, strict=True):
            counts[cpu] = value
        chip, actions = _split_tail(words[len(cpus) :])
        found.append(InterruptLine(int(key), tuple(counts), chip, actions))
    return found, problems


def _split_tail(words: list[str]) -> tuple[str | None, str]:
    """(chip, actions) from the words after the counts."""
    if not words:
        return None, ""
    rest = words[1:]
    while rest and _HWIRQ.fullmatch(rest[0]):
        rest = rest[1:]
    return words[0], " ".join(rest)


def msi_chip_address(chip: str | None) -> str | None:
    """The PCI address a per-device MSI chip name carries ("PCI-MSIX-0000:00:02.0"), or None."""
    if chip is None:
        return None
    match = _MSI_CHIP.search(chip)
    return match.group(1) if match else None
