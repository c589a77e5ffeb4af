"""What every tunable implements, its errors, and the checks several of them share.

A tunable reads, validates and writes one key of the registry on one target. Validation runs
before anything is written and refuses what the kernel would refuse, with a one-line message
naming the key, the target and why. The engine (tuner/tunables/engine.py), not the tunable,
saves originals, verifies and restores.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from tuner.errors import BadInput, IotunerError
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.netns import namespace_of
from tuner.tunables.sysroot import SysRoot

Value = int | str | tuple[int, ...]
"""A tunable's value as read and written: an int, a name, or a triple such as tcp_rmem."""

Pending = Mapping[tuple[str, str], Value]
"""Settings about to be applied together, by (key, target): a scheduler set in the same batch
decides how deep nr_requests may go."""

UINT_MAX = 2**32 - 1
"""The most a block queue attribute takes (block/blk-sysfs.c refuses more with EINVAL)."""
ULONG_MAX = 2**64 - 1
"""The most an unsigned long sysctl takes on a 64-bit kernel."""
ABSENT = "absent"
"""What a setting the device does not have right now saves as (a scheduler's parameter while
another scheduler is in force; wbt_lat_usec on a kernel without writeback throttling):
restoring it writes nothing, and it never validates as a new value."""
_NAME = re.compile(r"[A-Za-z0-9_.:,+ -]{1,4096}")
"""A name-valued setting: a scheduler, governor, congestion control, an IRQ:CPU layout."""


@dataclass(frozen=True)
class KernelRead:
    """One kernel file `iotuner verify` reads for a setting: its path as the host names it,
    how what it holds is normalised (int, scheduler, name, triple or cpulist) and what it
    should hold.

    A setting only a command shows (a NIC's ring, `ethtool -g eth0`) gives the command
    instead of a file: `path` is then how it is shown ("ethtool -g eth0"), `command` its
    arguments, and `field` the "Name:" line whose value is compared, the first after the line
    `section` when one is given ("Current hardware settings:"). `kind` is then "int".
    """

    path: str
    kind: str
    expected: Value
    command: tuple[str, ...] = ()
    section: str = ""
    field: str = ""


class TunableError(IotunerError):
    """A tunable cannot be read or written here (missing, not permitted, refused); exit 1."""


class TargetGone(TunableError):
    """The device, interface or function a value belongs to no longer exists."""


class TargetReplaced(TargetGone):
    """Another device holds the target's name now (a loop device detached and attached
    again by someone else), or another network namespace answers for the target (a rollback
    run from another namespace, a namespace deleted and made again under its name): the
    value saved from the old one is not written onto it."""


class OtherNamespace(TunableError):
    """This process runs in another network namespace than the one a "host" value of a
    per-namespace key was saved in (a tune run by `ip netns exec NAME iotuner`, rolled back
    from the host): it is not written here, and stays journaled for a rollback run from
    there."""


class InvalidValue(TunableError, BadInput):
    """A value outside what the kernel accepts for this key and target; exit 2."""

    exit_code = 2


def message(key: str, target: str, why: str) -> str:
    """The one-line form every tunable error takes: "KEY on TARGET: WHY"."""
    return f"{key} on {target}: {why}"


