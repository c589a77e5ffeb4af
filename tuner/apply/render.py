"""A plan turned into what the host should hold: managed files and live values, validated.

Pure: it reads the host below `root` and never writes. The Ansible role (playbooks/roles/
iotuner_apply) writes what this renders; `iotuner verify` checks it; the journal of applies
(tuner/apply/changeset.py) saves what each managed file and value held before.

What is rendered is the whole of what iotuner wants on a host (the union of the plans in
force, tuner/apply/compose.py), so every managed file is always listed: one it does not need
has content None and is removed. Each file's header names the plans it holds.

Rendering is safe by construction: the plan is checked field by field first (tuner/plan.py
check_plan: header fields and targets by pattern), every value by its tunable, identities are
refused where a udev rule could not match them exactly (tuner/apply/identity.py), the header
comment is checked again for the one-line form `#` comments need, and the boot unit's
arguments are quoted for systemd (`unit_argument`).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.apply.identity import Identity, identify
from tuner.errors import BadInput
from tuner.plan import Plan, check_plan
from tuner.tunables.access import Tunables, format_value
from tuner.tunables.base import TunableError, Value
from tuner.tunables.engine import conflict
from tuner.tunables.netns import namespace_of
from tuner.tunables.registry import TUNABLES
from tuner.tunables.table import IMPLEMENTATIONS, apply_rank

UDEV_RULES = "etc/udev/rules.d/60-iotuner.rules"
SYSCTL_CONF = "etc/sysctl.d/60-iotuner.conf"
BOOT_UNIT = "etc/systemd/system/iotuner-boot.service"
BOOT_WANTS = "etc/systemd/system/multi-user.target.wants/iotuner-boot.service"
MANAGED_FILES = (UDEV_RULES, SYSCTL_CONF, BOOT_UNIT, BOOT_WANTS)
"""Every file iotuner apply manages, relative to the configuration root."""


@dataclass(frozen=True)
class ManagedFile:
    """A file (or symlink) as the plan wants it; content None and no link: it must not exist."""

    path: str
    content: str | None
    mode: int = 0o644
    link: str | None = None

    @property
    def wanted(self) -> bool:
        """True when the file (or link) should exist."""
        return self.content is not None or self.link is not None


@dataclass(frozen=True)
class LiveSetting:
    """One value to hold now: the plan entry it comes from, and what reading it should give."""

    entry: int
    key: str
    target: str
    value: Value
    expected: Value
    path: str


@dataclass(frozen=True)
class Rendered:
    """What applying a plan means on this host."""

    plan: Plan
    files: tuple[ManagedFile, ...]
    live: tuple[LiveSetting, ...]
    identities: dict[str, Identity]


def render(
    plan: Plan,
    *,
    plan_path: str = "plan",
    root: Path = Path("/"),
    conf_root: Path = Path("/"),
    holds: Sequence[str] = (),
) -> Rendered:
    """Validate the whole plan against the host, then render its files and live values.
    `holds`: one line per plan the files hold (tuner/apply/compose.py), for their headers.

    BadInput (exit 2) names the first bad entry: an unknown tunable, a target that is not
    here, a value the kernel would refuse, a device with no stable identity.
    """
    check_plan(plan, plan_path)
    tunables = Tunables(root)
    order = sorted(range(len(plan.entries)), key=lambda i: apply_rank(plan.entries[i].key))
    batch = {(e.key, resolved_target(tunables, e.key, e.target)) for e in plan.entries}
    pending: dict[tuple[str, str], Value] = {}
    live: list[LiveSetting] = []
    identities: dict[str, Identity] = {}
    for i in order:
        entry = plan.entries[i]

        def bad(why: str, i: int = i) -> BadInput:
            e = plan.entries[i]
            return BadInput(f"{plan_path}: entries[{i}] ({e.key} on {e.target}): {why}")

        if entry.key not in TUNABLES:
            raise bad("unknown tunable (see `iotuner rules list` and docs/plan-format.md)")
        target = resolved_target(tunables, entry.key, entry.target)
        namespace = namespace_of(target)
        if namespace is not None:
            raise bad(runtime_only(entry.key, namespace))
        why = conflict(entry.key, target, batch)
        if why:
            raise bad(why)
        try:
            value = tunables.validate(entry.key, target, entry.value, pending=pending)
            expected = tunables.expected(entry.key, target, value)
            if TUNABLES[entry.key].persist == "udev":
                identities.setdefault(target, identify(root, target, entry.match))
                # Refused here, one line, when the rule cannot be written (ethtool missing).
                IMPLEMENTATIONS[entry.key].udev_assignment(value)
        except TunableError as err:
            raise bad(_why(str(err), entry.key, target)) from None
        except BadInput as err:
            raise bad(str(err)) from None
        pending[(entry.key, target)] = value
        live.append(
            LiveSetting(i, entry.key, target, value, expected, tunables.path(entry.key, target))
        )
    files = _files(plan, live, identities, Path(conf_root), tuple(holds))
    return Rendered(plan, files, tuple(live), identities)


def runtime_only(key: str, namespace: str) -> str:
    """Why apply refuses a setting inside a network namespace, in one line: apply's values
    outlive a reboot (sysctl.d), and the namespace does not; whatever creates it again is
    where the setting belongs."""
    return (
        f"runtime only: network namespace {namespace} does not outlive a reboot, so apply "
        f"cannot persist {key} in it; set it where the namespace is created "
        f"(ip netns exec {namespace} sysctl -w {key}=...)"
    )


def resolved_target(tunables: Tunables, key: str, target: str) -> str:
    """The target as the tunable names it ("/dev/sda" -> "sda"); as given when it cannot."""
    try:
        return tunables.target(key, target)
    except TunableError:
        return target


def _why(message: str, key: str, target: str) -> str:
    """The tunable's message without the "KEY on TARGET: " the entry label already says."""
    return message.removeprefix(f"{key} on {target}: ")


