"""Fuzzing the daemon's configuration: generated TOML through load_config.

Every file is read into a DaemonConfig whose values are in their ranges, or refused with one
line that names the file (and the line and key where there is one).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.common import FUZZ, corpus, note, refused_well, within
from tuner.daemon.config import _SCHEMA, DaemonConfig, load_config
from tuner.errors import BadInput

_KEYS = {table: sorted(checkers) for table, (_, checkers) in _SCHEMA.items()}
_STRINGS = [
    "", "/root/plan.yaml", "plan.yaml", "/run/iotuner/iotuner.sock", "127.0.0.1:9781",
    "[::1]:9781", "localhost:80", "0.0.0.0:9781", "127.0.0.1:0", "127.0.0.1:99999", "debug",
    "sda", "nvme0n1", "sda\nsdb", "/x\u0000y", "/" + "d/" * 80, "/var/lib/x/iotuner.prom",
    "a.prom", "{{ x }}", "$HOME", "²",
]  # fmt: skip
_scalar = st.one_of(
    st.booleans(), st.integers(-(2**64), 2**64), st.sampled_from([0, 1, 3, 8, 60, 1024]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_STRINGS), st.text(max_size=30),
)  # fmt: skip
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def _toml(value: object) -> str:
    """A value as TOML writes it (json's string escapes are TOML's basic-string ones)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") \
            if math.isinf(value) else repr(value)  # fmt: skip
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"


_table = st.one_of(st.sampled_from(sorted(_KEYS)), st.text(max_size=10)).flatmap(
    lambda table: st.tuples(
        st.just(table),
        st.dictionaries(
            st.one_of(st.sampled_from(_KEYS.get(table, ["x"])), st.text(max_size=10)),
            _value,
            max_size=5,
        ),
    )
)
# Values each key takes in a working file, so that many documents get past the first key.
_GOOD = {
    "plan": "/root/plan.yaml", "socket": "/run/iotuner/iotuner.sock", "drift_interval": 60,
    "log_level": "info", "enabled": True, "devices": ["sda", "nvme0n1"], "sample_interval": 5.0,
    "window": 120, "target": "/data", "budget": 8, "runtime": 3.0, "max_seconds": 300,
    "idle_util_percent": 10, "idle_seconds": 30, "io_cap_mb": 1024, "apply": False,
    "textfile": "/var/lib/node_exporter/iotuner.prom", "listen": "127.0.0.1:9781",
    "online": False, "device": "sdb", "slice": 10.0, "latency_bound": 0.2, "max_worse": 90.0,
    "metric": "/usr/local/bin/app-rate", "metric_kind": "counter", "capture_seconds": 10.0,
    "history": 600.0, "memory_entries": 16, "memory_distance": 0.05,
}  # fmt: skip


def _fitting(key: str) -> st.SearchStrategy[object]:
    """The key's working value about nine times in ten, else anything."""
    return st.integers(0, 99).flatmap(lambda i: _value if i % 10 == 3 else st.just(_GOOD[key]))


_plausible_table = st.sampled_from(sorted(_KEYS)).flatmap(
    lambda table: st.tuples(
        st.just(table),
        st.lists(st.sampled_from(_KEYS[table]), max_size=5, unique=True).flatmap(
            lambda keys: st.fixed_dictionaries({k: _fitting(k) for k in keys})
        ),
    )
)
_SPACES = " " * 6000
"""A line of white space: the key finder's regexes once took minutes over it (issue 27)."""
_CUTS = ["\n", "[", "=", '"', _SPACES, f"\n{_SPACES}\n", f"\n[{_SPACES}"]
_document = st.builds(
    lambda tables, cut: _cut(
        "".join(
            f"[{_key(name)}]\n" + "".join(f"{_key(k)} = {_toml(v)}\n" for k, v in keys.items())
            for name, keys in tables
        ),
        cut,
    ),
    st.one_of(
        st.lists(_plausible_table, max_size=5, unique_by=lambda t: t[0]),
        st.lists(_table, max_size=5, unique_by=lambda t: t[0]),
    ),
    st.one_of(st.none(), st.tuples(st.integers(0, 4000), st.sampled_from(_CUTS))),
)


def _cut(text: str, cut: tuple[int, str] | None) -> str:
    if cut is None:
        return text
    at = cut[0] % (len(text) + 1)
    return text[:at] + cut[1] + text[at:]


def handles(path: Path) -> None:
    """A DaemonConfig with values in range, or one ConfigError line naming the file."""
    with within():
        try:
            config = load_config(path)
        except BadInput as err:
            assert refused_well(err).startswith(f"{path}:"), str(err)
            note("refused")
            return
    assert isinstance(config, DaemonConfig)
    assert config.daemon.drift_interval > 0 and math.isfinite(config.daemon.drift_interval)
    assert config.retune.budget >= 3 and 0 < config.retune.idle_util_percent <= 100
    assert config.workload.window >= config.workload.sample_interval
    assert config.metrics.listen is None or config.metrics.listen[0] in ("127.0.0.1", "::1")
    note("accepted")


@FUZZ
@given(_document)
def test_generated_configs(text: str) -> None:
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-") as folder:
        path = Path(folder) / "iotuner.toml"
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        handles(path)


@pytest.mark.parametrize("path", corpus("configs"), ids=lambda p: p.name)
def test_configs_that_once_failed(path: Path) -> None:
    handles(path)
