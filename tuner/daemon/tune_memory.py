"""The daemon's memory of workloads it tuned: each fingerprint with its tune's result, so a
workload that returns gets the earlier result (a warm start) instead of a new search.

One JSON file in the state directory (`tune-memory.json`, 0600), at most `entries` records,
newest last; the oldest goes first. Read back it is hostile input like any file: the file must
be a regular file of at most MAX_BYTES holding {"schema", "version", "entries": [...]}, and each
record is checked field by field (its fingerprint by the fingerprint's own allow-list, after
its version); a record that fails is refused in one line and ignored, the others are kept.
A record made on another host (another kernel, or watched disks of another size, model,
rotation or backing directory: `host_key`) never matches: it is dropped as stale.

`nearest(found)` is the record whose fingerprint lies closest (tuner.capture.fingerprint's
distance) when that distance is at most the configured threshold.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probes.hostfs import HostFS
from tuner.capture import fingerprint as fp
from tuner.daemon.hwclass import quick
from tuner.errors import BadInput
from tuner.outfile import write_file
from tuner.yaml_text import read_text_file

SCHEMA = "iotuner-tune-memory"
VERSION = 1
FILE_NAME = "tune-memory.json"
MAX_PLAN_BYTES = 64 * 1024
"""A plan of every tunable on a large host is a few KiB."""
MAX_ENTRIES = 256
MAX_BYTES = MAX_ENTRIES * (fp.MAX_BYTES // 4 + MAX_PLAN_BYTES)
"""The file's bound: a captured fingerprint is a few KiB; four times under its own bound."""
_HEX = re.compile(r"[0-9a-f]{16,64}")
_KEYS = {"id", "time", "host", "fingerprint", "plan", "gain", "ci", "trials", "entries"}


@dataclass(frozen=True)
class Record:
    """One tuned workload: its fingerprint, the plan the tune kept (None: keep the settings
    in force, the tune found no gain) and the tune's figures."""

    id: str
    time: float
    host: str
    fingerprint: fp.Fingerprint
    plan: str | None
    gain: float
    ci: tuple[float, float]
    trials: int
    entries: int

    def as_json(self) -> dict[str, Any]:
        """The record as stored."""
        return {"id": self.id, "time": self.time, "host": self.host,
                "fingerprint": dict(self.fingerprint.data), "plan": self.plan,
                "gain": self.gain, "ci": list(self.ci), "trials": self.trials,
                "entries": self.entries}  # fmt: skip


def host_key(devices: Iterable[str], root: Path = Path("/")) -> str:
    """What a remembered result depends on besides the workload: the kernel release and each
    watched disk's size, rotation, model and (a loop device's) backing directory."""
    fs = HostFS(root)
    parts: list[Any] = [os.uname().release]
    for name in sorted(devices):
        found = quick(root, name)
        parts.append([name, None if found is None else [found.size_bytes, found.backing_dir],
                      fs.read(f"sys/block/{name}/queue/rotational"),
                      fs.read(f"sys/block/{name}/device/model")])  # fmt: skip
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _finite(value: Any, where: str, low: float = 0.0, high: float = 1e6) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{where}: expected a number")
    if not (math.isfinite(value) and low <= value <= high):
        raise BadInput(f"{where}: {value!r} is out of range {low:g}..{high:g}")
    return float(value)


