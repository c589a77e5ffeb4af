"""Advise and the bounded re-tune, run as children (tuner/daemon/child.py) the loop never waits on.

One child at a time. `advise(W)` runs `advise --workload W --json` and reports its findings.
`start(W, config, devices)` asks for a re-tune: it waits until the watched devices have been
idle for config.idle_seconds, then runs `tune` with the config's bounds (budget, runtime, --time,
--idle-below, --io-cap, a plan in the state directory) and, when the config allows and the
result is a gain under the never-worse rule (a confirmed gain whose interval's low end is above
1, and a plan with entries), `apply` on that plan. Every step is a "retune" event with figures.

Following the workload (docs/daemon.md, tuner/daemon/follow.py): `capture(devices, seconds,
out)` runs `capture` as the one child and reports its fingerprint in a "follow" event;
`start(..., capture=FILE)` re-tunes on that fingerprint's reproduction (`tune --capture FILE`)
instead of a class's profile; `warm(...)` reuses a remembered result without a search: its plan
is written where a tune's goes and applied (journaled, verified) as a tune's would be.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.daemon.child import Child, spawn
from tuner.daemon.config import OnlineSection, RetuneSection
from tuner.daemon.events import Event, event
from tuner.daemon.retune_report import advise_event, online_figures, plan_entries, tune_figures
from tuner.daemon.workload import profiles
from tuner.state import state_dir
from tuner.trials.faults import is_fault
from tuner.trials.fio import writes
from tuner.trials.idle import BUSY

PLAN_NAME = "retune-plan.yaml"
CAPTURE_LIMIT_S = 60.0
"""Beyond the capture's own seconds: the tracefs instance's setup and the child's start."""
ADVISE_LIMIT_S = 300.0
APPLY_LIMIT_S = 600.0
_OUTSIDE_SEARCH = 12  # trials besides the search: 3 baseline, 3 rounds x 3 to confirm
_PER_TRIAL_S = 5.0  # ramp, idle sample, cache drop and fio's start, per trial
_SETUP_S = 300.0  # probe, scratch file, --idle-below waits
_SIGNALLED = {128 + signal.SIGTERM, 128 + signal.SIGINT, -signal.SIGTERM, -signal.SIGINT}


@dataclass
class _Job:
    """The re-tune asked for: waiting for an idle window, or running (tune, then apply)."""

    workload: str
    config: RetuneSection
    devices: tuple[str, ...]
    idle_fn: Callable[[float], float] | None
    requested: float = field(default_factory=time.time)
    state: str = "waiting-idle"  # then "running"
    step: str | None = None  # tune | apply
    started: float | None = None
    idle_seen: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    online: OnlineSection | None = None  # retune.online: tune the live workload, no idle wait
    capture: Path | None = None  # tune on this fingerprint's reproduction, not a profile


