"""nic.mtu: an interface's MTU, through /sys/class/net/<if>/mtu.

The driver's bounds (min_mtu, max_mtu) are not in sysfs; on the live host they come from
netlink (`ip -d -j link`), elsewhere from the SysRoot's `link_limits`. Where they are unknown
only a positive value is required, and the kernel's answer decides. InterfaceAttribute is what
every integer file of /sys/class/net/IFACE shares (nic.txqueuelen is another).
"""

from __future__ import annotations

from typing import ClassVar

from tuner.tunables.base import Pending, Tunable, Value
from tuner.tunables.sysroot import SysRoot

INT_MAX = 2**31 - 1
"""The kernel keeps an MTU in an int; more is refused whatever the driver says."""


class InterfaceAttribute(Tunable):
    """An integer file /sys/class/net/IFACE/ATTR, persisted by a udev ATTR{ATTR} assignment."""

    scope = "nic"
    value_kind = "int"
    persist = "udev"
    attr: ClassVar[str]
    """The file's name below the interface's directory ("mtu", "tx_queue_len")."""

    def rel(self, sys: SysRoot, target: str) -> str:
        """The interface's attribute, after checking the interface exists."""
        if "/" in target or not target or not sys.exists(f"sys/class/net/{target}"):
            raise self.gone(target, f"no such interface ({sys.shown(f'sys/class/net/{target}')})")
        return f"sys/class/net/{target}/{self.attr}"

    def read(self, sys: SysRoot, target: str) -> Value:
        """The attribute as an int."""
        return self.read_int(sys, target, self.rel(sys, target))

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the attribute."""
        self.write_attr(sys, target, self.rel(sys, target), str(value))

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """/sys/class/net/IFACE/ATTR."""
        return sys.shown(self.rel(sys, target))

    def udev_assignment(self, value: Value) -> str:
        """ATTR{ATTR}="VALUE"."""
        return f'ATTR{{{self.attr}}}="{value}"'


class Mtu(InterfaceAttribute):
    """The MTU of one network interface, in bytes."""

    key = "nic.mtu"
    doc = "interface MTU"
    attr = "mtu"
    current_fact = "mtu"

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """Within the device's min_mtu..max_mtu where known, positive otherwise."""
        self.rel(sys, target)
        low, high = sys.link_limits(target)
        number = self.as_int(target, value)
        if low is not None and number < low:
            raise self.invalid(target, f"{number} is below {low}, the device's min_mtu")
        if number < 1:
            raise self.invalid(target, f"{number} is not a positive MTU")
        if high is not None and number > high:
            raise self.invalid(target, f"{number} exceeds {high}, the device's max_mtu")
        if number > INT_MAX:
            raise self.invalid(target, f"{number} exceeds {INT_MAX}, the most the kernel accepts")
        return number


NIC_TUNABLES: tuple[Tunable, ...] = (Mtu(),)
