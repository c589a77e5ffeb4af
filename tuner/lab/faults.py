"""Faults a modelled disk (HDD or SSD) can be given in its spec's `model:` map.

    eio: [start, length]                 bytes [start, start + length) fail with EIO
    slow: {after_s: 10, for_s: 5, factor: 4}
                                         from after_s seconds after its server is ready, for
                                         for_s seconds, every command takes factor x as long

Both plugins read them through `disk.h` (its header comment gives the semantics, checked again
there); this module checks what a spec asks for and turns it into the plugins' parameters.
A disk that disappears needs no parameter: its server ending (`kill`) is that fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner.lab.sizes import parse_size

KEYS = ("eio", "slow")
SLOW_KEYS = ("after_s", "for_s", "factor")
MAX_SECONDS = 86400
MAX_FACTOR = 1000


@dataclass(frozen=True)
class Faults:
    """A disk's faults; the defaults are none (no bad region, never slow)."""

    eio_start: int = 0
    eio_length: int = 0
    slow_after_s: float = 0.0
    slow_for_s: float = 0.0
    slow_factor: float = 1.0

    def slow_at(self, since_ready_s: float) -> bool:
        """True if a command starting `since_ready_s` after the server was ready is slow."""
        start = self.slow_after_s
        return self.slow_factor > 1 and start <= since_ready_s < start + self.slow_for_s


NO_FAULTS = Faults()


def parse_faults(raw: dict[str, Any], size_bytes: int, fail: Callable[[str], Exception]) -> Faults:
    """The faults in a `model:` map (its `eio` and `slow` keys; the rest is the model's)."""
    values: dict[str, Any] = {}
    if "eio" in raw:
        region = raw["eio"]
        sizes = [parse_size(v) for v in region] if isinstance(region, list) else []
        if len(sizes) != 2 or any(s is None or s < 0 for s in sizes):
            raise fail(f"model: eio must be [start, length] like [1GiB, 1MiB], got {region!r}")
        start, length = (int(s or 0) for s in sizes)
        if length == 0 or start + length > size_bytes:
            raise fail(
                f"model: eio [{start}, {length}] must be a non-empty region inside the disk's "
                f"{size_bytes} bytes"
            )
        values.update(eio_start=start, eio_length=length)
    if "slow" in raw:
        slow = raw["slow"]
        if not isinstance(slow, dict) or set(slow) != set(SLOW_KEYS):
            raise fail(
                f"model: slow must be {{after_s: S, for_s: S, factor: F}} (all three), got {slow!r}"
            )
        for key, high in (("after_s", MAX_SECONDS), ("for_s", MAX_SECONDS)):
            values[f"slow_{key}"] = _number(slow[key], f"slow.{key}", 0, high, fail)
        values["slow_factor"] = _number(slow["factor"], "slow.factor", 1, MAX_FACTOR, fail)
    return Faults(**values)


def fault_params(faults: Faults) -> list[str]:
    """The key=value parameters `disk.h` takes for `faults` (none for no fault)."""
    params = []
    if faults.eio_length:
        params += [f"eio_start={faults.eio_start}", f"eio_length={faults.eio_length}"]
    if faults.slow_factor > 1:
        params += [
            f"slow_after_s={faults.slow_after_s}",
            f"slow_for_s={faults.slow_for_s}",
            f"slow_factor={faults.slow_factor}",
        ]
    return params


def _number(
    value: object, key: str, low: float, high: float, fail: Callable[[str], Exception]
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise fail(f"model: {key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)
