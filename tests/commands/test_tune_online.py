"""`tune --online`'s refusals: one line, exit 2, before anything is changed or measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import iotuner


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--online"], "--online tunes a live --device: give both"),
        (["--device", "loop0"], "--online tunes a live --device: give both"),
        (["--metric", "echo 1"], "--metric, --prometheus and --max-worse go with --online"),
        (["--max-worse", "5"], "--metric, --prometheus and --max-worse go with --online"),
        (["--online", "--device", "loop0", "--target", "/tmp"], "concern trials"),
        (["--online", "--device", "loop0", "--workload", "stream-read"], "concern trials"),
        (["--online", "--device", "../sda"], "give a block device such as sdb"),
        (["--online", "--device", "nosuchdisk9"], "nosuchdisk9: no such block device"),
    ],
)
def test_what_an_online_tune_cannot_take_is_refused(
    state: Path, args: list[str], message: str
) -> None:
    result = iotuner("tune", *args, state=state)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def a_block_device() -> str:
    """A whole block device of this host with a request queue (only its name is used)."""
    found = sorted(p.name for p in Path("/sys/block").iterdir() if (p / "queue").is_dir())
    if not found:
        pytest.skip("no block device with a queue")
    return found[0]


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (["--metric", "no-such-command-iotuner"], "is not an executable command"),
        (["--metric", "/bin/echo fast"], "the metric's first read failed"),
        (["--metric", "/bin/echo 1", "--prometheus", "http://127.0.0.1:9/", "up"],
         "give --metric or --prometheus, not both"),
        (["--prometheus", "file:///etc/passwd", "up"], "an http:// or https:// URL"),
        (["--metric", "/bin/echo 1", "--metric-kind", "rate"], "use counter or gauge"),
    ],
)  # fmt: skip
def test_a_metric_that_cannot_be_read_is_refused_before_anything_changes(
    state: Path, metric: list[str], message: str
) -> None:
    # Every change goes through the journal first: no journal, nothing changed. (The queue's
    # files are not compared: another program on this host may change them meanwhile.)
    result = iotuner("tune", "--online", "--device", a_block_device(), *metric, state=state)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (state / "state.db").exists(), "no journal: nothing was about to change"
