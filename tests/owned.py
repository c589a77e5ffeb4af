"""What a lab test makes on the host, named so that no other test, xdist worker or lab can
meet it, and undone however the test ends.

Names carry the xdist worker, the process and a count (`unique`): two tests running at the same
time on different workers, or one after another in one process, never share a namespace, a
veth, a file or a state directory; the labs' own names carry their random lab id
(`iotuner-LABID-ROLE`, /dev/shm/iotuner-lab-LABID) and loop devices are the kernel's next free
ones (`losetup --find`), so neither meets a test's. Teardown is a finalizer registered before
anything is made: it runs when the test fails, and also when the fixture itself fails half-way,
which code after a fixture's `yield` would not.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.loopdev import loop_device

_COUNT = itertools.count()
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
IFNAMSIZ = 15  # the kernel's longest interface name


def _base36(number: int) -> str:
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = _DIGITS[digit] + text
        if number == 0:
            return text


def worker() -> str:
    """This xdist worker's id ("gw2"), "main" outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def unique(stem: str, limit: int = 64) -> str:
    """`stem` and a tag no other test, worker or process has now: the worker's number, the
    pid and a count, in base 36 so an interface name fits in IFNAMSIZ."""
    number = worker().removeprefix("gw")
    tag = f"{number if number.isdigit() else 'm'}{_base36(os.getpid())}{_base36(next(_COUNT))}"
    name = f"{stem}{tag}"
    if len(name) > limit:
        raise ValueError(f"{name!r} is longer than {limit} characters: shorten the stem")
    return name


class Owned:
    """A test's own names and what it made under them, undone newest first at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self._stack = ExitStack()

    def on_teardown(self, undo: Callable[[], object]) -> None:
        """Run `undo` at teardown, before what was registered earlier."""
        self._stack.callback(undo)

    def namespace(self) -> str:
        """A new network namespace's name (`iotuner-test-...`), deleted at teardown."""
        name = unique("iotuner-test-")
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=10)
        self.on_teardown(lambda: _quiet(["ip", "netns", "delete", name]))
        return name

    def veth(self, peer_namespace: str | None = None) -> tuple[str, str]:
        """A new veth pair (this end, its peer), the peer moved into `peer_namespace` when
        given; deleted at teardown (deleting one end deletes both)."""
        name = unique("iot", IFNAMSIZ - 1)
        peer = f"{name}p"
        where = ["netns", peer_namespace] if peer_namespace else []
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer, *where],
                       check=True, capture_output=True, timeout=10)  # fmt: skip
        self.on_teardown(lambda: _quiet(["ip", "link", "delete", name]))
        return name, peer

    def loop(self, size_mb: int = 64) -> str:
        """A fresh loop device's name (tests/loopdev.py), put back and detached at teardown."""
        return self._stack.enter_context(loop_device(size_mb))

    def state_dir(self, monkeypatch: pytest.MonkeyPatch) -> Path:
        """A new IOTUNER_STATE_DIR for the test, set in its environment."""
        path = self.tmp_path / unique("state-")
        monkeypatch.setenv("IOTUNER_STATE_DIR", str(path))
        return path

    def close(self) -> None:
        """Undo everything, newest first, going on past a failure (ExitStack's own rule)."""
        self._stack.close()


def _quiet(command: list[str]) -> None:
    subprocess.run(command, capture_output=True, timeout=10, check=False)


@pytest.fixture
def owned(request: pytest.FixtureRequest, tmp_path: Path) -> Owned:
    """Namespaces, veths, loop devices and state directories this test alone owns; torn down
    by a finalizer, also after a failure."""
    made = Owned(tmp_path)
    request.addfinalizer(made.close)
    return made
