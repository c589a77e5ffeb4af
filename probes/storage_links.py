"""SAS and SATA link rates of the ports on the disks' paths.

SAS (scsi_transport_sas): each phy is a device `phy-H:N` (below its SCSI host; `phy-H:E:N`
below an expander) whose class directory sys/class/sas_phy/phy-H:N holds `negotiated_linkrate`
("6.0 Gbit"; "Unknown", "Phy disabled" and other words while no link is up). A port `port-H:N`
groups the phys of one link, narrow or wide: the kernel links `port-H:N/phy-H:N` to the phy and
`phy-H:N/port` back to the port. A port's lanes are its phys, its rate the slowest phy's.

SATA (libata): port `ataN` has its host link `ataN/linkN`, whose class directory
sys/class/ata_link/linkN holds `sata_spd` ("6.0 Gbps"; "<unknown>" while the link is down).

Reads: sys/class/sas_phy/*/{negotiated_linkrate,device/port}, and for a port none of whose phys
links back to it, its own `phy-*` entries; sys/class/ata_link/linkN/sata_spd, else the same file
below the port's directory (captures such as hwloc's lack sys/class/ata_link).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from probes.hostfs import HostFS
from tuner.topology.model import StoragePort

SAS_PHY_CLASS = "sys/class/sas_phy"
ATA_LINK_CLASS = "sys/class/ata_link"
# At most 4 digits each side: no SAS or SATA link runs 10,000 Gb/s, and a 400-digit rate would
# overflow the float it is shown through.
_SAS_RATE = re.compile(r"^([0-9]{1,4}(?:\.[0-9]{1,4})?)\s*Gbit\b")
_SATA_RATE = re.compile(r"^([0-9]{1,4}(?:\.[0-9]{1,4})?)\s*Gbps\b")
_LINKED_KINDS = frozenset(("sas_port", "ata_port"))


def parse_sas_rate(text: str | None) -> float | None:
    """Gb/s per lane from a phy's negotiated_linkrate ("12.0 Gbit"); None for any other state."""
    match = _SAS_RATE.match(text.strip()) if text else None
    return float(match.group(1)) if match else None


def parse_sata_rate(text: str | None) -> float | None:
    """Gb/s from an ata link's sata_spd ("6.0 Gbps"); None for "<unknown>" (link down)."""
    match = _SATA_RATE.match(text.strip()) if text else None
    return float(match.group(1)) if match else None


def port_dirs(reals: Iterable[str], names: set[str]) -> dict[str, str]:
    """The resolved directory of each named port, found on the disks' resolved paths."""
    found: dict[str, str] = {}
    for real in reals:
        parts = real.split("/")
        for index, part in enumerate(parts):
            if part in names and part not in found:
                found[part] = "/".join(parts[: index + 1])
    return found


def sas_phy_rates(fs: HostFS) -> dict[str, list[float | None]]:
    """Each SAS port's phys' negotiated rates, by port name, from sys/class/sas_phy."""
    ports: dict[str, list[float | None]] = {}
    for phy in fs.listdir(SAS_PHY_CLASS):
        port = fs.link_name(f"{SAS_PHY_CLASS}/{phy}/device/port")
        if port is None:
            continue  # a phy with no link up belongs to no port
        rate = parse_sas_rate(fs.read(f"{SAS_PHY_CLASS}/{phy}/negotiated_linkrate"))
        ports.setdefault(port, []).append(rate)
    return ports


def _phys_in_port_dir(fs: HostFS, port_dir: str) -> list[float | None]:
    phys = [name for name in fs.listdir(port_dir) if name.startswith("phy-")]
    return [
        parse_sas_rate(fs.read(f"{port_dir}/{phy}/sas_phy/{phy}/negotiated_linkrate"))
        for phy in phys
    ]


def _sas_link(rates: list[float | None]) -> tuple[float | None, int | None]:
    known = [rate for rate in rates if rate is not None]
    # One slow phy slows its share of a wide port; reporting the slowest keeps capacity honest.
    return (min(known) if known else None), (len(rates) or None)


def _sata_link(fs: HostFS, name: str, port_dir: str | None) -> tuple[float | None, int | None]:
    link = f"link{name.removeprefix('ata')}"
    text = fs.read(f"{ATA_LINK_CLASS}/{link}/sata_spd")
    if text is None and port_dir is not None:
        text = fs.read(f"{port_dir}/{link}/ata_link/{link}/sata_spd")
    rate = parse_sata_rate(text)
    return rate, (1 if rate is not None else None)


def with_links(fs: HostFS, ports: list[StoragePort], reals: Iterable[str]) -> list[StoragePort]:
    """The ports with `link_gbps` and `lanes` filled for SAS and SATA ports where sysfs says."""
    linked = {port.name for port in ports if port.kind in _LINKED_KINDS}
    if not linked:
        return ports
    dirs = port_dirs(reals, linked)
    any_sas = any(port.kind == "sas_port" for port in ports)
    by_class = sas_phy_rates(fs) if any_sas else {}
    result = []
    for port in ports:
        rate: float | None = None
        lanes: int | None = None
        if port.kind == "sas_port":
            rates = by_class.get(port.name)
            if not rates and port.name in dirs:
                rates = _phys_in_port_dir(fs, dirs[port.name])
            rate, lanes = _sas_link(rates or [])
        elif port.kind == "ata_port":
            rate, lanes = _sata_link(fs, port.name, dirs.get(port.name))
        if rate is not None or lanes is not None:
            port = dataclasses.replace(port, link_gbps=rate, lanes=lanes)
        result.append(port)
    return result
