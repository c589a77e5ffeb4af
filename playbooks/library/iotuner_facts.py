#!/usr/bin/python
"""Ansible module: the host's I/O topology (iotuner probe --json) and hardware fingerprint."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from ansible.module_utils.iotuner_guard import TunerImports

IOTUNER = TunerImports()
with IOTUNER:
    from probes.host import probe_host
    from probes.host_root import open_root
    from probes.hostfs import HostFS
    from tuner.errors import IotunerError
    from tuner.fleet.fingerprint import fingerprint
    from tuner.topology.document import to_document


DOCUMENTATION = r"""
module: iotuner_facts
short_description: iotuner's probe of the host as facts, with its hardware fingerprint
description:
  - Runs iotuner's read-only probes on the managed host and returns the C(iotuner probe --json)
    document as the fact C(iotuner).
  - Returns the hardware fingerprint as C(iotuner_fingerprint) (12 hex digits) and a readable
    C(iotuner_fingerprint_summary). Hosts with the same fingerprint have the same controllers,
    PCIe links, disks (class, size, rotation, model), NICs (driver, speed) and NUMA layout,
    so one tuned plan serves them all (see docs/fleet.md).
  - Needs iotuner installed for the interpreter Ansible uses on the host
    (C(ansible_python_interpreter)).
options:
  root:
    description: Root to probe; C(/) is the live host, a directory or a C(.tar.xz) capture
      (C(iotuner probe --gather)) probes a copy.
    type: str
    default: /
  devices:
    description: Block devices (kernel names or /dev paths) the fingerprint's storage part is
      limited to, with the controllers above them; default every physical disk.
    type: list
    elements: str
author: iotuner developers
"""

EXAMPLES = r"""
- name: Probe the host and fingerprint its data disks
  iotuner_facts:
    devices: [sdb, sdc, sdd]

- name: Group hosts by hardware
  ansible.builtin.group_by:
    key: "iotuner_hw_{{ ansible_facts.iotuner_fingerprint }}"
"""

RETURN = r"""
ansible_facts:
  description: The facts set.
  returned: always
  type: dict
  contains:
    iotuner:
      description: The C(iotuner probe --json) document (docs/probe.md).
      type: dict
    iotuner_fingerprint:
      description: sha256 of the canonical hardware description, first 12 hex digits.
      type: str
      sample: 3f2a9c1b7e04
    iotuner_fingerprint_summary:
      description: The hardware in one line.
      type: str
      sample: "2 NUMA nodes x 8 CPUs; 1000:0097 mpt3sas x8 8 GT/s (4 hdd 7.3 TiB ST8000NM0075)"
hardware:
  description: The canonical hardware description that was hashed.
  returned: always
  type: dict
"""


def main():
    """Probe, fingerprint, return both as facts; read-only, so check mode runs it too."""
    module = IOTUNER.module(
        argument_spec={
            "root": {"type": "str", "default": "/"},
            "devices": {"type": "list", "elements": "str"},
        },
        supports_check_mode=True,
    )
    try:
        with ExitStack() as stack:
            topology = probe_host(HostFS(open_root(Path(module.params["root"]), stack)))
        found = fingerprint(topology, module.params["devices"])
    except IotunerError as err:
        module.fail_json(msg=str(err))
    module.exit_json(
        changed=False,
        hardware=found.document,
        ansible_facts={
            "iotuner": to_document(topology),
            "iotuner_fingerprint": found.digest,
            "iotuner_fingerprint_summary": found.summary,
        },
    )


if __name__ == "__main__":
    main()
