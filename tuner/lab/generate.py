"""Drawn labs: a seeded generator of environments nobody here chose, each a normal lab spec.

    env = draw_environment(seed=7)        # Environment(seed, family, start, spec_text, ...)
    print(env.spec_text)                  # YAML that `iotuner lab up FILE` takes, to replay it
    parse_spec(env.spec_text, ...)        # the lab's own validation: every draw passes it

Every range below is written down in RANGES (and docs/lab.md, "Generated labs"), from real
hardware, cut to what this VM can carry: a modelled disk's route carries about 200 MB/s on one
CPU and 10 commands at once (so a drive's media rate stops at 200 MB/s and a flash drive's
latencies are slowed about 20 x, as the built-in `ssd` is); an array's one server carries
about 300 MB/s (its members' rates are held so the set stays below that); disks are 1-3 GiB of
/dev/shm; the delay line's rings hold rate x RTT (bounded by netspec.MAX_RATE_X_RTT).

What the spec cannot express is not drawn (docs/lab.md lists it): a drive's write cache (the
model writes through), a host's vm sysctls as a starting point (host-wide on a shared VM).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from tuner.lab.netspec import MAX_RATE_X_RTT

FAMILIES = ("hdd", "ssd", "throttled", "array", "network")
STARTS = ("kernel", "old-distro", "badly-tuned")
LOOP_MAX_SECTORS_KB = 1280
"""A loop device's max_hw_sectors_kb on this kernel (6.18): since 6.17 the kernel sets a
rotational disk's readahead to twice its max_sectors_kb, 2560 KB here."""
RPMS = (5400, 5900, 7200, 10000, 15000)
"""Spindle speeds sold: laptop and archive drives, desktop, enterprise."""
# A full stroke's seek by spindle class (datasheets: 5400 rpm about 20-30 ms, 7200 about
# 16-20, 10k about 8-10, 15k about 6-8); a track-to-track seek 0.2-2 ms in every class.
FULL_SEEK_MS = {5400: (18.0, 30.0), 5900: (18.0, 28.0), 7200: (14.0, 20.0),
                10000: (8.0, 11.0), 15000: (6.0, 8.0)}  # fmt: skip
STRIPE_KIB = (16, 32, 64, 128, 256, 512, 1024)

RANGES: dict[str, tuple[float, float]] = {
    # hard disk (tuner/lab/hdd.py's model); outer rate held to the route's 200 MB/s
    "hdd.outer_mbps": (60.0, 200.0),
    "hdd.zone_ratio": (1.5, 2.5),  # outer / inner media rate
    "hdd.seek_track_ms": (0.2, 2.0),
    "hdd.overhead_ms": (0.1, 0.5),
    "hdd.cache_kib": (0.0, 262144.0),  # the drive's read-ahead cache: off to 256 MiB
    "hdd.queue_depth": (1.0, 32.0),  # NCQ: 1 (none) to SATA's 32
    "hdd.size_mib": (1024.0, 2048.0),
    # flash drive (tuner/lab/ssd.py), slowed about 20 x in time as the built-in `ssd`
    "ssd.read_us": (500.0, 4000.0),
    "ssd.write_over_read": (1.0, 3.0),
    "ssd.mbps": (100.0, 600.0),
    "ssd.channels": (1.0, 16.0),
    "ssd.op_mib": (64.0, 1024.0),  # over-provisioning before garbage collection
    "ssd.gc_factor": (2.0, 8.0),
    "ssd.size_mib": (1024.0, 2048.0),
    # throttled plain disk (a cloud volume, a USB disk, a SAN LUN)
    "throttled.mbps": (20.0, 500.0),
    "throttled.iops": (100.0, 20000.0),
    "throttled.size_mib": (1024.0, 2048.0),
    # arrays: members' outer rate held so members x rate stays within the server's 300 MB/s
    "array.members": (2.0, 6.0),  # raid5 from 3
    "array.member_mib": (384.0, 768.0),
    "array.set_mbps": (120.0, 300.0),  # all members' outer rates together
    "array.bus_share": (0.5, 1.0),  # a shared controller's cap over the members' sum
    # network path
    "net.rate_mbit": (10.0, 1000.0),
    "net.rtt_ms": (0.2, 400.0),
    "net.loss_percent": (0.0, 0.1),
}


