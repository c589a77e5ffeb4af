"""`iotuner daemon`: hold the applied plan, follow hotplug and workload change (docs/daemon.md)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from tuner.codec import encode
from tuner.errors import BadInput


def daemon(
    config: Annotated[
        Path | None,
        typer.Option(help="The daemon's TOML config (default /etc/iotuner/iotuner.toml)."),
    ] = None,
    check_config: Annotated[
        bool, typer.Option("--check-config", help="Validate the config, print it, and exit.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With --check-config, print the whole configuration as JSON; when running, "
            "log one JSON object per line on stderr.",
        ),
    ] = False,
) -> None:
    """Run in the foreground until SIGTERM: re-apply drifted settings, give new disks of a
    known class their plan, watch the workload and (when allowed) re-tune in idle windows.

    SIGHUP reloads the config (a broken one is refused and the running one kept); SIGTERM
    restores a trial in progress, then exits 0. Under systemd: Type=notify, with watchdog.
    Exit codes: 0 stopped cleanly, 1 could not start (socket in use, journal unreadable,
    re-tuning enabled without the tune extra installed), 2 bad config or not root.
    """
    from tuner.daemon.config import DEFAULT_PATH, load_config

    loaded = load_config(config)
    if loaded.retune.enabled:
        # Each re-tune runs `iotuner tune`: on a host with only the host part it would fail
        # in every idle window; say so once, now.
        from tuner.extras import require

        require("tune", "daemon with [retune] enabled")
    if check_config:
        if as_json:
            doc = {"config": str(loaded.path) if loaded.path else None, "ok": True,
                   "settings": encode(loaded)}  # fmt: skip
            sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        elif loaded.path is None:
            # Only the default path may be missing (an explicit one is refused): no file, no "ok".
            typer.echo(f"no {DEFAULT_PATH}: the daemon would run on its defaults")
        else:
            typer.echo(f"{loaded.path}: ok")
        return
    if os.geteuid() != 0:
        raise BadInput("the daemon writes kernel settings and reads the journal: run it as root")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if as_json else logging.Formatter("%(levelname)s %(message)s"))
    logging.basicConfig(level=loaded.daemon.log_level.upper(), handlers=[handler])
    from tuner.daemon.service import Daemon
    from tuner.recovery import recover_if_needed

    # After a crash (of the daemon or of a tune it ran) the journal's open changes go back
    # before anything is held again.
    recovered = recover_if_needed()
    daemon = Daemon(loaded)
    if recovered:
        daemon.events.add("start", f"restored {len(recovered)} value(s) a dead session left")
    raise typer.Exit(daemon.run())


class JsonLines(logging.Formatter):
    """One JSON object per log record: time (Unix seconds), level, logger, message."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        doc = {
            "time": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)
