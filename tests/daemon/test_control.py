"""The control socket, for real: a server in a selectors loop, real clients, real modes and uids."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import selectors
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.serving import recording, serving
from tuner.daemon.control import (
    DENIED,
    MAX_REQUEST,
    ControlError,
    ControlServer,
    DaemonUnreachable,
    request,
)

STATE = {"pid": 1, "state": "holding"}


def raw_exchange(path: Path, data: bytes, timeout: float = 5.0) -> bytes:
    """Send bytes as they are (no newline added) and read what comes back until EOF."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def test_request_and_reply_over_a_0600_socket(tmp_path: Path) -> None:
    path = tmp_path / "run" / "iotuner.sock"
    handler, seen = recording({"ok": True, "state": STATE})
    with serving(path, handler) as (_, events):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        # The daemon made the directory: only root may even look into it.
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        assert request(path, {"cmd": "status"}) == {"ok": True, "state": STATE}
        assert request(path, {"cmd": "reload"})["ok"]
        assert seen == [{"cmd": "status"}, {"cmd": "reload"}]
        assert events == []
    assert not path.exists()  # close() removed it


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    run.chmod(0o755)
    with serving(run / "iotuner.sock", recording({"ok": True})[0]):
        assert stat.S_IMODE(os.stat(run).st_mode) == 0o755
        assert stat.S_IMODE(os.stat(run / "iotuner.sock").st_mode) == 0o600


def test_a_stale_socket_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    # What a killed daemon leaves: the socket file, with nobody listening.
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    assert path.exists()
    with pytest.raises(DaemonUnreachable, match="connection refused"):
        request(path, {"cmd": "status"})
    with serving(path, recording({"ok": True, "state": STATE})[0]):
        assert request(path, {"cmd": "status"})["state"] == STATE


def test_a_live_daemon_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    with serving(path, recording({"ok": True, "who": "first"})[0]):
        with pytest.raises(ControlError, match="another iotuner daemon is listening on"):
            ControlServer(path, recording({"ok": True, "who": "second"})[0])
        assert request(path, {"cmd": "status"})["who"] == "first"


def test_a_file_in_the_way_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    path.write_text("not a socket")
    with pytest.raises(ControlError, match="exists and is not a socket"):
        ControlServer(path, recording({"ok": True})[0])
    assert path.read_text() == "not a socket"


