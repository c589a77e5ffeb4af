"""Formatting numbers for people: sizes, rates and CPU lists."""

from __future__ import annotations

from collections.abc import Iterable


def human_bytes(value: int | None) -> str:
    """1536 -> '1.5 KiB'; None -> '?'."""
    if value is None:
        return "?"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} PiB"


def human_rate(mbps: float | None) -> str:
    """MB/s for people: 985.2 -> '985 MB/s', 3938.5 -> '3.9 GB/s'."""
    if mbps is None:
        return "?"
    return f"{mbps / 1000:.1f} GB/s" if mbps >= 1000 else f"{mbps:.0f} MB/s"


def cpulist(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 5) -> '0-2,5', the kernel's own notation."""
    ordered = sorted(set(cpus))
    if not ordered:
        return "-"
    runs: list[str] = []
    start = prev = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(runs)


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """'256M', '1.5GiB', '2g', '65536' -> bytes (K, M, G, T are binary, as fio and the lab's
    specs read them); ValueError naming the text otherwise."""
    cleaned = text.strip().lower().removesuffix("b").removesuffix("i")
    number, unit = cleaned, ""
    if cleaned and cleaned[-1] in _SIZE_UNITS:
        number, unit = cleaned[:-1], cleaned[-1]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a size (say 512M, 4G or a number of bytes)") from None
    if not 0 < value < 1 << 60:  # also refuses nan and inf
        raise ValueError(f"{text!r} is not a size (say 512M, 4G or a number of bytes)")
    return int(value * _SIZE_UNITS[unit])
