"""Drawn workloads: what a real host runs, each family with drawn parameters, each one a fio
job that `iotuner tune --fio-job FILE` takes (checked by tuner/trials/jobcheck.py's allow-list)
or the built-in `disk-to-network` for a network path.

    work = draw_workload(seed=7, env=draw_environment(7))
    work.job_text(dev="/dev/loop3", mnt="/run/iotuner-lab/ID/fs/d0")   # the --fio-job file

The job names `{dev}` (the lab's first disk) or `{mnt}` (its file system) until it is filled
in; `target` says which `tune` gets (`--target DEV`, `--target MNT`, `--destroy-data DEV` for a
writer on the raw device). A random reader's page cache (`cache_memory`, `tune
--cache-memory`) is drawn with it, its data set 0.25-8 x that cache, so it may fit or not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tuner.lab.generate import Environment, draw_environment, with_fs

MiB = 1 << 20
FAMILIES = (
    "sequential-streams",
    "random-readers",
    "oltp",
    "log-appender",
    "small-files",
    "write-once-read-many",
)
"""Disk workloads; a network environment's is always the bulk transfer, TRANSFER."""
TRANSFER = "disk-to-network"
WRITES = ("oltp", "log-appender")
"""Families that write: their environment carries a file system (generate.with_fs)."""
BLOCKS_KIB = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
CACHE_MIB = (64, 128, 256)
"""The page cache a random reader gets (tune --cache-memory): small, so its data set of up to
8 x fits the lab's 1-2 GiB disks."""
DATA_OVER_CACHE = (0.25, 8.0)


@dataclass(frozen=True)
class Workload:
    """One drawn workload: a fio job with {dev}/{mnt} to fill in, or the built-in transfer."""

    seed: int
    family: str
    summary: str
    job: str = ""  # empty: the built-in `builtin`
    builtin: str | None = None
    target: str = "dev"  # dev, mnt, or destroy (a writer on the raw device)
    files: tuple[tuple[str, int], ...] = ()  # laid out under {mnt} before the tune
    cache_memory: int | None = None
    timed: bool = True  # False: a one-pass writer, run to its size

    def job_text(self, dev: str, mnt: str) -> str:
        """The job file with the lab's device and mount filled in."""
        return self.job.replace("{dev}", dev).replace("{mnt}", mnt)


def draw_workload(seed: int, env: Environment, family: str | None = None) -> Workload:
    """The workload of `seed` for `env` (the same every time); `family` forces one."""
    rng = random.Random(f"iotuner-workload-{seed}")
    if env.network:
        return Workload(seed, TRANSFER, "bulk transfer, disk to network", builtin=TRANSFER)
    family = family or rng.choice(FAMILIES)
    size = _disk_mib(env)
    draw = {
        "sequential-streams": _streams,
        "random-readers": _random,
        "oltp": _oltp,
        "log-appender": _log,
        "small-files": _small_files,
        "write-once-read-many": _worm,
    }.get(family)
    if draw is None:
        raise ValueError(f"no workload family {family!r} (families: {', '.join(FAMILIES)})")
    return draw(rng, seed, size)


def draw_pair(seed: int) -> tuple[Environment, Workload]:
    """Draw `seed`'s environment and workload; a workload on a file system gets xfs on the
    environment's first disk, so the spec printed is the one to replay."""
    env = draw_environment(seed)
    work = draw_workload(seed, env)
    return (with_fs(env) if work.target == "mnt" else env), work


def _disk_mib(env: Environment) -> int:
    """The first disk's size in MiB, as the spec writes it."""
    text = env.spec_text.split("  - {name: d0", 1)[1]
    return int(text.split("size: ", 1)[1].split("MiB", 1)[0])


def _name(family: str, seed: int) -> str:
    return f"[{family}-{seed}]\n"


