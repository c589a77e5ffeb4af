"""The grid a sweep measures: request sizes (bytes) by queue depths, as given or by default."""

from __future__ import annotations

from dataclasses import dataclass

from probes.hostfs import digits
from tuner.errors import BadInput
from tuner.trials.fio import fio_size

# 4 KiB to 4 MiB by powers of 4 and depths 1 to 32 by powers of 2: 36 cells, about a minute at
# 1 s a cell; finer steps are an option away (--sizes 4k,8k,16k,...).
DEFAULT_SIZES = tuple(4096 * 4**step for step in range(6))
DEFAULT_DEPTHS = tuple(2**step for step in range(6))
_SECTOR = 512  # direct I/O moves whole logical blocks
_MAX_SIZE = 256 << 20
_MAX_DEPTH = 4096


@dataclass(frozen=True)
class Grid:
    """Request sizes in bytes and queue depths, each ascending and without repeats."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    depths: tuple[int, ...] = DEFAULT_DEPTHS

    @property
    def cells(self) -> int:
        """How many fio runs the grid takes."""
        return len(self.sizes) * len(self.depths)


def parse_sizes(text: str | None) -> tuple[int, ...]:
    """'4k,64k,1m' -> (4096, 65536, 1048576), sorted; the default grid for None or ''."""
    if not text:
        return DEFAULT_SIZES
    sizes = []
    for item in _items(text, "--sizes"):
        try:
            size = fio_size(item)
        except ValueError:
            raise BadInput(f"--sizes: {item!r} is not a size (4k, 64k, 1m)") from None
        if size <= 0 or size % _SECTOR or size > _MAX_SIZE:
            raise BadInput(
                f"--sizes: {item}: direct reads need a multiple of {_SECTOR} bytes "
                f"up to {_MAX_SIZE >> 20} MiB"
            )
        sizes.append(size)
    return tuple(sorted(set(sizes)))


def parse_depths(text: str | None) -> tuple[int, ...]:
    """'1,4,16' -> (1, 4, 16), sorted; the default grid for None or ''."""
    if not text:
        return DEFAULT_DEPTHS
    depths = []
    for item in _items(text, "--depths"):
        if not digits(item) or not 1 <= int(item) <= _MAX_DEPTH:
            raise BadInput(f"--depths: {item!r} is not a queue depth from 1 to {_MAX_DEPTH}")
        depths.append(int(item))
    return tuple(sorted(set(depths)))


def size_label(size: int) -> str:
    """4096 -> '4K', 1048576 -> '1M', 1536 -> '1536': the compact form the tables use."""
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def _items(text: str, option: str) -> list[str]:
    items = [item.strip() for item in text.replace(" ", ",").split(",") if item.strip()]
    if not items:
        raise BadInput(f"{option}: give a comma-separated list")
    return items
