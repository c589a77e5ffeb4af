"""The daemon's configuration file: defaults, every key read, and one precise line per mistake."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.daemon import config as config_module
from tuner.daemon.config import (
    DEFAULT_SOCKET,
    ConfigError,
    DaemonConfig,
    load_config,
)
from tuner.errors import BadInput

REPO = Path(__file__).resolve().parents[2]

FULL = """\
# every key, none at its default
[daemon]
plan = "/root/plan.yaml"
socket = "/run/iotuner-test/ctl.sock"
drift_interval = 15
log_level = "debug"

[hotplug]
enabled = false

[workload]
enabled = true
devices = ["sdb", "nvme0n1"]
sample_interval = 2
window = 30.5

[retune]
enabled = true
target = "/srv/scratch"
budget = 12
runtime = 4.0
max_seconds = 600
idle_util_percent = 5.5
idle_seconds = 0
io_cap_mb = 256
apply = true

[metrics]
textfile = "/var/lib/node_exporter/textfile_collector/iotuner.prom"
listen = "127.0.0.1:9781"
"""


def write(tmp_path: Path, text: str | bytes, name: str = "iotuner.toml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_missing_default_file_gives_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_module, "DEFAULT_PATH", tmp_path / "absent.toml")
    config = load_config(None)
    assert config == DaemonConfig()
    assert config.path is None
    assert config.daemon.plan is None and config.daemon.socket == DEFAULT_SOCKET
    assert config.daemon.drift_interval == 60.0 and config.daemon.log_level == "info"
    assert config.hotplug.enabled and config.workload.enabled
    assert config.workload.devices == () and config.workload.window == 120.0
    assert not config.retune.enabled and config.retune.target is None
    assert config.retune.budget == 8 and config.retune.io_cap_mb == 1024
    assert config.metrics.textfile is None and config.metrics.listen is None


def test_the_default_file_is_read_when_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "[daemon]\ndrift_interval = 5\n")
    monkeypatch.setattr(config_module, "DEFAULT_PATH", path)
    config = load_config(None)
    assert config.path == path and config.daemon.drift_interval == 5.0


def test_every_key_is_read_into_its_type(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load_config(path)
    assert config.path == path
    assert config.daemon.plan == Path("/root/plan.yaml")
    assert config.daemon.socket == Path("/run/iotuner-test/ctl.sock")
    assert config.daemon.drift_interval == 15.0 and isinstance(config.daemon.drift_interval, float)
    assert config.daemon.log_level == "debug"
    assert config.hotplug.enabled is False
    assert config.workload.devices == ("sdb", "nvme0n1")
    assert config.workload.sample_interval == 2.0 and config.workload.window == 30.5
    retune = config.retune
    assert retune.enabled and retune.target == "/srv/scratch" and retune.apply
    assert (retune.budget, retune.runtime, retune.max_seconds) == (12, 4.0, 600.0)
    assert (retune.idle_util_percent, retune.idle_seconds, retune.io_cap_mb) == (5.5, 0.0, 256)
    assert config.metrics.textfile == Path("/var/lib/node_exporter/textfile_collector/iotuner.prom")
    assert config.metrics.listen == ("127.0.0.1", 9781)


def test_the_config_is_frozen(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL))
    with pytest.raises(AttributeError):
        config.retune.budget = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("listen", "expected"),
    [("localhost:9781", ("127.0.0.1", 9781)), ("[::1]:9100", ("::1", 9100)),
     ("127.0.0.2:1", ("127.0.0.2", 1)), ("", None)],
)  # fmt: skip
def test_loopback_listen_addresses(
    tmp_path: Path, listen: str, expected: tuple[str, int] | None
) -> None:
    path = write(tmp_path, f'[metrics]\nlisten = "{listen}"\n')
    assert load_config(path).metrics.listen == expected


# (file text, line, key as reported, words the reason must contain)
MISTAKES = [
    # syntax, as tomllib finds it
    ("[daemon]\nsocket = /run/x.sock\n", 2, None, "TOML syntax: Invalid value (column 10)"),
    ('[daemon]\nlog_level = "info\n', 2, None, "TOML syntax: Illegal character"),
    ("[daemon]\nplan = ", 2, None, "TOML syntax: Invalid value (at the end of the file)"),
    ("[daemon]\n\n[daemon]\n", 3, None, "TOML syntax: Cannot declare"),
    # unknown tables and keys: typos must not pass
    ("[hotplug]\nenabled = true\n\n[deamon]\nplan = ''\n", 4, "deamon", "unknown table"),
    ("[daemon]\nlog_level = 'info'\n\ndrift_intervall = 5\n", 4, "daemon.drift_intervall",
     "unknown key (known in [daemon]: plan, socket, drift_interval, log_level)"),
    ("[retune.extra]\nx = 1\n", 1, "retune.extra", "unknown key"),
    ("verbose = true\n", 1, "verbose", "unknown table or top-level key"),
    # types
    ('[hotplug]\nenabled = "yes"\n', 2, "hotplug.enabled",
     "must be true or false, not a string ('yes')"),
    ('[daemon]\ndrift_interval = "60"\n', 2, "daemon.drift_interval", "must be a number"),
    ("[daemon]\ndrift_interval = true\n", 2, "daemon.drift_interval", "must be a number"),
    ("[retune]\nbudget = 8.5\n", 2, "retune.budget", "must be a whole number"),
    ('[workload]\ndevices = "sdb"\n', 2, "workload.devices", "must be a list"),
    ("daemon = 3\n", 1, "daemon", "must be a table [daemon]"),
    # ranges and values
    ("[daemon]\ndrift_interval = 0\n", 2, "daemon.drift_interval", "must be above 0, not 0"),
    ("[workload]\nsample_interval = -1.5\n", 2, "workload.sample_interval", "must be above 0"),
    ("[daemon]\ndrift_interval = inf\n", 2, "daemon.drift_interval", "must be finite"),
    ("[retune]\nbudget = 2\n", 2, "retune.budget", "must be at least 3, not 2"),
    ("[retune]\nio_cap_mb = 0\n", 2, "retune.io_cap_mb", "must be at least 1"),
    ("[retune]\nidle_util_percent = 150\n", 2, "retune.idle_util_percent",
     "must be above 0 and at most 100, not 150"),
    ("[retune]\nidle_seconds = -1\n", 2, "retune.idle_seconds", "must be 0 or more"),
    ('[daemon]\nlog_level = "verbose"\n', 2, "daemon.log_level",
     "must be one of debug, info, warning, error, not 'verbose'"),
    ('[daemon]\nplan = "plan.yaml"\n', 2, "daemon.plan", "must be an absolute path"),
    ('[daemon]\nsocket = ""\n', 2, "daemon.socket", "must name the control socket"),
    (f'[daemon]\nsocket = "/run/{"x" * 120}.sock"\n', 2, "daemon.socket",
     "longer than 107 bytes"),
    ('[workload]\ndevices = ["sdb", "/dev/sdc"]\n', 2, "workload.devices",
     "'/dev/sdc' is not a kernel device name"),
    ('[workload]\ndevices = ["sdb", "sdb"]\n', 2, "workload.devices", "listed twice"),
    ('[metrics]\ntextfile = "/var/lib/iotuner.txt"\n', 2, "metrics.textfile", "must end in .prom"),
    ('[metrics]\nlisten = "0.0.0.0:9781"\n', 2, "metrics.listen", "not a loopback address"),
    ('[metrics]\nlisten = "10.1.2.3:9781"\n', 2, "metrics.listen", "not a loopback address"),
    ('[metrics]\nlisten = "metrics.example:9781"\n', 2, "metrics.listen", "not an IP address"),
    ('[metrics]\nlisten = "127.0.0.1:99999"\n', 2, "metrics.listen", "port must be 1 to 65535"),
    ('[metrics]\nlisten = "9781"\n', 2, "metrics.listen", "must be HOST:PORT"),
    # keys that depend on each other: reported at the one to change
    ("[retune]\napply = true\nenabled = true\n", 3, "retune.enabled", "needs retune.target"),
    ("[workload]\nsample_interval = 10\nwindow = 5\n", 3, "workload.window",
     "must be at least sample_interval (10 s), not 5"),
    ("[retune]\nruntime = 10\nmax_seconds = 5\n", 3, "retune.max_seconds",
     "must be at least runtime"),
    # dotted and inline forms still point at their line
    ("# top\nretune.budget = 1\n", 2, "retune.budget", "must be at least 3"),
    ("\n\nmetrics = { listen = '8.8.8.8:53' }\n", 3, "metrics.listen", "not a loopback"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "key", "reason"), MISTAKES)
def test_each_mistake_is_one_line_naming_file_line_key_and_reason(
    tmp_path: Path, text: str, line: int, key: str | None, reason: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    prefix = f"{path}:{line}: " + (f"{key}: " if key else "")
    assert message.startswith(prefix), message
    assert reason in message, message
    assert caught.value.exit_code == 2 and isinstance(caught.value, BadInput)


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=re.escape(f"{path}: no such configuration file")):
        load_config(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path}: cannot read")):
        load_config(tmp_path)  # a directory
    binary = write(tmp_path, b'[daemon]\nlog_level = "info"\nplan = "\xff"\n')
    with pytest.raises(ConfigError, match=re.escape(f"{binary}:3: not UTF-8 text")):
        load_config(binary)


def test_the_reference_shows_the_defaults_and_every_key(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "daemon-config.md").read_text()
    (example,) = re.findall(r"```toml\n(.*?)```", doc, re.DOTALL)
    path = write(tmp_path, example)
    assert load_config(path) == DaemonConfig(path=path)  # its example is the defaults, spelled out
    for table, (_, checkers) in config_module._SCHEMA.items():
        for key in checkers:
            assert f"`{table}.{key}`" in doc, f"docs/daemon-config.md misses {table}.{key}"


def test_the_validator_command(tmp_path: Path) -> None:
    good = write(tmp_path, FULL, "good.toml")
    bad = write(tmp_path, "[retune]\nbudget = 1\n", "bad.toml")
    command = [sys.executable, "-m", "tuner.daemon.config"]
    ok = subprocess.run([*command, str(good)], capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == ""
    refused = subprocess.run([*command, str(bad)], capture_output=True, text=True, cwd=REPO)
    assert refused.returncode == 2
    assert refused.stderr == f"{bad}:2: retune.budget: must be at least 3, not 1\n"
    usage = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_check_config_json_prints_the_whole_configuration(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "iotuner.toml"
    path.write_text('[daemon]\nsocket = "/run/test/iotuner.sock"\n[retune]\nbudget = 5\n')
    result = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "daemon", "--config", str(path), "--check-config",
         "--json"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["config"] == str(path)
    assert doc["settings"]["daemon"]["socket"] == "/run/test/iotuner.sock"
    assert doc["settings"]["retune"]["budget"] == 5


def test_json_log_lines_are_one_object_each() -> None:
    import json
    import logging

    from tuner.commands.daemon import JsonLines

    record = logging.LogRecord("tuner.daemon", logging.INFO, "x", 1, "held %d settings", (3,), None)
    doc = json.loads(JsonLines().format(record))
    assert (doc["level"], doc["logger"], doc["message"]) == (
        "info",
        "tuner.daemon",
        "held 3 settings",
    )


# -- a hostile file (issue 17) -----------------------------------------------------------------


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.toml"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(path)


def test_deep_nesting_and_huge_files_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.toml"
    path.write_text("[daemon]\nplan = " + "[" * 30_000 + "]" * 30_000 + "\n")
    with pytest.raises(ConfigError, match=r"iotuner.toml:2: nested too deeply"):
        load_config(path)
    path.write_text("# padding\n" * 20_000)
    with pytest.raises(ConfigError, match=r"larger than 64 KiB"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        (" " * 6000 + "\n[retune]\nbudget = 1\n", 3, "retune.budget"),
        ('[retune]\ntarget = """/\n' + " " * 6000 + '\n"""\nbudget = 1\n', 5, "retune.budget"),
        ('[retune]\ntarget = """/\n[' + " " * 6000 + 'x\n"""\nbudget = 1\n', 5, "retune.budget"),
        ("[daemon]\n" + " " * 3000 + "log_level" + " " * 3000 + "= 3\n", 2, "daemon.log_level"),
        ("[ retune ]   # the re-tune\n\tbudget\t= 1\n", 2, "retune.budget"),
    ],
    ids=["line-of-spaces", "spaces-in-a-string", "open-header-in-a-string", "padded-key",
         "tabs-and-comment"],
)  # fmt: skip
def test_long_lines_of_white_space_are_read_at_once(
    tmp_path: Path, text: str, line: int, key: str
) -> None:
    # The key finder's regexes backtracked cubically in a line's white space (issue 27).
    from tests.fuzz.common import within

    path = write(tmp_path, text)
    with within(2.0), pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:{line}: {key}: "), str(caught.value)


def test_check_config_without_a_config_file_says_the_defaults_not_ok() -> None:
    """With no /etc/iotuner/iotuner.toml there is nothing to call ok: it says the daemon would
    run on its defaults (it printed '/etc/iotuner/iotuner.toml: ok' for a file not there)."""
    import subprocess
    import sys

    from tuner.daemon.config import DEFAULT_PATH

    if DEFAULT_PATH.exists():
        pytest.skip(f"{DEFAULT_PATH} exists on this host")
    result = subprocess.run([sys.executable, "-m", "tuner.cli", "daemon", "--check-config"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"no {DEFAULT_PATH}: the daemon would run on its defaults"


# -- [online]: the live re-tune's bounds ---------------------------------------------------


def test_online_bounds_are_read(tmp_path: Path) -> None:
    path = write(tmp_path, '[retune]\nenabled = true\nonline = true\n[online]\n'
                 'device = "/dev/sdb"\nslice = 5\nlatency_bound = 0.1\n'
                 'max_seconds = 600\nmax_worse = 30\n'
                 'metric = "/usr/local/bin/commits bench"\nmetric_kind = "gauge"\n')  # fmt: skip
    loaded = load_config(path)
    assert loaded.retune.online and loaded.retune.target is None  # no scratch target needed
    online = loaded.online
    assert (online.device, online.slice, online.latency_bound) == ("sdb", 5.0, 0.1)
    assert (online.max_seconds, online.max_worse) == (600.0, 30.0)
    assert (online.metric, online.metric_kind) == ("/usr/local/bin/commits bench", "gauge")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[retune]\nonline = true\n", 2, "retune.online: true needs online.device"),
        ('[online]\ndevice = "sd b"\n', 2, "online.device: 'sd b' is not a kernel device name"),
        ("[online]\nslice = 1\n", 2, "online.slice: must be 2 to 600 seconds, not 1"),
        ("[online]\nlatency_bound = 0\n", 2, "online.latency_bound: must be above 0"),
        ("[online]\nlatency_bound = 20\n", 2, "online.latency_bound: must be above 0 and "
         "at most 10"),
        ("[online]\nslice = 60\nmax_seconds = 100\n", 3, "online.max_seconds: must be at "
         "least four slices (240 s)"),
        ('[online]\nmetric_kind = "rate"\n', 2, "online.metric_kind: must be counter or gauge"),
        ('[online]\nmetric = "a\\nb"\n', 2, "online.metric: must be one command line"),
        ("[online]\nspeed = 1\n", 2, "online.speed: unknown key"),
    ],
)  # fmt: skip
def test_online_bounds_that_are_wrong_name_their_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(f"{path}:{line}: {message}")):
        load_config(path)
