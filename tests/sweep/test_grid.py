"""The grid: sizes and depths as a user types them, and the default."""

from __future__ import annotations

import pytest

from tuner.errors import BadInput
from tuner.sweep.grid import (
    DEFAULT_DEPTHS,
    DEFAULT_SIZES,
    Grid,
    parse_depths,
    parse_sizes,
    size_label,
)


def test_default_grid_is_4k_to_4m_by_1_to_32() -> None:
    assert (DEFAULT_SIZES[0], DEFAULT_SIZES[-1]) == (4096, 4 << 20)
    assert DEFAULT_DEPTHS == (1, 2, 4, 8, 16, 32)
    assert Grid().cells == 36
    assert parse_sizes(None) == DEFAULT_SIZES and parse_depths("") == DEFAULT_DEPTHS


def test_lists_are_parsed_sorted_and_unique() -> None:
    assert parse_sizes("1m, 4k,64K,4k") == (4096, 65536, 1 << 20)
    assert parse_sizes("512 8KiB") == (512, 8192)
    assert parse_depths("16,1,4,1") == (1, 4, 16)


@pytest.mark.parametrize("text", ["4x", "1000", "0", "1g", ","])
def test_bad_sizes_are_refused(text: str) -> None:
    with pytest.raises(BadInput, match="--sizes"):
        parse_sizes(text)


@pytest.mark.parametrize("text", ["0", "-1", "two", "100000"])
def test_bad_depths_are_refused(text: str) -> None:
    with pytest.raises(BadInput, match="--depths"):
        parse_depths(text)


def test_size_labels() -> None:
    assert [size_label(s) for s in (512, 4096, 262144, 1 << 20, 3 << 29)] == [
        "512", "4K", "256K", "1M", "1536M",
    ]  # fmt: skip