@dataclass(frozen=True)
class Environment:
    """One drawn lab: its family, the starting settings it begins with, and its spec as YAML
    (with the draw in comments), which `iotuner lab up FILE` replays."""

    seed: int
    family: str
    start: str  # one of STARTS; a network path's: its TCP era (TCP_ERAS)
    name: str
    spec_text: str
    summary: str
    rotational: bool = False
    network: bool = False


def draw_environment(seed: int, family: str | None = None) -> Environment:
    """The environment of `seed` (the same every time); `family` forces one of FAMILIES."""
    rng = random.Random(f"iotuner-env-{seed}")
    family = family or rng.choice(FAMILIES)
    name = f"drawn-{seed}"
    if family == "network":
        body, summary, era = _network(rng)
        return Environment(seed, family, era, name, _text(name, seed, summary, body),
                           summary, network=True)  # fmt: skip
    start_kind = rng.choice(STARTS)
    if family == "hdd":
        model, summary = _hdd(rng, member=False)
        size = _int(rng, "hdd.size_mib")
        disk, rotational = f"{{name: d0, size: {size}MiB, model: {model}", True
    elif family == "ssd":
        model, summary = _ssd(rng)
        disk, rotational = (
            f"{{name: d0, size: {_int(rng, 'ssd.size_mib')}MiB, model: {model}",
            False,
        )
    elif family == "throttled":
        disk, summary = _throttled(rng)
        rotational = False
    elif family == "array":
        body, summary = _array(rng, start_kind)
        full = f"{summary}; start {start_kind}"
        return Environment(seed, family, start_kind, name, _text(name, seed, full, body), full,
                           rotational=True)  # fmt: skip
    else:
        raise ValueError(f"no family {family!r} (families: {', '.join(FAMILIES)})")
    start = _start(rng, start_kind, rotational)
    body = f"disks:\n  - {disk}{_start_text(start)}}}\n"
    full = f"{summary}; start {start_kind}"
    return Environment(seed, family, start_kind, name, _text(name, seed, full, body), full,
                       rotational=rotational)  # fmt: skip


FS_DISK_MIB = 1536
"""The least disk under a file system: a tune's scratch file on it is up to 1 GiB, and xfs
keeps some of the disk for itself (a 932 MiB RAID-5 set left 830 MiB free: refused)."""


def with_fs(env: Environment, fs: str = "xfs") -> Environment:
    """The same environment with a file system on its first disk (for workloads on files),
    the disk grown to FS_DISK_MIB if it was smaller."""
    if env.network:
        return env
    text = env.spec_text.replace("  - {name: d0, ", f"  - {{name: d0, fs: {fs}, ", 1)
    head, tail = text.split(", size: ", 1)
    size, rest = tail.split("MiB", 1)
    text = f"{head}, size: {max(int(size), FS_DISK_MIB)}MiB{rest}"
    return Environment(env.seed, env.family, env.start, env.name, text, env.summary,
                       env.rotational, env.network)  # fmt: skip


# -- the draws ------------------------------------------------------------------------------


def _uniform(rng: random.Random, key: str) -> float:
    low, high = RANGES[key]
    return rng.uniform(low, high)


def _log_uniform(rng: random.Random, key: str) -> float:
    """Rates and times spread over decades: as many draws at 10-100 as at 100-1000."""
    low, high = RANGES[key]
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _int(rng: random.Random, key: str) -> int:
    low, high = RANGES[key]
    return rng.randint(int(low), int(high))


