"""The fingerprint: a capture's statistics as a small, versioned JSON document.

    {"schema": "iotuner-fingerprint", "version": 1, "kernel": "6.18.0", "source": "tracefs",
     "seconds": 60.0, "events": 120345, "unparsed": 0, "lost": 0,
     "devices": [{"device": "sdb", "class": "hdd", "size_bytes": ..., "read_ahead_kb": 128,
                  <figures>,
                  "by_process": [{"comm": "postgres", <figures>}, ...]}]}

<figures> are stats.Group.summary's (docs/capture.md lists each). Statistics only: no file
name, no offset list, no data. Read back, a fingerprint is hostile input: a regular file of at
most MAX_BYTES, JSON whose every key is in the allow-list below with a value of the kind and
range it names; anything else is BadInput (exit 2) naming the file and the field.

`distance(a, b)` compares two fingerprints' busiest devices on the features a tune depends on
(0 the same workload, about 1 nothing alike), so a daemon can tell a returning workload from a
new one and store the fingerprint with the tune it got.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import BadInput
from tuner.yaml_text import read_text_file

SCHEMA = "iotuner-fingerprint"
VERSION = 1
MAX_BYTES = 256 * 1024
MAX_DEVICES = 16
MAX_PROCESSES = 16
_BUCKET = re.compile(r"[1-9][0-9]{0,19}")
_NAME = re.compile(r"[A-Za-z0-9_.:/+@ -]{1,16}")
_COMM = re.compile(r"[\x20-\x7e]{1,16}")
_KERNEL = re.compile(r"[A-Za-z0-9_.+~-]{1,64}")

Spec = Callable[[Any, str], Any]


def _number(low: float, high: float, whole: bool = False) -> Spec:
    def check(value: Any, where: str) -> Any:
        kind = int if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise BadInput(f"{where}: expected {'a whole number' if whole else 'a number'}")
        if not (low <= value <= high) or (isinstance(value, float) and not math.isfinite(value)):
            raise BadInput(f"{where}: {value!r} is out of range {low:g}..{high:g}")
        return value

    return check


def _optional(inner: Spec) -> Spec:
    def check(value: Any, where: str) -> Any:
        return None if value is None else inner(value, where)

    return check


def _text(pattern: re.Pattern[str], what: str) -> Spec:
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise BadInput(f"{where}: expected {what}")
        return value

    return check


def _choice(*names: str | int) -> Spec:
    def check(value: Any, where: str) -> Any:
        if value not in names:
            raise BadInput(f"{where}: expected one of {', '.join(map(str, names))}")
        return value

    return check


def _record(fields: Mapping[str, Spec], optional: frozenset[str] = frozenset()) -> Spec:
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise BadInput(f"{where}: expected an object")
        unknown = sorted(set(value) - set(fields))
        if unknown:
            # The key is the file's, not ours: quoted, so a newline in it stays on the one line.
            raise BadInput(f"{where}: {str(unknown[0])[:40]!r} is not a fingerprint field")
        missing = sorted(set(fields) - set(value) - optional)
        if missing:
            raise BadInput(f"{where}.{missing[0]}: missing")
        return {key: spec(value[key], f"{where}.{key}") for key, spec in fields.items()
                if key in value}  # fmt: skip

    return check


def _list(inner: Spec, most: int) -> Spec:
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, list):
            raise BadInput(f"{where}: expected a list")
        if len(value) > most:
            raise BadInput(f"{where}: more than {most} entries")
        return [inner(item, f"{where}[{i}]") for i, item in enumerate(value)]

    return check


def _shares(value: Any, where: str) -> Any:
    if not isinstance(value, dict) or len(value) > 64:
        raise BadInput(f"{where}: expected at most 64 size buckets")
    for key, share in value.items():
        if not _BUCKET.fullmatch(key) or int(key) & (int(key) - 1):
            raise BadInput(f"{where}: {str(key)[:40]!r} is not a power-of-two size in bytes")
        _number(0, 1)(share, f"{where}.{key}")
    return dict(value)


_COUNT = _number(0, 2**63 - 1, whole=True)
_SHARE = _number(0, 1)
_RATE = _number(0, 1e12)
FIGURES: dict[str, Spec] = {
    "requests": _COUNT,
    "bytes": _COUNT,
    "iops": _RATE,
    "mbps": _RATE,
    "processes": _number(0, 1024, whole=True),
    "read_share": _SHARE,
    "read_request_share": _SHARE,
    "sizes": _record({"read": _shares, "write": _shares}),
    "mean_size": _record({"read": _COUNT, "write": _COUNT}),
    "sequential_share": _SHARE,
    "streams": _number(0, 4096),
    "seek_median_bytes": _COUNT,
    "footprint_bytes": _COUNT,
    "hot_bytes": _COUNT,
    "queue_depth": _record(
        {
            "mean": _number(0, 1 << 20),
            "p95": _number(0, 1 << 20, True),
            "max": _number(0, 1 << 20, True),
        }
    ),
    "service_ms": _record({"p50": _RATE, "p99": _RATE}),
    "interarrival_us": _record({"mean": _RATE, "cv": _RATE}),
    "flushes": _record(
        {
            "flush": _COUNT,
            "preflush": _COUNT,
            "fua": _COUNT,
            "discard": _COUNT,
            "writes_per_sync": _optional(_RATE),
        }
    ),
    "cache": _record({"readahead_share": _SHARE, "sync_write_share": _SHARE}),
}
"""Every figure of a device or a process, as stats.Group.summary writes it."""

DEVICE = _record(
    {
        "device": _text(_NAME, "a device name"),
        "class": _choice("hdd", "ssd", "unknown"),
        "size_bytes": _COUNT,
        "read_ahead_kb": _number(0, 1 << 30, whole=True),
        **FIGURES,
        "by_process": _list(
            _record({"comm": _text(_COMM, "a process name"), **FIGURES}), MAX_PROCESSES
        ),
    },
    # Recorded since the reproduction reads it (fadvise_hint); older fingerprints lack it.
    optional=frozenset({"read_ahead_kb"}),
)
DOCUMENT = _record(
    {
        "schema": _choice(SCHEMA),
        "version": _choice(VERSION),
        "kernel": _text(_KERNEL, "a kernel release"),
        "source": _choice("tracefs"),
        "seconds": _number(0, 86400),
        "events": _COUNT,
        "unparsed": _COUNT,
        "lost": _COUNT,
        "devices": _list(DEVICE, MAX_DEVICES),
    }
)


@dataclass(frozen=True)
class Fingerprint:
    """A checked fingerprint document (`data`, as DOCUMENT allows) and where it came from."""

    data: Mapping[str, Any]
    where: str = ""

    @property
    def devices(self) -> list[dict[str, Any]]:
        """The devices' figures, each with its processes' under "by_process"."""
        return list(self.data["devices"])

    def busiest(self) -> dict[str, Any] | None:
        """The device that moved the most bytes, or None when the capture saw no request."""
        found = [d for d in self.devices if d["requests"]]
        return max(found, key=lambda d: d["bytes"]) if found else None

    def to_json(self) -> str:
        """The document as written: sorted keys, one level of indentation."""
        return json.dumps(self.data, indent=1, sort_keys=True) + "\n"


def check(data: Any, where: str) -> Fingerprint:
    """`data` checked against the allow-list; BadInput naming `where` and the field."""
    return Fingerprint(DOCUMENT(data, where), where)


def load(path: Path) -> Fingerprint:
    """The fingerprint in `path`: bounded, parsed, checked by allow-list; BadInput otherwise."""
    text = read_text_file(path, MAX_BYTES, "fingerprint")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        raise BadInput(f"{path}: not a fingerprint (not JSON: {str(err)[:80]})") from None
    return check(data, str(path))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a fingerprint holds")


def size_shares(figures: Mapping[str, Any]) -> dict[int, float]:
    """Request sizes (power-of-two buckets) by share of all requests, reads and writes."""
    reads = figures["read_request_share"]
    out: dict[int, float] = {}
    for kind, weight in (("read", reads), ("write", 1 - reads)):
        for key, share in figures["sizes"][kind].items():
            out[int(key)] = out.get(int(key), 0.0) + share * weight
    return out


def features(figures: Mapping[str, Any]) -> dict[str, float]:
    """The figures a tune depends on, each scaled to about 0..1."""
    per_sync = figures["flushes"]["writes_per_sync"]
    mean = figures["bytes"] / figures["requests"] if figures["requests"] else 1.0
    return {
        "read_share": figures["read_share"],
        "sequential_share": figures["sequential_share"],
        "readahead_share": figures["cache"]["readahead_share"],
        "sync_write_share": figures["cache"]["sync_write_share"],
        "mean_size": min(1.0, math.log2(max(mean, 1.0)) / 24),
        "queue_depth": min(1.0, math.log2(1 + figures["queue_depth"]["mean"]) / 10),
        "streams": min(1.0, math.log2(1 + figures["streams"]) / 6),
        "iops": min(1.0, math.log2(1 + figures["iops"]) / 20),
        "sync_cadence": 1.0 if per_sync is None else min(1.0, math.log2(1 + per_sync) / 16),
    }


def distance(a: Fingerprint, b: Fingerprint) -> float:
    """How unlike two fingerprints' busiest devices are: the root mean square of their
    features' differences and the request sizes' total variation distance (0 alike, 1 apart;
    an idle capture against a busy one is 1)."""
    first, second = a.busiest(), b.busiest()
    if first is None or second is None:
        return 0.0 if first is second else 1.0
    fa, fb = features(first), features(second)
    sa, sb = size_shares(first), size_shares(second)
    sizes = 0.5 * sum(abs(sa.get(k, 0.0) - sb.get(k, 0.0)) for k in set(sa) | set(sb))
    squares = [(fa[k] - fb[k]) ** 2 for k in fa] + [sizes**2]
    return round(math.sqrt(sum(squares) / len(squares)), 4)