class Tunable:
    """One key of the registry: how to read, check and write it below a SysRoot.

    `coupled` names keys of the same target that writing this one may change as a side effect
    (a new scheduler resets nr_requests; a dirty byte count zeroes the ratio): the engine saves
    them with the original, and `restore` puts both back.
    """

    key: ClassVar[str]
    scope: ClassVar[str]
    """What a target is: "device" (a block device), "host", "irq" (a PCI function's
    interrupts) or "nic" (an interface)."""
    value_kind: ClassVar[str]
    """The value's shape: int, choice, triple (three ints) or cpus."""
    persist: ClassVar[str]
    """How apply makes it outlive a reboot: "udev" (udev_assignment), "sysctl" (a sysctl.d
    line) or "unit" (an argument of iotuner-boot.service, resolved again at boot)."""
    doc: ClassVar[str]
    """One line for `iotuner rules list`, the plan format and the manual."""
    netns: ClassVar[bool] = False
    """True for a host sysctl the kernel keeps per network namespace: besides "host", its
    target may be `netns:NAME` (tuner/tunables/netns.py), read and written inside NAME."""
    coupled: ClassVar[tuple[str, ...]] = ()
    read_kind: ClassVar[str] = "int"
    """How verify normalises the kernel file before comparing (KernelRead.kind)."""
    current_fact: ClassVar[str | None] = None
    """The fact (tuner/facts) that reports the current value to the rules, if one does."""
    facts: ClassVar[dict[str, str]] = {}
    """Facts this tunable reports itself (`observe`), with their meaning for the catalogue
    (tuner/facts/catalog.py): a setting no probe reads, such as a NIC's ring size. Empty when
    a probe reports the current value (nic.mtu's "mtu")."""

    def target_name(self, target: str) -> str:
        """The target as this tunable names it (a block device without /dev/, say)."""
        return target

    def read(self, sys: SysRoot, target: str) -> Value:
        """The current value, normalised; TunableError when it cannot be read."""
        raise NotImplementedError

    def state(self, sys: SysRoot, target: str) -> Value:
        """The value as the engine saves and compares it (its journaled original): `read` by
        default; a setting that comes and goes with another (a scheduler's parameter) gives
        ABSENT while it is not there instead of failing."""
        return self.read(sys, target)

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """`value` normalised, or InvalidValue/TunableError if the kernel would refuse it."""
        raise NotImplementedError

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write an already validated value."""
        raise NotImplementedError

    def expected(self, sys: SysRoot, target: str, value: Value) -> Value:
        """What reading back should give after writing `value` (a policy resolves to a layout)."""
        return value

    def observe(self, sys: SysRoot, target: str) -> tuple[tuple[str, Value], ...]:
        """The values of `facts` on `target`, as (fact, value) pairs: by default the current
        value under `current_fact`. TunableError when they cannot be read here."""
        if not self.facts or self.current_fact is None:
            return ()
        return ((self.current_fact, self.read(sys, target)),)

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """What a tune may try for this key on `target`, its bounds read from the host below
        `sys` (the hardware's limits, the current value kept inside); None when the key is not
        searched there."""
        return None

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """The kernel file the value lives in, as the host names it (apply and verify show
        it); TargetGone when the target is not here."""
        raise NotImplementedError

    def verify_reads(self, sys: SysRoot, target: str, expected: Value) -> tuple[KernelRead, ...]:
        """The kernel files that show `expected` is held, for a key that spans several (one
        per IRQ, one per CPU); () for a key held in its one kernel_path file."""
        return ()

    def udev_assignment(self, value: Value) -> str:
        """The udev rule assignment that sets `value` when the device appears, for a key
        persisted by udev (registry.py); a TunableError for any other."""
        raise TunableError(f"{self.key} is not persisted by a udev rule")

    def diskseq(self, sys: SysRoot, target: str) -> int | None:
        """Which attachment of `target` this is (a block device's diskseq,
        tuner/tunables/diskseq.py), journaled with an original; None where the target has
        no such number."""
        return None

    def replaced(self, sys: SysRoot, target: str, diskseq: int) -> str | None:
        """Why `target` is no longer the attachment `diskseq` a value was saved from, or None
        while it is (TargetGone when the target is not there at all)."""
        return None

    def namespace(self, sys: SysRoot, target: str) -> int | None:
        """The network namespace a value of a per-namespace key (`netns`) lives in, journaled
        with an original: NAME's for `netns:NAME`, this process's own for "host"
        (SysRoot.netns_id); None for any other key, or where it cannot be told."""
        if not self.netns:
            return None
        return sys.netns_id(namespace_of(target))

    def check_original(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """A saved original about to be written back, checked as a new value is: the journal
        it comes from is a file, and a file can be planted."""
        return self.validate(sys, target, value, pending)

    def restore(
        self, sys: SysRoot, target: str, original: Value, coupled: Mapping[str, Value]
    ) -> frozenset[str]:
        """Put an original back; return the coupled keys it restored itself (the caller
        writes the others, in order, after this one)."""
        self.write(sys, target, original)
        return frozenset()

    def fail(self, target: str, why: str) -> TunableError:
        """A TunableError about this key on `target`."""
        return TunableError(message(self.key, target, why))

    def gone(self, target: str, why: str) -> TargetGone:
        """A TargetGone about this key on `target`."""
        return TargetGone(message(self.key, target, why))

    def invalid(self, target: str, why: str) -> InvalidValue:
        """An InvalidValue about this key on `target`."""
        return InvalidValue(message(self.key, target, why))

    # -- helpers the implementations share --------------------------------------------------

    def read_attr(self, sys: SysRoot, target: str, rel: str) -> str:
        """An attribute's text; TunableError naming the path when it is missing."""
        text = sys.read(rel)
        if text is None:
            raise self.fail(target, f"cannot read {sys.shown(rel)}")
        return text

    def read_int(self, sys: SysRoot, target: str, rel: str) -> int:
        """An attribute holding one integer."""
        text = self.read_attr(sys, target, rel)
        try:
            return int(text)
        except ValueError:
            raise self.fail(
                target, f"{sys.shown(rel)} holds {text[:40]!r}, not an integer"
            ) from None

    def write_attr(self, sys: SysRoot, target: str, rel: str, text: str) -> None:
        """Write one attribute, turning the kernel's refusal into a TunableError."""
        try:
            sys.write(rel, text)
        except OSError as err:
            raise self.fail(target, write_failure(sys, rel, text, err)) from None

    def as_int(self, target: str, value: object) -> int:
        """`value` as an int (an int, or a string of digits); InvalidValue otherwise."""
        if isinstance(value, bool):
            raise self.invalid(target, f"expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise self.invalid(target, f"expected an integer, got {value!r}")

    def in_range(self, target: str, value: object, low: int | None, high: int | None) -> int:
        """`value` as an int within [low, high] (either end open when None)."""
        number = self.as_int(target, value)
        if low is not None and number < low:
            raise self.invalid(target, f"{number} is below {low}, the least the kernel accepts")
        if high is not None and number > high:
            raise self.invalid(target, f"{number} exceeds {high}, the most the kernel accepts")
        return number

    def as_name(self, target: str, value: object) -> str:
        """`value` as a non-empty name of letters, digits, spaces and . _ : , + - only: it is
        written into sysfs, udev rules and a systemd unit, and shown on the terminal."""
        if not isinstance(value, str) or not _NAME.fullmatch(value.strip()):
            shown = repr(value)[:60]
            raise self.invalid(
                target, f"expected a name (letters, digits, . _ : , + -), got {shown}"
            )
        return value.strip()


def write_failure(sys: SysRoot, rel: str, text: str, err: OSError) -> str:
    """Why a write failed, in words: "not permitted here (EPERM writing /proc/irq/36/...)"."""
    code = errno.errorcode.get(err.errno or 0, "error")
    where = f"{code} writing {sys.shown(rel)}"
    if err.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
        return f"not permitted here ({where})"
    if err.errno == errno.ENOENT:
        return f"{sys.shown(rel)} does not exist"
    return f"the kernel refused {text!r} ({where})"