def _streams(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """N sequential readers, each on its own share of the disk: buffered, or direct at a depth."""
    streams = rng.choice((1, 1, 2, 4, 8, 16)) if rng.random() < 0.5 else rng.randint(1, 16)
    block = rng.choice(BLOCKS_KIB)
    direct = rng.random() < 0.3
    share = disk_mib // streams
    engine = (
        f"ioengine=libaio\niodepth={rng.choice((1, 2, 4, 8))}\n" if direct else "ioengine=psync\n"
    )
    job = (
        f"{_name('sequential-streams', seed)}rw=read\nbs={block}k\n{engine}direct={int(direct)}\n"
        f"numjobs={streams}\nsize={share}m\noffset_increment={share}m\nfilename={{dev}}\n"
    )
    how = "direct" if direct else "buffered"
    return Workload(seed, "sequential-streams", f"{streams} x {block} KiB {how} readers", job)


def _random(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """Random 4-16 KiB readers: pread or mmap through a drawn page cache, or libaio direct at
    depth 1-64; the data set 0.25-8 x the cache (for direct ones, the cache they would get)."""
    engine = rng.choice(("pread", "mmap", "libaio"))
    cache = rng.choice(CACHE_MIB)
    ratio = rng.uniform(*DATA_OVER_CACHE)
    data = max(16, min(int(cache * ratio), disk_mib))
    block = rng.choice((4, 4, 8, 16))
    jobs = rng.choice((1, 2, 4))
    if engine == "libaio":
        depth = rng.choice((1, 2, 4, 8, 16, 32, 64))
        io = f"ioengine=libaio\niodepth={depth}\ndirect=1\n"
        what = f"libaio depth {depth}, {data} MiB"
    else:
        io = (
            "ioengine=psync\ndirect=0\n" if engine == "pread" else "ioengine=mmap\nfadvise_hint=0\n"
        )
        what = f"{engine}, {data} MiB over a {cache} MiB cache (x{data / cache:.2f})"
    job = (
        f"{_name('random-readers', seed)}rw=randread\nbs={block}k\n{io}numjobs={jobs}\n"
        f"size={data}m\nfilename={{dev}}\n"
    )
    return Workload(seed, "random-readers", f"{jobs} x {block} KiB random, {what}", job,
                    cache_memory=None if engine == "libaio" else cache << 20)  # fmt: skip


def _oltp(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """A database's mixed random reads and writes in its file, an fsync every few writes."""
    mix = rng.choice((50, 70, 80, 90))
    block = rng.choice((8, 16))
    every = rng.choice((1, 4, 16, 32))
    jobs = rng.choice((1, 2, 4, 8))
    data = min(rng.choice((64, 128, 256, 512)), disk_mib // 4)
    job = (
        f"{_name('oltp', seed)}rw=randrw\nrwmixread={mix}\nbs={block}k\nioengine=psync\n"
        f"direct=0\nfsync={every}\nnumjobs={jobs}\nsize={data}m\nfilename={{mnt}}/oltp.dat\n"
    )
    what = f"{jobs} x {block} KiB randrw {mix}% reads, fsync every {every}, {data} MiB"
    return Workload(seed, "oltp", what, job, target="mnt")


def _log(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """Appenders to a log, each record made durable with fdatasync (a journal, a WAL)."""
    block = rng.choice((4, 8, 16, 64))
    jobs = rng.choice((1, 1, 2, 4))
    data = rng.choice((16, 32, 64))
    job = (
        f"{_name('log-appender', seed)}rw=write\nbs={block}k\nioengine=psync\ndirect=0\n"
        f"fdatasync=1\nnumjobs={jobs}\nsize={data}m\nfilename={{mnt}}/log.dat\n"
    )
    what = f"{jobs} x {block} KiB appends + fdatasync, {data} MiB"
    return Workload(seed, "log-appender", what, job, target="mnt", timed=False)


SMALL_FILES_MIB = (128, 512)
"""A small-files reader's data set: 256 files of 16 KiB (4 MiB, seed 2) were read through in
0.9 s of a 3 s trial and the tune refused to measure them; from cache they hold nothing to
tune either. 128-512 MiB outlasts a trial on the lab's disks at small-file rates."""


def _small_files(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """Readers of many small files (a web root, a mail spool): open, read whole, next."""
    size = rng.choice((4, 16, 64, 256))
    jobs = rng.choice((1, 2, 4))
    data = min(rng.randint(*SMALL_FILES_MIB), disk_mib // 3)  # fio lays them out on the disk
    # At most 8192 files a job: laying out more on a modelled 5400 rpm disk takes minutes.
    files = max(64, min(data * 1024 // size // jobs, 8192))
    job = (
        f"{_name('small-files', seed)}rw=read\nbs={min(size, 64)}k\nfilesize={size}k\n"
        f"nrfiles={files}\nfile_service_type=random\nopenfiles=64\nnumjobs={jobs}\ndirect=0\n"
        "ioengine=psync\ndirectory={mnt}/small\n"
    )
    what = f"{jobs} x {files} files of {size} KiB"
    return Workload(seed, "small-files", what, job, target="mnt")


def _worm(rng: random.Random, seed: int, disk_mib: int) -> Workload:
    """Written once (laid out before the tune), read many times: media, backups, datasets;
    through a drawn page cache the file may fit or not."""
    cache = rng.choice(CACHE_MIB)
    data = max(64, min(int(cache * rng.uniform(*DATA_OVER_CACHE)), disk_mib * 2 // 3))
    block = rng.choice((64, 128, 256, 1024))
    jobs = rng.choice((1, 2, 4))
    job = (
        f"{_name('write-once-read-many', seed)}rw=read\nbs={block}k\nioengine=psync\ndirect=0\n"
        f"numjobs={jobs}\nsize={data}m\nfilename={{mnt}}/worm.dat\n"
    )
    what = f"{jobs} x {block} KiB rereads of {data} MiB over a {cache} MiB cache"
    return Workload(seed, "write-once-read-many", what, job, target="mnt",
                    files=(("worm.dat", data * MiB),), cache_memory=cache << 20)  # fmt: skip
