"""Find the component that caps a group of devices: group, scale up, find the plateau.

`device_groups(topology, devices)` groups devices by the shared components above them;
`run_scaling(group)` reads 1..N of them at once (read-only, direct I/O); `find_plateau` says
where the curve stops growing and whether that falls short of the sum the devices deliver alone.
See docs/bottleneck.md.
"""

from tuner.bottleneck.groups import Component, Group, default_devices, device_groups
from tuner.bottleneck.plateau import Plateau, find_plateau, summary
from tuner.bottleneck.scaling import Point, Scaling, run_scaling

__all__ = [
    "Component",
    "Group",
    "Plateau",
    "Point",
    "Scaling",
    "default_devices",
    "device_groups",
    "find_plateau",
    "run_scaling",
    "summary",
]