def test_close_leaves_a_socket_another_daemon_made(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    first = ControlServer(path, recording({"ok": True})[0])
    os.unlink(path)  # someone removed it, and a second daemon started on the same path
    with serving(path, recording({"ok": True, "who": "second"})[0]):
        first.close()
        assert request(path, {"cmd": "status"})["who"] == "second"


def test_bad_requests_get_an_error_reply_and_the_server_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    handler, seen = recording({"ok": True})
    with serving(path, handler):
        assert b'"ok": false' in raw_exchange(path, b"this is not json\n")
        assert b"must be a JSON object" in raw_exchange(path, b"[1, 2]\n")
        assert b'has no \\"cmd\\"' in raw_exchange(path, b'{"command": "status"}\n')
        # Oversized: refused once past the limit, without reading the rest.
        started = time.monotonic()
        reply = raw_exchange(path, b"x" * (MAX_REQUEST + 4096))
        assert b"request longer than 64 KiB" in reply
        assert time.monotonic() - started < 1.5
        assert seen == []
        assert request(path, {"cmd": "status"}) == {"ok": True}


def test_a_stalled_client_holds_the_loop_about_a_second(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    server = ControlServer(path, recording({"ok": True})[0])
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
            stalled.connect(str(path))
            stalled.sendall(b'{"cmd": "sta')  # and never the rest
            started = time.monotonic()
            server.handle()
            held = time.monotonic() - started
            stalled.settimeout(2)
            reply = stalled.recv(4096)
        assert 0.9 < held < 1.5
        assert b"no request line within 1 s" in reply
    finally:
        server.close()


def test_handle_without_a_waiting_client_returns_at_once(tmp_path: Path) -> None:
    with ControlServer(tmp_path / "iotuner.sock", recording({"ok": True})[0]) as server:
        started = time.monotonic()
        assert server.handle() == []
        assert time.monotonic() - started < 0.1


def test_a_handler_bug_is_an_error_reply_not_a_dead_daemon(tmp_path: Path) -> None:
    path = tmp_path / "iotuner.sock"
    calls = []

    def handler(req: dict[str, Any]) -> dict[str, Any]:
        calls.append(req)
        if len(calls) == 1:
            raise KeyError("plan")
        return {"ok": True}

    with serving(path, handler):
        reply = request(path, {"cmd": "status"})
        assert reply == {"ok": False, "error": "internal error: KeyError: 'plan'"}
        assert request(path, {"cmd": "status"}) == {"ok": True}


def test_client_errors_name_the_socket(tmp_path: Path) -> None:
    missing = tmp_path / "none.sock"
    with pytest.raises(DaemonUnreachable) as caught:
        request(missing, {"cmd": "status"})
    assert str(caught.value) == (
        f"no iotuner daemon at {missing}: the socket does not exist (is `iotuner daemon` running?)"
    )
    assert caught.value.exit_code == 1
    # A daemon that accepts (the kernel does, from the backlog) but never answers.
    mute = tmp_path / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(mute))
        listener.listen(1)
        started = time.monotonic()
        with pytest.raises(DaemonUnreachable, match=f"at {mute} did not answer within 0.3 s"):
            request(mute, {"cmd": "status"}, timeout=0.3)
        assert time.monotonic() - started < 1.0


# --- not root: the file mode refuses, and SO_PEERCRED refuses when the mode is too wide.


@pytest.fixture
def searchable() -> Iterator[Path]:
    """A directory `nobody` may enter (pytest's tmp_path is below a root-only one)."""
    path = Path(tempfile.mkdtemp(prefix="iotuner-ctl-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def request_as_nobody(path: Path) -> tuple[int, int]:
    """Fork a child that becomes `nobody` and calls `request(path, status)`; (pid, the pipe
    its message comes on), for finish()."""
    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, then ask
        code = 70
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            try:
                reply = request(path, {"cmd": "status"}, timeout=5)
                message, code = repr(reply), 0
            except DaemonUnreachable as err:
                message, code = str(err), 1
            os.write(write_end, message.encode())
        except BaseException as err:  # anything else: say what, never return into pytest
            os.write(write_end, f"child failed: {err!r}".encode())
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def finish(pid: int, read_end: int) -> tuple[int, str]:
    """The child's exit status (0 answered, 1 DaemonUnreachable) and message."""
    with os.fdopen(read_end) as pipe:
        message = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), message


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or sys.platform != "linux", reason="needs root to become nobody"
)


@needs_root
def test_a_non_root_client_is_refused_by_the_file_mode(searchable: Path) -> None:
    path = searchable / "iotuner.sock"
    handler, seen = recording({"ok": True, "state": STATE})
    with serving(path, handler) as (_, events):
        pid, fd = request_as_nobody(path)
        code, message = finish(pid, fd)
        assert code == 1, message
        assert message == f"{path}: {DENIED}"
        assert request(path, {"cmd": "status"})["ok"]  # root still gets in
    assert seen == [{"cmd": "status"}] and events == []


@needs_root
def test_a_non_root_client_is_refused_by_its_uid_when_the_mode_is_wide(searchable: Path) -> None:
    path = searchable / "iotuner.sock"
    handler, seen = recording({"ok": True, "state": STATE})
    with ControlServer(path, handler) as server:
        path.chmod(0o666)  # an admin's mistake: the uid check still holds
        pid, fd = request_as_nobody(path)
        with selectors.DefaultSelector() as selector:
            selector.register(server, selectors.EVENT_READ)
            assert selector.select(timeout=10), "the child never connected"
            events = server.handle()
        code, message = finish(pid, fd)
    assert code == 1, message
    assert message == f"{path}: {DENIED}"
    assert seen == []  # the handler never saw the stranger's request
    (refused,) = events
    nobody = pwd.getpwnam("nobody").pw_uid
    assert refused.kind == "error" and refused.data["uid"] == nobody
    assert f"refused pid {pid} of uid {nobody}" in refused.message


# --- hostile requests (issue 17): bounded in size, depth and time, the daemon goes on.


def test_deeply_nested_json_is_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    # ~60 KB of nested arrays: json.loads raised RecursionError and the daemon exited.
    path = tmp_path / "iotuner.sock"
    handler, seen = recording({"ok": True})
    with serving(path, handler):
        reply = raw_exchange(path, b"[" * 30000 + b"]" * 30000 + b"\n")
        assert b"nested deeper than 32" in reply
        reply = raw_exchange(path, b'{"cmd": "status", "x": ' + b"[" * 40 + b"]" * 40 + b"}\n")
        assert b"nested deeper than 32" in reply
        assert request(path, {"cmd": "status"}) == {"ok": True}
    assert seen == [{"cmd": "status"}]


def test_the_size_limit_counts_the_last_chunk_too(tmp_path: Path) -> None:
    # One write of a valid request a little over the limit, its newline in the last chunk.
    path = tmp_path / "iotuner.sock"
    handler, seen = recording({"ok": True})
    line = json.dumps({"cmd": "status", "pad": "x" * (MAX_REQUEST + 1000)}).encode() + b"\n"
    with serving(path, handler):
        assert b"request longer than 64 KiB" in raw_exchange(path, line)
    assert seen == []


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({"cmd": "status", "events": "x"}, "events: expected a whole number from 0 to 1000"),
        ({"cmd": "status", "events": 10**9}, "events: expected a whole number from 0 to 1000"),
        ({"cmd": "status", "events": True}, "events: expected a whole number from 0 to 1000"),
        ({"cmd": "retune", "workload": "x\ny"}, "workload: expected a workload name"),
        ({"cmd": "reload", "extra": 1}, "unknown field 'extra' for reload"),
        ({"cmd": 7}, "unknown command 7 (status, reload, retune)"),
    ],
)
def test_requests_are_checked_by_allow_list(
    tmp_path: Path, payload: dict[str, Any], why: str
) -> None:
    path = tmp_path / "iotuner.sock"
    handler, seen = recording({"ok": True})
    with serving(path, handler):
        reply = request(path, payload)
    assert reply == {"ok": False, "error": why}
    assert seen == []
