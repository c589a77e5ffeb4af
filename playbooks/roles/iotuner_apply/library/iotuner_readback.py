#!/usr/bin/python
"""Ansible module: read a whole batch of iotuner tunables back once all of it is written."""

from __future__ import annotations

from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports, error_line

IOTUNER = TunerImports()
with IOTUNER:
    from tuner.tunables.access import Tunables, as_value, format_value, like_reading
    from tuner.tunables.base import TunableError

DOCUMENTATION = r"""
module: iotuner_readback
short_description: Check that every live value of a batch holds once all of it is written
description:
  - One write can move another value (a scheduler resets nr_requests; on a rotational disk,
    kernel 6.17 and later, writing max_sectors_kb raises read_ahead_kb). The role writes its
    batch in an order that avoids it; this module reads every value back afterwards, in one
    run, and fails naming the first that does not hold. It never writes.
options:
  settings:
    description: The batch, as the role renders it; each item has key, target and expected
      (what reading back should give).
    type: list
    elements: dict
    required: true
  root:
    description: Root of the C(/sys) and C(/proc) to use (C(/) live).
    type: str
    default: /
author: iotuner developers
"""

EXAMPLES = r"""
- name: Read the whole batch back
  iotuner_readback:
    settings: "{{ iotuner_apply_rendered.live }}"
"""

RETURN = r"""
read:
  description: What each setting reads, as text, in the order given.
  returned: always
  type: list
"""


def main():
    """Read every setting back; fail on the first that moved."""
    module = IOTUNER.module(
        argument_spec={
            "settings": {"type": "list", "elements": "dict", "required": True},
            "root": {"type": "str", "default": "/"},
        },
        supports_check_mode=True,
    )
    tunables = Tunables(Path(module.params["root"]))
    read = []
    for item in module.params["settings"]:
        key, target = str(item.get("key")), str(item.get("target"))
        shown = f"{key} on {target}"
        try:
            now = tunables.read(key, target)
            expected = like_reading(now, as_value(item.get("expected", item.get("value"))))
        except (TunableError, ValueError) as err:
            module.fail_json(msg=error_line(shown, err))
        read.append(format_value(now))
        # In check mode nothing was written: what reads differently is what would change.
        if now != expected and not module.check_mode:
            module.fail_json(
                msg=f"{shown}: reads {format_value(now)} once the batch is written, not "
                f"{format_value(expected)} (moved by a later write of the batch, or by another "
                "process)",
                read=read,
            )
    module.exit_json(changed=False, read=read)


if __name__ == "__main__":
    main()
