"""sd_notify: what a service manager listening on NOTIFY_SOCKET receives."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuner.daemon.notify import Notifier


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket standing in for systemd's notify socket."""
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(2)
        yield sock, path


def _lines(sock: socket.socket) -> list[str]:
    return sock.recv(4096).decode().split("\n")


def test_ready_status_and_stopping_reach_the_manager(manager: tuple[socket.socket, str]) -> None:
    sock, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path})
    notifier.ready("holding: 3 setting(s) held")
    assert _lines(sock)[:2] == ["READY=1", "STATUS=holding: 3 setting(s) held"]
    notifier.stopping()
    assert _lines(sock) == ["STOPPING=1"]


def test_abstract_socket_names_work() -> None:
    name = f"iotuner-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).send("READY=1")
        assert _lines(sock) == ["READY=1"]


def test_watchdog_pings_at_half_the_interval(manager: tuple[socket.socket, str]) -> None:
    sock, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "10000000",
                         "WATCHDOG_PID": str(os.getpid())})  # fmt: skip
    assert notifier.watchdog_s == 10.0
    notifier.ping(1000.0)
    assert _lines(sock) == ["WATCHDOG=1"]
    assert notifier.ping_due(1003.0) == pytest.approx(2.0)
    notifier.ping(1003.0)  # not due yet: nothing sent
    notifier.ping(1005.0)
    assert _lines(sock) == ["WATCHDOG=1"]


def test_a_watchdog_meant_for_another_process_is_ignored() -> None:
    notifier = Notifier({"NOTIFY_SOCKET": "/nonexistent", "WATCHDOG_USEC": "1000000",
                         "WATCHDOG_PID": str(os.getpid() + 1)})  # fmt: skip
    assert notifier.watchdog_s is None


def test_without_a_manager_nothing_is_sent_and_nothing_fails() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert not notifier.send("READY=1")
    assert notifier.ping_due(0.0) is None
    # A socket that went away (manager restarting) is not an error for the daemon.
    assert not Notifier({"NOTIFY_SOCKET": "/nonexistent/notify"}).send("READY=1")


def test_a_manager_that_does_not_read_never_blocks_the_daemon(
    manager: tuple[socket.socket, str],
) -> None:
    _, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path})
    sent = [notifier.send(f"STATUS=update {i}") for i in range(2000)]
    assert sent[0] and not all(sent), "the queue filled up and later sends were dropped"
