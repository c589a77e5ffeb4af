"""The daemon's one loop: file descriptors and timers, no threads of its own.

Everything the daemon does is a short, non-blocking step taken when a descriptor is readable
(a udev event, a status client, a re-tune child's output, a signal) or a timer is due (drift
check, diskstats sample, watchdog ping). Steps return events; the loop records them, keeps
the metrics and sd_notify status current, and sleeps until the next thing to do, so an idle
daemon costs a few reads every few seconds.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from tuner.daemon.config import ConfigError, DaemonConfig, OnlineSection, load_config
from tuner.daemon.control import ControlServer
from tuner.daemon.events import Event, EventLog, event
from tuner.daemon.follow import Follow
from tuner.daemon.hotplug import HotplugMonitor
from tuner.daemon.metrics import Metrics
from tuner.daemon.notify import Notifier
from tuner.daemon.plan_hold import Holder, find_plan
from tuner.daemon.retune import Retune
from tuner.daemon.workload import WorkloadWatch
from tuner.errors import IotunerError
from tuner.recovery import journal_path

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass
class _Timer:
    """A periodic step: due at `at`, then every `every` seconds."""

    every: float
    step: Callable[[float], list[Event]]
    at: float = 0.0


class Daemon:
    """Holds the applied plan, follows hotplug and workload; `run` until SIGTERM or SIGINT."""

    def __init__(
        self, config: DaemonConfig, *, root: Path = Path("/"), notifier: Notifier | None = None
    ) -> None:
        self.config = config
        self.root = root
        self.notifier = notifier or Notifier()
        self.events = EventLog()
        self.started = time.time()
        self.journal_path = journal_path()
        self.holder = Holder(root, self.journal_path)
        self.retune = Retune()
        self.metrics = Metrics()
        self._selector = selectors.DefaultSelector()
        self._stop: int | None = None
        self._reload = False
        self._hotplug: HotplugMonitor | None = None
        self._watch: WorkloadWatch | None = None
        self._follow: Follow | None = None
        self._control: ControlServer | None = None
        self._serving: tuple[str, int] | None = None
        self._timers: dict[str, _Timer] = {}
        self._wake_r, self._wake_w = socket.socketpair()
        # set_wakeup_fd needs a non-blocking descriptor: a full buffer must not block a handler.
        self._wake_w.setblocking(False)

    # -- life cycle -------------------------------------------------------------------------

    def run(self) -> int:
        """Start, loop until a stop signal, shut down cleanly; the exit code."""
        previous = self._install_signals()
        try:
            self._start()
            while self._stop is None:
                self._turn()
            return self._shutdown()
        finally:
            for signo, handler in previous.items():
                signal.signal(signo, handler)
            signal.set_wakeup_fd(-1)
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _start(self) -> None:
        self.events.add("start", f"iotuner daemon started, pid {os.getpid()}", pid=os.getpid())
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._drain_wakeup)
        self._configure(self.config)
        self._reload_plan(time.time(), cause="start")
        self.notifier.ready(self._status_line())

    def _turn(self) -> None:
        now = time.time()
        timeout = min([t.at for t in self._timers.values()] + [now + 3600.0]) - now
        due = self.notifier.ping_due(now)
        if due is not None:
            timeout = min(timeout, due)
        settle = self.holder.next_due()
        if settle is not None:
            timeout = min(timeout, settle - now)
        for key, _ in self._selector.select(max(0.0, timeout)):
            # What a handler reports is recorded here, whichever handler it is: the control
            # socket's refusals of strangers were returned and dropped before issue 17.
            handler: Callable[[], list[Event] | None] = key.data
            self._record(handler() or [])
        if self._reload:
            self._reload = False
            self._do_reload()
        now = time.time()
        settle = self.holder.next_due()
        if settle is not None and settle <= now:
            self._record(self.holder.due(now))
        for timer in self._timers.values():
            if timer.at <= now:
                timer.at = now + timer.every
                self._record(timer.step(now))
        self.notifier.ping(now)

    def _shutdown(self) -> int:
        signo = self._stop or signal.SIGTERM
        name = signal.Signals(signo).name
        self.notifier.stopping()
        # A trial in progress is put back before the daemon goes: tune restores on SIGTERM.
        self._record(self.retune.terminate())
        if self._control is not None:
            self._control.close()
        self.metrics.stop()
        self.holder.close()
        self.events.add("stop", f"{name}: iotuner daemon stopped")
        self._write_metrics()
        return 0

    # -- signals ----------------------------------------------------------------------------

    def _install_signals(self) -> dict[int, Any]:
        # Handlers only set flags; the wakeup fd makes select() return at once.
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        handlers: dict[int, Callable[[int, FrameType | None], None]] = {
            signal.SIGTERM: self._on_stop,
            signal.SIGINT: self._on_stop,
            signal.SIGHUP: self._on_hup,
        }
        return {signo: signal.signal(signo, h) for signo, h in handlers.items()}

    def _on_stop(self, signo: int, frame: FrameType | None) -> None:
        self._stop = signo

    def _on_hup(self, signo: int, frame: FrameType | None) -> None:
        self._reload = True

    def _drain_wakeup(self) -> None:
        try:
            while self._wake_r.recv(64):
                pass
        except BlockingIOError:
            pass

    # -- configuration ----------------------------------------------------------------------

    def _do_reload(self) -> None:
        """SIGHUP: read the config again; a broken file keeps the running one."""
        self.notifier.reloading()
        try:
            config = load_config(self.config.path)
        except ConfigError as err:
            self.events.add("error", f"reload refused, keeping the running config: {err}")
        else:
            self._configure(config)
            self.events.add("config", f"reloaded {config.path or 'the defaults'}")
            self._reload_plan(time.time(), cause="reload")
        self.notifier.ready(self._status_line())

    def _configure(self, config: DaemonConfig) -> None:
        """Bring every component in line with `config` (at start and on reload)."""
        old, self.config = self.config, config
        if self._control is None or old.daemon.socket != config.daemon.socket:
            if self._control is not None:
                self._selector.unregister(self._control.fileno())
                self._control.close()
            self._control = ControlServer(config.daemon.socket, self.handle)
            self._selector.register(self._control.fileno(), selectors.EVENT_READ,
                                    self._control.handle)  # fmt: skip
        self._configure_hotplug(config.hotplug.enabled)
        if self._serving != config.metrics.listen:
            self.metrics.stop()
            self._serving = config.metrics.listen
            if self._serving is not None:
                self.events.extend(self.metrics.serve(*self._serving))
        now = time.time()
        self._timers["drift"] = _Timer(config.daemon.drift_interval, self._periodic_check,
                                       now + config.daemon.drift_interval)  # fmt: skip
        self._watch = None
        self._timers.pop("sample", None)
        if config.workload.enabled:
            self._timers["sample"] = _Timer(config.workload.sample_interval, self._sample, now)

    def _configure_hotplug(self, enabled: bool) -> None:
        if enabled and self._hotplug is None:
            self._hotplug = HotplugMonitor()
            self._selector.register(self._hotplug.fileno(), selectors.EVENT_READ, self._on_udev)
        elif not enabled and self._hotplug is not None:
            self._selector.unregister(self._hotplug.fileno())
            self._hotplug.close()
            self._hotplug = None

    # -- steps ------------------------------------------------------------------------------

    def _reload_plan(self, now: float, cause: str) -> None:
        """Hold the configured plan, or the journal's latest apply; check it at once."""
        try:
            held = find_plan(self.journal_path, self.config.daemon.plan)
        except IotunerError as err:
            if cause == "start":
                raise
            self.events.add("error", f"keeping the plan held so far: {err}")
            held = self.holder.held
        # HeldPlan compares by value: an edited plan file is picked up, a journal re-read
        # after the daemon's own restores is not a new plan.
        if held != self.holder.held or cause != "periodic":
            self._record(self.holder.load(held))
            self._watch = None  # the devices to watch follow the plan
        self._record(self.holder.check(cause))

    def _periodic_check(self, now: float) -> list[Event]:
        # The journal says when an apply or a rollback changed what is to be held.
        self._reload_plan(now, cause="periodic")
        return []

    def _on_udev(self) -> None:
        assert self._hotplug is not None
        for action, name in self._hotplug.receive():
            self._record(self.holder.device_event(action, name))

    def _sample(self, now: float) -> list[Event]:
        watch = self._workload_watch()
        if watch is None:
            return []
        # A re-tune's trials are iotuner's own I/O: evidence for no workload class.
        own_io = self.retune.busy()
        found = watch.sample(now, own_io=own_io)
        events = list(found)
        follow = self._following(watch)
        for changed in found:
            workload = changed.data.get("workload")
            # Following the workload, captures take the place of the class's advise and
            # re-tune: the one child a capture needs is not held by an advise.
            if changed.kind == "workload" and workload and workload != "idle" and follow is None:
                events += self.retune.advise(str(workload))
                if self.config.retune.enabled:
                    events += self.retune.start(str(workload), self.config.retune,
                                                watch.devices, watch.idle_seconds,
                                                online=self._online())  # fmt: skip
        if follow is not None and watch.activity:
            why = follow.sample(watch.activity, own_io)
            if why is not None and self.retune.free():
                events.append(event("follow", f"capture due: {why}", state="due"))
                started = self.retune.capture(watch.devices, self.config.follow.capture_seconds,
                                              follow.capture_path)  # fmt: skip
                if any(e.data.get("state") == "capturing" for e in started):
                    follow.capture_started()
                events += started
        polled = self.retune.poll(now, watch.idle_seconds(self.config.retune.idle_util_percent))
        events += polled + self._follow_up(polled)
        self._sync_retune_fd()
        if any(e.kind == "retune" and e.data.get("applied") for e in events):
            self._reload_plan(now, cause="re-tune applied")
        return events

    def _following(self, watch: WorkloadWatch) -> Follow | None:
        """The follower of `watch`'s devices when follow.enabled."""
        if not self.config.follow.enabled:
            self._follow = None
            return None
        # Kept across plan reloads (an apply of its own result is one): what is in force, the
        # fingerprint a running re-tune was asked for and the counters' reference stay.
        follow, cfg = self._follow, self.config.workload
        if (
            follow is None
            or follow.devices != watch.devices
            or follow.config != self.config.follow
            or follow.sample_interval != cfg.sample_interval
            or follow.window != cfg.window
        ):
            self._follow = Follow(self.config.follow, cfg.sample_interval, cfg.window,
                                  watch.devices, self.retune.state_dir, self.root)  # fmt: skip
        return self._follow

    def _follow_up(self, events: list[Event]) -> list[Event]:
        """What the follower does with the re-tune's events: a capture's fingerprint becomes
        a warm start or a re-tune on its reproduction; a finished re-tune is remembered."""
        follow, watch = self._follow, self._watch
        if follow is None or watch is None:
            return []
        out: list[Event] = []
        for done in events:
            ended = done.data.get("state") not in ("running", "waiting-idle")
            if done.kind == "retune" and "capture" in done.data and ended:
                out += follow.tuned(done)
            if not (done.kind == "follow" and done.data.get("state") == "captured"):
                continue
            decision, said = follow.captured(Path(str(done.data["fingerprint"])))
            out += said
            if decision is None:
                continue
            name = f"captured {watch.current or 'workload'}"
            if decision.unchanged:
                still = f"the workload in force still (distance {decision.distance}): no change"
                out.append(event("follow", still, state="unchanged"))
            elif decision.record is not None:
                out += self.retune.warm(name, self.config.retune, watch.devices,
                                        decision.record.plan, follow.warm(decision))  # fmt: skip
            elif self.config.retune.enabled:
                near = "" if decision.distance is None else f", nearest at {decision.distance:g}"
                out.append(event("follow", f"a new workload{near}: re-tune on its reproduction",
                                 state="new", distance=decision.distance))  # fmt: skip
                out += self.retune.start(name, self.config.retune, watch.devices,
                                         watch.idle_seconds, online=self._online(),
                                         capture=follow.capture_path)  # fmt: skip
            else:
                near = "" if decision.distance is None else f" (nearest {decision.distance:g})"
                out.append(event("follow", f"a new workload{near}: retune.enabled is off, "
                                 "nothing tuned", state="new"))  # fmt: skip
        if any(e.kind == "retune" and e.data.get("applied") for e in out):
            self._reload_plan(time.time(), cause="re-tune applied")
        return out

    def _online(self) -> OnlineSection | None:
        """The [online] bounds when retune.online is on: re-tunes then run on the live
        workload instead of waiting for an idle window."""
        return self.config.online if self.config.retune.online else None

    def _workload_watch(self) -> WorkloadWatch | None:
        if self._watch is None:
            devices = self.config.workload.devices or self.holder.block_targets()
            if not devices:
                return None
            cfg = self.config.workload
            self._watch = WorkloadWatch(devices, cfg.sample_interval, cfg.window)
        return self._watch

    def _sync_retune_fd(self) -> None:
        """Watch the re-tune child's output while one runs, so its end is seen at once."""
        fd = self.retune.fileno()
        registered = {key.fd for key in self._selector.get_map().values()}
        for key in list(self._selector.get_map().values()):
            if key.data == self._on_retune_output and key.fd != fd:
                self._selector.unregister(key.fd)
        if fd is not None and fd not in registered:
            self._selector.register(fd, selectors.EVENT_READ, self._on_retune_output)

    def _on_retune_output(self) -> None:
        idle = self._watch.idle_seconds(self.config.retune.idle_util_percent) if self._watch else 0
        polled = self.retune.poll(time.time(), idle)
        self._record(polled + self._follow_up(polled))
        self._sync_retune_fd()

    def _record(self, events: list[Event]) -> None:
        if not events:
            return
        self.events.extend(events)
        self._write_metrics()
        self.notifier.status(self._status_line())

    def _write_metrics(self) -> None:
        state = self.state()
        self.metrics.update(state)
        if self.config.metrics.textfile is not None:
            self.events.extend(self.metrics.write_textfile(self.config.metrics.textfile))

    # -- status -----------------------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The control socket's handler (docs/daemon.md lists the commands)."""
        cmd = request.get("cmd")
        if cmd == "status":
            return {"ok": True, "state": self.state(int(request.get("events", 20)))}
        if cmd == "reload":
            self._reload = True
            return {"ok": True}
        if cmd == "retune":
            watch = self._workload_watch()
            workload = str(request.get("workload") or (watch.current if watch else "") or "")
            if not workload or workload == "idle":
                return {"ok": False, "error": "no workload seen yet: name one"}
            if not self.config.retune.target and self._online() is None:
                return {"ok": False, "error": "retune.target is not set in the config"}
            devices = watch.devices if watch else tuple(self.holder.block_targets())
            idle = watch.idle_seconds if watch else None
            self._record(self.retune.start(workload, self.config.retune, devices, idle,
                                           online=self._online()))  # fmt: skip
            self._sync_retune_fd()
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {cmd!r} (status, reload, retune)"}

    def state(self, events: int = 20) -> dict[str, Any]:
        """What `iotuner status` shows and the metrics export."""
        watch = self._watch
        return {
            "pid": os.getpid(),
            "started": self.started,
            "state": self._state_name(),
            "config": str(self.config.path) if self.config.path else None,
            "plan": self.holder.plan_state(),
            "held": self.holder.state(),
            "workload": None if watch is None else watch.state(),
            "retune": self.retune.state(),
            "follow": None if self._follow is None else self._follow.state(),
            "events": [e.as_json() for e in self.events.recent(events)],
            "counts": dict(self.events.counts),
        }

    def _state_name(self) -> str:
        retune = self.retune.state()
        if retune is not None and retune.get("state") in ("running", "waiting-idle"):
            return "retuning" if retune["state"] == "running" else "waiting-idle"
        return "holding" if self.holder.plan_state() else "no-plan"

    def _status_line(self) -> str:
        held = self.holder.state()
        bad = sum(1 for h in held if not h["ok"] and h.get("note") != "device gone")
        return f"{self._state_name()}: {len(held)} setting(s) held, {bad} drifted"
