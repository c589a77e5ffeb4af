"""vm.* and net.* sysctls on a fixture tree: normalised reads, writes, and every refusal."""

from __future__ import annotations

import pytest

from tests.sysfs_tree import SysTree
from tuner.tunables.access import Tunables
from tuner.tunables.base import InvalidValue, TunableError
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.table import IMPLEMENTATIONS


def text(host: SysTree, key: str) -> str:
    return (host.root / "proc/sys" / key.replace(".", "/")).read_text().strip()


def test_reads_are_normalised(tunables: Tunables) -> None:
    assert tunables.read("net.ipv4.tcp_rmem", "host") == (4096, 131072, 6291456)
    assert tunables.read("vm.dirty_ratio", "host") == 20
    assert tunables.read("net.ipv4.tcp_congestion_control", "host") == "cubic"


@pytest.mark.parametrize(
    ("key", "value", "written"),
    [
        ("vm.dirty_background_bytes", 268435456, "268435456"),
        ("vm.dirty_background_ratio", 5, "5"),
        ("vm.dirty_bytes", 8192, "8192"),
        ("vm.dirty_ratio", 100, "100"),
        ("vm.dirty_expire_centisecs", 1500, "1500"),
        ("net.ipv4.tcp_rmem", "4096 87380 134217728", "4096 87380 134217728"),
        ("net.ipv4.tcp_wmem", [4096, 65536, 134217728], "4096 65536 134217728"),
        ("net.ipv4.tcp_wmem", (4096, 4096, 4096), "4096 4096 4096"),
        ("net.core.rmem_max", 134217728, "134217728"),
        ("net.core.wmem_max", "134217728", "134217728"),
        ("net.ipv4.tcp_congestion_control", "reno", "reno"),
    ],
)
def test_happy_path(
    tunables: Tunables, host: SysTree, key: str, value: object, written: str
) -> None:
    tunables.write(key, "host", value)
    assert text(host, key) == written


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("vm.dirty_background_ratio", 101, "101 exceeds 100, the most the kernel accepts"),
        ("vm.dirty_ratio", -1, "-1 is below 0, the least the kernel accepts"),
        ("vm.dirty_background_bytes", 0, "0 is below 1, the least the kernel accepts "
         "(to use a ratio instead, set vm.dirty_background_ratio)"),
        ("vm.dirty_bytes", 4096, "4096 is below 8192, the least the kernel accepts "
         "(to use a ratio instead, set vm.dirty_ratio)"),
        ("vm.dirty_expire_centisecs", 2**31, "2147483648 exceeds 2147483647, the most the "
         "kernel accepts"),
        ("net.ipv4.tcp_rmem", "4096 87380", "expected three integers (min default max), "
         "got '4096 87380'"),
        ("net.ipv4.tcp_rmem", "4096 1000 2000", "(4096, 1000, 2000) is not ascending "
         "(min <= default <= max)"),
        ("net.ipv4.tcp_wmem", (0, 16384, 4194304), "(0, 16384, 4194304) must be positive "
         "integers below 2^31"),
        ("net.ipv4.tcp_wmem", 4096, "expected three integers (min default max), got 4096"),
        ("net.core.rmem_max", 1000, "1000 is below 2304, the least the kernel accepts"),
        ("net.core.wmem_max", 2**31, "2147483648 exceeds 2147483647, the most the kernel accepts"),
        ("net.ipv4.tcp_congestion_control", "bbr", "'bbr' is not available (loaded: reno, "
         "cubic; try modprobe tcp_bbr)"),
    ],
)  # fmt: skip
def test_refusals(tunables: Tunables, host: SysTree, key: str, value: object, why: str) -> None:
    before = text(host, key)
    with pytest.raises(InvalidValue) as err:
        tunables.write(key, "host", value)
    assert str(err.value) == f"{key} on host: {why}"
    assert text(host, key) == before


def test_a_host_without_the_sysctl_is_named(tree: SysTree) -> None:
    with pytest.raises(TunableError, match=r"vm.dirty_ratio on host: cannot read "
                       r"/proc/sys/vm/dirty_ratio"):  # fmt: skip
        Tunables(tree.root).validate("vm.dirty_ratio", "host", 10)


def test_dirty_pairs_save_their_partner(tunables: Tunables) -> None:
    saved = tunables.save("vm.dirty_background_bytes", "host")
    assert saved.original == 0
    assert saved.coupled == {"vm.dirty_background_ratio": 10}


# -- what a tune may try: the dirty thresholds in bytes of dirtyable memory -------------------

