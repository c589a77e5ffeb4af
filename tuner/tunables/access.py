"""Tunables: read, validate, write, save and restore any registry key below one SysRoot.

    tunables = Tunables(Path("/"))
    tunables.read("block.scheduler", "loop3")             # "none"
    tunables.validate("block.nr_requests", "loop3", 256)  # InvalidValue: ... exceeds 128 ...
    tunables.write("block.read_ahead_kb", "loop3", 4096)

This is the tunables' own interface; saving originals to the journal, verifying and restoring
in order belong to the engine (tuner/tunables/engine.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tuner.tunables.base import (
    InvalidValue,
    OtherNamespace,
    Pending,
    TargetReplaced,
    Tunable,
    Value,
    message,
)
from tuner.tunables.diskseq import MAX_DISKSEQ
from tuner.tunables.naming import target_problem
from tuner.tunables.netns import moved, namespace_of
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS


@dataclass(frozen=True)
class Saved:
    """A key's value before a change, with the coupled keys a write of it may disturb, the
    attachment of the device it was read from (its diskseq; None where there is none), and
    for a per-namespace sysctl the network namespace it was read in (SysRoot.netns_id)."""

    original: Value
    coupled: dict[str, Value] = field(default_factory=dict)
    diskseq: int | None = None
    netns: int | None = None


def as_value(data: object) -> Value:
    """A value back from JSON: lists become tuples (tcp_rmem), ints and strings stay."""
    if isinstance(data, list):
        return tuple(int(item) for item in data)
    if isinstance(data, (int, str, tuple)) and not isinstance(data, bool):
        return data
    raise ValueError(f"not a tunable value: {data!r}")


def as_diskseq(data: object) -> int | None:
    """A diskseq back from the journal: None, or an int the kernel could have given."""
    return _as_u64(data, "disk sequence number")


def as_netns(data: object) -> int | None:
    """A namespace id back from the journal: None, or an int the kernel could have given."""
    return _as_u64(data, "network namespace id")


def _as_u64(data: object, what: str) -> int | None:
    if data is None:
        return None
    if isinstance(data, int) and not isinstance(data, bool) and 0 <= data <= MAX_DISKSEQ:
        return data
    raise ValueError(f"not a {what}: {data!r}")


def like_reading(model: Value, value: Value) -> Value:
    """`value` in the type reading gave `model`: Ansible may template 4092 into "4092", and a
    tuple such as tcp_rmem into "4096 131072 6291456" or "[4096, 131072, 6291456]"."""
    if isinstance(model, int) and isinstance(value, str):
        text = value.strip()
        if text and all(char in "0123456789" for char in text):
            return int(text)
    if isinstance(model, tuple) and isinstance(value, str):
        return tuple(int(word) for word in value.replace(",", " ").strip("[]() ").split())
    return value


class Tunables:
    """Every tunable of the registry, bound to one root ("/" on the live host)."""

    def __init__(self, root: SysRoot | str | Path = Path("/")) -> None:
        self.sys = root if isinstance(root, SysRoot) else SysRoot(root)

    def impl(self, key: str) -> Tunable:
        """The implementation of `key`; InvalidValue for a key the registry does not have."""
        try:
            return IMPLEMENTATIONS[key]
        except KeyError:
            raise InvalidValue(f"{key}: unknown tunable (see tuner/tunables/registry.py)") from None

    def path(self, key: str, target: str) -> str:
        """The kernel file `key` on `target` lives in, as the host names it."""
        return self.impl(key).kernel_path(self.sys, target)

    def target(self, key: str, target: str) -> str:
        """The target as the key's tunable names it ("/dev/loop3" -> "loop3"); InvalidValue
        for a name no such target has (tuner/tunables/naming.py), before any path is made."""
        impl = self.impl(key)
        why = target_problem(key, target)
        if why is not None:
            raise InvalidValue(f"{key} on {str(target)[:60]!r}: {why}")
        return impl.target_name(target)

    def read(self, key: str, target: str) -> Value:
        """The current value, normalised ("[none] mq-deadline" reads "none")."""
        return self.impl(key).read(self.sys, self.target(key, target))

    def validate(
        self, key: str, target: str, value: object, *, pending: Pending | None = None
    ) -> Value:
        """The value normalised, or InvalidValue/TunableError naming key, target and why."""
        return self.impl(key).validate(self.sys, self.target(key, target), value, pending or {})

    def write(self, key: str, target: str, value: object) -> Value:
        """Validate, then write; returns the normalised value written."""
        checked = self.validate(key, target, value)
        self.impl(key).write(self.sys, self.target(key, target), checked)
        return checked

    def expected(self, key: str, target: str, value: Value) -> Value:
        """What reading back should give once `value` is written (a policy's layout)."""
        return self.impl(key).expected(self.sys, self.target(key, target), value)

    def state(self, key: str, target: str) -> Value:
        """The value as saved and compared on restore: `read`, or ABSENT for a setting the
        device does not have right now (Tunable.state)."""
        return self.impl(key).state(self.sys, self.target(key, target))

    def save(self, key: str, target: str) -> Saved:
        """The current value and those of the keys a write of it may change."""
        impl, name = self.impl(key), self.target(key, target)
        coupled = {other: self.state(other, name) for other in impl.coupled}
        return Saved(
            impl.state(self.sys, name),
            coupled,
            impl.diskseq(self.sys, name),
            impl.namespace(self.sys, name),
        )

    def check_same(self, key: str, target: str, saved: Saved) -> None:
        """TargetReplaced when `target` is no longer the device `saved` was read from (its
        name taken by another since), or the network namespace it was read in (this process
        runs in another one, or NAME was made again); TargetGone when it is not there. Nothing
        is checked for what a saved value lacks (a kernel before 5.15, an older journal)."""
        impl, name = self.impl(key), self.target(key, target)
        if saved.diskseq is not None:
            why = impl.replaced(self.sys, name, saved.diskseq)
            if why is not None:
                raise TargetReplaced(message(key, name, f"{why}: left as it is"))
        if saved.netns is not None:
            now = impl.namespace(self.sys, name)
            why = moved(saved.netns, now)
            if why is not None and now is not None and namespace_of(name) is None:
                # "host" is whichever namespace runs this: the one changed may still be
                # there, and a rollback run inside it puts the value back.
                raise OtherNamespace(message(key, name, f"{why}: left for a rollback from there"))
            if why is not None:
                raise TargetReplaced(message(key, name, f"{why}: left as it is"))

    def restore(self, key: str, target: str, saved: Saved) -> None:
        """Put a saved value back, then the coupled values its tunable did not handle.

        Nothing is written onto another device than the one it was saved from (check_same).
        Every value is checked as a new one would be first (InvalidValue otherwise): a saved
        original comes from the journal, which someone else may have written.
        """
        self.check_same(key, target, saved)
        impl, name = self.impl(key), self.target(key, target)
        original = impl.check_original(self.sys, name, saved.original, {})
        pending = {(key, name): original}
        coupled = {
            other: self.impl(other).check_original(self.sys, name, value, pending)
            for other, value in saved.coupled.items()
        }
        handled = impl.restore(self.sys, name, original, coupled)
        rest: Mapping[str, Value] = {k: v for k, v in coupled.items() if k not in handled}
        for other, value in rest.items():
            self.impl(other).write(self.sys, name, value)


def format_value(value: object) -> str:
    """A value as people read it: a triple as "4096 131072 6291456"."""
    if isinstance(value, (tuple, list)):
        return " ".join(map(str, value))
    return str(value)