def _header(plan: Plan, holds: tuple[str, ...]) -> str:
    if holds:
        # `iotuner status` lists the same plans; which plan set which line is in each plan.
        count = f"{len(holds)} plan" + ("" if len(holds) == 1 else "s")
        lines = [f"Written by iotuner apply for {plan.host}; it holds {count}:"]
        lines += [f"  {line}" for line in holds]
        text = "".join(_comment(line) for line in lines)
    else:
        what = f"an iotuner {plan.source} plan for {plan.host} ({plan.created}"
        what += f", workload {plan.workload})" if plan.workload else ")"
        text = _comment(f"Written by iotuner apply from {what}.")
    return text + "# `iotuner rollback` puts back what was here.\n"


def _comment(text: str) -> str:
    """One `#` comment line, for udev rules, sysctl.d and unit files alike; ValueError for
    text that is not one printable line (check_plan lets none through)."""
    if not (text.isascii() and text.isprintable()):
        raise ValueError(f"not one printable line: {text[:60]!r}")
    return f"# {text}\n"


_UNIT_PLAIN = re.compile(r"[A-Za-z0-9_.:@=,/+-]+")


def unit_argument(text: str) -> str:
    """One argument of a systemd Exec line: plain when it can be, else double-quoted with
    systemd's escapes; "%" is doubled (a specifier) and "$" too (a variable) either way.
    ValueError for a control character, which no argument iotuner writes holds."""
    if not (text.isascii() and text.isprintable()):
        raise ValueError(f"not a printable argument: {text[:60]!r}")
    if _UNIT_PLAIN.fullmatch(text):
        return text
    quoted = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{quoted}"'


def _files(
    plan: Plan,
    live: list[LiveSetting],
    identities: dict[str, Identity],
    conf_root: Path,
    holds: tuple[str, ...],
) -> tuple[ManagedFile, ...]:
    by_persist: dict[str, list[LiveSetting]] = defaultdict(list)
    for setting in live:
        by_persist[TUNABLES[setting.key].persist].append(setting)
    header = _header(plan, holds)
    rules = _udev_rules(by_persist["udev"], identities)
    sysctls = [
        f"{s.key} = {format_value(s.value)}\n"
        for s in sorted(by_persist["sysctl"], key=lambda s: s.key)
    ]
    unit = _boot_unit(by_persist["unit"])

    def at(rel: str) -> str:
        return str(conf_root / rel)

    return (
        ManagedFile(at(UDEV_RULES), header + "".join(rules) if rules else None),
        ManagedFile(at(SYSCTL_CONF), header + "".join(sysctls) if sysctls else None),
        ManagedFile(at(BOOT_UNIT), header + unit if unit else None),
        # The link `systemctl enable` would make: written directly, so enabling needs no
        # running systemd (a container, an image being built).
        ManagedFile(at(BOOT_WANTS), None, link=f"/{BOOT_UNIT}" if unit else None),
    )


def _udev_rules(settings: list[LiveSetting], identities: dict[str, Identity]) -> list[str]:
    """One rule per device, its assignments in apply order (the scheduler before the depth)."""
    by_target: dict[str, list[LiveSetting]] = defaultdict(list)
    for setting in settings:
        by_target[setting.target].append(setting)
    rules = []
    for target in sorted(by_target):
        identity = identities[target]
        if identity.kind == "mac":
            head = 'ACTION=="add", SUBSYSTEM=="net", '
        else:
            head = 'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
        attrs = [IMPLEMENTATIONS[s.key].udev_assignment(s.value) for s in by_target[target]]
        rules.append(
            f"# {target} ({identity.kind})\n{head}{identity.udev_match()}, {', '.join(attrs)}\n"
        )
    return rules


def _boot_unit(settings: list[LiveSetting]) -> str | None:
    """A oneshot unit for what neither udev nor sysctl.d can hold, resolved again at boot."""
    if not settings:
        return None
    args = " ".join(unit_argument(f"{s.key}@{s.target}={format_value(s.value)}") for s in settings)
    return (
        "[Unit]\n"
        "Description=iotuner settings udev and sysctl.d cannot hold (IRQ affinity, governor)\n"
        "After=local-fs.target\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        f"ExecStart={unit_argument(sys.executable)} -m tuner.apply.boot {args}\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def rendered_document(rendered: Rendered) -> dict[str, Any]:
    """The rendered plan as JSON-able data (what the role's iotuner_plan module returns)."""
    return {
        "files": [
            {
                "path": f.path,
                "content": f.content,
                "mode": f"{f.mode:04o}",
                "link": f.link,
                "wanted": f.wanted,
            }
            for f in rendered.files
        ],
        "live": [
            {
                "entry": s.entry,
                "key": s.key,
                "target": s.target,
                "value": list(s.value) if isinstance(s.value, tuple) else s.value,
                "expected": list(s.expected) if isinstance(s.expected, tuple) else s.expected,
                "path": s.path,
            }
            for s in rendered.live
        ],
        "identities": {
            name: {"kind": i.kind, "value": i.value} for name, i in rendered.identities.items()
        },
    }
