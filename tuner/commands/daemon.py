"""`iotuner daemon`: hold the applied plan, follow hotplug and workload change (docs/daemon.md)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from tuner.errors import BadInput


def daemon(
    config: Annotated[
        Path | None,
        typer.Option(help="The daemon's TOML config (default /etc/iotuner/iotuner.toml)."),
    ] = None,
    check_config: Annotated[
        bool, typer.Option("--check-config", help="Validate the config, print it, and exit.")
    ] = False,
) -> None:
    """Run in the foreground until SIGTERM: re-apply drifted settings, give new disks of a
    known class their plan, watch the workload and (when allowed) re-tune in idle windows.

    SIGHUP reloads the config (a broken one is refused and the running one kept); SIGTERM
    restores a trial in progress, then exits 0. Under systemd: Type=notify, with watchdog.
    Exit codes: 0 stopped cleanly, 1 could not start (socket in use, journal unreadable),
    2 bad config or not root.
    """
    from tuner.daemon.config import DEFAULT_PATH, load_config

    loaded = load_config(config)
    if check_config:
        typer.echo(f"{config or DEFAULT_PATH}: ok")
        return
    if os.geteuid() != 0:
        raise BadInput("the daemon writes kernel settings and reads the journal: run it as root")
    logging.basicConfig(
        level=loaded.daemon.log_level.upper(),
        format="%(levelname)s %(message)s",
        stream=sys.stderr,
    )
    from tuner.daemon.service import Daemon
    from tuner.recovery import recover_if_needed

    # After a crash (of the daemon or of a tune it ran) the journal's open changes go back
    # before anything is held again.
    recovered = recover_if_needed()
    daemon = Daemon(loaded)
    if recovered:
        daemon.events.add("start", f"restored {len(recovered)} value(s) a dead session left")
    raise typer.Exit(daemon.run())
