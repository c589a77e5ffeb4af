#!/usr/bin/python
"""Ansible module: write a group's plan for this host, its devices mapped from the canary's."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports

IOTUNER = TunerImports()
with IOTUNER:
    from tuner.errors import BadInput
    from tuner.fleet.retarget import device_map, retarget
    from tuner.plan import parse_plan, plan_text


DOCUMENTATION = r"""
module: iotuner_retarget
short_description: Write a fleet group's iotuner plan for this host
description:
  - Takes the plan tuned on the group's canary (its text), maps its block-device targets from
    the canary's device list to this host's by position (entry i to entry i), drops the
    canary's current values, and writes the result to C(dest) when it differs.
  - Idempotent; supports check mode (reports, writes nothing) and diff.
  - Needs iotuner installed for the interpreter Ansible uses on the host.
options:
  plan:
    description: The plan's YAML text (for example a C(file) lookup on the controller).
    type: str
    required: true
  plan_name:
    description: What to call the plan in error messages (its path on the controller).
    type: str
    default: plan
  source_devices:
    description: The devices the plan was made for, in role order (the canary's
      C(iotuner_devices)). Empty with C(devices) empty keeps the names as they are.
    type: list
    elements: str
    default: []
  devices:
    description: This host's devices in the same order.
    type: list
    elements: str
    default: []
  host:
    description: The host name written into the plan.
    type: str
  dest:
    description: Where the plan goes on the managed host; parent directories are created (0700).
    type: str
    required: true
author: iotuner developers
"""

EXAMPLES = r"""
- name: This host's copy of the group plan
  iotuner_retarget:
    plan: "{{ lookup('ansible.builtin.file', 'fleet-plans/3f2a9c1b7e04.yaml') }}"
    source_devices: [sdb, sdc]
    devices: [sdc, sdd]
    host: "{{ inventory_hostname }}"
    dest: /var/lib/iotuner/fleet-plan.yaml
"""

RETURN = r"""
dest:
  description: Where the plan is.
  returned: always
  type: str
mapping:
  description: Canary device -> this host's device.
  returned: always
  type: dict
entries:
  description: How many entries the plan holds.
  returned: always
  type: int
"""


def _write(dest: Path, text: str) -> None:
    """Atomically: a reader (the role, verify) never sees half a plan."""
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main():
    """Parse, map, compare with what is there, write when different."""
    module = IOTUNER.module(
        argument_spec={
            "plan": {"type": "str", "required": True},
            "plan_name": {"type": "str", "default": "plan"},
            "source_devices": {"type": "list", "elements": "str", "default": []},
            "devices": {"type": "list", "elements": "str", "default": []},
            "host": {"type": "str"},
            "dest": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    dest = Path(p["dest"])
    try:
        mapping = device_map(p["source_devices"], p["devices"])
        plan = parse_plan(p["plan"], p["plan_name"])
        text = plan_text(retarget(plan, mapping or None, p["host"], p["plan_name"]))
    except BadInput as err:
        module.fail_json(msg=str(err))
    before = dest.read_text() if dest.is_file() else ""
    result = {
        "changed": before != text,
        "dest": str(dest),
        "mapping": mapping,
        "entries": len(plan.entries),
    }
    if result["changed"] and module._diff:
        result["diff"] = {"before_header": str(dest), "after_header": str(dest),
                          "before": before, "after": text}  # fmt: skip
    if result["changed"] and not module.check_mode:
        _write(dest, text)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