class Retune:
    """Advise and the bounded re-tune for the daemon; every method returns at once except
    `terminate`, which waits for the child to put back what it changed."""

    def __init__(self, state: Path | None = None, *, python: str = sys.executable) -> None:
        self._state = state
        self.python = python
        self._child: Child | None = None
        self._job: _Job | None = None
        self._advise_next: str | None = None
        self._last: dict[str, Any] | None = None
        self._captured: Path | None = None

    @property
    def state_dir(self) -> Path:
        """Where the plan and the children's stderr go: the state directory."""
        return state_dir(self._state)  # checked up to /, created 0700: UntrustedState otherwise

    # -- requests --------------------------------------------------------------------------

    def advise(self, workload: str) -> list[Event]:
        """Run `advise --workload W --json` (after the running child, if any); its findings
        come as one "advise" event from `poll`."""
        if workload not in profiles():
            message = f"advise skipped: the rule base has no {workload} profile"
            return [event("advise", message, workload=workload, ok=False)]
        child = self._child
        if child is None or child.step != "advise" or child.workload != workload:
            self._advise_next = workload
        return self._next(time.time(), None)

    def start(
        self,
        workload: str,
        config: RetuneSection,
        devices: Sequence[str],
        idle_seconds: Callable[[float], float] | None = None,
        online: OnlineSection | None = None,
        capture: Path | None = None,
    ) -> list[Event]:
        """Ask for a re-tune for `workload`; it starts once `poll` is told (or
        `idle_seconds(config.idle_util_percent)` says) that the devices have been idle for
        config.idle_seconds. Never two at once: while one waits, the newest workload replaces
        its own; while one runs, the request is refused with an event. With `online` (the
        config's retune.online), it starts at once as `tune --online` on online.device: the
        live workload is what it measures, so there is no idle window to wait for. With
        `capture` (a fingerprint file), the trials run its reproduction (`tune --capture`):
        `workload` then only names it in events."""
        job = self._job
        if job is not None and job.state == "running":
            message = f"re-tune for {job.workload} still running: {workload} not started"
            return [event("retune", message, workload=workload, ok=False)]
        if job is not None and job.workload == workload:
            message = f"re-tune for {workload} already waiting for idle devices"
            return [event("retune", message, workload=workload, ok=False)]
        refused = _refusal(workload, config, online, capture)
        if refused is not None:
            message = f"re-tune for {workload} not started: {refused}"
            return [event("retune", message, workload=workload, ok=False)]
        if job is not None:
            previous, job.workload, job.capture = job.workload, workload, capture
            message = f"waiting re-tune now for {workload} (was {previous})"
            return [event("retune", message, workload=workload, state="waiting-idle")]
        self._job = _Job(workload, config, tuple(devices), idle_seconds, online=online,
                         capture=capture)  # fmt: skip
        if online is not None:
            return self._next(time.time(), None)
        watched = ", ".join(devices) or "the devices"
        message = (
            f"re-tune for {workload} on {config.target}: waiting until {watched} stay below "
            f"{config.idle_util_percent:g}% busy for {config.idle_seconds:g} s"
        )
        return [event("retune", message, workload=workload, state="waiting-idle",
                      target=config.target, devices=list(devices))]  # fmt: skip

    # -- the loop's side -------------------------------------------------------------------

    def capture(self, devices: Sequence[str], seconds: float, out: Path) -> list[Event]:
        """Run `capture --device ... --seconds S --out OUT` as the one child; its end is a
        "follow" event carrying `fingerprint` (the file) or `ok` False. Refused (an event)
        while another child runs (a tune's trials would be captured too); a re-tune still
        waiting for idle devices is dropped: it was for the workload that has just moved."""
        if not self.free():
            busy = self._child.step if self._child is not None else "a re-tune"
            return [event("follow", f"capture skipped: {busy} in progress", ok=False)]
        events: list[Event] = []
        job, self._job = self._job, None
        if job is not None:
            self._last = {"state": "cancelled", "workload": job.workload}
            message = f"re-tune for {job.workload} dropped: the workload moved again"
            events.append(event("retune", message, workload=job.workload, state="cancelled"))
        out.unlink(missing_ok=True)  # an earlier capture's
        args = ["capture", *(a for d in devices for a in ("--device", d)),
                "--seconds", f"{seconds:g}", "--out", str(out), "--json"]  # fmt: skip
        failed = self._spawn("capture", "capture", args, seconds + CAPTURE_LIMIT_S)
        if self._child is None:
            return events + failed
        self._captured = out
        events.append(event("follow", f"capturing {', '.join(devices)} for {seconds:g} s",
                            state="capturing", pid=self._child.proc.pid))  # fmt: skip
        return events

    def warm(
        self,
        workload: str,
        config: RetuneSection,
        devices: Sequence[str],
        plan: str | None,
        remembered: dict[str, Any],
    ) -> list[Event]:
        """Reuse a remembered tune for a returning workload: no search. Its plan (None: the
        tune kept the settings in force) goes where a tune's plan goes and, when retune.apply
        allows, through `apply` (journaled, verified, rolled back on regression); the events
        say warm_start and carry the remembered figures with trials 0."""
        if self._child is not None or self._job is not None:
            return [event("retune", f"warm start for {workload} not made: a re-tune is under way",
                          workload=workload, ok=False)]  # fmt: skip
        job = _Job(workload, config, tuple(devices), None)
        job.started = time.time()
        job.figures = {"warm_start": True, "trials": 0, **remembered}
        self._job = job
        path = self.state_dir / PLAN_NAME
        path.unlink(missing_ok=True)
        line = (f"warm start for {workload}: the workload of {remembered.get('memory_id')} "
                f"returned (distance {remembered.get('distance')}), no search")  # fmt: skip
        if plan is None:
            kept = f"{line}: its tune kept the settings in force"
            return self._done(job, "finished", "retune", kept, why="keep")
        from tuner.errors import BadInput
        from tuner.outfile import write_file

        try:
            write_file(path, plan, mode=0o600, what="remembered plan", trusted=True)
        except BadInput as err:
            return self._done(job, "failed", "error", f"{line}: {err}")
        job.figures["plan"] = str(path)
        if not config.apply:
            why = f"retune.apply is off: the remembered plan waits in {path}"
            return self._done(job, "finished", "retune", f"{line}: not applied, {why}", why=why)
        failed = self._spawn("apply", workload, ["apply", str(path), "--json"], APPLY_LIMIT_S)
        if self._child is None:
            return failed + self._done(job, "failed", "retune", f"{line}: apply failed")
        job.state, job.step = "running", "apply"
        return [event("retune", f"{line}: applying the remembered plan {path}",
                      workload=workload, state="running", step="apply", applied=False,
                      **job.figures)]  # fmt: skip

    def fileno(self) -> int | None:
        """The running child's stdout while it is open (readable: output, or its end)."""
        return None if self._child is None else self._child.fileno()

    def free(self) -> bool:
        """True when no child runs and no re-tune runs (one may wait): a capture may start."""
        return self._child is None and (self._job is None or self._job.state == "waiting-idle")

    def busy(self) -> bool:
        """True while a tune or apply child runs: the devices' I/O is then iotuner's own."""
        return self._child is not None and self._child.step in ("tune", "apply")

    def poll(self, now: float, idle_seconds: float | None = None) -> list[Event]:
        """Read the child's output, reap it if it has ended, start what is due next.

        `idle_seconds`: how long the watched devices have been idle (WorkloadWatch's
        idle_seconds at the config's threshold); None asks the callable `start` was given.
        """
        child = self._child
        if child is not None:
            if not child.reap():
                if child.overdue() and child.stopping is None:
                    child.signal(signal.SIGTERM, f"it ran past its {child.limit_s:.0f} s limit")
                    message = f"{child.step} for {child.workload}: stopping, {child.stopping}"
                    kind = "advise" if child.step == "advise" else "retune"
                    return [event(kind, message, workload=child.workload)]
                return []
            self._child = None
            return self._finished(child) + self._next(now, idle_seconds)
        return self._next(now, idle_seconds)

    def state(self) -> dict[str, Any] | None:
        """For status: the re-tune waiting or running, else the last one's outcome, or None."""
        job = self._job
        if job is None:
            return self._last
        child = self._child
        return {
            "state": job.state,
            "step": job.step,
            "workload": job.workload,
            "target": job.config.target,
            "devices": list(job.devices),
            "requested": job.requested,
            "started": job.started,
            "idle_seconds": round(job.idle_seen, 1),
            "idle_needed": job.config.idle_seconds,
            "pid": child.proc.pid if child is not None and child.step != "advise" else None,
            **job.figures,
        }

    def terminate(self, timeout: float = 120.0) -> list[Event]:
        """Stop everything: a waiting re-tune is dropped; a running child gets SIGTERM and is
        waited for (tune restores its trial settings and exits 143); SIGKILL only after
        `timeout` seconds, and then the journal's recovery puts back what it changed."""
        events: list[Event] = []
        self._advise_next = None
        job = self._job
        if job is not None and job.state == "waiting-idle":
            self._job = None
            self._last = {"state": "cancelled", "workload": job.workload}
            message = f"re-tune for {job.workload} dropped before it started"
            events.append(event("retune", message, workload=job.workload, state="cancelled"))
        child, self._child = self._child, None
        if child is not None:
            child.stop(timeout, "the daemon is stopping")
            events += self._finished(child)
        return events

    # -- steps -----------------------------------------------------------------------------

    def _next(self, now: float, idle_seconds: float | None) -> list[Event]:
        """When no child runs: a pending advise, else a re-tune idle long enough."""
        if self._child is not None:
            return []
        if self._advise_next is not None:
            workload, self._advise_next = self._advise_next, None
            args = ["advise", "--workload", workload, "--json"]
            return self._spawn("advise", workload, args, ADVISE_LIMIT_S)
        job = self._job
        if job is None or job.state != "waiting-idle":
            return []
        if job.online is not None:
            return self._start_online(job, job.online, now)
        cfg = job.config
        if idle_seconds is None and job.idle_fn is not None:
            idle_seconds = job.idle_fn(cfg.idle_util_percent)
        job.idle_seen = idle_seconds or 0.0
        if job.idle_seen < cfg.idle_seconds:
            return []
        plan = self.state_dir / PLAN_NAME
        plan.unlink(missing_ok=True)  # an earlier re-tune's
        assert cfg.target  # _refusal saw to it
        chosen = ["--capture", str(job.capture)] if job.capture else ["--workload", job.workload]
        args = ["tune", "--target", cfg.target, *chosen,
                "--budget", str(cfg.budget), "--runtime", f"{cfg.runtime:g}",
                "--time", f"{cfg.max_seconds:g}", "--idle-below", f"{cfg.idle_util_percent:g}",
                "--io-cap", str(cfg.io_cap_mb), "--json", "--plan-out", str(plan)]  # fmt: skip
        limit = cfg.max_seconds + _SETUP_S + _OUTSIDE_SEARCH * (cfg.runtime + _PER_TRIAL_S)
        message = (
            f"re-tune for {job.workload} running on {cfg.target} after {job.idle_seen:.0f} s "
            f"idle: budget {cfg.budget}, {cfg.runtime:g} s trials, at most "
            f"{cfg.max_seconds:g} s in all, {cfg.io_cap_mb} MB a trial"
        )
        return self._start_tune(job, args, limit, now, message)

    def _start_online(self, job: _Job, online: OnlineSection, now: float) -> list[Event]:
        """`tune --online` on the live device, with the [online] bounds."""
        assert online.device  # the config's check saw to it
        args = ["tune", "--online", "--device", online.device, "--slice", f"{online.slice:g}",
                "--latency-bound", f"{online.latency_bound:g}",
                "--time", f"{online.max_seconds:g}", "--max-worse", f"{online.max_worse:g}",
                "--json"]  # fmt: skip
        if online.metric is not None:
            args += ["--metric", online.metric, "--metric-kind", online.metric_kind]
        message = (
            f"online re-tune for {job.workload} running on {online.device}: {online.slice:g} s "
            f"slices, latency bound {online.latency_bound * 100:g} %, at most "
            f"{online.max_seconds:g} s, {online.max_worse:g} s on worse settings"
        )
        return self._start_tune(job, args, online.max_seconds + _SETUP_S, now, message,
                                online=True)  # fmt: skip

    def _start_tune(
        self, job: _Job, args: list[str], limit_s: float, now: float, message: str, **extra: object
    ) -> list[Event]:
        """Spawn the tune child; the job running and its event, or what failed to start it."""
        failed = self._spawn("tune", job.workload, args, limit_s)
        if self._child is None:
            self._job = None
            return failed
        job.state, job.step, job.started = "running", "tune", now
        return [event("retune", message, workload=job.workload, state="running", step="tune",
                      **extra, pid=self._child.proc.pid)]  # fmt: skip

    def _spawn(self, step: str, workload: str, args: list[str], limit_s: float) -> list[Event]:
        stderr = self.state_dir / f"retune-{step}.stderr"
        try:
            self._child = spawn(step, workload, args, stderr, limit_s, self.python)
        except (OSError, subprocess.SubprocessError) as err:
            return [event("error", f"{step} for {workload} could not start: {err}")]
        return []

    def _finished(self, child: Child) -> list[Event]:
        """The event for a child that has ended, and its re-tune's next step."""
        code, said = child.code, child.last_words()
        if child.step == "advise" and child.stopping is not None and code != 0:
            message = f"advise for {child.workload} stopped: {child.stopping}"
            return [event("advise", message, workload=child.workload, ok=False)]
        if child.step == "advise":
            return [advise_event(child.workload, code, child.out, said)]
        if child.step == "capture":
            return [self._capture_event(child, code, said)]
        job = self._job
        if job is None:
            return [event("error", f"{child.step} for {child.workload} ended, exit {code}")]
        what = f"re-tune for {job.workload}"
        if code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            message = (
                f"{what} killed during {child.step}: the journal's recovery puts back what it "
                "changed (the next iotuner command, or iotuner rollback)"
            )
            return self._done(job, "killed", "error", message, exit=code)
        if code in _SIGNALLED:
            why = child.stopping or "a signal"
            message = f"{what} stopped during {child.step} ({why}): {said or 'no word from it'}"
            return self._done(job, "stopped", "retune", message, exit=code, restored=said)
        if code == 1 and child.step == "tune" and BUSY in said:
            return self._done(job, "busy", "retune", f"{what} not run: {said}", exit=code)
        if code == 1 and child.step == "tune" and is_fault(said):
            # The tune restored what it changed and wrote no plan: nothing is applied.
            message = f"{what} stopped by a fault of the device: {said}"
            return self._done(job, "fault", "error", message, exit=code)
        if code != 0:
            message = f"{what} failed during {child.step} (exit {code}): {said or 'no message'}"
            return self._done(job, "failed", "error", message, exit=code)
        if child.step == "apply":
            message = f"{what}: plan {job.figures.get('plan')} applied"
            return self._done(job, "finished", "retune", message, applied=True)
        return self._tuned(job, child)

    def _capture_event(self, child: Child, code: int | None, said: str) -> Event:
        """The "follow" event of a capture child that ended: its fingerprint file, or why not."""
        out, self._captured = self._captured, None
        if code == 0 and out is not None and out.exists():
            return event("follow", f"captured: fingerprint in {out}", state="captured",
                         fingerprint=str(out), ok=True)  # fmt: skip
        why = child.stopping or said or "no message"
        return event("follow", f"capture failed (exit {code}): {why}", state="failed", ok=False)

    def _tuned(self, job: _Job, child: Child) -> list[Event]:
        """A tune that ended well: its figures, the never-worse verdict, apply if allowed."""
        if job.online is not None:
            return self._tuned_online(job, child)
        try:
            figures = tune_figures(json.loads(child.out.decode()))
        except (ValueError, KeyError, TypeError, IndexError) as err:
            message = f"re-tune for {job.workload}: unreadable tune result ({err})"
            return self._done(job, "failed", "error", message)
        plan = self.state_dir / PLAN_NAME
        entries = plan_entries(plan)
        job.figures = {**figures, "plan": str(plan), "entries": entries}
        if job.capture is not None:
            job.figures["capture"] = str(job.capture)
        low, high = figures["ci"]
        line = (
            f"re-tune for {job.workload}: baseline {figures['baseline_mbps']:.1f} MB/s, best "
            f"{figures['best_mbps']:.1f} MB/s, gain x{figures['gain']:.3f} "
            f"(95% CI {low:.3f}-{high:.3f}), {figures['trials']} trials"
        )
        if not (figures["chosen"] and low > 1.0):
            why = "no gain beyond the noise (the interval's low end is not above 1)"
        elif entries == 0:
            why = "the gain changes no host setting (nothing in the plan)"
        elif not job.config.apply:
            why = f"retune.apply is off: the plan waits in {plan}"
        else:
            failed = self._spawn("apply", job.workload, ["apply", str(plan), "--json"],
                                 APPLY_LIMIT_S)  # fmt: skip
            if self._child is None:
                return failed + self._done(job, "failed", "retune", f"{line}: apply failed")
            job.step = "apply"
            message = f"{line}: applying {entries} setting(s) from {plan}"
            return [event("retune", message, workload=job.workload, state="running",
                          step="apply", applied=False, **job.figures)]  # fmt: skip
        return self._done(job, "finished", "retune", f"{line}: not applied, {why}", why=why)

    def _tuned_online(self, job: _Job, child: Child) -> list[Event]:
        """An online tune that ended well: it kept its settings itself (journaled, with the
        never-worse rule) or put back the ones it found; its figures as the event's."""
        try:
            figures = online_figures(json.loads(child.out.decode()))
        except (ValueError, KeyError, TypeError, IndexError) as err:
            message = f"online re-tune for {job.workload}: unreadable result ({err})"
            return self._done(job, "failed", "error", message)
        job.figures = figures
        low = figures["ci"][0]
        line = (
            f"online re-tune for {job.workload}: x{figures['gain']:.3f} (95% CI from {low:.3f}), "
            f"{figures['candidates']} candidate(s), {figures['worse_seconds']:.0f} s on worse "
            "settings"
        )
        if figures["kept"]:
            changes = ", ".join(f"{k}={v}" for k, v in figures["changes"].items())
            return self._done(job, "finished", "retune", f"{line}: kept {changes}")
        return self._done(job, "finished", "retune", f"{line}: kept the settings found")

    def _done(self, job: _Job, outcome: str, kind: str, message: str, **data: Any) -> list[Event]:
        """Close the re-tune: keep its outcome for status, make its last event."""
        self._job = None
        data = {"applied": False, **job.figures, **data}
        self._last = {"state": outcome, "workload": job.workload, "target": job.config.target,
                      "started": job.started, "ended": time.time(), **data}  # fmt: skip
        return [event(kind, message, workload=job.workload, state=outcome, **data)]


