"""`lab_up`: build a spec's buses, disks, stripe or file system and ceilings, recording each step.

Layout: every backing file lives in a fresh `/dev/shm/iotuner-lab-ID/`; mounts live under
`/run/iotuner-lab/ID/` (`buses/NAME`, `fs/DISK`, `stripe`, `nbd/DISK`). A bus is a loop device
over a tmpfs file holding ext4 (lazy init off, so reads of its metadata are real); its disks'
files are fully written and attached with direct I/O, so a disk's reads cross the bus's loop
device and its ceiling. Ceilings go on last: filling and mkfs run at memory speed. A modelled
disk is an nbdkit server (`hdd.c`, `ssd.c` or `raid.c` over `/dev/shm/.../DISK.data`), nbdfuse
showing it as `nbd/DISK/disk`, and a loop device with direct I/O over that file. A bus of
modelled disks is no device: one 8-byte word in `/dev/shm/.../BUS.bus` that their servers map
and share (`disk.h`).
"""

from __future__ import annotations

import secrets
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

from tuner.codec import encode
from tuner.errors import BadInput, IotunerError
from tuner.lab import dirty, nbd, system, throttle
from tuner.lab.model import Lab, LabBus, LabDisk, LabNetwork
from tuner.lab.netspec import NetworkSpec
from tuner.lab.network import build_network
from tuner.lab.queue import defaults, queue_engine, read_queue, write_queue
from tuner.lab.raid import RaidModel
from tuner.lab.record import LabRecord, Step, load_record, record_path
from tuner.lab.sizes import MIB
from tuner.lab.spec import BusSpec, DiskSpec, LabSpec
from tuner.lab.teardown import lab_lock, require_root, teardown
from tuner.state import state_dir
from tuner.tunables.engine import TunableEngine
from tuner.units import human_bytes

SHM = Path("/dev/shm")
RUN = Path("/run/iotuner-lab")
MEMORY_MARGIN = 512 * MIB
# What the kernel would see on real drives: a hard disk rotational with mq-deadline, a flash
# drive not rotational with none (as for an NVMe drive); the readahead written last, as
# marking a queue rotational raises it (kernel 6.17+).
MODEL_QUEUES = {
    "hdd": {"rotational": "1", "scheduler": "mq-deadline", "read_ahead_kb": "128"},
    "ssd": {"rotational": "0", "scheduler": "none", "read_ahead_kb": "128"},
    # A hardware RAID controller shows its set as one rotating disk.
    "raid0": {"rotational": "1", "scheduler": "mq-deadline", "read_ahead_kb": "128"},
    "raid5": {"rotational": "1", "scheduler": "mq-deadline", "read_ahead_kb": "128"},
}
BUS_WORD_BYTES = 4096
EXT4_OPTIONS = ["-F", "-q", "-m", "0", "-N", "256", "-E", "lazy_itable_init=0,lazy_journal_init=0"]


