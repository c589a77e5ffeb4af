"""The host's own settings that lab tests change and must put back: a session that ends with
one changed fails, naming it and the lab test it changed during, so no later run measures on a
host it did not expect without being told.

vm.dirty_ratio was once found at 40 (TuneD's value, set by tests/benchmarks/test_claims.py's
killed run) with nothing journaled: the test's rollback ran only when its first checks passed,
and its journal lived in a tmp directory a later pytest run deletes. Every writeback threshold
and every network setting of the initial namespace a lab or plan can write is watched (the
namespaced net.ipv4 ones here are the host's own, as the pytest process sees them); reading
them is 15 small files, cheap enough after every lab test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

KEYS = (
    "vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes", "vm.dirty_background_bytes",
    "vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs",
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.core.default_qdisc",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_allowed_congestion_control",
)  # fmt: skip


ROOT_VARIABLE = "IOTUNER_TEST_HOST_ROOT"
"""Where the watch reads /proc/sys from: "/" unless tests/test_host_settings.py points a nested
session at a fixture tree, to see the check fail a session."""


def _path(root: Path, key: str) -> Path:
    return root.joinpath("proc/sys", *key.split("."))


def read_settings(root: Path = Path("/")) -> dict[str, str]:
    """Each watched key's value under `root` (whitespace collapsed, as sysctl prints it); a key
    this kernel lacks is left out."""
    found: dict[str, str] = {}
    for key in KEYS:
        try:
            found[key] = " ".join(_path(root, key).read_text().split())
        except FileNotFoundError:
            continue
    return found


def moved(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'key before -> after' for each key whose value differs."""
    return [
        f"{key} {before[key]} -> {after.get(key)}"
        for key in before
        if after.get(key) != before[key]
    ]


class Watch:
    """The settings as the session found them, and which lab test each change showed after."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.start = read_settings(root)
        self.last = self.start
        self.seen: list[str] = []
        self.serial_lab_tests = 0

    def after(self, nodeid: str, serial: bool) -> None:
        """Read the settings after a lab test; note what moved during it."""
        self.serial_lab_tests += serial
        now = read_settings(self.root)
        if now != self.last:
            self.seen.append(f"after {nodeid}: {'; '.join(moved(self.last, now))}")
        self.last = now


@pytest.fixture(scope="session", autouse=True)
def _host_settings_watch() -> Iterator[Watch]:
    """A session that ran a serial lab test (lab, not lab_parallel: the ones that may change
    the host's settings) ends with them as it began, or fails naming what moved and the lab
    test it moved during. Other sessions are not held to what another run on the machine did
    meanwhile: their tests write fixture trees or namespaces of their own only. Nothing
    is written back: on a machine shared with another run (a benchmark's trial holds
    vm.dirty_bytes while it measures) a blind write would undo that run's setting; the test
    that changed a value puts it back itself (its finalizer), and this says which did not."""
    watch = Watch(Path(os.environ.get(ROOT_VARIABLE, "/")))
    yield watch
    left = moved(watch.start, read_settings(watch.root))
    if left and watch.serial_lab_tests:
        where = "\n  ".join(watch.seen) or "outside any lab test"
        pytest.fail(f"the session left the host's settings changed: {'; '.join(left)}\n  {where}")


@pytest.fixture(autouse=True)
def _host_settings_after_lab_test(
    request: pytest.FixtureRequest, _host_settings_watch: Watch
) -> Iterator[None]:
    """After each lab test (its own finalizers have run: this fixture is torn down last), the
    settings read again, so the session's check can name the test a change came from."""
    yield
    if request.node.get_closest_marker("lab") is not None:
        serial = request.node.get_closest_marker("lab_parallel") is None
        _host_settings_watch.after(request.node.nodeid, serial)
