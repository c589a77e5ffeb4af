"""What a tunable's target may be called: a strict pattern per scope, checked before any lookup.

A target ends up in sysfs paths, udev rules, a systemd unit's command line and on the terminal,
so it is held to the names the kernel itself gives: a block device's kernel name (optionally
/dev/), an interface name of at most 15 characters, a PCI function's address, or "host" for
the host-wide keys (sysctls, the cpufreq governor), or, for the sysctls the kernel keeps per
network namespace, `netns:NAME` (tuner/tunables/netns.py). Anything else, a newline, a quote,
a bracket of rich markup, is refused here whatever it would have matched later.
"""

from __future__ import annotations

import re

from tuner.tunables.netns import PREFIX, name_problem
from tuner.tunables.registry import TUNABLES

HOST = "host"
"""The one target of a host-wide tunable."""

_PATTERNS: dict[str, tuple[re.Pattern[str], str]] = {
    "device": (
        re.compile(r"(?:/dev/)?[A-Za-z0-9][A-Za-z0-9._+:!-]{0,63}"),
        "a block device's kernel name such as sda, nvme0n1 or /dev/loop3",
    ),
    "nic": (
        re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,14}"),
        "a network interface name (at most 15 letters, digits and . _ @ + -)",
    ),
    "irq": (
        re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"),
        "a PCI function's address such as 0000:3b:00.0",
    ),
}


def target_problem(key: str, target: object) -> str | None:
    """Why `target` cannot name a target of `key`, or None; the key must be in TUNABLES."""
    spec = TUNABLES[key]
    scope = spec.scope
    if scope == "host":
        if target == HOST:
            return None
        if isinstance(target, str) and target.startswith(PREFIX):
            if not spec.netns:
                return (
                    f"{key} is not kept per network namespace (a namespace shares the "
                    f"host's value and cannot write it): write target: {HOST}"
                )
            return name_problem(target)
        if spec.netns:
            return f"write target: {HOST}, or {PREFIX}NAME for the network namespace NAME"
        return f"{key} applies to the whole host: write target: {HOST}"
    pattern, what = _PATTERNS[scope]
    if not isinstance(target, str) or not pattern.fullmatch(target):
        return f"expected {what}"
    return None


def canonical_target(key: str, target: str) -> str:
    """The target as the key's tunables name it: a block device without its /dev/."""
    return target.removeprefix("/dev/") if TUNABLES[key].scope == "device" else target