def _whole(value: Any, where: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise BadInput(f"{where}: expected a whole number 0..{high}")
    return value


def check_record(data: Any, where: str) -> Record:
    """One stored record, checked; BadInput naming `where` and the field otherwise."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected an object")
    unknown = sorted(str(k)[:40] for k in set(data) - _KEYS)
    if unknown:
        raise BadInput(f"{where}: {unknown[0]!r} is not a memory field")
    missing = sorted(_KEYS - set(data))
    if missing:
        raise BadInput(f"{where}.{missing[0]}: missing")
    for key in ("id", "host"):
        if not isinstance(data[key], str) or not _HEX.fullmatch(data[key]):
            raise BadInput(f"{where}.{key}: expected hexadecimal digits")
    printed = data["fingerprint"]
    version = printed.get("version") if isinstance(printed, dict) else None
    if version != fp.VERSION:
        raise BadInput(f"{where}.fingerprint: version {str(version)[:20]}, this iotuner "
                       f"compares version {fp.VERSION} only")  # fmt: skip
    plan = data["plan"]
    if plan is not None and (not isinstance(plan, str) or len(plan.encode()) > MAX_PLAN_BYTES):
        raise BadInput(f"{where}.plan: expected null or a plan of at most {MAX_PLAN_BYTES} bytes")
    ci = data["ci"]
    if not isinstance(ci, list) or len(ci) != 2:
        raise BadInput(f"{where}.ci: expected two numbers")
    low, high = (_finite(v, f"{where}.ci[{i}]") for i, v in enumerate(ci))
    return Record(
        id=data["id"],
        time=_finite(data["time"], f"{where}.time", 0, 1e11),
        host=data["host"],
        fingerprint=fp.check(printed, f"{where}.fingerprint"),
        plan=plan,
        gain=_finite(data["gain"], f"{where}.gain"),
        ci=(low, high),
        trials=_whole(data["trials"], f"{where}.trials", 100_000),
        entries=_whole(data["entries"], f"{where}.entries", 100_000),
    )


class TuneMemory:
    """The records in `state/tune-memory.json` for this host, at most `limit` of them."""

    def __init__(self, state: Path, limit: int, host: str) -> None:
        self.path = state / FILE_NAME
        self.limit = max(1, min(MAX_ENTRIES, limit))
        self.host = host

    def load(self) -> tuple[list[Record], list[str]]:
        """This host's valid records, oldest first, and one line for each thing refused or
        dropped (a corrupt file, a bad record, records of another host)."""
        if not self.path.exists():
            return [], []
        try:
            text = read_text_file(self.path, MAX_BYTES, "tune memory")
            doc = json.loads(text, parse_constant=_no_constant)
        except BadInput as err:
            return [], [f"tune memory refused: {err}"]
        except (ValueError, RecursionError) as err:
            return [], [f"tune memory refused: {self.path}: not JSON ({str(err)[:60]})"]
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            return [], [f"tune memory refused: {self.path}: not an {SCHEMA} document"]
        if doc.get("version") != VERSION or not isinstance(doc.get("entries"), list):
            version = str(doc.get("version"))[:20]
            return [], [f"tune memory refused: {self.path}: version {version} or entries "
                        f"unreadable (this daemon writes version {VERSION})"]  # fmt: skip
        records: list[Record] = []
        said: list[str] = []
        other = 0
        for i, item in enumerate(doc["entries"][-MAX_ENTRIES:]):
            try:
                record = check_record(item, f"{self.path}: entries[{i}]")
            except BadInput as err:
                said.append(f"tune memory record refused and ignored: {str(err)[:300]}")
                continue
            if record.host != self.host:
                other += 1
                continue
            records.append(record)
        if other:
            said.append(f"tune memory: {other} record(s) made on another host or kernel "
                        "ignored (the hardware or kernel changed)")  # fmt: skip
        return records[-self.limit :], said

    def remember(self, found: fp.Fingerprint, plan: str | None, figures: Mapping[str, Any]
                 ) -> Record:  # fmt: skip
        """Add a record (the oldest goes past `limit`) and write the file atomically, 0600.
        Records of another host are dropped with it: they can never match again."""
        record = Record(
            id=secrets.token_hex(8), time=round(time.time(), 3), host=self.host,
            fingerprint=found, plan=plan, gain=float(figures["gain"]),
            ci=(float(figures["ci"][0]), float(figures["ci"][1])),
            trials=int(figures["trials"]), entries=int(figures.get("entries", 0)),
        )  # fmt: skip
        check_record(record.as_json(), "new record")  # what is written is what load accepts
        kept, _ = self.load()
        kept = [*kept, record][-self.limit :]
        doc = {"schema": SCHEMA, "version": VERSION, "entries": [r.as_json() for r in kept]}
        write_file(self.path, json.dumps(doc, sort_keys=True) + "\n", mode=0o600,
                   what="tune memory", trusted=True)  # fmt: skip
        return record

    def nearest(self, found: fp.Fingerprint, threshold: float
                ) -> tuple[Record | None, float | None, list[str]]:  # fmt: skip
        """The closest record of this host within `threshold`, its distance (that of the
        closest record even when too far; None when there is none) and the load's lines."""
        records, said = self.load()
        best: tuple[float, Record] | None = None
        for record in reversed(records):  # the newest wins a tie
            gap = fp.distance(found, record.fingerprint)
            if best is None or gap < best[0]:
                best = (gap, record)
        if best is None:
            return None, None, said
        return (best[1] if best[0] <= threshold else None), best[0], said


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number the memory holds")