def _hdd(rng: random.Random, member: bool, outer: float | None = None) -> tuple[str, str]:
    """A hard disk's model map (inline YAML) and a summary; `outer` fixes its outer rate."""
    rpm = rng.choice(RPMS)
    outer = round(outer if outer is not None else _uniform(rng, "hdd.outer_mbps"), 1)
    inner = round(outer / _uniform(rng, "hdd.zone_ratio"), 1)
    track = round(_uniform(rng, "hdd.seek_track_ms"), 2)
    full = round(rng.uniform(*FULL_SEEK_MS[rpm]), 1)
    # A drive's cache: 0 (off) now and then, else 2-256 MiB spread over the decades.
    cache = 0 if rng.random() < 0.15 else int(2 ** rng.uniform(11, 18))
    ncq = 1 if rng.random() < 0.2 else rng.randint(2, 32)
    model = (
        f"{{kind: hdd, rpm: {rpm}, outer_mbps: {outer:g}, inner_mbps: {inner:g}, "
        f"zones: {rng.randint(8, 32)}, seek_track_ms: {track:g}, seek_full_ms: {full:g}, "
        f"overhead_ms: {round(_uniform(rng, 'hdd.overhead_ms'), 2):g}, cache_kib: {cache}, "
        f"queue_depth: {ncq}, seed: {rng.randint(0, 2**31 - 1)}}}"
    )
    what = f"hdd {rpm} rpm {outer:g}-{inner:g} MB/s, seek {track:g}-{full:g} ms, "
    return model, what + f"cache {cache} KiB, NCQ {ncq}" + (" (member)" if member else "")


def _ssd(rng: random.Random) -> tuple[str, str]:
    read = round(_log_uniform(rng, "ssd.read_us"))
    write = round(read * _uniform(rng, "ssd.write_over_read"))
    mbps = round(_log_uniform(rng, "ssd.mbps"))
    channels = _int(rng, "ssd.channels")
    op = _int(rng, "ssd.op_mib")
    gc = round(_uniform(rng, "ssd.gc_factor"), 1)
    model = (
        f"{{kind: ssd, read_us: {read}, write_us: {write}, mbps: {mbps}, channels: {channels}, "
        f"op_bytes: {op}MiB, gc_factor: {gc:g}}}"
    )
    return model, f"ssd {read}/{write} us, {mbps} MB/s, {channels} ch, OP {op} MiB x{gc:g}"


def _throttled(rng: random.Random) -> tuple[str, str]:
    read = round(_log_uniform(rng, "throttled.mbps"))
    write = round(read * rng.uniform(0.5, 1.0))
    iops = round(_log_uniform(rng, "throttled.iops"))
    size = _int(rng, "throttled.size_mib")
    disk = f"{{name: d0, read_mbps: {read}, write_mbps: {write}, iops: {iops}, size: {size}MiB"
    return disk, f"throttled {read}/{write} MB/s, {iops} IOPS"


def _array(rng: random.Random, start_kind: str) -> tuple[str, str]:
    """A RAID-0 or RAID-5 set of drawn drives, sometimes behind a controller's cap."""
    kind = rng.choice(("raid0", "raid5"))
    members = rng.randint(3 if kind == "raid5" else 2, int(RANGES["array.members"][1]))
    unit = rng.choice(STRIPE_KIB)
    outer = _uniform(rng, "array.set_mbps") / members
    member, what = _hdd(rng, member=True, outer=max(outer, RANGES["hdd.outer_mbps"][0] / 2))
    data = members - 1 if kind == "raid5" else members
    size = _int(rng, "array.member_mib") * data  # each member holds size / data (rounded up)
    start = _start(rng, start_kind, rotational=True)
    disk = (
        f"  - {{name: d0, size: {size}MiB, model: {{kind: {kind}, members: {members}, "
        f"stripe_kib: {unit}, member: {member}}}"
    )
    summary = f"{kind} {members} x [{what}], {unit} KiB unit"
    if rng.random() < 0.4:
        cap = round(outer * members * _uniform(rng, "array.bus_share"))
        body = f"buses:\n  - {{name: bus0, read_mbps: {cap}, write_mbps: {cap}}}\n"
        body += f"disks:\n{disk}, bus: bus0{_start_text(start)}}}\n"
        return body, f"{summary}, behind a {cap} MB/s controller"
    return f"disks:\n{disk}{_start_text(start)}}}\n", summary


