"""TunableEngine: save (journal first, durably), set, verify by reading back, and restore.

    with Journal() as journal, TunableEngine(Path("/"), journal) as engine:
        engine.apply({("block.read_ahead_kb", "loop3"): 4096})
        ...  # measure
    # every original is back here, also after an exception

`apply` validates the whole batch, journals every original, and only then writes, so a process
killed after any write leaves a journal that restores everything (`iotuner rollback`, or the
next command's recovery). A value the kernel silently adjusts (read_ahead_kb rounded to pages,
nr_requests raised to 4) is reported in the result, not treated as an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tuner.tunables.access import Saved, Tunables
from tuner.tunables.base import InvalidValue, TargetGone, TargetReplaced, TunableError, Value
from tuner.tunables.journal import Change, Journal
from tuner.tunables.sysctl import DirtyPair
from tuner.tunables.sysroot import SysRoot
from tuner.tunables.table import IMPLEMENTATIONS, apply_rank


def conflict(key: str, target: str, batch: set[tuple[str, str]]) -> str | None:
    """Why `key` cannot be set on `target` together with the rest of `batch`, or None."""
    impl = IMPLEMENTATIONS[key]
    if isinstance(impl, DirtyPair) and (impl.coupled[0], target) in batch:
        return (
            f"set either {key} or {impl.coupled[0]}, not both "
            "(the kernel keeps only the last one written)"
        )
    return None


@dataclass(frozen=True)
class Applied:
    """One value written: what was asked, what the kernel holds now, and what it held before."""

    key: str
    target: str
    requested: Value
    expected: Value
    actual: Value
    original: Value

    @property
    def adjusted(self) -> bool:
        """True when the kernel holds something other than what was written."""
        return self.actual != self.expected


@dataclass(frozen=True)
class Restored:
    """One original put back, and what reading it back gave."""

    key: str
    target: str
    original: Value
    actual: Value | None


@dataclass(eq=False)  # entries are compared by identity: two may hold equal values
class _Entry:
    change: int | None
    key: str
    target: str
    saved: Saved


class TunableEngine:
    """Applies batches of settings below one root, journaled, and restores them in reverse."""

    def __init__(self, root: SysRoot | Path | str = Path("/"), journal: Journal | None = None):
        self.tunables = Tunables(root)
        self.root = self.tunables.sys.root
        # Without a journal the originals live only in this process: tests and recovery only.
        self.journal = journal
        self._open: list[_Entry] = []
        self._session: int | None = None
        self.restored_count = 0  # values put back so far, for "restored N" after a signal
        self.gone: list[tuple[str, str]] = []  # (key, target) whose target went before restore
        self.replaced: list[str] = []  # why, for those of `gone` whose name another device took

    # -- apply -----------------------------------------------------------------------------

    def apply(self, settings: Mapping[tuple[str, str], object]) -> list[Applied]:
        """Validate all, journal all originals, then write each and read it back.

        If a write fails, what this call wrote is restored and the error raised; on a signal
        (an exception that is not an Exception) the originals stay journaled for `restore`.
        """
        batch = self._validated(settings)
        saves = [
            (key, target, self.tunables.save(key, target), value) for key, target, value in batch
        ]
        # Known to this engine before they are journaled: a signal landing in between still
        # finds them to restore (restoring an unchanged value writes nothing).
        entries = [_Entry(None, key, target, saved) for key, target, saved, _ in saves]
        self._open.extend(entries)
        if self.journal is not None and saves:
            if self._session is None:
                self._session = self.journal.session(self.root)
            ids = self.journal.record(self._session, saves)
            for entry, change in zip(entries, ids, strict=True):
                entry.change = change
        try:
            written = [
                self._write(entry, value)
                for entry, (_, _, value) in zip(entries, batch, strict=True)
            ]
            results = self._settled(entries, written)
        except Exception as err:
            try:
                self._restore(entries)
            except TunableError as undo:
                raise TunableError(f"{err}; {undo}") from err
            raise
        return results

    def _validated(
        self, settings: Mapping[tuple[str, str], object]
    ) -> list[tuple[str, str, Value]]:
        """The batch normalised and in apply order; raises before anything is written."""
        ordered = sorted(
            (
                (key, self.tunables.target(key, target), value)
                for (key, target), value in settings.items()
            ),
            key=lambda item: apply_rank(item[0]),
        )
        keys = {(key, target) for key, target, _ in ordered}
        for key, target, _ in ordered:
            why = conflict(key, target, keys)
            if why:
                raise InvalidValue(f"{key} on {target}: {why}")
        pending: dict[tuple[str, str], Value] = {}
        batch = []
        for key, target, value in ordered:
            checked = self.tunables.validate(key, target, value, pending=pending)
            pending[(key, target)] = checked
            batch.append((key, target, checked))
        return batch

    def _write(self, entry: _Entry, value: Value) -> Applied:
        expected = self.tunables.expected(entry.key, entry.target, value)
        self.tunables.impl(entry.key).write(self.tunables.sys, entry.target, value)
        actual = self.tunables.read(entry.key, entry.target)
        if self.journal is not None and entry.change is not None:
            self.journal.written(entry.change, actual)
        return Applied(entry.key, entry.target, value, expected, actual, entry.saved.original)

    def _settled(self, entries: list[_Entry], written: list[Applied]) -> list[Applied]:
        """The batch read back once all of it is written; what a later write moved is written
        again (once), and what still moves is an error.

        A write can move another attribute (a scheduler resets nr_requests; on a rotational
        device, kernel 6.17+, max_sectors_kb raises read_ahead_kb): apply_rank orders the
        batch so that this should not happen, and this read-back makes sure of it, so what a
        trial or an apply records is what the device holds. A value the kernel adjusted at
        once (read_ahead_kb 4093 reads 4092) is kept as it read right after its write.
        """
        for attempt in (1, 2):
            moved = [
                i
                for i, entry in enumerate(entries)
                if self.tunables.read(entry.key, entry.target) != written[i].actual
            ]
            if not moved:
                break
            if attempt == 2:
                entry, done = entries[moved[0]], written[moved[0]]
                now = self.tunables.read(entry.key, entry.target)
                raise TunableError(
                    f"{entry.key} on {entry.target}: set to {done.actual!r}, but it reads "
                    f"{now!r} once the rest of the batch is written (a coupled setting keeps "
                    "moving it)"
                )
            for i in moved:
                written[i] = self._write(entries[i], written[i].requested)
        return written

    # -- restore ---------------------------------------------------------------------------

    def restore(self) -> list[Restored]:
        """Put every original back, newest first; raise TunableError naming any that failed
        (after trying all of them). A value whose target has gone (TargetGone) is not a
        failure: it went with its device; it is listed in `gone` and journaled so. So is one
        whose name another device has taken since (TargetReplaced): it is not written, and
        `replaced` says why, in one line each."""
        return self._restore(list(self._open))

    def restore_all_saved(self, saved: Sequence[tuple[str, str, Saved]]) -> list[str]:
        """Put back originals saved by someone else (an apply's change set, given oldest
        first) the way `restore` puts back this engine's own: newest first, a value the kernel
        refuses tried again once the rest are back, every value read back at the end. Returns
        one line per value that could not be put back, and per device that took a target's
        name since (nothing is written onto it); a target that went with its device is not a
        problem."""
        entries = [_Entry(None, key, target, value) for key, target, value in saved]
        self._open.extend(entries)
        replaced = len(self.replaced)
        failures = self._put_back(entries)[1]
        # What could not be put back stays the caller's to report, not this engine's to retry.
        self._open = [entry for entry in self._open if entry not in entries]
        return [*self.replaced[replaced:], *failures]

    def _restore(self, entries: list[_Entry]) -> list[Restored]:
        results, failures = self._put_back(entries)
        if failures:
            raise TunableError("restore incomplete: " + "; ".join(failures))
        return results

    def _put_back(self, entries: list[_Entry]) -> tuple[list[Restored], list[str]]:
        done: list[_Entry] = []
        failures: list[str] = []
        pending = list(reversed(entries))
        # Two passes: a value refused now may be accepted once a later entry is back (a depth
        # of 202 is refused until the scheduler that allowed it is restored).
        for last_pass in (False, True):
            refused: list[_Entry] = []
            for entry in pending:
                try:
                    # First: a device that took the name since is someone else's, whatever
                    # it holds (TargetReplaced, a TargetGone).
                    self.tunables.check_same(entry.key, entry.target, entry.saved)
                    # Unchanged values are not written again: a write that failed changed
                    # nothing, and some attributes refuse even a write of what they hold.
                    if not self._matches(entry):
                        self.tunables.restore(entry.key, entry.target, entry.saved)
                except TargetGone as err:
                    # The device went, and what was set on it with it (or another took its
                    # name, and what it holds is its own): nothing to put back, now or later
                    # (journaled "gone", as recovery does), and no failure to hide the fault
                    # that ended the trial behind.
                    if self.journal is not None and entry.change is not None:
                        self.journal.restored(entry.change, "gone")
                    self._open.remove(entry)
                    self.gone.append((entry.key, entry.target))
                    if isinstance(err, TargetReplaced):
                        self.replaced.append(str(err))
                    continue
                except TunableError as err:
                    refused.append(entry)
                    if last_pass:
                        failures.append(str(err))
                    continue
                if self.journal is not None and entry.change is not None:
                    self.journal.restored(entry.change)
                self._open.remove(entry)
                done.append(entry)
            pending = refused
            if not pending:
                break
        # A later restore can disturb an earlier one (a scheduler change resets nr_requests):
        # read every value back and write once more what does not match.
        results = []
        for entry in done:
            actual: Value | None = self._read_or_none(entry)
            if actual != entry.saved.original:
                try:
                    self.tunables.restore(entry.key, entry.target, entry.saved)
                except TunableError as err:
                    failures.append(str(err))
                actual = self._read_or_none(entry)
                if actual != entry.saved.original:
                    failures.append(
                        f"{entry.key} on {entry.target}: restored {entry.saved.original!r} but "
                        f"it reads {actual!r}"
                    )
            results.append(Restored(entry.key, entry.target, entry.saved.original, actual))
        self.restored_count += len(results)
        return results, failures

    def _matches(self, entry: _Entry) -> bool:
        """True when the key and its coupled keys all hold their saved values."""
        if self._read_or_none(entry) != entry.saved.original:
            return False
        return all(
            self.tunables.state(key, entry.target) == value
            for key, value in entry.saved.coupled.items()
        )

    def _read_or_none(self, entry: _Entry) -> Value | None:
        try:
            return self.tunables.state(entry.key, entry.target)
        except TunableError:
            return None

    def restore_change(self, change: Change) -> None:
        """Put back one journaled original (recovery of another process's change)."""
        self.restore_saved(change.key, change.target, change.saved)

    def restore_saved(self, key: str, target: str, saved: Saved) -> bool:
        """Put back one saved original unless it (and its coupled values) are already there;
        True when something was written. TargetReplaced (a TargetGone) when another device
        has taken the target's name since: nothing is written onto it."""
        self.tunables.check_same(key, target, saved)
        entry = _Entry(None, key, target, saved)
        if self._matches(entry):
            return False
        self.tunables.restore(key, target, saved)
        return True

    def keep(self) -> None:
        """Leave what was applied in place: journaled as kept, not restored on exit."""
        ids = [entry.change for entry in self._open if entry.change is not None]
        if self.journal is not None and ids:
            self.journal.keep(ids)
        self._open.clear()

    @property
    def changed(self) -> list[tuple[str, str]]:
        """(key, target) of every value applied and not yet restored, oldest first."""
        return [(entry.key, entry.target) for entry in self._open]

    def close(self) -> None:
        """Restore everything still applied and end the journal session."""
        try:
            self.restore()
        finally:
            if self.journal is not None and self._session is not None and not self._open:
                self.journal.end(self._session)

    def __enter__(self) -> TunableEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
