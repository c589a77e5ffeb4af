"""The daemon's configuration: /etc/iotuner/iotuner.toml, read and checked (docs/daemon-config.md).

    config = load_config(None)          # the default file, or the defaults when it is absent
    config = load_config(Path("x.toml"))  # an explicit file: it must exist
    config.retune.budget, config.metrics.listen

Every problem is one ConfigError line "FILE:LINE: key: reason". Unknown tables and keys are
errors: a typo must not silently leave a default in force. `python -m tuner.daemon.config FILE`
checks a file (exit 0, or the line on stderr and exit 2); the Ansible role validates with it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probes.hostfs import digits
from tuner.errors import BadInput

DEFAULT_PATH = Path("/etc/iotuner/iotuner.toml")
DEFAULT_SOCKET = Path("/run/iotuner/iotuner.sock")
LOG_LEVELS = ("debug", "info", "warning", "error")
MIN_BUDGET = 3
"""tune's smallest trial budget: a baseline, one candidate and the confirming re-measure."""
MAX_CONFIG_BYTES = 64 * 1024
"""A configuration is a few hundred bytes."""
_SOCKET_PATH_MAX = 107
"""sun_path holds 108 bytes with the terminating NUL."""
MAX_MEMORY_ENTRIES = 256
"""tuner/daemon/tune_memory.py's MAX_ENTRIES: the memory file's own bound."""
_KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]*")


class ConfigError(BadInput):
    """The configuration file is missing, unreadable or wrong; one line, exit 2."""


@dataclass(frozen=True)
class DaemonSection:
    """[daemon]: what to hold and where to listen."""

    plan: Path | None = None
    socket: Path = DEFAULT_SOCKET
    drift_interval: float = 60.0
    log_level: str = "info"


@dataclass(frozen=True)
class HotplugSection:
    """[hotplug]: follow udev add/change events of block devices."""

    enabled: bool = True


@dataclass(frozen=True)
class WorkloadSection:
    """[workload]: classify the live workload from /proc/diskstats deltas."""

    enabled: bool = True
    devices: tuple[str, ...] = ()
    sample_interval: float = 5.0
    window: float = 120.0


@dataclass(frozen=True)
class RetuneSection:
    """[retune]: the bounded re-tune run when the workload class changes."""

    enabled: bool = False
    target: str | None = None
    budget: int = 8
    runtime: float = 3.0
    max_seconds: float = 300.0
    idle_util_percent: float = 10.0
    idle_seconds: float = 30.0
    io_cap_mb: int = 1024
    apply: bool = False
    online: bool = False  # tune the live workload ([online]) instead of waiting for idle


@dataclass(frozen=True)
class OnlineSection:
    """[online]: the bounds of an online re-tune (retune.online = true; docs/online.md)."""

    device: str | None = None
    slice: float = 10.0
    latency_bound: float = 0.2
    max_seconds: float = 900.0
    max_worse: float = 90.0
    metric: str | None = None
    metric_kind: str = "counter"


@dataclass(frozen=True)
class FollowSection:
    """[follow]: fingerprint the workload, capture it when it moves, re-tune on its
    reproduction, remember each tune and reuse it when the workload returns."""

    enabled: bool = False
    capture_seconds: float = 10.0
    history: float = 600.0
    memory_entries: int = 16
    memory_distance: float = 0.15


@dataclass(frozen=True)
class MetricsSection:
    """[metrics]: Prometheus text format as a node-exporter textfile and/or on loopback."""

    textfile: Path | None = None
    listen: tuple[str, int] | None = None


@dataclass(frozen=True)
class DaemonConfig:
    """The whole configuration; `path` is the file it came from (None: built-in defaults)."""

    daemon: DaemonSection = field(default_factory=DaemonSection)
    hotplug: HotplugSection = field(default_factory=HotplugSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    retune: RetuneSection = field(default_factory=RetuneSection)
    online: OnlineSection = field(default_factory=OnlineSection)
    follow: FollowSection = field(default_factory=FollowSection)
    metrics: MetricsSection = field(default_factory=MetricsSection)
    path: Path | None = None


class _Invalid(Exception):
    """A value's reason for rejection, before the file and line are known."""


# --- value checkers: each takes the TOML value and returns the Python one, or raises _Invalid.


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"must be true or false, not {_shown(value)}")
    return value


def _number(value: Any) -> float:
    # TOML's `60` is an int and `60.0` a float: both are fine; true is not a number here.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Invalid(f"must be a number, not {_shown(value)}")
    return float(value)


