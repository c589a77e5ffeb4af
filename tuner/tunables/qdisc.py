"""net.core.default_qdisc: the queueing discipline the kernel gives an interface, and fq pacing.

ESnet's data-transfer-node tuning sets it to `fq`: fq keeps one queue per flow and releases
each flow's packets at the pacing rate its congestion control computes (BBR needs pacing;
with CUBIC it spreads a window over the round trip instead of sending it in line-rate bursts
that overflow a shallow switch buffer on a long path). Without fq, TCP paces itself (Linux 4.13
and later, "internal pacing", with a high-resolution timer per socket); choosing fq is how the
pacing moves into the qdisc, so it is this setting, not a separate one.

Only a qdisc the kernel has can be set: built in (CONFIG_NET_SCH_FQ=y) or a module it loads on
the write (=m, sch_fq.ko under /lib/modules/RELEASE). Validation reads both below the root
(tuner/tunables/kconfig.py) and refuses a missing one in one line naming the config symbol and
the file that says so; the kernel's own refusal (ENOENT) is worded the same way.

The value is taken by qdiscs created after the write: an interface that is already up keeps
its root qdisc until it is replaced (`tc qdisc replace dev IFACE root fq`) or the interface is
made again. At boot, sysctl.d sets it before the network comes up, so the persisted value is
what every interface gets; a tune's trials, which make no interface, cannot feel it, so it has
no search dimension. The kernel keeps it for the whole host: inside a network namespace
/proc/sys/net/core/default_qdisc does not exist (Linux 6.18).
"""

from __future__ import annotations

import errno
import re

from tuner.tunables.base import Pending, Tunable, Value, write_failure
from tuner.tunables.domain import Dimension, SpaceContext
from tuner.tunables.kconfig import kernel_config, module_file, modules_dir
from tuner.tunables.sysctl import Sysctl
from tuner.tunables.sysroot import SysRoot

QDISCS: dict[str, str | None] = {
    "pfifo_fast": None,
    "fq": "NET_SCH_FQ",
    "fq_codel": "NET_SCH_FQ_CODEL",
    "sfq": "NET_SCH_SFQ",
    "cake": "NET_SCH_CAKE",
    "fq_pie": "NET_SCH_FQ_PIE",
}
"""The qdiscs a plan may choose, with the config symbol that builds each (None: always built
in, net/sched/sch_generic.c). Classless and usable without parameters, as a default must be;
the module is sch_NAME (net/sched/sch_fq.c)."""
_ORIGINAL = re.compile(r"[a-z][a-z0-9_]{0,15}")
"""A qdisc name as the kernel reports one (IFNAMSIZ): any the kernel held may be restored."""


def availability(sys: SysRoot, qdisc: str) -> str | None:
    """Why the kernel below `sys` does not have `qdisc`, or None when it has it or nothing
    there says (no configuration and no /lib/modules: the write is left to the kernel)."""
    symbol = QDISCS.get(qdisc)
    if symbol is None:
        return None
    module = f"sch_{qdisc}"
    config = kernel_config(sys)
    if config is not None:
        state = config.state(symbol)
        if state == "y":
            return None
        if state == "m":
            if module_file(sys, "net/sched", module) is not None:
                return None
            return (
                f"qdisc {qdisc!r} is a module (CONFIG_{symbol}=m in {config.source}) that is "
                f"not installed ({module} is not under {modules_dir(sys) or '/lib/modules'})"
            )
        return (
            f"qdisc {qdisc!r} is not in this kernel (CONFIG_{symbol} is not set in {config.source})"
        )
    if sys.exists(f"sys/module/{module}") or module_file(sys, "net/sched", module):
        return None
    where = modules_dir(sys)
    if where is not None:
        return f"qdisc {qdisc!r} is not in this kernel (no {module} built in or under {where})"
    return None


class DefaultQdisc(Sysctl):
    """The qdisc new interfaces get: pfifo_fast by default, fq for paced bulk transfers."""

    key = "net.core.default_qdisc"
    scope = "host"
    value_kind = "choice"
    persist = "sysctl"
    doc = "qdisc new interfaces get (fq: per-flow pacing for bulk TCP)"
    current_fact = "default_qdisc"
    read_kind = "name"

    def read(self, sys: SysRoot, target: str) -> Value:
        """The qdisc's name."""
        return self.text(sys, target)

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """One of QDISCS that the kernel has (built in, or a module it can load)."""
        self.text(sys, target)
        name = self.as_name(target, value)
        if name not in QDISCS:
            raise self.invalid(
                target, f"{name!r} is not a default qdisc iotuner sets (one of {', '.join(QDISCS)})"
            )
        why = availability(sys, name)
        if why is not None:
            raise self.invalid(target, why)
        return name

    def check_original(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """Any qdisc name the kernel held (a host may run one iotuner does not choose)."""
        if isinstance(value, str) and _ORIGINAL.fullmatch(value):
            return value
        return self.validate(sys, target, value, pending)

    def write(self, sys: SysRoot, target: str, value: Value) -> None:
        """Write the name; the kernel's ENOENT (no such qdisc, none to load) said as such."""
        try:
            sys.write(self.rel(), str(value))
        except OSError as err:
            if err.errno == errno.ENOENT and sys.exists(self.rel()):
                raise self.fail(
                    target, f"qdisc {value!r} is not in this kernel (it refused it with ENOENT)"
                ) from None
            raise self.fail(target, write_failure(sys, self.rel(), str(value), err)) from None

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """None: a trial makes no interface, and only qdiscs made after the write take the
        default, so a tune could not measure it (set it by plan; it persists via sysctl.d)."""
        return None


QDISC_TUNABLES: tuple[Tunable, ...] = (DefaultQdisc(),)
