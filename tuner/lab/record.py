"""The lab's record (`state_dir()/lab.json`): every step, written down before it is taken.

The record is what makes `lab down` complete after a crash: each step (a directory, a loop
device, a mount, a throttle rule...) is saved as an intent, durably (fsync, atomic rename, fsync
of the directory), before the command that creates it runs, and marked done afterwards. Teardown
walks the steps backwards and undoes each one that exists on the system, done or not.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tuner.errors import BadInput, IotunerError
from tuner.outfile import write_file

RECORD_VERSION = 1
RECORD_NAME = "lab.json"


@dataclass
class Step:
    """One thing the lab creates.

    kind: `dir` (target: a directory), `loop` (target: the backing file; device once attached;
    detail["found"]: the queue settings the device had), `mount` (target: the mountpoint;
    device: the source), `throttle` (target: "MAJ:MIN"; device; detail: the caps and backend),
    `cgroup` (target: a cgroup v2 directory), `btrfs` (detail["devices"]: members to forget),
    `server` (target: the socket of a modelled disk's nbdkit; detail["pid"] once started),
    `fuse` (target: nbdfuse's mountpoint; device: the socket; detail["pid"] once mounted),
    `dirty` (target: "MAJ:MIN"; detail["found"]: its bdi's dirty settings before; dirty.py),
    `congestion` (target: its claim file; detail["names"]: the algorithms lent; congestion.py).
    """

    kind: str
    target: str
    device: str | None = None
    label: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    done: bool = False


@dataclass
class LabRecord:
    """The record of one lab, saved to `path` after every change."""

    path: Path
    spec_name: str
    spec_source: str
    lab_id: str
    state: str = "building"  # building, then up; teardown rewrites what it could not undo
    pid: int = field(default_factory=os.getpid)
    created: float = field(default_factory=time.time)
    lab: dict[str, Any] | None = None
    steps: list[Step] = field(default_factory=list)

    def intend(self, step: Step) -> Step:
        """Append `step` and save before the caller takes it."""
        self.steps.append(step)
        self.save()
        return step

    def finish(self, step: Step, **changes: Any) -> None:
        """Mark `step` done (updating its fields) and save."""
        for name, value in changes.items():
            setattr(step, name, value)
        step.done = True
        self.save()

    def save(self) -> None:
        """Replace the file atomically and durably: write, fsync, rename, fsync the directory."""
        data = {
            "version": RECORD_VERSION,
            "spec_name": self.spec_name,
            "spec_source": self.spec_source,
            "lab_id": self.lab_id,
            "state": self.state,
            "pid": self.pid,
            "created": self.created,
            "lab": self.lab,
            "steps": [asdict(s) for s in self.steps],
        }
        # tuner.outfile: a random O_EXCL temporary (not a name anybody could plant a link at
        # first), fsynced, renamed, and the directory fsynced.
        write_file(self.path, json.dumps(data, indent=1), what="lab record")

    def remove(self) -> None:
        """Delete the record: the lab is gone."""
        self.path.unlink(missing_ok=True)


def record_path(state: Path) -> Path:
    """Where the lab's record lives inside the state directory."""
    return state / RECORD_NAME


def load_record(path: Path) -> LabRecord | None:
    """The record at `path`, None if there is none; IotunerError if it cannot be read."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except PermissionError:
        raise BadInput(f"{path}: permission denied (the lab's record is root's)") from None
    except (OSError, ValueError) as err:
        raise IotunerError(f"{path}: unreadable lab record ({err}); remove it by hand") from None
    try:
        steps = [Step(**s) for s in data["steps"]]
        return LabRecord(
            path=path,
            spec_name=str(data["spec_name"]),
            spec_source=str(data["spec_source"]),
            lab_id=str(data["lab_id"]),
            state=str(data["state"]),
            pid=int(data["pid"]),
            created=float(data["created"]),
            lab=data.get("lab"),
            steps=steps,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise IotunerError(f"{path}: malformed lab record ({err}); remove it by hand") from None
