"""The lab's network path against its spec: round-trip time, rate, and what the delay line costs.

    python -m benchmarks.lab_network [--rates 200,500,1000] [--rtt 100] [--seconds 8] [--repeats 3]

As root. For each rate, a lab with that rate and RTT and large TCP buffers (32 MiB autotuning
ceilings at both ends, above every bandwidth-delay product here) is built, then `--repeats`
times:

1. 20 pings from the sender to the receiver, 0.2 s apart (the path idle): mean RTT;
2. one iperf3 run memory to memory (`--seconds` after 3 s left out for slow start; cubic,
   which holds the path full, where the host's default bbr halves its window for 0.2 s every
   10 s to probe the RTT, which shows as one slow second): the
   receiver's goodput against the rate's goodput (the rate counts Ethernet frames: MTU + 14
   bytes carry MTU - 52 of TCP payload), the per-second spread, retransmits, and the delay
   line's CPU over the run as a share of one core (/proc/PID/stat). With `--congestion
   reno,cubic,bbr` each algorithm runs in turn in every repeat, side by side on the same
   path (with `--loss`: how much of a lossy path each keeps).

With `--disk-write MBPS` it measures instead what paper 003's Figure 7 shows: a disk's write
throughput alone and while a network stream arrives at the same host. A lab with one path
(`--rates`' first rate, `--rtt`) and a receiver disk throttled to MBPS MB/s with xfs; then
`--repeats` times: `dd` writes `--seconds` worth of the disk's rate (O_DIRECT, 1 MiB blocks)
to a file on it alone, then again while iperf3 runs memory to memory into the receiver (started
2 s before, so past slow start). Both figures are side by side in one run, no target.

State goes to $IOTUNER_STATE_DIR, /tmp/iotuner-bench-net-state when unset; each lab is torn
down after its rate, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.lab_measure import cpu_seconds

DEFAULT_STATE = "/tmp/iotuner-bench-net-state"
_RTT = re.compile(r"= [\d.]+/([\d.]+)/[\d.]+/([\d.]+) ms")
SPEC = """name: bench-net
network:
  rate_mbit: {rate}
  rtt_ms: {rtt}
  mtu: {mtu}
  loss_percent: {loss}
  sender: {{tcp_rmem: 4096 131072 33554432, tcp_wmem: 4096 16384 33554432}}
  receiver: {{tcp_rmem: 4096 131072 33554432, tcp_wmem: 4096 16384 33554432}}