def _positive(value: Any) -> float:
    number = _number(value)
    if not number > 0:  # also refuses nan
        raise _Invalid(f"must be above 0, not {value}")
    if number == float("inf"):
        raise _Invalid("must be finite")
    return number


def _not_negative(value: Any) -> float:
    number = _number(value)
    if not 0 <= number < float("inf"):
        raise _Invalid(f"must be 0 or more (and finite), not {value}")
    return number


def _percent(value: Any) -> float:
    number = _number(value)
    if not 0 < number <= 100:
        raise _Invalid(f"must be above 0 and at most 100, not {value}")
    return number


def _integer(least: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"must be a whole number, not {_shown(value)}")
        if value < least:
            raise _Invalid(f"must be at least {least}, not {value}")
        return value

    return check


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"must be a string, not {_shown(value)}")
    return value


def _absolute(value: Any) -> Path:
    text = _string(value)
    if not text.startswith("/"):
        raise _Invalid(f"must be an absolute path, not {text!r}")
    if "\0" in text:
        raise _Invalid("must not contain a NUL character")
    return Path(text)


def _optional_path(value: Any) -> Path | None:
    return None if _string(value) == "" else _absolute(value)


def _socket(value: Any) -> Path:
    if _string(value) == "":
        raise _Invalid("must name the control socket's path")
    path = _absolute(value)
    if len(str(path).encode()) > _SOCKET_PATH_MAX:
        raise _Invalid(f"longer than {_SOCKET_PATH_MAX} bytes, the limit of a Unix socket path")
    return path


def _log_level(value: Any) -> str:
    level = _string(value)
    if level not in LOG_LEVELS:
        raise _Invalid(f"must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    return level


def _devices(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"must be a list of kernel device names, not {_shown(value)}")
    names: list[str] = []
    for item in value:
        name = _string(item)
        if not _KERNEL_NAME.fullmatch(name):
            raise _Invalid(f"{name!r} is not a kernel device name such as sda or nvme0n1")
        if name in names:
            raise _Invalid(f"{name!r} is listed twice")
        names.append(name)
    return tuple(names)


def _device_name(value: Any) -> str | None:
    name = _string(value).removeprefix("/dev/")
    if name == "":
        return None
    if not _KERNEL_NAME.fullmatch(name):
        raise _Invalid(f"{name!r} is not a kernel device name such as sda or nvme0n1")
    return name


def _slice(value: Any) -> float:
    number = _positive(value)
    if not 2 <= number <= 600:
        raise _Invalid(f"must be 2 to 600 seconds, not {value}")
    return number


def _bound(value: Any) -> float:
    number = _positive(value)
    if number > 10:
        raise _Invalid(f"must be above 0 and at most 10 (a factor: 0.2 is 20 %), not {value}")
    return number


def _metric(value: Any) -> str | None:
    text = _string(value)
    if "\n" in text or "\0" in text:
        raise _Invalid("must be one command line")
    return None if text.strip() == "" else text


def _metric_kind(value: Any) -> str:
    kind = _string(value)
    if kind not in ("counter", "gauge"):
        raise _Invalid(f"must be counter or gauge, not {kind!r}")
    return kind


def _capture_seconds(value: Any) -> float:
    number = _positive(value)
    if not 1 <= number <= 600:
        raise _Invalid(f"must be 1 to 600 seconds (a short capture), not {value}")
    return number


def _entries(value: Any) -> int:
    number = _integer(1)(value)
    if number > MAX_MEMORY_ENTRIES:
        raise _Invalid(f"must be at most {MAX_MEMORY_ENTRIES}, not {number}")
    return number


def _distance(value: Any) -> float:
    number = _positive(value)
    if number > 1:
        raise _Invalid(f"must be above 0 and at most 1 (distances run 0 to 1), not {value}")
    return number


def _target(value: Any) -> str | None:
    path = _optional_path(value)
    return None if path is None else str(path)


def _textfile(value: Any) -> Path | None:
    path = _optional_path(value)
    if path is not None and path.suffix != ".prom":
        raise _Invalid(f"must end in .prom (node-exporter reads only those), not {path.name!r}")
    return path


def _listen(value: Any) -> tuple[str, int] | None:
    text = _string(value)
    if text == "":
        return None
    host, colon, port_text = text.rpartition(":")
    if not colon or not host:
        raise _Invalid(f"must be HOST:PORT such as 127.0.0.1:9781, not {text!r}")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:9781
    if host == "localhost":
        host = "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise _Invalid(f"{host!r} is not an IP address (use 127.0.0.1 or ::1)") from None
    if not address.is_loopback:
        raise _Invalid(f"{host} is not a loopback address: metrics are served on loopback only")
    if not digits(port_text) or not 1 <= int(port_text) <= 65535:
        raise _Invalid(f"port must be 1 to 65535, not {port_text!r}")
    return str(address), int(port_text)


def _shown(value: Any) -> str:
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "a table"}  # fmt: skip
    return f"{kinds.get(type(value), type(value).__name__)} ({value!r})"


