"""Transfer trials: iperf3 between a sender and a receiver, memory or a file at either end.

As Hughes-Jones and Dallison measured a path (paper 003): memory to memory shows what the
network and TCP allow; a file read at the sender (`iperf3 -c -F`, disk to memory) or written
at the receiver (`iperf3 -s -F`, memory to disk) adds one disk end, so comparing them names
the part that limits the transfer. In the lab both ends are namespaces (`ip netns exec`).

iperf3 always reports JSON (`--json`); its output goes to a file and is read only when it is
under MAX_OUTPUT_BYTES. Every run is bounded in time (seconds + omit + a margin).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tuner.errors import BadInput, IotunerError
from tuner.lab.model import LabNetwork
from tuner.trials.tcp_limits import LimitSampler, TcpLimits
from tuner.tunables.netns import in_netns

IPERF3_MISSING = "iperf3 not found: install the Debian package iperf3"
MAX_OUTPUT_BYTES = 4 << 20
MAX_SECONDS = 300
MAX_OMIT = 60  # a 2 s RTT path's slow start (tuner/trials/transfer_length.py, RAMP_MOST_S)
INTERVAL_S = (0.1, 60.0)  # iperf3's bounds on -i
MAX_PARALLEL = 16
MAX_WINDOW = 1 << 30
MARGIN_S = 30.0
LISTEN_WAIT_S = 10.0
DEFAULT_PORT = 5201
_CONGESTION = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
_ADDRESS = re.compile(r"^[0-9A-Za-z.:-]{1,253}$")


class TransferError(IotunerError):
    """iperf3 failed or reported something unreadable; exit code 1."""


@dataclass(frozen=True)
class Ends:
    """Where the two iperf3 processes run: a network namespace each (None: this host's), and
    the receiver's address and port the sender connects to."""

    sender_ns: str | None
    receiver_ns: str | None
    address: str
    port: int = DEFAULT_PORT

    @classmethod
    def of_lab(cls, net: LabNetwork, port: int = DEFAULT_PORT) -> Ends:
        """The ends of the lab's network path."""
        return cls(net.sender, net.receiver, net.receiver_address, port)


@dataclass(frozen=True)
class TransferOptions:
    """One trial: how long, what TCP may use, and where the bytes come from and go.

    `seconds` are measured after `omit` seconds of slow start that iperf3 leaves out;
    `congestion` is set per connection (iperf3 -C; root may pick any available algorithm);
    `window` sets SO_SNDBUF/SO_RCVBUF (iperf3 -w; the kernel caps it at net.core.*mem_max),
    None leaves TCP's autotuning within tcp_rmem/tcp_wmem. `send_file` is read by the
    sender (disk to memory), `receive_file` written by the receiver (memory to disk).
    `interval` is iperf3's report interval in seconds (-i): one round trip lets the ramp's
    and the measured part's per-RTT goodput be read from the same run.
    """

    seconds: int = 10
    omit: int = 2
    interval: float = 1.0
    parallel: int = 1
    congestion: str | None = None
    window: int | None = None
    send_file: str | None = None
    receive_file: str | None = None

    @property
    def kind(self) -> str:
        """memory-to-memory, disk-to-memory, memory-to-disk or disk-to-disk."""
        source = "disk" if self.send_file else "memory"
        sink = "disk" if self.receive_file else "memory"
        return f"{source}-to-{sink}"


@dataclass(frozen=True)
class TransferResult:
    """What one iperf3 run measured (Mbit/s are 10^6 bits of TCP payload per second).

    `received_mbit` is the receiver's goodput over the measured seconds, `intervals_mbit` its
    goodput per report interval (their spread shows a steady path or a sawtooth; the
    sender's figures, which count bytes still in its buffer, when the receiver's are not to
    be had); `rtt_ms` and `max_cwnd_bytes` are the sender's TCP view (mean smoothed RTT,
    largest congestion window).
    `committed_mbit` (memory to disk, disk to disk): the bytes of the measured seconds over
    the time until they were on the disk (`committed`: fsync after iperf3 ends), since
    iperf3's buffered writes would otherwise only show the page cache; 0 without a receive
    file.
    `min_rtt_ms` is the least RTT the sender saw (the path's own, without queues) and
    `max_snd_wnd_bytes` the largest window the receiver advertised; `limits` what held the
    sender back, as its kernel counted it (tcp_limits.py; None when no sample was taken).
    """

    kind: str
    seconds: float
    sent_mbit: float
    received_mbit: float
    retransmits: int
    intervals_mbit: tuple[float, ...]
    rtt_ms: float
    max_cwnd_bytes: int
    congestion: str
    sender_cpu_percent: float
    receiver_cpu_percent: float
    committed_mbit: float = 0.0
    min_rtt_ms: float = 0.0
    max_snd_wnd_bytes: int = 0
    limits: TcpLimits | None = None
    remote_host: str = ""
    ramp_mbit: tuple[float, ...] = ()

    @property
    def goodput_mbit(self) -> float:
        """What reached its end: the committed rate when a file was written, else received."""
        return self.committed_mbit if self.kind.endswith("-to-disk") else self.received_mbit


def check_options(options: TransferOptions) -> None:
    """BadInput (one line) unless every option is within its bounds."""
    if not 1 <= options.seconds <= MAX_SECONDS:
        raise BadInput(f"transfer seconds must be 1 to {MAX_SECONDS}, got {options.seconds}")
    if not 0 <= options.omit <= MAX_OMIT:
        raise BadInput(f"transfer omit must be 0 to {MAX_OMIT} seconds, got {options.omit}")
    if not INTERVAL_S[0] <= options.interval <= INTERVAL_S[1]:
        raise BadInput(f"transfer interval must be {INTERVAL_S[0]:g} to {INTERVAL_S[1]:g} "
                       f"seconds, got {options.interval!r}")  # fmt: skip
    if not 1 <= options.parallel <= MAX_PARALLEL:
        raise BadInput(f"transfer parallel must be 1 to {MAX_PARALLEL}, got {options.parallel}")
    if options.congestion is not None and not _CONGESTION.fullmatch(options.congestion):
        raise BadInput(f"congestion control must match {_CONGESTION.pattern}, "
                       f"got {options.congestion!r}")  # fmt: skip
    if options.window is not None and not 4096 <= options.window <= MAX_WINDOW:
        raise BadInput(f"window must be 4096 to {MAX_WINDOW} bytes, got {options.window}")
    for label, path in (("send file", options.send_file), ("receive file", options.receive_file)):
        if path is not None and (not path.startswith("/") or "\0" in path):
            raise BadInput(f"{label} must be an absolute path, got {path!r}")
    if options.send_file is not None and not Path(options.send_file).is_file():
        raise BadInput(f"send file {options.send_file}: no such file")
    if options.receive_file is not None and not Path(options.receive_file).parent.is_dir():
        raise BadInput(f"receive file {options.receive_file}: its directory does not exist")


def run_transfer(ends: Ends, options: TransferOptions) -> TransferResult:
    """Run one iperf3 trial between `ends`; TransferError if iperf3 fails or times out."""
    _check(ends, options)
    # JSON at the receiver, a report each interval: the client fetches it (--get-server-output)
    # and its per-interval figures are what arrived, not what the sender buffered.
    server_cmd = ["iperf3", "-s", "-1", "-B", ends.address, "-p", str(ends.port), "--json",
                  "-i", f"{options.interval:g}"]  # fmt: skip
    if options.receive_file:
        server_cmd += ["-F", options.receive_file]
    server = subprocess.Popen(
        in_netns(ends.receiver_ns, server_cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(ends)
        with LimitSampler(ends.sender_ns, ends.address, ends.port) as sampler:
            data = _client_json(ends, options)
        ended = time.monotonic()
        result = replace(parse_result(data, options.kind), limits=sampler.last)
    finally:
        _end(server)
    if options.receive_file:
        _fsync(options.receive_file)
        result = replace(result, committed_mbit=committed(result, time.monotonic() - ended))
    return result


def committed(result: TransferResult, flush_s: float) -> float:
    """Mbit/s on the receiver's disk: the bytes received in the measured seconds over those
    seconds plus the time the flush after them took (`flush_s`: from the client's end until
    fsync returned).

    Every byte of the window is on the disk by then. Against the disk's true rate it errs
    both ways by little: low when the disk spent part of the window on pages left from the
    seconds iperf3 left out, high by what it wrote during iperf3's closing exchange (a few
    round trips between the window's end and the client's), at most the pages the receiver
    may keep dirty (the lab's disks: a quarter second of writes, 5 % of a 5 s window). The
    whole file over the whole run, the earlier figure, counted slow start as disk time:
    0.72-0.82 of the disk's write on a 100 ms path while the disk wrote at its rate.
    """
    window = result.received_mbit * result.seconds
    return round(window / (result.seconds + max(flush_s, 0.0)), 3) if result.seconds else 0.0


def client_command(ends: Ends, options: TransferOptions) -> list[str]:
    """The sender's iperf3 command line (JSON out, bounded time, a report each interval)."""
    cmd = [
        "iperf3", "-c", ends.address, "-p", str(ends.port), "--json",
        "-i", f"{options.interval:g}",
        "-t", str(options.seconds), "-O", str(options.omit), "-P", str(options.parallel),
        "--connect-timeout", "5000", "--get-server-output",
    ]  # fmt: skip
    if options.congestion:
        cmd += ["-C", options.congestion]
    if options.window:
        cmd += ["-w", str(options.window)]
    if options.send_file:
        cmd += ["-F", options.send_file]
    return in_netns(ends.sender_ns, cmd)


def run_client(ends: Ends, options: TransferOptions) -> TransferResult:
    """The sender's side alone, against an `iperf3 -s` already listening at `ends` (a named
    peer's), with what held the sender back (`limits`, sampled here at the sender);
    TransferError if it cannot connect, fails or times out."""
    _check(ends, options)
    with LimitSampler(ends.sender_ns, ends.address, ends.port) as sampler:
        data = _client_json(ends, options)
    return replace(parse_result(data, options.kind), limits=sampler.last)


def _check(ends: Ends, options: TransferOptions) -> None:
    check_options(options)
    if not _ADDRESS.fullmatch(ends.address) or not 1024 <= ends.port <= 65535:
        raise BadInput(f"bad peer {ends.address!r} port {ends.port}")
    if shutil.which("iperf3") is None:
        raise TransferError(IPERF3_MISSING)


def _client_json(ends: Ends, options: TransferOptions) -> dict[str, Any]:
    budget = options.seconds + options.omit + MARGIN_S
    with tempfile.TemporaryFile() as out:
        try:
            done = subprocess.run(
                client_command(ends, options),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.DEVNULL,
                timeout=budget,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TransferError(f"iperf3 did not finish within {budget:.0f} s") from None
        size = out.tell()
        if size > MAX_OUTPUT_BYTES:
            raise TransferError(f"iperf3 wrote {size} bytes, more than {MAX_OUTPUT_BYTES}")
        out.seek(0)
        text = out.read().decode(errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        raise TransferError(f"iperf3 exited {done.returncode} without JSON") from None
    if not isinstance(data, dict):
        raise TransferError("iperf3's JSON is not an object")
    if isinstance(data.get("error"), str):
        raise TransferError(f"iperf3: {' '.join(data['error'].split())[:200]}")
    return data


def parse_result(data: dict[str, Any], kind: str) -> TransferResult:
    """The figures of an iperf3 client's JSON report; TransferError if one is missing."""
    try:
        end = data["end"]
        sent, received = end["sum_sent"], end["sum_received"]
        streams = [s["sender"] for s in end["streams"]]
        reports = _receiver_intervals(data) or data["intervals"]
        intervals = tuple(
            round(_number(i["sum"]["bits_per_second"]) / 1e6, 3)
            for i in reports
            if not i["sum"].get("omitted", False)
        )
        ramp = tuple(
            round(_number(i["sum"]["bits_per_second"]) / 1e6, 3)
            for i in reports
            if i["sum"].get("omitted", False)
        )
        cpu = end.get("cpu_utilization_percent", {})
        rtts = [_number(s.get("mean_rtt", 0)) for s in streams]
        least = [_number(s["min_rtt"]) for s in streams if s.get("min_rtt")]
        return TransferResult(
            kind=kind,
            seconds=round(_number(received["seconds"]), 3),
            sent_mbit=round(_number(sent["bits_per_second"]) / 1e6, 3),
            received_mbit=round(_number(received["bits_per_second"]) / 1e6, 3),
            retransmits=int(_number(sent.get("retransmits", 0))),
            intervals_mbit=intervals,
            rtt_ms=round(sum(rtts) / len(rtts) / 1000, 3) if rtts else 0.0,
            max_cwnd_bytes=int(
                max((_number(s.get("max_snd_cwnd", 0)) for s in streams), default=0)
            ),
            congestion=str(end.get("sender_tcp_congestion", ""))[:16],
            sender_cpu_percent=round(_number(cpu.get("host_total", 0)), 1),
            receiver_cpu_percent=round(_number(cpu.get("remote_total", 0)), 1),
            min_rtt_ms=round(min(least) / 1000, 3) if least else 0.0,
            max_snd_wnd_bytes=int(
                max((_number(s.get("max_snd_wnd", 0)) for s in streams), default=0)
            ),
            remote_host=_remote_host(data.get("start")),
            ramp_mbit=ramp,
        )
    except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        raise TransferError(f"iperf3's JSON is missing or malformed at {err}") from None


def _receiver_intervals(data: dict[str, Any]) -> list[Any] | None:
    """The receiver's per-interval reports, when its iperf3 wrote JSON and the client fetched
    it (`server_output_json`; a named peer's server may write text instead): None otherwise."""
    server = data.get("server_output_json")
    reports = server.get("intervals") if isinstance(server, dict) else None
    return reports if isinstance(reports, list) and reports else None


def _remote_host(start: object) -> str:
    """The address the client connected to, as iperf3's `start.connected` names it ("" when
    it does not, or names something that is not an address)."""
    connected = start.get("connected") if isinstance(start, dict) else None
    first = connected[0] if isinstance(connected, list) and connected else None
    host = first.get("remote_host") if isinstance(first, dict) else None
    return host if isinstance(host, str) and _ADDRESS.fullmatch(host) else ""


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"a number, got {value!r}")
    return float(value)


def _wait_listening(ends: Ends) -> None:
    """Until the receiver's iperf3 listens on its port (the client would fail at once)."""
    deadline = time.monotonic() + LISTEN_WAIT_S
    query = in_netns(ends.receiver_ns, ["ss", "-Hltn", f"sport = :{ends.port}"])
    while time.monotonic() < deadline:
        done = subprocess.run(query, capture_output=True, text=True, timeout=10, check=False)
        if done.stdout.strip():
            return
        time.sleep(0.05)
    raise TransferError(f"iperf3 -s did not listen on port {ends.port} within {LISTEN_WAIT_S} s")


def _fsync(path: str) -> int:
    """Flush `path` to its disk; its size in bytes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _end(server: subprocess.Popen[bytes]) -> None:
    """The server ends by itself after one test (-1); end it if the test never came."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.wait(timeout=2)
        return
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
