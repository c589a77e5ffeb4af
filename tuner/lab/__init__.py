"""The lab: an emulated storage topology (buses, disks, stripes) built from loop devices over
tmpfs files and block throttling, and a network path between namespaces, recorded so that
`lab down` removes all of it (docs/lab.md)."""

from tuner.lab.build import lab_up
from tuner.lab.model import Lab, LabBus, LabDisk, LabNetwork
from tuner.lab.session import lab_session
from tuner.lab.spec import BusSpec, DiskSpec, LabSpec, builtin_spec_names, load_spec, parse_spec
from tuner.lab.status import LabCheck, lab_check, lab_status
from tuner.lab.teardown import lab_down

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