_SCHEMA: Mapping[str, tuple[type[Any], Mapping[str, Callable[[Any], Any]]]] = {
    "daemon": (DaemonSection, {"plan": _optional_path, "socket": _socket,
                               "drift_interval": _positive, "log_level": _log_level}),
    "hotplug": (HotplugSection, {"enabled": _bool}),
    "workload": (WorkloadSection, {"enabled": _bool, "devices": _devices,
                                   "sample_interval": _positive, "window": _positive}),
    "retune": (RetuneSection, {
        "enabled": _bool, "target": _target, "budget": _integer(MIN_BUDGET),
        "runtime": _positive, "max_seconds": _positive, "idle_util_percent": _percent,
        "idle_seconds": _not_negative, "io_cap_mb": _integer(1), "apply": _bool,
        "online": _bool,
    }),
    "online": (OnlineSection, {
        "device": _device_name, "slice": _slice, "latency_bound": _bound,
        "max_seconds": _positive, "max_worse": _not_negative, "metric": _metric,
        "metric_kind": _metric_kind,
    }),
    "follow": (FollowSection, {
        "enabled": _bool, "capture_seconds": _capture_seconds, "history": _positive,
        "memory_entries": _entries, "memory_distance": _distance,
    }),
    "metrics": (MetricsSection, {"textfile": _textfile, "listen": _listen}),
}  # fmt: skip
"""Each table: its dataclass and, per key, the checker that turns the TOML value into the field."""


def load_config(path: Path | None) -> DaemonConfig:
    """The configuration in `path`; None: DEFAULT_PATH, or the defaults when that is absent.

    Raises ConfigError with "FILE:LINE: key: reason" for anything wrong, and for an explicit
    path that does not exist.
    """
    if path is None:
        if not DEFAULT_PATH.exists():
            return DaemonConfig()
        path = DEFAULT_PATH
    raw = _read_bounded(path)
    try:
        text = raw.decode()
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(_syntax_error(path, text, str(err))) from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        line = next((n for n, t in enumerate(text.splitlines(), 1) if "[[[" in t), 1)
        raise ConfigError(f"{path}:{line}: nested too deeply") from None
    return _build(document, path, text)


def _read_bounded(path: Path) -> bytes:
    """The file's bytes: a regular file of at most MAX_CONFIG_BYTES (a FIFO would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path}: cannot read: not a regular file")
        raw = os.read(fd, MAX_CONFIG_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB: not a config")
    return raw


def _syntax_error(path: Path, text: str, message: str) -> str:
    """tomllib's "Reason (at line N, column M)" as "FILE:N: TOML syntax: reason (column M)"."""
    found = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", message, re.DOTALL)
    if found:
        reason, line, column = found.groups()
        return f"{path}:{line}: TOML syntax: {reason} (column {column})"
    reason = message.removesuffix(" (at end of document)")
    return f"{path}:{text.count(chr(10)) + 1}: TOML syntax: {reason} (at the end of the file)"


