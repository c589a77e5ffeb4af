"""The modelled solid-state disk's parameters: their allow-list and bounds, and its formulas.

The model itself runs in `ssd.c` (an nbdkit plugin; its header comment gives every formula).
This module holds what a spec may ask for and computes what the model predicts, so tests and
the benchmark can hold the served disk against it:

    x            = block / mbps                      the command's transfer over the interface
    L            = read_us, write_us, or write_us * gc_factor once op_bytes have been written
    one command  = L + x                             (depth 1)
    IOPS(depth)  = min(min(depth, channels) / (L + x), 1 / x)
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.lab.faults import NO_FAULTS, Faults


@dataclass(frozen=True)
class SsdModel:
    """A flash drive, slowed in time (about 20 x a SATA drive's latencies) to what the lab's
    route can carry faithfully: it adds 0.3-0.5 ms to every command and carries about 10
    commands and 8,000 IOPS at once on the development VM (docs/lab.md)."""

    kind: str = "ssd"
    read_us: float = 2000.0
    write_us: float = 3000.0
    mbps: float = 400.0
    channels: int = 4
    op_bytes: int = 256 << 20
    gc_factor: float = 4.0
    route_us: float = 400.0
    faults: Faults = NO_FAULTS

    def flash_s(self, write: bool, past_op: bool = False) -> float:
        """One command's flash time, in seconds."""
        if not write:
            return self.read_us / 1e6
        return self.write_us * (self.gc_factor if past_op else 1.0) / 1e6


# name -> (integer only, lowest, highest). channels stays at most 16: nbdfuse carries about 10
# commands at once (docs/lab.md), so more channels could not be reached.
BOUNDS: dict[str, tuple[bool, float, float]] = {
    "read_us": (False, 1, 100_000),
    "write_us": (False, 1, 100_000),
    "mbps": (False, 10, 10_000),
    "channels": (True, 1, 16),
    "op_bytes": (True, 0, 1 << 40),
    "gc_factor": (False, 1, 100),
    "route_us": (False, 0, 5000),
}
SIZES = ("op_bytes",)  # also written like 256MiB


def service_s(model: SsdModel, block: int, write: bool = False, past_op: bool = False) -> float:
    """One `block`-byte command's service time at depth 1."""
    return model.flash_s(write, past_op) + block / (model.mbps * 1e6)


def iops(
    model: SsdModel, block: int, depth: int, write: bool = False, past_op: bool = False
) -> float:
    """Commands per second at `depth` outstanding: channels in parallel, one interface."""
    transfer = block / (model.mbps * 1e6)
    parallel = min(depth, model.channels) / service_s(model, block, write, past_op)
    return min(parallel, 1 / transfer)
