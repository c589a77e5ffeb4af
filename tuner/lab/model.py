"""What a lab is once it is up: its disks, its buses, and where a stripe or file system sits."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.lab.modelled import Model


@dataclass(frozen=True)
class LabBus:
    """A shared channel: a throttled loop device whose file system holds its disks' files, or,
    for modelled disks, the shared word their servers map (`device` its file, no
    `mountpoint`: "")."""

    name: str
    device: str
    read_mbps: float
    write_mbps: float
    mountpoint: str


@dataclass(frozen=True)
class LabDisk:
    """An emulated disk: a loop device with MB/s and IOPS ceilings, on a bus or on its own.

    A modelled disk (`model` set) is a loop device over the file nbdfuse shows for an nbdkit
    server running the model: no ceilings (`iops` 0), `read_mbps` its nominal rate (an HDD's
    outer zone, an SSD's interface).
    """

    name: str
    device: str
    bus: str | None
    read_mbps: float
    write_mbps: float
    iops: int
    size_bytes: int
    model: Model | None = None


@dataclass(frozen=True)
class LabNetwork:
    """A network path between two namespaces (tuner/lab/network.py, docs/lab.md "Network").

    Run a program at an end with `ip netns exec SENDER ...`; the receiver listens on
    `receiver_address`. `rate_mbit` counts Ethernet frames (TCP's goodput at MTU 1500 is about
    0.956 of it), `rtt_ms` is the delay line's round trip with no queue. `sender_mount` and
    `receiver_mount` are where each end's disk is mounted (None: the spec names no disk there).
    """

    sender: str
    receiver: str
    relay: str
    sender_address: str
    receiver_address: str
    interface: str
    rate_mbit: float
    rtt_ms: float
    loss_percent: float
    mtu: int
    sender_mount: str | None = None  # the file system on the sender's disk, if it names one
    receiver_mount: str | None = None  # the receiver's, held to its disk's rate (dirty.py)


@dataclass(frozen=True)
class Lab:
    """A lab that is up.

    `stripe` is the btrfs raid0 mount over the disks (None without a stripe); `mountpoint` is
    where scratch files go: the stripe's mount, or a file system on one lab disk (None for raw
    disks only). `cgroup` is None under cgroup v1, where the rules in the root blkio cgroup
    throttle every process; under cgroup v2 the ceilings live in this cgroup's `io.max` and only
    processes moved into it (write the pid to its `cgroup.procs`) are throttled. `network` is
    the path between two namespaces, when the spec has one.
    """

    spec_name: str
    disks: tuple[LabDisk, ...]
    buses: tuple[LabBus, ...]
    stripe: str | None
    mountpoint: str | None
    cgroup: str | None = None
    network: LabNetwork | None = None

    def disk(self, name: str) -> LabDisk:
        """The disk called `name`; KeyError if there is none."""
        for disk in self.disks:
            if disk.name == name:
                return disk
        raise KeyError(name)
