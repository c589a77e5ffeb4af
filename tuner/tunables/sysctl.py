"""Host-wide sysctls: vm.dirty_* writeback thresholds and the net.* socket buffer settings.

The target of a host tunable names the host ("host") and is not used otherwise. Each key lives
at /proc/sys/<key with dots as slashes>. Bounds are the kernel's own (mm/page-writeback.c,
net/core/sysctl_net_core.c, net/ipv4/sysctl_net_ipv4.c).

tcp_rmem, tcp_wmem and tcp_congestion_control are kept per network namespace (`netns = True`):
their target may also be `netns:NAME`, and the value is then read and written inside NAME
(SysRoot.netns_read / netns_write). rmem_max and wmem_max are not: a namespace reads the
host's and cannot write them (0444 inside one on Linux 6.18), so they take "host" only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import ClassVar

from tuner.tunables.base import ULONG_MAX, Pending, Tunable, TunableError, Value
from tuner.tunables.domain import Dimension, SpaceContext, widened
from tuner.tunables.netns import NETNS_DIR, namespace_of
from tuner.tunables.sysroot import CommandFailed, NamespaceGone, SysRoot

INT_MAX = 2**31 - 1
MIB = 1 << 20


class Sysctl(Tunable):
    """One /proc/sys file: the host's, or a network namespace's for a `netns:NAME` target."""

    def rel(self) -> str:
        """The key's path below the root."""
        return "proc/sys/" + self.key.replace(".", "/")

    def text(self, sys: SysRoot, target: str, key: str | None = None) -> str:
        """What the sysctl `key` (this tunable's own by default) holds for `target`: the
        host's file, or inside the namespace a `netns:NAME` target names."""
        key = key or self.key
        name = namespace_of(target)
        if name is None:
            return self.read_attr(sys, target, "proc/sys/" + key.replace(".", "/"))
        with self._inside(target):
            return sys.netns_read(name, key)

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the value (a triple as three words), inside the namespace for netns:NAME."""
        text = " ".join(map(str, value)) if isinstance(value, tuple) else str(value)
        name = namespace_of(target)
        if name is None:
            self.write_attr(sys, target, self.rel(), text)
            return
        with self._inside(target):
            sys.netns_write(name, self.key, text)

    @contextlib.contextmanager
    def _inside(self, target: str) -> Iterator[None]:
        """The namespace child's errors as this key's: TargetGone for a namespace that is not
        there, TunableError for the rest."""
        try:
            yield
        except NamespaceGone as err:
            raise self.gone(target, str(err)) from None
        except CommandFailed as err:
            raise self.fail(target, str(err)) from None

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """/proc/sys/... for the key; for netns:NAME, the command that shows it there."""
        name = namespace_of(target)
        if name is None:
            return sys.shown(self.rel())
        return f"nsenter --net={sys.shown(f'{NETNS_DIR}/{name}')} sysctl -n {self.key}"


class IntSysctl(Sysctl):
    """An integer sysctl within fixed bounds."""

    low: ClassVar[int | None] = 0
    high: ClassVar[int | None] = INT_MAX

    def read(self, sys: SysRoot, target: str) -> Value:
        """The value as an int."""
        text = self.text(sys, target)
        try:
            return int(text)
        except ValueError:
            raise self.fail(
                target, f"{self.kernel_path(sys, target)} holds {text[:40]!r}, not an integer"
            ) from None

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """An int within the bounds (checked on a host that has the key)."""
        self.text(sys, target)
        return self.in_range(target, value, self.low, self.high)


class DirtyExpire(IntSysctl):
    """Age in centiseconds at which dirty data is written back."""

    key = "vm.dirty_expire_centisecs"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "age of dirty data"
    current_fact = "dirty_expire_centisecs"


class DirtyPair(IntSysctl):
    """One of a bytes/ratio pair: the kernel keeps one of them in force and zeroes the other
    on every write, and refuses 0 bytes. Each saves its partner with its original, and the
    pair is restored by writing whichever half was in force."""

    is_bytes: ClassVar[bool]

    def restore(
        self, sys: SysRoot, target: str, original: Value, coupled: Mapping[str, Value]
    ) -> frozenset[str]:
        """Write the half that was in force (bytes when non-zero, else the ratio)."""
        partner = self.coupled[0]
        if partner not in coupled:
            self.write(sys, target, original)
            return frozenset()
        other = coupled[partner]
        size, size_key = (original, self.key) if self.is_bytes else (other, partner)
        ratio, ratio_key = (other, partner) if self.is_bytes else (original, self.key)
        if size != 0:
            TABLE[size_key].write(sys, target, size)
        else:
            TABLE[ratio_key].write(sys, target, ratio)
        return frozenset({partner})


class DirtyRatio(DirtyPair):
    """A percentage of reclaimable memory: 0-100."""

    high = 100
    is_bytes = False


class DirtyBytes(DirtyPair):
    """A byte count: at least one byte, or two pages for vm.dirty_bytes."""

    is_bytes = True
    high = ULONG_MAX
    pages: ClassVar[int] = 0
    search_low: ClassVar[int]
    """The smallest threshold a tune tries."""
    search_share: ClassVar[tuple[int, int]]
    """The largest a tune tries, as a fraction of dirtyable memory (the top end of the ratio
    domains before byte counts), and never below `search_least_high`."""
    search_least_high: ClassVar[int]

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """At least the kernel's floor, at most an unsigned long; 0 is refused (set the ratio
        instead)."""
        self.read_attr(sys, target, self.rel())
        number = self.in_range(target, value, None, ULONG_MAX)
        least = max(1, self.pages * os.sysconf("SC_PAGE_SIZE"))
        if number < least:
            raise self.invalid(
                target,
                f"{number} is below {least}, the least the kernel accepts "
                f"(to use a ratio instead, set {self.coupled[0]})",
            )
        return number

    def check_original(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """An original of 0 says the ratio was in force (restore writes the ratio then)."""
        if value == 0 and not isinstance(value, bool):
            return 0
        return self.validate(sys, target, value, pending)

    def in_use(self, sys: SysRoot, target: str, dirtyable: int | None) -> int | None:
        """The threshold in force in bytes: this key when non-zero, else its ratio (the
        partner) of `dirtyable`; None when neither can be told."""
        try:
            own = self.read(sys, target)
            ratio = TABLE[self.coupled[0]].read(sys, target) if own == 0 else None
        except TunableError:
            return None
        if isinstance(own, int) and own:
            return own
        if not isinstance(ratio, int) or dirtyable is None:
            return None
        return dirtyable * ratio // 100

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """Byte counts in MiB steps on a log scale (writeback's effect is proportional) from
        `search_low` to `search_share` of the dirtyable memory, holding the threshold in force.

        Bytes, not ratios: a ratio moves in steps of 1 % of dirtyable memory, 240 MB on a
        24 GiB host and 2.5 GB on a 256 GiB one, so the small thresholds that start writeback
        at once cannot be said in ratios (on the lab's single disk a 256 MiB write burst went
        from 76 to 99 MB/s with a 16 MiB background threshold; 1 %, the smallest ratio, changed
        nothing: docs/benchmarks.md). None for a workload that does not write, without a
        dirtyable figure to size them by, or on a host without the key.
        """
        dirtyable = context.dirtyable
        if not context.writes or not dirtyable or sys.read(self.rel()) is None:
            return None
        num, den = self.search_share
        high = max(dirtyable * num // den, self.search_least_high)
        dim = Dimension(self.key, target, "int", self.search_low, high, log=True, step=MIB)
        return widened(dim, self.in_use(sys, target, dirtyable))


class DirtyBackgroundBytes(DirtyBytes):
    """Dirty bytes at which background writeback starts."""

    key = "vm.dirty_background_bytes"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "background writeback"
    current_fact = "dirty_background_bytes"
    coupled = ("vm.dirty_background_ratio",)
    search_low = 4 * MIB
    search_share = (1, 2)
    search_least_high = 8 * MIB


class DirtyBackgroundRatio(DirtyRatio):
    """Dirty percentage at which background writeback starts."""

    key = "vm.dirty_background_ratio"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "background writeback, %"
    current_fact = "dirty_background_ratio"
    coupled = ("vm.dirty_background_bytes",)


class DirtyBytesLimit(DirtyBytes):
    """Dirty bytes at which writers are throttled (at least two pages)."""

    key = "vm.dirty_bytes"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "writer throttling threshold"
    current_fact = "dirty_bytes"
    coupled = ("vm.dirty_ratio",)
    pages = 2
    search_low = 16 * MIB
    search_share = (4, 5)
    search_least_high = 32 * MIB


class DirtyRatioLimit(DirtyRatio):
    """Dirty percentage at which writers are throttled."""

    key = "vm.dirty_ratio"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "writer throttling threshold, %"
    current_fact = "dirty_ratio"
    coupled = ("vm.dirty_bytes",)


class SocketMax(IntSysctl):
    """The largest socket buffer an application may ask for. The kernel's floor is twice
    (send) or once (receive) the true size of a minimal socket buffer, 2 KB plus an sk_buff."""

    high = INT_MAX

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """Within the bounds, and only from the host's own network namespace: from inside
        another, the value is the whole host's (read-only there on 6.18, the host's own file
        on older kernels), and a tune or plan run in a namespace must not reach it."""
        if not sys.in_initial_netns():
            raise self.invalid(
                target,
                "this process runs inside a network namespace: the value is the whole "
                "host's, set it from the host",
            )
        return super().validate(sys, target, value, pending)


class RmemMax(SocketMax):
    """net.core.rmem_max."""

    key = "net.core.rmem_max"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "largest receive buffer"
    current_fact = "rmem_max"
    low = 2304


class WmemMax(SocketMax):
    """net.core.wmem_max."""

    key = "net.core.wmem_max"
    scope = "host"
    value_kind = "int"
    persist = "sysctl"
    doc = "largest send buffer"
    current_fact = "wmem_max"
    low = 4608


class TcpMem(Sysctl):
    """A TCP buffer autotuning range: three ascending positive ints, min default max."""

    read_kind = "triple"

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """The max, on a log scale from the current max up to `context.tcp_window_high`;
        min and default kept as they are (`Dimension.kept`).

        Only the max decides how far autotuning may grow a connection's window, which is what
        caps one stream at window / RTT (paper 003); the min matters under memory pressure and
        the default for short connections, neither of which a bulk transfer's trial can feel.
        Never below the current max: a smaller window cannot carry more on a path, and the
        host as it is stays a point. None unless the workload moves data over TCP, when the
        target's value cannot be read, or when the current max is already at the bound.
        """
        if not context.tcp:
            return None
        try:
            current = self.read(sys, target)
        except TunableError:
            return None
        if not isinstance(current, tuple) or len(current) != 3:
            return None
        low, high = current[2], min(max(context.tcp_window_high, 1), INT_MAX)
        if high <= low:
            return None
        return Dimension(self.key, target, "int", low, high, log=True, kept=current[:2])

    def read(self, sys: SysRoot, target: str) -> Value:
        """The triple as a tuple of three ints."""
        text = self.text(sys, target)
        try:
            values = tuple(int(word) for word in text.split())
        except ValueError:
            values = ()
        if len(values) != 3:
            shown = self.kernel_path(sys, target)
            raise self.fail(target, f"{shown} holds {text[:40]!r}, not 3 ints")
        return values

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """Three positive ints, min <= default <= max, from a tuple, a list or "a b c"."""
        self.read(sys, target)
        words: list[object]
        if isinstance(value, str):
            words = list(value.replace(",", " ").split())
        elif isinstance(value, (tuple, list)):
            words = list(value)
        else:
            raise self.invalid(target, f"expected three integers (min default max), got {value!r}")
        if len(words) != 3:
            raise self.invalid(target, f"expected three integers (min default max), got {value!r}")
        triple = tuple(self.as_int(target, word) for word in words)
        if min(triple) < 1 or max(triple) > INT_MAX:
            raise self.invalid(target, f"{triple} must be positive integers below 2^31")
        if not triple[0] <= triple[1] <= triple[2]:
            raise self.invalid(target, f"{triple} is not ascending (min <= default <= max)")
        return triple


class TcpRmem(TcpMem):
    """net.ipv4.tcp_rmem."""

    key = "net.ipv4.tcp_rmem"
    scope = "host"
    value_kind = "triple"
    persist = "sysctl"
    doc = "TCP receive buffer min/def/max"
    netns = True


class TcpWmem(TcpMem):
    """net.ipv4.tcp_wmem."""

    key = "net.ipv4.tcp_wmem"
    scope = "host"
    value_kind = "triple"
    persist = "sysctl"
    doc = "TCP send buffer min/def/max"
    netns = True


class CongestionControl(Sysctl):
    """The default TCP congestion control, one of those the kernel has loaded."""

    key = "net.ipv4.tcp_congestion_control"
    scope = "host"
    value_kind = "choice"
    persist = "sysctl"
    doc = "TCP congestion"
    current_fact = "congestion_control"
    read_kind = "name"
    netns = True

    def read(self, sys: SysRoot, target: str) -> Value:
        """The algorithm's name."""
        return self.text(sys, target)

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """The algorithms the target may pick (inside a namespace, those the host allows
        there; on the host, those loaded), the current one first. None unless the workload
        moves data over TCP, or when there is nothing else to pick."""
        if not context.tcp:
            return None
        try:
            current = self.as_name(target, self.read(sys, target))
            key = "net.ipv4.tcp_allowed_congestion_control"
            if not _restricted(sys, target):
                key = "net.ipv4.tcp_available_congestion_control"
            offered = self.text(sys, target, key).split()
        except TunableError:
            return None
        choices = tuple(dict.fromkeys([current, *offered]))
        if len(choices) < 2:
            return None
        return Dimension(self.key, target, "categorical", choices=choices)

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A name in tcp_available_congestion_control; inside a namespace (a netns:NAME
        target, or "host" for a process that runs in one), one of
        tcp_allowed_congestion_control (tcp_set_default_congestion_control refuses any other
        algorithm there with EPERM)."""
        name = self.as_name(target, value)
        if _restricted(sys, target):
            allowed = self.text(sys, target, "net.ipv4.tcp_allowed_congestion_control").split()
            if name not in allowed:
                raise self.invalid(
                    target,
                    f"{name!r} is not allowed inside a network namespace (allowed: "
                    f"{', '.join(allowed)}; add it to net.ipv4.tcp_allowed_congestion_control "
                    "on the host)",
                )
            return name
        rel = "proc/sys/net/ipv4/tcp_available_congestion_control"
        available = self.read_attr(sys, target, rel).split()
        if name not in available:
            raise self.invalid(
                target,
                f"{name!r} is not available (loaded: {', '.join(available)}; "
                f"try modprobe tcp_{name})",
            )
        return name


def _restricted(sys: SysRoot, target: str) -> bool:
    """Whether `target`'s default congestion control is set in a namespace other than the
    host's: a netns:NAME target, or the "host" of a process running inside one."""
    return namespace_of(target) is not None or not sys.in_initial_netns()


SYSCTL_TUNABLES: tuple[Tunable, ...] = (
    DirtyBackgroundBytes(), DirtyBackgroundRatio(), DirtyBytesLimit(), DirtyRatioLimit(),
    DirtyExpire(), TcpRmem(), TcpWmem(), RmemMax(), WmemMax(), CongestionControl(),
)  # fmt: skip
TABLE: dict[str, Tunable] = {t.key: t for t in SYSCTL_TUNABLES}
