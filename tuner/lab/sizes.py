"""Sizes as lab specs write them: '1GiB', '1536MiB', '1.5GiB' or a number of bytes."""

from __future__ import annotations

import re

MIB = 1 << 20
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB)?\s*$")
_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_size(value: object) -> int | None:
    """'1GiB', '1536MiB', '1.5GiB' or an integer number of bytes -> bytes; None if malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str) or not (match := _SIZE.match(value)):
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2)])
