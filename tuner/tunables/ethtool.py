"""What the NIC settings only ethtool shows and changes share: how each is read, written,
persisted and verified.

A subclass names its read option (-g or -c), its write option (-G or -C), the field it sets
(`ethtool -G IFACE rx N`) and how the value is found in the read output. Reads go through
SysRoot.command (the live host runs ethtool; a capture replays its saved output); writes go
through SysRoot.run, on the live host only. Persistence is a udev RUN of ethtool by its
absolute path, found when the plan is rendered.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from typing import ClassVar, TypeVar

from probes.ethtool import failure
from probes.hostfs import valid_ifname
from tuner.tunables.base import KernelRead, Tunable, TunableError, Value
from tuner.tunables.sysroot import CommandFailed, SysRoot

T = TypeVar("T")

_UDEV_SAFE_PATH = re.compile(r"/[A-Za-z0-9/._+-]{1,200}")
"""An executable path udev's RUN takes as it is: no quote, space, $ or % to escape."""


class EthtoolSetting(Tunable):
    """A NIC setting read with `ethtool READ IFACE` and set with `ethtool WRITE IFACE FIELD N`."""

    scope = "nic"
    value_kind = "int"
    persist = "udev"
    read_option: ClassVar[str]
    write_option: ClassVar[str]
    field: ClassVar[str]
    """The word `ethtool -G/-C` takes ("rx", "rx-usecs")."""
    shown_field: ClassVar[str]
    """The "Name:" of the line `ethtool -g/-c` shows the value on ("RX", "rx-usecs")."""
    section: ClassVar[str] = ""
    """The line the value follows in the read output ("Current hardware settings:")."""

    def check_target(self, sys: SysRoot, target: str) -> None:
        """TargetGone unless `target` is an interface below the root."""
        if not valid_ifname(target) or not sys.exists(f"sys/class/net/{target}"):
            raise self.gone(target, f"no such interface ({sys.shown(f'sys/class/net/{target}')})")

    def output(self, sys: SysRoot, target: str) -> str:
        """What `ethtool READ IFACE` prints; TunableError when it cannot be had."""
        self.check_target(sys, target)
        text = sys.command(("ethtool", self.read_option, target))
        if text is None:
            where = "on this host" if sys.is_live else "in this capture"
            raise self.fail(target, f"no output of `ethtool {self.read_option} {target}` {where}")
        return text

    def parsed(self, sys: SysRoot, target: str, parse: Callable[[str], T | None]) -> T:
        """`ethtool READ IFACE`'s output as `parse` reads it; TunableError (`unsupported`)
        when it reads nothing there."""
        text = self.output(sys, target)
        found = parse(text)
        if found is None:
            raise self.unsupported(target, text)
        return found

    def unsupported(self, target: str, text: str) -> TunableError:
        """The driver's refusal, or ethtool's output that could not be parsed, as one line."""
        why = failure(text)
        if why is not None:
            return self.fail(target, f"the driver does not report it ({why})")
        return self.fail(target, f"`ethtool {self.read_option} {target}` output not understood")

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """`ethtool WRITE IFACE FIELD VALUE`, on the live host only."""
        self.check_target(sys, target)
        try:
            sys.run(("ethtool", self.write_option, target, self.field, str(value)))
        except CommandFailed as err:
            raise self.fail(target, str(err)) from None

    def kernel_path(self, sys: SysRoot, target: str) -> str:
        """Not a file: the command that shows the value ("ethtool -g eth0")."""
        self.check_target(sys, target)
        return f"ethtool {self.read_option} {target}"

    def verify_reads(self, sys: SysRoot, target: str, expected: Value) -> tuple[KernelRead, ...]:
        """The read command and the one field of its output to compare."""
        argv = ("ethtool", self.read_option, target)
        return (
            KernelRead(
                " ".join(argv), "int", expected, argv, section=self.section, field=self.shown_field
            ),
        )

    def udev_assignment(self, value: Value) -> str:
        """RUN+="/ABS/ethtool -G $name FIELD VALUE" ($name: the interface udev matched)."""
        program = shutil.which("ethtool")
        if program is None:
            raise TunableError(
                f"{self.key}: ethtool is not installed here; its udev rule needs its path"
            )
        if not _UDEV_SAFE_PATH.fullmatch(program):
            raise TunableError(f"{self.key}: ethtool's path {program[:60]!r} is not udev-safe")
        if not isinstance(value, int) or isinstance(value, bool):
            raise TunableError(f"{self.key}: {value!r} is not a count for a udev rule")
        return f'RUN+="{program} {self.write_option} $name {self.field} {value}"'