# Kernel eras' TCP buffers (net.ipv4.tcp_rmem / tcp_wmem, min default max) and the congestion
# control each era shipped or an operator chose.
TCP_ERAS = {
    "linux-2.6": ("4096 87380 174760", "4096 16384 131072", ("reno", "cubic")),
    "linux-4": ("4096 87380 6291456", "4096 16384 4194304", ("cubic",)),
    "linux-6": ("4096 131072 6291456", "4096 16384 4194304", ("cubic", "bbr")),
    "tuned-host": ("4096 131072 33554432", "4096 16384 33554432", ("cubic", "bbr")),
}


def _network(rng: random.Random) -> tuple[str, str, str]:
    """A path and both ends' TCP settings of one kernel era (the era is its start)."""
    rate = round(_log_uniform(rng, "net.rate_mbit"), 1)
    rtt = round(_log_uniform(rng, "net.rtt_ms"), 1)
    rtt = max(min(rtt, MAX_RATE_X_RTT / rate), RANGES["net.rtt_ms"][0])
    loss = 0.0 if rng.random() < 0.5 else round(_uniform(rng, "net.loss_percent"), 3)
    mtu = rng.choice((1500, 1500, 9000))
    era = rng.choice(tuple(TCP_ERAS))
    rmem, wmem, controls = TCP_ERAS[era]
    control = rng.choice(controls)
    host = f"{{tcp_rmem: {rmem}, tcp_wmem: {wmem}, tcp_congestion_control: {control}}}"
    body = (
        f"network:\n  rate_mbit: {rate:g}\n  rtt_ms: {rtt:g}\n  loss_percent: {loss:g}\n"
        f"  mtu: {mtu}\n  sender: {host}\n  receiver: {host}\n"
    )
    what = f"path {rate:g} Mbit/s, {rtt:g} ms, loss {loss:g} %, MTU {mtu}, {era} {control}"
    return body, what, era


def _start(rng: random.Random, kind: str, rotational: bool) -> dict[str, object]:
    """A disk's starting queue settings (the spec's `start:`): the kernel's own for its
    class on this kernel, an older distribution's, or a badly tuned host's."""
    if kind == "kernel":
        if rotational:
            return {"scheduler": "mq-deadline", "read_ahead_kb": 2 * LOOP_MAX_SECTORS_KB}
        return {"scheduler": "none", "read_ahead_kb": 128}
    if kind == "old-distro":
        # RHEL 7-9 run TuneD's throughput-performance (4096 KB); Debian and Ubuntu of the
        # 4.x-5.x kernels kept 128 KB with mq-deadline, some bfq on rotating disks.
        choice = rng.choice(("rhel", "debian", "bfq"))
        readahead = 4096 if choice == "rhel" else 128
        scheduler = "bfq" if choice == "bfq" and rotational else "mq-deadline"
        return {"scheduler": scheduler, "read_ahead_kb": readahead}
    # Badly tuned: advice copied from a forum, for another device.
    return {
        "scheduler": rng.choice(("none", "bfq", "kyber")),
        "read_ahead_kb": rng.choice((0, 8, 16, 32768, 65536)),
        "nr_requests": rng.choice((4, 8, 16)),
        "max_sectors_kb": rng.choice((16, 32, 64)),
    }


def _start_text(start: dict[str, object]) -> str:
    return ", start: {" + ", ".join(f"{k}: {v}" for k, v in start.items()) + "}"


def _text(name: str, seed: int, summary: str, body: str) -> str:
    return (
        f"# Drawn by tuner/lab/generate.py, seed {seed}: {summary}\n"
        f"name: {name}\ndescription: 'Drawn environment, seed {seed}.'\n{body}"
    )