def _refusal(
    workload: str,
    config: RetuneSection,
    online: OnlineSection | None = None,
    capture: Path | None = None,
) -> str | None:
    """Why a re-tune for `workload` (or `capture`'s reproduction) cannot run, or None."""
    known = profiles()
    if capture is not None:
        if online is not None:
            return None if online.device else "online.device is not set"
        if not config.target:
            return "retune.target is not set"
        if _reproduction_writes(capture) and not Path(config.target).is_dir():
            return f"its reproduction writes: retune.target {config.target} must be a directory"
        return None
    if workload not in known:
        return f"the rule base has no {workload} profile to tune for"
    if online is not None:
        return None if online.device else "online.device is not set"
    if not config.target:
        return "retune.target is not set"
    if writes(known[workload]) and not Path(config.target).is_dir():
        return f"{workload} writes: retune.target {config.target} must be a directory"
    return None


def _reproduction_writes(capture: Path) -> bool:
    """Whether the fio job `tune --capture` runs for the fingerprint in `capture` (its
    busiest process group's section) writes (True when it cannot be read: tune refuses it
    then with the reason)."""
    from tuner.capture.workload import capture_workload
    from tuner.errors import BadInput

    try:
        return writes(capture_workload(capture)[0].fio)
    except BadInput:
        return True
