"""What an I/O scheduler's own parameters share: queue/iosched/NAME, there only while their
scheduler is the one in force (bfq's slice_idle, mq-deadline's fifo_batch).

The kernel creates the files when the scheduler is set and removes them when another is, with
the new scheduler's defaults. So a parameter is written after its scheduler in a batch
(tuner/tunables/table.py `apply_rank`: block.scheduler first), validated against the
scheduler in force or pending in the same batch, saved as ABSENT while its scheduler is not in
force (restoring that writes nothing: the scheduler's restore takes the files away), and saved
with the scheduler (Scheduler.coupled) so putting a scheduler back puts its parameters back.
Their udev assignments follow the scheduler's in the rule, which udev applies in order.

Searched on a hard disk only: idling for the next request of a stream (bfq) and how many
sorted requests go before an expired one (mq-deadline) trade seeks against fairness, and only
a rotational device pays for a seek. A point whose scheduler is another has the parameter at
its resting value (`resting`; tuner/search/space.py `repair`), and the trial does not write it.
"""

from __future__ import annotations

from typing import ClassVar

from tuner.tunables.base import ABSENT, Pending, TunableError, Value
from tuner.tunables.block import MayBeAbsent, Scheduler, rotational
from tuner.tunables.domain import Dimension, SpaceContext, widened
from tuner.tunables.sysroot import SysRoot

INT_MAX = 2**31 - 1
"""The most the schedulers' store functions keep (they clamp larger numbers silently)."""


class SchedulerParameter(MayBeAbsent):
    """One integer file in queue/iosched/ of one scheduler."""

    scope = "device"
    value_kind = "int"
    persist = "udev"
    scheduler: ClassVar[str]
    """The scheduler whose parameter this is ("bfq", "mq-deadline")."""
    default: ClassVar[int]
    """The kernel's default: a point under another scheduler rests here."""
    low: ClassVar[int] = 0
    high: ClassVar[int] = INT_MAX

    def rel(self, sys: SysRoot, target: str) -> str:
        """queue/iosched/ATTR below the root."""
        return f"{self.queue(sys, target)}/iosched/{self.attr}"

    def in_force(self, sys: SysRoot, target: str, pending: Pending) -> str:
        """The scheduler pending for `target` in the batch, else the one in force."""
        found = pending.get((Scheduler.key, self.target_name(target)))
        return str(found) if found is not None else str(Scheduler().read(sys, target))

    def lacking(self, scheduler: str) -> str:
        """Why a device under `scheduler` has no such file, in one line."""
        return (
            f"scheduler {scheduler} has no {self.attr} (a {self.scheduler} parameter): set "
            f"block.scheduler {self.scheduler} first, or in the same batch"
        )

    def read(self, sys: SysRoot, target: str) -> Value:
        """The parameter as an int; TunableError when its scheduler is not in force."""
        scheduler = self.in_force(sys, target, {})
        if scheduler != self.scheduler:
            raise self.fail(target, self.lacking(scheduler))
        return self.read_int(sys, target, self.rel(sys, target))

    def state(self, sys: SysRoot, target: str) -> Value:
        """ABSENT while another scheduler is in force (or the scheduler lacks the file, as
        an older kernel's may), else the value."""
        if self.in_force(sys, target, {}) != self.scheduler:
            return ABSENT
        if sys.read(self.rel(sys, target)) is None:
            return ABSENT
        return self.read(sys, target)

    def validate(self, sys: SysRoot, target: str, value: object, pending: Pending) -> Value:
        """An int within what the scheduler keeps (it clamps silently, so more is refused
        here), on a device whose scheduler (pending or in force) has the parameter."""
        self.queue(sys, target)
        number = self.in_range(target, value, self.low, self.high)
        scheduler = self.in_force(sys, target, pending)
        if scheduler != self.scheduler:
            raise self.invalid(target, self.lacking(scheduler))
        return number

    def udev_assignment(self, value: Value) -> str:
        """ATTR{queue/iosched/ATTR}="VALUE", placed after the scheduler's in the rule."""
        return f'ATTR{{queue/iosched/{self.attr}}}="{value}"'

    def resting(self, sys: SysRoot, target: str) -> int:
        """What a point that does not choose this scheduler holds here: the current value
        while the scheduler is in force (so it is never a change), else the kernel's
        default."""
        try:
            value = self.read(sys, target)
        except TunableError:
            return self.default
        return value if isinstance(value, int) else self.default

    def span(self, target: str) -> Dimension:
        """The search range on `target`, before it is widened to hold the current value."""
        raise NotImplementedError

    def dimension(self, sys: SysRoot, target: str, context: SpaceContext) -> Dimension | None:
        """On a rotational device whose queue the I/O passes and which offers the scheduler;
        when the tune does not vary the scheduler, only if this one is in force."""
        target = self.target_name(target)
        queue = self.settings(sys, target) if context.queues(target) else None
        if queue is None or rotational(sys, target) is not True:
            return None
        if self.scheduler not in queue.schedulers:
            return None
        moves = context.searches(Scheduler.key) and len(queue.schedulers) > 1
        if not moves and queue.scheduler != self.scheduler:
            return None
        dim = self.span(target)
        if dim.kind == "categorical":
            return dim
        return widened(dim, self.resting(sys, target))
