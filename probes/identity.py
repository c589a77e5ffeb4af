"""Which host a measurement belongs to: saved results carry it, the report compares it.

A capture replayed elsewhere, or a state directory copied between machines, must not show one
host's measurements under another's name. The identity is the host name, an id derived from
/etc/machine-id and the kernel release. The derived id, not the machine id itself, is what is
stored: systemd asks that the machine id not be exposed, and recommends an application-specific
id derived from it with a keyed hash (sd_id128_get_machine_app_specific), as here.
"""

from __future__ import annotations

import hashlib
import hmac
import platform
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.topology.model import Machine, Topology

_APP = b"iotuner host identity"
MACHINE_ID_FILE = Path("/etc/machine-id")


@dataclass(frozen=True)
class HostIdentity:
    """A host as results record it."""

    hostname: str
    machine_id: str | None = None  # derived from /etc/machine-id; None where it is unknown
    kernel: str | None = None

    def matches(self, other: HostIdentity) -> bool:
        """The same host: same derived machine id where both know it, else the same name."""
        if self.machine_id and other.machine_id:
            return self.machine_id == other.machine_id
        return self.hostname == other.hostname

    def document(self) -> dict[str, Any]:
        """As saved with a result."""
        return {"hostname": self.hostname, "machine_id": self.machine_id, "kernel": self.kernel}


def derived_machine_id(raw: str) -> str | None:
    """The application-specific id for a machine id; None for an empty or missing one."""
    raw = raw.strip()
    if not raw:
        return None
    return hmac.new(raw.encode(), _APP, hashlib.sha256).hexdigest()[:32]


def read_machine_id(path: Path = MACHINE_ID_FILE) -> str | None:
    """The derived id of this host's /etc/machine-id, or None when it is unreadable."""
    try:
        return derived_machine_id(path.read_text())
    except (OSError, UnicodeDecodeError):
        return None


def live_identity() -> HostIdentity:
    """This host, as a probe of `/` names it."""
    try:
        hostname = Path("/proc/sys/kernel/hostname").read_text().strip()
    except OSError:
        hostname = ""
    return HostIdentity(hostname or socket.gethostname(), read_machine_id(), platform.release())


def identity_of(topology: Topology) -> HostIdentity:
    """The probed host's identity (a capture's: its host name, and its kernel if captured)."""
    machine = next(iter(topology.of_type(Machine)), None)
    if machine is None:
        return HostIdentity(topology.root)
    return HostIdentity(machine.hostname or machine.name, machine.machine_id, machine.kernel)


def identity_from(doc: Any) -> HostIdentity | None:
    """The identity a saved result recorded, or None when it has none (an older iotuner)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("hostname"), str):
        return None
    machine_id, kernel = doc.get("machine_id"), doc.get("kernel")
    return HostIdentity(
        doc["hostname"],
        machine_id if isinstance(machine_id, str) else None,
        kernel if isinstance(kernel, str) else None,
    )
