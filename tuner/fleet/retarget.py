"""Retarget a plan made on one host (the canary) to another host of the same hardware group.

Plans name block devices by kernel name ("sdb", "loop3"), and the same disk slot can carry
another name on the next host. The fleet maps devices by role, not by name: each host lists its
data devices in the inventory (`iotuner_devices`), in the same order on every host of a group,
and entry i on the canary becomes entry i on the host. Only device-scope entries (block.*) are
rewritten; a device the plan names but the canary does not list is refused, because no
position says which disk it is elsewhere. Host-wide entries (sysctls, the governor) and NIC or
PCI targets (the same on identical hardware) are kept. The canary's `current` values are
dropped: they describe the canary, not the host the plan now belongs to.

`python -m tuner.fleet.retarget PLAN --from sdb,sdc --to sdc,sdd [--host NAME] [--out FILE]`
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuner.errors import BadInput
from tuner.plan import Plan, PlanEntry, plan_text, read_plan, write_plan
from tuner.tunables.registry import TUNABLES


def kernel_name(device: str) -> str:
    """A device as plans and mappings compare it: "/dev/sdb" -> "sdb"."""
    return device.removeprefix("/dev/")


def device_map(source: Sequence[str], dest: Sequence[str]) -> dict[str, str]:
    """Entry i of the canary's devices -> entry i of the host's (kernel names)."""
    src = [kernel_name(d) for d in source]
    dst = [kernel_name(d) for d in dest]
    if len(src) != len(dst):
        raise BadInput(
            f"the canary lists {len(src)} devices ({', '.join(src) or 'none'}) and this host "
            f"{len(dst)} ({', '.join(dst) or 'none'}): iotuner_devices must map one to one"
        )
    for side, names in (("the canary's", src), ("this host's", dst)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise BadInput(f"{side} iotuner_devices lists {', '.join(twice)} more than once")
    return dict(zip(src, dst, strict=True))


def retarget(
    plan: Plan, mapping: Mapping[str, str] | None, host: str | None = None, where: str = "plan"
) -> Plan:
    """The plan for another host: device targets mapped (None: names kept), `current` dropped."""

    def target(kind: str, index: int, key: str, name: str) -> str:
        spec = TUNABLES.get(key)
        if mapping is None or spec is None or spec.scope != "device":
            return name
        mapped = mapping.get(kernel_name(name))
        if mapped is None:
            known = ", ".join(mapping) or "none"
            raise BadInput(
                f"{where}: {kind}[{index}] ({key} on {name}): {kernel_name(name)} is not among "
                f"the canary's iotuner_devices ({known})"
            )
        return "/dev/" + mapped if name.startswith("/dev/") else mapped

    entries = tuple(
        PlanEntry(e.key, target("entries", i, e.key, e.target), e.value, None, e.reason)
        for i, e in enumerate(plan.entries)
    )
    search = tuple(
        dataclasses.replace(s, target=target("search", i, s.key, s.target))
        for i, s in enumerate(plan.search)
    )
    return dataclasses.replace(
        plan, entries=entries, search=search, host=plan.host if host is None else host
    )


def _names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: retarget PLAN and print it, or write it to --out."""
    parser = argparse.ArgumentParser(prog="python -m tuner.fleet.retarget", description=__doc__)
    parser.add_argument("plan", type=Path)
    parser.add_argument("--from", dest="source", default="", help="canary devices, a,b,...")
    parser.add_argument("--to", dest="dest", default="", help="this host's devices, a,b,...")
    parser.add_argument("--host", default=None, help="the host name the plan is for")
    parser.add_argument("--out", type=Path, default=None, help="write here instead of stdout")
    args = parser.parse_args(argv)
    try:
        mapping = device_map(_names(args.source), _names(args.dest))
        plan = retarget(read_plan(args.plan), mapping or None, args.host, str(args.plan))
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    if args.out is None:
        sys.stdout.write(plan_text(plan))
    else:
        write_plan(plan, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
