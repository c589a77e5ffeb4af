"""Sizes as lab specs write them: '1GiB', '1536MiB', '1.5GiB' or a number of bytes."""

from __future__ import annotations

import re

MIB = 1 << 20
MAX_BYTES = 1 << 50
"""1 PiB: above any lab disk (they live in memory or sparse files), below float's trouble."""
# At most 16 digits each side of the point: float() of a 400-digit size is infinite.
_SIZE = re.compile(r"\s*(\d{1,16}(?:\.\d{1,16})?)\s*(B|KiB|MiB|GiB|TiB)?\s*")
_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_size(value: object) -> int | None:
    """'1GiB', '1536MiB', '1.5GiB' or an integer number of bytes -> bytes; None if malformed
    or above MAX_BYTES."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value <= MAX_BYTES else None
    if not isinstance(value, str) or not (match := _SIZE.fullmatch(value)):
        return None
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    return size if size <= MAX_BYTES else None
