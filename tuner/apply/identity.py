"""A device's stable identity, so persisted settings follow the disk and not its kernel name.

`sdb` today may be `sdc` after a reboot or a swap, so udev rules match what stays: the WWN, the
serial, the path to the port (by-path), or for a loop device its backing file; a NIC by its MAC
address. udev's own database (/run/udev/data) is read where it has the device; sysfs otherwise,
so a captured tree or a host without udevd still gives an identity where the hardware has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from probes.hostfs import HostFS
from tuner.errors import BadInput

# Strongest first: a WWN names the medium, a serial the drive, a path only the slot it sits in.
_UDEV_KEYS = (("wwn", "ID_WWN"), ("serial", "ID_SERIAL"), ("path", "ID_PATH"))
_UDEV_EXACT = re.compile(r"[A-Za-z0-9 ._:/+,=@~#-]{1,1024}")
"""What a udev match value may hold and still match only itself: udev unescapes nothing but
\\", reads * ? [ ] as a glob and | as alternatives, and a rule is one line."""


class NoIdentity(BadInput):
    """The device has nothing stable a udev rule could match on; exit 2."""


@dataclass(frozen=True)
class Identity:
    """What a udev rule matches a device by: kind is wwn, wwid, serial, path, loop or mac, or
    name (the kernel name, when a plan entry says `match: name`)."""

    kind: str
    value: str

    def udev_match(self) -> str:
        """The udev rule's match clause for this identity; NoIdentity when udev could not
        match the value exactly (see `exact`)."""
        value = self.exact()
        match self.kind:
            case "wwn":
                return f'ENV{{ID_WWN}}=="{value}"'
            case "serial":
                return f'ENV{{ID_SERIAL}}=="{value}"'
            case "path":
                return f'ENV{{ID_PATH}}=="{value}"'
            case "wwid":
                return f'ATTRS{{wwid}}=="{value}"'
            case "loop":
                return f'ATTR{{loop/backing_file}}=="{value}"'
            case "mac":
                return f'ATTR{{address}}=="{value}"'
            case "name":
                # Only where the plan says `match: name`: whichever disk has this name.
                return f'KERNEL=="{value}"'
        raise ValueError(f"unknown identity kind {self.kind!r}")

    def exact(self) -> str:
        """The value, when a udev rule can match it exactly; NoIdentity otherwise."""
        if not _UDEV_EXACT.fullmatch(self.value):
            raise NoIdentity(
                f"its {self.kind} {self.value[:60]!r} holds a quote, a backslash, a control "
                "character or one of * ? [ ] |: a udev rule cannot match it exactly"
            )
        return self.value

    def __str__(self) -> str:
        return f"{self.kind} {self.value}"


def udev_properties(fs: HostFS, device: str) -> dict[str, str]:
    """The E: properties udev recorded for a block device (empty without a udev database)."""
    majmin = fs.read(f"sys/block/{device}/dev")
    text = fs.read(f"run/udev/data/b{majmin}") if majmin else None
    props = {}
    for line in (text or "").splitlines():
        if line.startswith("E:") and "=" in line:
            name, _, value = line[2:].partition("=")
            props[name] = value
    return props


def block_identity(fs: HostFS, device: str) -> Identity | None:
    """A block device's identity, or None when it has nothing stable."""
    backing = fs.read(f"sys/block/{device}/loop/backing_file")
    if backing:
        return Identity("loop", backing)
    props = udev_properties(fs, device)
    for kind, name in _UDEV_KEYS:
        if props.get(name):
            return Identity(kind, props[name])
    for rel in (f"sys/block/{device}/wwid", f"sys/block/{device}/device/wwid"):
        wwid = fs.read(rel)
        if wwid:
            return Identity("wwid", wwid)
    return None


def nameless_disks(fs: HostFS) -> set[str]:
    """Block devices a udev rule could match only by kernel name: nothing stable, or a value
    udev could not match exactly. advise warns before it writes a plan entry for one."""
    found = set()
    for name in fs.listdir("sys/block"):
        identity = block_identity(fs, name)
        try:
            if identity is None or not identity.exact():
                found.add(name)
        except NoIdentity:
            found.add(name)
    return found


def identify(root: Path, device: str, match: str | None = None) -> Identity:
    """The identity of a block device ("sdb", "/dev/loop3") or a network interface ("eth0");
    with match "name", a block device's kernel name, as its plan entry chose."""
    fs = HostFS(root)
    name = device.removeprefix("/dev/")
    if match == "name" and fs.exists(f"sys/block/{name}"):
        by_name = Identity("name", name)
        by_name.exact()
        return by_name
    if fs.exists(f"sys/block/{name}"):
        found = block_identity(fs, name)
        if found is None:
            raise NoIdentity(
                f"{name}: no WWN, serial, by-path or loop backing file to match it by; "
                "a rule for its kernel name would follow whatever disk gets that name next "
                "(`match: name` on the entry, or `advise --match-by name`, accepts that)"
            )
        try:
            found.exact()
        except NoIdentity as err:
            raise NoIdentity(f"{name}: {err}") from None
        return found
    if fs.exists(f"sys/class/net/{name}"):
        mac = fs.read(f"sys/class/net/{name}/address")
        if not mac or mac == "00:00:00:00:00:00":
            raise NoIdentity(f"{name}: the interface has no MAC address to match it by")
        identity = Identity("mac", mac)
        try:
            identity.exact()
        except NoIdentity as err:
            raise NoIdentity(f"{name}: {err}") from None
        return identity
    raise BadInput(f"{name}: no such block device or network interface")


def find_device(root: Path, identity: Identity) -> str | None:
    """The kernel name the device with this identity has now, or None when it is not here."""
    fs = HostFS(root)
    if identity.kind == "name":
        return identity.value if fs.exists(f"sys/block/{identity.value}") else None
    if identity.kind == "mac":
        for name in fs.listdir("sys/class/net"):
            if fs.read(f"sys/class/net/{name}/address") == identity.value:
                return name
        return None
    for name in fs.listdir("sys/block"):
        if block_identity(fs, name) == identity:
            return name
    return None