GIB, MIB = 1 << 30, 1 << 20


def test_dirty_dimensions_hold_the_threshold_in_force(host: SysTree, tunables: Tunables) -> None:
    context = SpaceContext(dirtyable=10 * GIB)
    bg = IMPLEMENTATIONS["vm.dirty_background_bytes"].dimension(tunables.sys, "host", context)
    dirty = IMPLEMENTATIONS["vm.dirty_bytes"].dimension(tunables.sys, "host", context)
    assert bg == Dimension("vm.dirty_background_bytes", "host", "int", 4 * MIB, 5 * GIB,
                           log=True, step=MIB)  # fmt: skip
    assert dirty == Dimension("vm.dirty_bytes", "host", "int", 16 * MIB, 8 * GIB,
                              log=True, step=MIB)  # fmt: skip
    # On the ratios (the small host's 10 and 20 %) of a small host, the domain stretches to
    # hold the bytes they amount to; bytes in force are held as they are.
    small = SpaceContext(dirtyable=64 * MIB)
    bg = IMPLEMENTATIONS["vm.dirty_background_bytes"].dimension(tunables.sys, "host", small)
    assert bg is not None and (bg.low, bg.high) == (4 * MIB, 32 * MIB)
    host.file("proc/sys/vm/dirty_bytes", 512 * MIB)
    dirty = IMPLEMENTATIONS["vm.dirty_bytes"].dimension(tunables.sys, "host", small)
    assert dirty is not None and (dirty.low, dirty.high) == (16 * MIB, 512 * MIB)


def test_no_dirty_dimension_without_memory_to_size_it_or_a_writer(tunables: Tunables) -> None:
    for context in (SpaceContext(), SpaceContext(dirtyable=GIB, writes=False)):
        assert IMPLEMENTATIONS["vm.dirty_bytes"].dimension(tunables.sys, "host", context) is None
    assert (
        IMPLEMENTATIONS["vm.dirty_ratio"].dimension(
            tunables.sys, "host", SpaceContext(dirtyable=GIB)
        )
        is None
    )


# -- what a transfer tune may try: the socket buffers' max and the congestion control --------

TCP = SpaceContext(tcp=True, tcp_window_high=64 * MIB)


def test_socket_buffer_dimensions_search_the_max_up_from_where_it_is(tunables: Tunables) -> None:
    rmem = IMPLEMENTATIONS["net.ipv4.tcp_rmem"].dimension(tunables.sys, "host", TCP)
    assert rmem == Dimension("net.ipv4.tcp_rmem", "host", "int", 6291456, 64 * MIB, log=True,
                             kept=(4096, 131072))  # fmt: skip
    assert rmem.part((4096, 131072, 6291456)) == 6291456  # the baseline is the max in force
    # A trial writes the whole triple: min and default as found, the searched max.
    assert rmem.whole(16 * MIB) == (4096, 131072, 16 * MIB)


def test_a_default_above_a_searched_max_follows_it_down() -> None:
    dim = Dimension("net.ipv4.tcp_wmem", "host", "int", 65536, MIB, log=True,
                    kept=(4096, 131072))  # fmt: skip
    assert dim.whole(65536) == (4096, 65536, 65536)


def test_no_socket_buffer_dimension_for_disk_workloads_or_at_the_bound(
    host: SysTree, tunables: Tunables
) -> None:
    for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control"):
        assert IMPLEMENTATIONS[key].dimension(tunables.sys, "host", SpaceContext()) is None
    host.file("proc/sys/net/ipv4/tcp_rmem", "4096 131072 67108864")
    assert IMPLEMENTATIONS["net.ipv4.tcp_rmem"].dimension(tunables.sys, "host", TCP) is None


def test_congestion_control_is_searched_among_those_loaded(
    host: SysTree, tunables: Tunables
) -> None:
    host.file("proc/sys/net/ipv4/tcp_available_congestion_control", "reno cubic bbr")
    dim = IMPLEMENTATIONS["net.ipv4.tcp_congestion_control"].dimension(tunables.sys, "host", TCP)
    assert dim == Dimension("net.ipv4.tcp_congestion_control", "host", "categorical",
                            choices=("cubic", "reno", "bbr"))  # fmt: skip
    host.file("proc/sys/net/ipv4/tcp_available_congestion_control", "cubic")
    assert (
        IMPLEMENTATIONS["net.ipv4.tcp_congestion_control"].dimension(tunables.sys, "host", TCP)
        is None
    )
