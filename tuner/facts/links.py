"""Link bandwidth: PCIe links, and SAS and SATA lanes and (wide) ports.

Every figure is usable one-way payload bandwidth after line encoding, in MB/s (10^6 bytes/s),
before protocol overhead (frame headers, flow control), which costs another 5-10%.

- PCIe: `PciLink.usable_mbps` in the model (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s).
  x4 at 5 GT/s: 4 x 5 x 8/10 / 8 = 2000 MB/s.
- SAS-1/2/3 (3, 6, 12 Gb/s) and SATA (1.5, 3, 6 Gb/s) encode 8b/10b: 6 Gb/s carries 600 MB/s.
  SAS-4 (22.5 Gb/s) encodes 128b/150b: 22.5 x 128/150 / 8 = 2400 MB/s, twice 12 Gb/s's 1200.
- A SAS wide port carries lanes x the lane rate; any one connection (one disk) uses one lane.
"""

from __future__ import annotations

from tuner.topology.model import PciLink, StoragePort

# The line rates that carry 128b/150b (SAS-4 and later); everything below uses 8b/10b.
_SAS4_GBPS = 22.5


def pcie_mbps(link: PciLink | None) -> float | None:
    """Usable MB/s of a PCIe link as trained; None without a link or its speed and width."""
    return None if link is None else link.usable_mbps


def pcie_max_mbps(link: PciLink | None) -> float | None:
    """Usable MB/s the link would carry at its maximum speed and width."""
    return None if link is None else link.max_usable_mbps


def serial_encoding_efficiency(gbps: float) -> float:
    """Payload share of a SAS or SATA line rate: 8b/10b up to 12 Gb/s, 128b/150b from 22.5."""
    return 128 / 150 if gbps >= _SAS4_GBPS else 8 / 10


def lane_mbps(gbps: float | None) -> float | None:
    """Usable MB/s of one SAS or SATA lane at `gbps` (6.0 -> 600, 12.0 -> 1200, 22.5 -> 2400)."""
    if not gbps or gbps <= 0:
        return None
    return round(gbps * serial_encoding_efficiency(gbps) * 1000 / 8, 1)


def port_capacity_mbps(port: StoragePort) -> float | None:
    """What a port carries: lanes x lane rate (four 6 Gb/s lanes: 2400 MB/s); None if unknown."""
    per_lane = lane_mbps(port.link_gbps)
    if per_lane is None:
        return None
    return round(per_lane * (port.lanes or 1), 1)