"""


def ping_ms(sender: str, address: str) -> float:
    """Mean RTT of 20 pings (after one that resolves the address)."""
    ping = ["ip", "netns", "exec", sender, "ping", "-q", "-n"]
    subprocess.run([*ping, "-c", "1", address], capture_output=True, check=True)
    out = subprocess.run([*ping, "-c", "20", "-i", "0.2", address], capture_output=True,
                         text=True, check=True, timeout=60).stdout  # fmt: skip
    match = _RTT.search(out)
    if not match:
        raise RuntimeError(f"ping: {out}")
    return float(match.group(1))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rates", default="200,500,1000")
    parser.add_argument("--rtt", type=float, default=100.0)
    parser.add_argument("--mtu", type=int, default=1500)
    parser.add_argument("--loss", type=float, default=0.0, help="loss_percent (turns GSO off)")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--congestion",
        default="cubic",
        help="iperf3 -C, or several comma-separated, run in turn in each repeat; '' the default",
    )
    parser.add_argument("--disk-write", type=float, default=0.0, help="MB/s: Figure 7 mode")
    args = parser.parse_args(argv)
    os.environ.setdefault("IOTUNER_STATE_DIR", DEFAULT_STATE)
    Path(os.environ["IOTUNER_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
    if args.disk_write:
        return disk_write(args)
    from tuner.lab import lab_down, lab_up, parse_spec
    from tuner.lab.record import load_record, record_path
    from tuner.state import state_dir
    from tuner.trials.transfer import Ends, TransferOptions, run_transfer

    print("rate Mbit/s | RTT ms | ping ms | goodput Mbit/s (expected) | per second | "
          "retransmits | TCP | delay line CPU")  # fmt: skip
    for rate in (float(r) for r in args.rates.split(",")):
        text = SPEC.format(rate=rate, rtt=args.rtt, mtu=args.mtu, loss=args.loss)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as spec_file:
            spec_file.write(text)
            spec_file.flush()
            lab = lab_up(parse_spec(text, spec_file.name, "bench-net"))
        try:
            assert lab.network is not None
            net = lab.network
            record = load_record(record_path(state_dir()))
            assert record is not None
            pid = int(next(s for s in record.steps if s.kind == "relay").detail["pid"])
            expected = rate * (args.mtu - 52) / (args.mtu + 14)
            for _ in range(args.repeats):
                rtt = ping_ms(net.sender, net.receiver_address)
                for congestion in args.congestion.split(","):
                    before, started = cpu_seconds([pid]), time.monotonic()
                    options = TransferOptions(args.seconds, omit=3, congestion=congestion or None)
                    result = run_transfer(Ends.of_lab(net), options)
                    cpu = (cpu_seconds([pid]) - before) / (time.monotonic() - started)
                    per_second = result.intervals_mbit
                    print(
                        f"{rate:g} | {args.rtt:g} | {rtt:.2f} | {result.received_mbit:.1f} "
                        f"({expected:.1f}, {result.received_mbit / expected - 1:+.1%}) | "
                        f"{min(per_second):.1f}-{max(per_second):.1f} | {result.retransmits} | "
                        f"{result.congestion} | {cpu:.1%}",
                        flush=True,
                    )
        finally:
            lab_down()
    return 0


DISK_SPEC = """name: bench-net-disk
network:
  rate_mbit: {rate}
  rtt_ms: {rtt}
  sender: {{tcp_rmem: 4096 131072 33554432, tcp_wmem: 4096 16384 33554432}}
  receiver: {{tcp_rmem: 4096 131072 33554432, tcp_wmem: 4096 16384 33554432, disk: dst}}
disks: [{{name: dst, read_mbps: {mbps}, write_mbps: {mbps}, iops: 100000, size: {mib}MiB,
         fs: xfs}}]
"""


def dd_write_mbps(path: Path, mib: int) -> float:
    """MB/s of `mib` MiB written with O_DIRECT in 1 MiB blocks, flushed."""
    started = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "oflag=direct",
                    "conv=fsync", "status=none"], check=True, timeout=600)  # fmt: skip
    elapsed = time.monotonic() - started
    path.unlink()
    return mib * (1 << 20) / elapsed / 1e6


def disk_write(args: argparse.Namespace) -> int:
    """Figure 7: the receiver disk's write throughput alone and beside a network stream."""
    from tuner.lab import lab_down, lab_up, parse_spec
    from tuner.trials.transfer import Ends, TransferOptions, run_transfer

    rate = float(args.rates.split(",")[0])
    mib = max(64, int(args.disk_write * args.seconds * 1e6 / (1 << 20)))
    size = max(512, mib + 256)
    text = DISK_SPEC.format(rate=rate, rtt=args.rtt, mbps=args.disk_write, mib=size)
    lab = lab_up(parse_spec(text, "bench-net-disk.yaml", "bench-net-disk"))
    print("disk MB/s (spec) | alone MB/s | with a stream MB/s (ratio) | stream Mbit/s")
    try:
        assert lab.network is not None and lab.network.receiver_mount is not None
        target = Path(lab.network.receiver_mount) / "written"
        ends = Ends.of_lab(lab.network)
        options = TransferOptions(args.seconds + 6, omit=0, congestion=args.congestion or None)
        for _ in range(args.repeats):
            alone = dd_write_mbps(target, mib)
            with ThreadPoolExecutor(1) as pool:
                stream = pool.submit(run_transfer, ends, options)
                time.sleep(2)
                beside = dd_write_mbps(target, mib)
                received = stream.result().received_mbit
            print(f"{args.disk_write:g} | {alone:.1f} | {beside:.1f} ({beside / alone:.3f}) | "
                  f"{received:.1f}", flush=True)  # fmt: skip
    finally:
        lab_down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