def bus_image_bytes(spec: LabSpec, bus: str) -> int:
    """The size of a bus's tmpfs image: its disks' files plus room for ext4's own blocks; a
    bus of modelled disks holds no file (their data files count as on no bus)."""
    if spec.modelled_bus(bus):
        return 0
    disks = sum(d.size_bytes for d in spec.disks_on(bus))
    return (disks + disks // 32 + 128 * MIB) // MIB * MIB


def memory_needed(spec: LabSpec) -> int:
    """Bytes of tmpfs (memory) the lab takes once filled."""
    on_buses = sum(bus_image_bytes(spec, b.name) for b in spec.buses)
    alone = [d for d in spec.disks if d.bus is None or spec.modelled_bus(d.bus)]
    return on_buses + sum(d.size_bytes for d in alone)


def lab_up(spec: LabSpec) -> Lab:
    """Build the lab `spec` describes and return it.

    Refuses (BadInput, nothing created) when not root, when a lab is already recorded, or when
    memory is short. On any failure, or Ctrl-C or SIGTERM, it removes what it created and
    re-raises; after kill -9 the record lets `lab down` finish the job.
    """
    require_root("up")
    where = throttle.backend()
    with lab_lock():
        path = record_path(state_dir())
        existing = load_record(path)
        if existing is not None:
            raise BadInput(
                f"a lab is already up: {existing.spec_name} ({existing.state}, recorded in "
                f"{path}); run `iotuner lab down` first"
            )
        need = memory_needed(spec)
        free = min(system.free_bytes(str(SHM)), system.mem_available())
        if need + MEMORY_MARGIN > free:
            raise BadInput(
                f"lab {spec.name} needs {human_bytes(need)} of memory in {SHM}; "
                f"{human_bytes(free)} is available"
            )
        record = LabRecord(path, spec.name, spec.source, secrets.token_hex(4))
        record.save()
        try:
            with _sigterm_as_exit(), queue_engine() as engine:
                return _Builder(spec, record, where, engine).build()
        except BaseException as err:
            _clean_after(spec, record, err)
            raise


def _clean_after(spec: LabSpec, record: LabRecord, err: BaseException) -> None:
    """Tear down a half-built lab; turn the failure into one line that says what is left."""
    try:
        teardown(record)
    except IotunerError as cleanup:
        raise system.LabError(
            f"lab up {spec.name} failed ({err}) and its cleanup too ({cleanup}); "
            f"run `iotuner lab down`"
        ) from err
    if isinstance(err, IotunerError):
        raise system.LabError(
            f"lab up {spec.name} failed: {err}; everything it created was removed"
        ) from err


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit while building, so the cleanup above runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Builder:
    """Takes the steps of one lab in order, each recorded before it is taken."""

    def __init__(self, spec: LabSpec, record: LabRecord, where: str, engine: TunableEngine) -> None:
        self.spec = spec
        self.record = record
        self.where = where
        self.engine = engine  # every queue setting goes through it, journaled
        self.shm = SHM / f"iotuner-lab-{record.lab_id}"
        self.run = RUN / record.lab_id

    def build(self) -> Lab:
        RUN.mkdir(mode=0o755, exist_ok=True)  # shared by labs; removed by down when empty
        self.directory(self.shm)
        self.directory(self.run)
        self.shared(self.run)
        buses = tuple(self.bus(b) for b in self.spec.buses)
        mounts = {b.name: Path(b.mountpoint) for b in buses}
        words = {b.name: b.device for b in buses if b.mountpoint == ""}
        # An array's one server carries all its members' bandwidth, more than one CPU can:
        # raid0-wide's six members gave 204-239 MB/s with the pair on one CPU (at 85-98 % of
        # it), 310-330 MB/s free. Its servers stay free; single drives get a CPU each.
        pinned = (d.name for d in self.spec.disks if d.model and not isinstance(d.model, RaidModel))
        cpus = {name: nbd.server_cpu(index) for index, name in enumerate(pinned)}
        disks = tuple(
            self.modelled(d, words.get(d.bus or ""), cpus.get(d.name))
            if d.model
            else self.disk(d, mounts.get(d.bus or ""))
            for d in self.spec.disks
        )
        for spec_disk, disk in zip(self.spec.disks, disks, strict=True):
            self.start(spec_disk, disk.device)
        stripe = self.stripe(disks) if self.spec.stripe else None
        mountpoint = stripe or self.file_system(disks)
        cgroup = self.cgroup()
        for bus in buses:
            if bus.mountpoint == "":
                continue  # modelled: its servers share its clock
            caps = throttle.Caps(_bps(bus.read_mbps), _bps(bus.write_mbps))
            self.caps(bus.name, bus.device, caps)
        for disk in disks:
            if disk.model is not None:
                continue  # its timing is its model's
            caps = throttle.Caps(_bps(disk.read_mbps), _bps(disk.write_mbps), disk.iops, disk.iops)
            self.caps(disk.name, disk.device, caps)
        net = self.spec.network
        network = build_network(net, self.record, self.shm) if net else None
        if net is not None and network is not None:
            network = self.network_disks(net, network, disks)
        lab = Lab(self.spec.name, disks, buses, stripe, mountpoint, cgroup, network)
        self.record.lab = encode(lab)
        self.record.state = "up"
        self.record.save()
        return lab

    def directory(self, path: Path) -> None:
        step = self.record.intend(Step("dir", str(path)))
        path.mkdir(mode=0o700)
        self.record.finish(step)

    def shared(self, path: Path) -> None:
        """Bind `path` on itself as a shared mount, the parent of every mount the lab makes.

        The host's / is private here: a process that unshares its mount namespace (`ip netns
        exec`, which every iperf3 trial is run by) copies every mount, and a copy of a bus's
        file system keeps the bus's loop device open after `down` unmounts ours (an iperf3
        run of 10 s held it past the detach wait, load 9-20). Under a shared parent such a
        copy is a slave (`ip netns exec` makes / rslave): our unmount reaches it too.
        """
        step = self.record.intend(Step("mount", str(path), device=str(path), label="shared"))
        system.mount(str(path), str(path), "bind")
        system.run(["mount", "--make-shared", str(path)])
        self.record.finish(step)

    def loop(self, backing: Path, label: str, direct_io: bool) -> str:
        step = self.record.intend(Step("loop", str(backing), label=label))
        device = system.loop_attach(backing, direct_io)
        step.device = device
        step.detail = {"found": read_queue(self.engine.tunables, device)}
        self.record.save()
        refused = write_queue(self.engine, device, defaults(self.engine.tunables.sys, device))
        if refused:
            raise system.LabError(f"cannot reset {device}: {'; '.join(refused)}")
        self.record.finish(step)
        return device

    def start(self, disk: DiskSpec, device: str) -> None:
        """The spec's starting queue settings, over the reset (and a model's marks): a lab
        that begins where a real host does. `down` puts back what the device had before."""
        if not disk.start:
            return
        refused = write_queue(self.engine, device, dict(disk.start))
        if refused:
            raise system.LabError(f"cannot set {disk.name}'s start: {'; '.join(refused)}")

    def mount(self, source: str, target: Path, label: str, options: str | None = None) -> None:
        target.mkdir(mode=0o755, parents=True)
        step = self.record.intend(Step("mount", str(target), device=source, label=label))
        system.mount(source, str(target), options)
        self.record.finish(step)

    def bus(self, bus: BusSpec) -> LabBus:
        if self.spec.modelled_bus(bus.name):
            word = self.shm / f"{bus.name}.bus"
            system.sparse(word, BUS_WORD_BYTES)  # zero: free since boot
            return LabBus(bus.name, str(word), bus.read_mbps, bus.write_mbps, "")
        image = self.shm / f"{bus.name}.img"
        system.sparse(image, bus_image_bytes(self.spec, bus.name))
        device = self.loop(image, bus.name, direct_io=False)
        system.run(["mkfs.ext4", *EXT4_OPTIONS, device])
        target = self.run / "buses" / bus.name
        self.mount(device, target, bus.name)
        return LabBus(bus.name, device, bus.read_mbps, bus.write_mbps, str(target))

    def disk(self, disk: DiskSpec, bus_mount: Path | None) -> LabDisk:
        if bus_mount is None:
            backing = self.shm / f"{disk.name}.img"
            system.sparse(backing, disk.size_bytes)
        else:
            backing = bus_mount / f"{disk.name}.img"
            system.fill(backing, disk.size_bytes)
        device = self.loop(backing, disk.name, direct_io=True)
        return LabDisk(
            disk.name, device, disk.bus, disk.read_mbps, disk.write_mbps, disk.iops, disk.size_bytes
        )

    def modelled(self, disk: DiskSpec, bus_word: str | None, cpu: int | None) -> LabDisk:
        """nbdkit running the model over a tmpfs file, nbdfuse, a loop device with direct I/O;
        on a bus, the server maps the bus's word. Both servers run on `cpu` when given."""
        assert disk.model is not None
        bus = None
        if bus_word is not None:
            (spec,) = [b for b in self.spec.buses if b.name == disk.bus]
            bus = (bus_word, spec.read_mbps)
        data = self.shm / f"{disk.name}.data"
        system.sparse(data, disk.size_bytes)
        socket = self.shm / f"{disk.name}.sock"
        log = self.shm / f"{disk.name}.log"
        step = self.record.intend(Step("server", str(socket), label=disk.name))
        pidfile = self.shm / f"{disk.name}.nbdkit.pid"
        command = nbd.server_command(disk.model, disk.size_bytes, data, socket, pidfile, bus)
        pid = nbd.start(command, log, pidfile, "nbdkit", cpu)
        self.record.finish(step, detail={"pid": pid})
        mountpoint = self.run / "nbd" / disk.name
        mountpoint.mkdir(mode=0o755, parents=True)
        step = self.record.intend(
            Step("fuse", str(mountpoint), device=str(socket), label=disk.name)
        )
        fuse_file = mountpoint / nbd.FUSE_FILE
        pidfile = self.shm / f"{disk.name}.nbdfuse.pid"
        command = nbd.fuse_command(socket, mountpoint, pidfile)
        pid = nbd.start(command, log, pidfile, "nbdfuse", cpu)
        self.record.finish(step, detail={"pid": pid})
        device = self.loop(fuse_file, disk.name, direct_io=True)
        refused = write_queue(self.engine, device, MODEL_QUEUES[disk.model.kind])
        if refused:
            raise system.LabError(f"cannot set up {device}: {'; '.join(refused)}")
        return LabDisk(
            disk.name, device, disk.bus, disk.read_mbps, disk.write_mbps, 0, disk.size_bytes,
            disk.model,
        )  # fmt: skip

    def stripe(self, disks: tuple[LabDisk, ...]) -> str:
        devices = [d.device for d in disks]
        # mkfs registers the members with the kernel's btrfs device list: forget them on down.
        step = self.record.intend(Step("btrfs", devices[0], detail={"devices": devices}))
        system.run(["mkfs.btrfs", "-f", "-q", "-d", "raid0", "-m", "raid0", *devices])
        self.record.finish(step)
        target = self.run / "stripe"
        options = ",".join(f"device={d}" for d in devices)
        self.mount(devices[0], target, "stripe", options)
        return str(target)

    def network_disks(
        self, net: NetworkSpec, network: LabNetwork, disks: tuple[LabDisk, ...]
    ) -> LabNetwork:
        """Each end's mount; the receiver's disk held to its own rate for buffered writes."""
        mounts = {d.name: str(self.run / "fs" / d.name) for d in disks}
        if net.receiver.disk is not None:
            disk = next(d for d in disks if d.name == net.receiver.disk)
            dirty.limit(self.record, disk.device, disk.name, dirty.limit_bytes(disk.write_mbps))
        return replace(
            network,
            sender_mount=mounts.get(net.sender.disk or ""),
            receiver_mount=mounts.get(net.receiver.disk or ""),
        )

    def file_system(self, disks: tuple[LabDisk, ...]) -> str | None:
        """mkfs and mount every disk that asks for a file system (one, or one at each network
        end); the first is the lab's scratch mount."""
        first = None
        for spec, disk in zip(self.spec.disks, disks, strict=True):
            if spec.fs == "xfs":
                # -K: a modelled disk has no discard (nbdkit's plugin does not trim).
                nodiscard = ["-K"] if spec.model else []
                system.run(["mkfs.xfs", "-f", "-q", *nodiscard, disk.device])
            elif spec.fs == "ext4":
                system.run(["mkfs.ext4", *EXT4_OPTIONS, disk.device])
            else:
                continue
            target = self.run / "fs" / disk.name
            self.mount(disk.device, target, disk.name)
            first = first or str(target)
        return first

    def cgroup(self) -> str | None:
        if self.where == "v1":
            return None
        cgroup = throttle.v2_cgroup(self.where.removeprefix("v2:"), self.record.lab_id)
        step = self.record.intend(Step("cgroup", str(cgroup)))
        throttle.v2_prepare(cgroup)
        self.record.finish(step)
        self.where = str(cgroup)
        return str(cgroup)

    def caps(self, label: str, device: str, caps: throttle.Caps) -> None:
        majmin = system.majmin(device)
        detail = {"where": self.where, "caps": caps.as_dict()}
        step = Step("throttle", majmin, device=device, label=label, detail=detail)
        self.record.intend(step)
        throttle.set_caps(self.where, majmin, caps)
        self.record.finish(step)


def _bps(mbps: float) -> int:
    return int(mbps * 1_000_000)
