"""Naming a network namespace as a tunable's target: `netns:NAME`.

The kernel keeps some net.* sysctls per network namespace (tcp_rmem, tcp_wmem,
tcp_congestion_control): a plan entry with target `netns:NAME` sets the value inside the
namespace `ip netns` knows as NAME (/run/netns/NAME) instead of the host's. NAME is held to a
strict allow-list before anything is looked up: it becomes a path below /run/netns and an
argument of nsenter, and is shown on the terminal. iproute2 itself only refuses "/", "." and
"..", so a few names `ip netns add` takes are refused here; every name a lab or a container
runtime gives (letters, digits, "-", "_", ".") passes.

Nothing here reads the host; the child that enters the namespace is `SysRoot.netns_sysctl`.
"""

from __future__ import annotations

import re

PREFIX = "netns:"
"""How a target names a namespace: `netns:iotuner-wan-receiver`."""
NETNS_DIR = "run/netns"
"""Where `ip netns add` bind-mounts a namespace, below the root."""
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
NAME_RULE = "letters, digits, '.', '_' and '-', at most 64, not starting with '.' or '-'"


def namespace_of(target: object) -> str | None:
    """NAME for a target `netns:NAME`, None for any other target (the name is not checked)."""
    if isinstance(target, str) and target.startswith(PREFIX):
        return target[len(PREFIX) :]
    return None


def valid_name(name: object) -> bool:
    """True for a namespace name of NAME_RULE."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def name_problem(target: object) -> str | None:
    """Why a `netns:NAME` target is malformed, or None."""
    name = namespace_of(target)
    if name is None:
        return f"expected {PREFIX}NAME"
    if not valid_name(name):
        return f"a namespace name is {NAME_RULE}, got {name[:70]!r}"
    return None


def target_for(name: str) -> str:
    """The target naming namespace `name`."""
    return PREFIX + name


def in_netns(name: str | None, cmd: list[str]) -> list[str]:
    """`cmd` run inside namespace `name` by `ip netns exec`, or as it is for None (this
    process's own namespace). The name is the caller's to check (a lab's, or valid_name)."""
    return cmd if name is None else ["ip", "netns", "exec", name, *cmd]


def moved(then: int, now: int | None) -> str | None:
    """Why a value saved in the namespace numbered `then` is not to be written where the
    namespace numbered `now` answers (SysRoot.netns_id; None: not there), or None when it is
    the same namespace. A rollback run from another namespace, or after NAME was deleted and
    made again, must not write one namespace's original into another."""
    if now == then:
        return None
    if now is None:
        return f"the network namespace the change was made in (id {then}) is gone"
    return f"another network namespace than the change was made in (id {then} then, {now} here)"