def _build(document: Mapping[str, Any], path: Path, text: str) -> DaemonConfig:
    lines = _KeyLines(text)

    def fail(table: str | None, key: str | None, reason: str) -> ConfigError:
        # A quoted TOML key may hold any character: a CR or newline in it would split the
        # one-line error (the 1,000-example fuzz run found `"daemon.\r"`).
        name = ".".join(_key_shown(part) for part in (table, key) if part)
        return ConfigError(f"{path}:{lines.find(table, key)}: {name}: {reason}")

    sections: dict[str, Any] = {}
    for table, value in document.items():
        if table not in _SCHEMA:
            known = ", ".join(f"[{name}]" for name in _SCHEMA)
            raise fail(None, table, f"unknown table or top-level key (tables: {known})")
        if not isinstance(value, dict):
            raise fail(None, table, f"must be a table [{table}], not {_shown(value)}")
        section_type, checkers = _SCHEMA[table]
        values: dict[str, Any] = {}
        for key, item in value.items():
            if key not in checkers:
                raise fail(table, key, f"unknown key (known in [{table}]: {', '.join(checkers)})")
            try:
                values[key] = checkers[key](item)
            except _Invalid as err:
                raise fail(table, key, str(err)) from None
        sections[table] = section_type(**values)
    config = DaemonConfig(**sections, path=path)
    # Checks between keys: reported at the key the user most likely has to change.
    if config.workload.window < config.workload.sample_interval:
        raise fail(
            "workload",
            "window",
            f"must be at least sample_interval "
            f"({config.workload.sample_interval:g} s), not {config.workload.window:g}",
        )
    if config.retune.online and config.online.device is None:
        raise fail("retune", "online", "true needs online.device (the live device to tune)")
    if config.follow.enabled and not config.workload.enabled:
        raise fail("follow", "enabled", "true needs workload.enabled (the counters it follows)")
    if config.follow.enabled and config.follow.history < config.workload.window:
        raise fail(
            "follow",
            "history",
            f"must be at least workload.window ({config.workload.window:g} s), "
            f"not {config.follow.history:g}",
        )
    if config.online.max_seconds < 4 * config.online.slice:
        raise fail(
            "online",
            "max_seconds",
            f"must be at least four slices ({4 * config.online.slice:g} s), "
            f"not {config.online.max_seconds:g}",
        )
    if config.retune.enabled and config.retune.target is None and not config.retune.online:
        raise fail(
            "retune",
            "enabled",
            "true needs retune.target (a directory for a scratch "
            "file, or a block device for read trials)",
        )
    if config.retune.max_seconds < config.retune.runtime:
        raise fail(
            "retune",
            "max_seconds",
            f"must be at least runtime "
            f"({config.retune.runtime:g} s), not {config.retune.max_seconds:g}",
        )
    return config


class _KeyLines:
    """Where a key is written in the raw text, for error lines (tomllib does not say)."""

    # Both patterns are matched against a stripped line and share no white space between
    # neighbouring parts: `\s*([ ...]+?)\s*=` backtracked cubically, and a config line of
    # 6,000 spaces took minutes (issue 27). Each match is now linear in the line's length.
    _HEADER = re.compile(r"\[\[?([^\[\]]+)\]\]?")
    _KEY = re.compile(r"[A-Za-z0-9_.\-\"' ]+")

    def __init__(self, text: str) -> None:
        self._where: dict[tuple[str | None, str | None], int] = {}
        table: str | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            header = self._HEADER.fullmatch(line.partition("#")[0].rstrip())
            if header:
                table = _unquote(header.group(1))
                self._where.setdefault((None, table), number)
                outer, dot, inner = table.rpartition(".")
                if dot:  # [retune.extra]: the unknown key "extra" of [retune]
                    self._where.setdefault((outer, inner), number)
                continue
            name, equals, _ = line.partition("=")
            key = self._KEY.fullmatch(name.rstrip()) if equals and name else None
            if key:
                dotted = _unquote(key.group(0))
                # `retune.budget = 3` at the top, or in [retune]: both name retune.budget.
                outer, dot, inner = dotted.partition(".")
                if table is None and dot:
                    self._where.setdefault((outer, inner), number)
                    self._where.setdefault((None, outer), number)
                self._where.setdefault((table, dotted), number)

    def find(self, table: str | None, key: str | None) -> int:
        """The line of `key` in `table`, else of the table, else 1."""
        return self._where.get((table, key)) or self._where.get((None, table)) or 1


def _unquote(dotted: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in dotted.split("."))


def main(argv: list[str] | None = None) -> int:
    """`python -m tuner.daemon.config FILE`: 0 when FILE is a valid configuration, else 2."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m tuner.daemon.config FILE", file=sys.stderr)
        return 2
    try:
        load_config(Path(args[0]))
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    print(f"{args[0]}: valid iotuner daemon configuration")
    return 0


def _key_shown(key: str) -> str:
    """A key as one line of an error: as written when printable, else its repr; cut to 80."""
    shown = key if key.isprintable() else repr(key)
    return shown if len(shown) <= 80 else shown[:77] + "..."


if __name__ == "__main__":
    sys.exit(main())
