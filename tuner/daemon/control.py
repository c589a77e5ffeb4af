"""The daemon's control socket: one JSON line in, one JSON line out, root only.

    server = ControlServer(Path("/run/iotuner/iotuner.sock"), handler)  # bound, 0600
    selector.register(server, EVENT_READ)  ...  events = server.handle()
    request(Path("/run/iotuner/iotuner.sock"), {"cmd": "status"})  # -> {"ok": true, ...}

The file mode is the gate: the socket is born 0600 (bound under a umask, so it is never wider)
and only root can connect. SO_PEERCRED is checked as well, in case someone widens the mode.
A connection is served in full within CLIENT_SECONDS: a client that stalls is dropped, so it
can delay the daemon's loop by about a second at most. A request is bounded in size
(MAX_REQUEST, the whole line) and nesting (MAX_DEPTH, checked before json.loads, which would
recurse) and checked against REQUESTS, the commands and their fields, before the handler sees it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import socket
import stat
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.daemon.events import Event, event
from tuner.errors import IotunerError

MAX_REQUEST = 64 * 1024
"""Bytes a request line may take; requests are a few dozen bytes."""
MAX_REPLY = 16 * 1024 * 1024
"""Bytes the client reads at most (a status with every event is far below)."""
CLIENT_SECONDS = 1.0
"""How long the daemon gives one connection, from accept to the reply sent."""
MAX_DEPTH = 32
"""Nesting a request may have; requests are flat objects."""
_WORKLOAD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@ -]{0,127}")


def _events_field(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 1000:
        return None
    return "expected a whole number from 0 to 1000"


def _workload_field(value: object) -> str | None:
    if value is None or (isinstance(value, str) and _WORKLOAD.fullmatch(value)):
        return None
    return "expected a workload name"


REQUESTS: dict[str, dict[str, Callable[[object], str | None]]] = {
    "status": {"events": _events_field},
    "reload": {},
    "retune": {"workload": _workload_field},
}
"""The commands a client may send and, per command, the fields it may carry with their checks."""
DENIED = "permission denied: only root may talk to the daemon"

log = logging.getLogger("iotuner.daemon")
Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ControlError(IotunerError):
    """The control socket cannot be set up (another daemon answers, a file is in the way)."""


class DaemonUnreachable(IotunerError):
    """No daemon answered on the socket (missing, refused, not permitted, timed out); exit 1."""


class ControlServer:
    """A listening Unix socket for a selectors loop; handle() serves one connection."""

    def __init__(self, path: Path, handler: Handler) -> None:
        """Bind `path` (0600; its directory made 0700 when missing); ControlError when another
        daemon answers there or something that is not a socket is in the way."""
        self.path = path
        self._handler = handler
        self._allowed = {0, os.geteuid()}  # root, and the daemon's own user when run unprivileged
        _make_parent(path)
        _clear_stale(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket file is created 0600: no moment with a wider mode
        try:
            sock.bind(str(path))
        except OSError as err:
            sock.close()
            raise ControlError(
                f"cannot create the control socket {path}: {err.strerror or err}"
            ) from None
        finally:
            os.umask(old)
        sock.listen(16)
        sock.setblocking(False)
        self._sock = sock
        self._inode = os.stat(path).st_ino

    def fileno(self) -> int:
        """The listening socket's descriptor, readable when a client connects."""
        return self._sock.fileno()

    def handle(self) -> list[Event]:
        """Serve one waiting connection, if any: read a request line, answer it, close.

        Never raises for a client's fault: a bad request gets {"ok": false, "error": ...}; a
        stranger gets refused, which is reported as an "error" event.
        """
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            return []
        except OSError as err:  # EMFILE and the like: the loop goes on, the client retries
            return [event("error", f"control socket: cannot accept: {err.strerror or err}")]
        with conn:
            deadline = time.monotonic() + CLIENT_SECONDS
            uid, pid = _peer(conn)
            if uid not in self._allowed:
                _send(conn, {"ok": False, "error": DENIED, "denied": True}, deadline)
                return [
                    event(
                        "error", f"control socket: refused pid {pid} of uid {uid}", uid=uid, pid=pid
                    )
                ]
            request = _read_request(conn, deadline)
            if isinstance(request, str):
                reply: dict[str, Any] = {"ok": False, "error": request}
            else:
                reply = self._answer(request)
            _send(conn, reply, deadline)
        return []

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self._handler(request)
        except Exception as err:  # the daemon outlives a handler bug; the client sees it
            log.exception("control request %r failed", request.get("cmd"))
            return {"ok": False, "error": f"internal error: {type(err).__name__}: {err}"}
        return reply

    def close(self) -> None:
        """Stop listening and remove the socket file, unless another daemon's replaced it."""
        self._sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)

    def __enter__(self) -> ControlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request(path: Path, payload: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Send one request to the daemon at `path` and return its reply.

    Raises DaemonUnreachable with one line naming the socket: no daemon (no socket, connection
    refused), permission denied (only root), or no answer within `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(timeout)
            sock.connect(str(path))
            # A refusal can come before the request is read: its reply is waiting all the same.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(json.dumps(payload).encode() + b"\n")
            data = _read_line(sock, deadline, MAX_REPLY)
        except FileNotFoundError:
            raise DaemonUnreachable(
                f"no iotuner daemon at {path}: the socket does not exist "
                "(is `iotuner daemon` running?)"
            ) from None
        except ConnectionRefusedError:
            raise DaemonUnreachable(
                f"no iotuner daemon at {path}: connection refused "
                "(a socket left by a daemon that is gone)"
            ) from None
        except PermissionError:
            raise DaemonUnreachable(f"{path}: {DENIED}") from None
        except TimeoutError:
            raise DaemonUnreachable(
                f"the iotuner daemon at {path} did not answer within {timeout:g} s"
            ) from None
        except _TooLongError:
            raise DaemonUnreachable(
                f"the daemon at {path} sent a reply longer than {MAX_REPLY // 2**20} MiB"
            ) from None
        except OSError as err:
            raise DaemonUnreachable(
                f"cannot talk to the daemon at {path}: {err.strerror or err}"
            ) from None
    if not data:
        raise DaemonUnreachable(f"the daemon at {path} closed the connection without answering")
    # As for requests: the nesting is counted before json.loads, which recurses (a reply of
    # 100,000 brackets was a RecursionError), and NaN and Infinity, which json.loads takes
    # and JSON has not, make the reply "not JSON".
    if _depth(data) > MAX_DEPTH:
        raise DaemonUnreachable(f"the daemon at {path} sent a reply nested deeper than {MAX_DEPTH}")
    try:
        reply = json.loads(data, parse_constant=_no_constant)
    except ValueError:
        raise DaemonUnreachable(f"the daemon at {path} sent a reply that is not JSON") from None
    if not isinstance(reply, dict):
        raise DaemonUnreachable(f"the daemon at {path} sent a reply that is not an object")
    if reply.get("denied"):
        raise DaemonUnreachable(f"{path}: {DENIED}")
    return reply


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _make_parent(path: Path) -> None:
    parent = path.parent
    if parent.is_dir():
        return  # an existing directory (/run, a RuntimeDirectory) keeps its mode
    old = os.umask(0o077)
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        raise ControlError(
            f"cannot create {parent} for the control socket: {err.strerror or err}"
        ) from None
    finally:
        os.umask(old)


def _clear_stale(path: Path) -> None:
    """Remove a socket a dead daemon left; refuse a live one or a file that is not a socket."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlError(
            f"{path} exists and is not a socket: remove it or set daemon.socket to another path"
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(CLIENT_SECONDS)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            pass  # nobody listens: stale
        except OSError as err:
            if err.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise ControlError(
                    f"cannot check the existing socket {path}: {err.strerror or err}"
                ) from None
        else:
            raise ControlError(
                f"another iotuner daemon is listening on {path}; stop it first "
                "(or set daemon.socket to another path)"
            )
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    log.info("removed the stale control socket %s", path)


def _peer(conn: socket.socket) -> tuple[int, int]:
    """(uid, pid) of the process at the other end, from the kernel."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return uid, pid


def _read_line(sock: socket.socket, deadline: float, limit: int) -> bytes:
    """Bytes up to the first newline (or EOF); TimeoutError past the deadline, _TooLongError
    beyond `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        end = chunk.find(b"\n")
        part = chunk if end < 0 else chunk[:end]
        size += len(part)
        if size > limit:  # the line so far, the part before the newline included
            raise _TooLongError
        chunks.append(part)
        if end >= 0:
            return b"".join(chunks)


class _TooLongError(Exception):
    """A line beyond its limit."""


def _read_request(conn: socket.socket, deadline: float) -> dict[str, Any] | str:
    """The request object, checked against REQUESTS; or why there is none to answer."""
    try:
        data = _read_line(conn, deadline, MAX_REQUEST)
    except TimeoutError:
        return f"no request line within {CLIENT_SECONDS:g} s"
    except _TooLongError:
        return f"request longer than {MAX_REQUEST // 1024} KiB"
    except OSError as err:
        return f"cannot read the request: {err.strerror or err}"
    if _depth(data) > MAX_DEPTH:
        return f"the request is nested deeper than {MAX_DEPTH}"
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return "the request is not a JSON line"
    if not isinstance(found, dict):
        return 'the request must be a JSON object such as {"cmd": "status"}'
    if "cmd" not in found:
        return 'the request has no "cmd"'
    return check_request(found) or found


def check_request(request: dict[str, Any]) -> str | None:
    """Why a request is not one of REQUESTS with its own fields, or None."""
    cmd = request.get("cmd")
    fields = REQUESTS.get(cmd) if isinstance(cmd, str) else None
    if fields is None:
        return f"unknown command {repr(cmd)[:40]} ({', '.join(REQUESTS)})"
    for name, value in request.items():
        if name == "cmd":
            continue
        if name not in fields:
            return f"unknown field {str(name)[:40]!r} for {cmd}"
        why = fields[name](value)
        if why is not None:
            return f"{name}: {why}"
    return None


def _depth(data: bytes) -> int:
    """The deepest nesting of [ and { in a JSON text, strings skipped; counted without
    recursion so that no request can exhaust the stack."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _send(conn: socket.socket, reply: dict[str, Any], deadline: float) -> None:
    """Send the reply line before the deadline; a client that went away is not our problem."""
    data = json.dumps(reply, default=str).encode() + b"\n"
    try:
        # A reply fits the socket buffer or the client reads it now; never wait past the deadline.
        conn.settimeout(max(deadline - time.monotonic(), 0.05))
        conn.sendall(data)
    except OSError as err:
        log.debug("control client went away before its reply: %s", err)
