"""The last JSON document of `bottleneck`, `sweep` and `tune`, kept for `iotuner report`.

Each is saved with the identity of the host it was measured on (`measured_on`): the report of
another host (a capture, a copied state directory) must not show it as its own; and with its
origin (`origin`): when it was saved, by which command, on which devices, and whether on the
lab, so the report shows this host's own results by default, dated (issue 30).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probes.identity import live_identity
from tuner.outfile import write_file
from tuner.state import state_dir, state_path
from tuner.trust import private_dir

MEASURED_ON = "measured_on"
ORIGIN = "origin"
MAX_RESULT_BYTES = 16 << 20
"""A saved result larger than this is not one iotuner wrote (a long tune is well under 1 MiB)."""


def result_path(name: str) -> Path:
    """Where result `name` lives: <state dir>/results/<name>.json (nothing is created)."""
    return state_path() / "results" / f"{name}.json"


def save_result(
    name: str, doc: dict[str, Any], *, devices: Sequence[str] = (), lab: bool = False
) -> Path:
    """Write `doc` as result `name` with this host's identity and its origin (`devices`
    measured; `lab`: measured on the lab, also true when a device is one of the lab that is
    up), atomically: a reader sees the old or the new, never half."""
    doc = {**doc, MEASURED_ON: live_identity().document(), ORIGIN: origin(devices, lab)}
    folder = private_dir(state_dir() / "results", "the saved results")
    text = json.dumps(doc, indent=2) + "\n"
    return write_file(folder / f"{name}.json", text, mode=0o600, what="result", trusted=True)


def load_result(name: str) -> dict[str, Any] | None:
    """Result `name` as saved, or None when there is none (or it is not a JSON object of at
    most MAX_RESULT_BYTES)."""
    try:
        with result_path(name).open("rb") as f:
            data = f.read(MAX_RESULT_BYTES + 1)
        if len(data) > MAX_RESULT_BYTES:
            return None
        # ValueError: not JSON, not UTF-8; RecursionError: nested thousands deep.
        doc = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def origin(devices: Sequence[str], lab: bool) -> dict[str, Any]:
    """When (UTC), by which command, on which devices, and whether on the lab."""
    return {
        "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["iotuner", *sys.argv[1:]]),
        "devices": list(devices),
        "lab": lab or on_lab(devices),
    }


def on_lab(devices: Sequence[str]) -> bool:
    """Whether any of `devices` (names or /dev paths) is a disk of the lab that is up here."""
    if not devices:
        return False
    from tuner.errors import IotunerError
    from tuner.lab.status import lab_check

    try:
        check = lab_check()
    except (IotunerError, OSError):
        return False
    if check is None or check.lab is None:
        return False
    lab_names = {Path(d.device).name for d in check.lab.disks}
    return any(Path(device).name in lab_names for device in devices)
