"""The lab: an emulated storage topology (buses, disks, stripes) built from loop devices over
tmpfs files and block throttling, and a network path between namespaces, recorded so that
`lab down` removes all of it (docs/lab.md).

The names below are imported from their modules when first used: importing one module of the
lab (its model, for a transfer trial's network path, or its spec names, for completion) does not
import the rest of it (nbdkit's builders, the network namespaces, the teardown).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuner.lab.build import lab_up
    from tuner.lab.model import Lab, LabBus, LabDisk, LabNetwork
    from tuner.lab.session import lab_session
    from tuner.lab.spec import BusSpec, DiskSpec, LabSpec, builtin_spec_names, load_spec, parse_spec
    from tuner.lab.status import LabCheck, lab_check, lab_status
    from tuner.lab.teardown import lab_down

_HOME = {
    "lab_up": "build",
    "Lab": "model",
    "LabBus": "model",
    "LabDisk": "model",
    "LabNetwork": "model",
    "lab_session": "session",
    "BusSpec": "spec",
    "DiskSpec": "spec",
    "LabSpec": "spec",
    "builtin_spec_names": "spec",
    "load_spec": "spec",
    "parse_spec": "spec",
    "LabCheck": "status",
    "lab_check": "status",
    "lab_status": "status",
    "lab_down": "teardown",
}

__all__ = [
    "BusSpec",
    "DiskSpec",
    "Lab",
    "LabBus",
    "LabCheck",
    "LabDisk",
    "LabNetwork",
    "LabSpec",
    "builtin_spec_names",
    "lab_check",
    "lab_down",
    "lab_session",
    "lab_status",
    "lab_up",
    "load_spec",
    "parse_spec",
]


def __getattr__(name: str) -> object:
    """One of the lab's public names, imported from its module now."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'tuner.lab' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tuner.lab.{home}"), name)
