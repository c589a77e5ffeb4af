"""The application metric: a command run without a shell, bounded and parsed strictly; a
Prometheus reply of one series. Every refusal is one line."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tuner.errors import BadInput
from tuner.online.metric import (
    MAX_OUTPUT,
    MetricError,
    command_metric,
    parse_number,
    parse_prometheus,
    prometheus_metric,
)

PY = shlex.quote(sys.executable)


def printing(code: str, timeout: float = 5.0) -> float:
    return command_metric(f"{PY} -c {shlex.quote(code)}", "gauge", timeout).read()


def test_a_command_printing_one_number_is_read() -> None:
    assert printing("print(' 42.5 ')") == 42.5
    assert printing("print(7)") == 7.0


def test_no_shell_runs_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    # Through a shell this would create the marker; here `;` is only an argument of echo.
    metric = command_metric(f"echo 1 ; touch {marker}", "gauge")
    with pytest.raises(MetricError, match="printed 4 words, not one number"):
        metric.read()
    assert not marker.exists()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("print('1 2')", "printed 2 words, not one number"),
        ("print('')", "printed nothing, not one number"),
        ("print('fast')", "printed 'fast', not a number"),
        ("print('nan')", "printed nan, not a finite number"),
        ("print('inf')", "printed inf, not a finite number"),
        (f"print('1' * {MAX_OUTPUT + 10})", f"printed over {MAX_OUTPUT} bytes"),
        ("import sys; sys.exit(3)", "exited 3"),
        ("import sys; sys.stdout.buffer.write(b'\\xff\\n')", "bytes that are not text"),
    ],
)
def test_what_is_not_one_finite_number_is_refused(code: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        printing(code)


def test_a_command_that_hangs_is_killed_at_its_timeout() -> None:
    with pytest.raises(MetricError, match=r"took over 0\.5 s"):
        printing("import time; time.sleep(30)", timeout=0.5)


def test_a_flood_of_output_is_cut_not_read_to_the_end() -> None:
    with pytest.raises(MetricError, match="over"):
        printing("import sys; [sys.stdout.write('1' * 65536) for _ in iter(int, 1)]", timeout=5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "give a command that prints one number"),
        ("   ", "give a command that prints one number"),
        ("echo 'unbalanced", "No closing quotation"),
        ("no-such-command-iotuner 1", "is not an executable command"),
        ("echo 1\nrm -rf /", "one command line"),
    ],
)
def test_a_command_that_cannot_be_a_metric_is_bad_input(text: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        command_metric(text)


def test_an_unknown_kind_is_bad_input() -> None:
    with pytest.raises(BadInput, match="--metric-kind rate: use counter or gauge"):
        command_metric("echo 1", kind="rate")


def test_the_number_parser_allows_white_space_only() -> None:
    assert parse_number("\n 3e2 \n", "x") == 300.0
    with pytest.raises(MetricError):
        parse_number("3,5", "x")


def reply(result: object, kind: str = "vector", status: str = "success") -> bytes:
    return json.dumps({"status": status, "data": {"resultType": kind, "result": result}}).encode()


def test_a_prometheus_reply_of_one_series_is_its_value() -> None:
    one = [{"metric": {"job": "pg"}, "value": [1700000000.0, "812.5"]}]
    assert parse_prometheus(reply(one), "q") == 812.5
    assert parse_prometheus(reply([1700000000.0, "3"], "scalar"), "q") == 3.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (reply([]), "returned 0 series, not one"),
        (reply([{"value": [0, "1"]}, {"value": [0, "2"]}]), "returned 2 series, not one"),
        (reply([], status="error"), "status 'error'"),
        (b"<html>", "not a query reply"),
        (reply([{"value": [0, 1]}]), "value is not a string"),
        (reply([{"value": [0, "NaN"]}]), "not a finite number"),
    ],
)
def test_a_prometheus_reply_that_is_not_one_number_is_refused(raw: bytes, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        parse_prometheus(raw, "q")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://x/", "localhost:9090", ""])
def test_a_prometheus_url_must_be_http(url: str) -> None:
    with pytest.raises(BadInput, match="an http:// or https:// URL"):
        prometheus_metric(url, "up")


def test_a_prometheus_server_that_does_not_answer_is_a_metric_error() -> None:
    metric = prometheus_metric("http://127.0.0.1:9/", "up", timeout=1)
    with pytest.raises(MetricError, match=r"prometheus http://127\.0\.0\.1:9/"):
        metric.read()
