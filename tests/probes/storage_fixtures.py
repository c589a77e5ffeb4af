"""Storage layouts for the probe tests, built the way the kernel lays out sysfs.

Each builder adds one piece of hardware or one stack to a SysTree and returns the resolved
directories it made, so a test can break exactly one file.
"""

from __future__ import annotations

from tests.sysfs_tree import SysTree

QUEUE: dict[str, str | int] = {
    "read_ahead_kb": 128,
    "scheduler": "mq-deadline kyber [none]",
    "nr_requests": 256,
    "max_sectors_kb": 1280,
    "max_hw_sectors_kb": 32767,
    "write_cache": "write back",
    "rq_affinity": 1,
    "nomerges": 0,
    "logical_block_size": 512,
    "physical_block_size": 4096,
    "minimum_io_size": 4096,
    "optimal_io_size": 0,
    "rotational": 1,
}
SATA_PCI = "sys/devices/pci0000:00/0000:00:1f.2"
SAS_PCI = "sys/devices/pci0000:00/0000:00:03.0/0000:03:00.0"
NVME_PCI = "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0"
VIRTUAL = "sys/devices/virtual/block"
SECTORS_1G = 2 * 1024 * 1024


def disk(
    tree: SysTree,
    base: str,
    name: str,
    dev: str,
    *,
    queue: dict[str, str | int] | None = None,
    attrs: dict[str, str | int] | None = None,
) -> str:
    """A whole disk directory at `base`, linked from sys/block and sys/class/block."""
    tree.files(base, {"dev": dev, "size": 100 * SECTORS_1G, "removable": 0, **(attrs or {})})
    tree.files(f"{base}/queue", queue if queue is not None else QUEUE)
    tree.dir(f"{base}/holders").dir(f"{base}/slaves")
    tree.link_to(f"sys/block/{name}", base)
    tree.link_to(f"sys/class/block/{name}", base)
    return base


def partition(tree: SysTree, disk_dir: str, name: str, number: int, start: int, dev: str) -> str:
    """A partition directory inside its disk's, linked from sys/class/block only."""
    base = f"{disk_dir}/{name}"
    tree.files(base, {"dev": dev, "size": SECTORS_1G, "partition": number, "start": start})
    tree.dir(f"{base}/holders")
    tree.link_to(f"sys/class/block/{name}", base)
    return base


def sata_disk(tree: SysTree) -> str:
    """sda on AHCI port ata1, with sda1 at sector 2048 and sda2 at sector 2099200."""
    lun = f"{SATA_PCI}/ata1/host0/target0:0:0/0:0:0:0"
    tree.files(lun, {"model": "Samsung SSD 870", "vendor": "ATA", "wwid": "naa.5002538e40a1b2c3"})
    sda = disk(tree, f"{lun}/block/sda", "sda", "8:0")
    tree.link_to(f"{sda}/device", lun)
    partition(tree, sda, "sda1", 1, 2048, "8:1")
    partition(tree, sda, "sda2", 2, 2099200, "8:2")
    return sda


def sas_disks(tree: SysTree) -> list[str]:
    """sdb, sdc, sdd behind one expander of the SAS HBA at 0000:03:00.0; returns sdb1..sdd1."""
    parts = []
    for slot, name in enumerate(("sdb", "sdc", "sdd")):
        end = f"end_device-4:0:{slot}"
        lun = (
            f"{SAS_PCI}/host4/port-4:0/expander-4:0/port-4:0:{slot}/{end}/"
            f"target4:0:{slot}/4:0:{slot}:0"
        )
        tree.files(lun, {"model": "ST4000NM0023", "vendor": "SEAGATE"})
        tree.dir(f"{SAS_PCI}/host4/scsi_host/host4")  # a class directory beside the hops
        base = disk(tree, f"{lun}/block/{name}", name, f"8:{16 * (slot + 1)}")
        tree.link_to(f"{base}/device", lun)
        parts.append(partition(tree, base, f"{name}1", 1, 2048, f"8:{16 * (slot + 1) + 1}"))
    return parts


def nvme_disk(tree: SysTree) -> str:
    """nvme0n1 in the new layout (.../nvme/nvme0/nvme0n1), scheduler `[none] mq-deadline`."""
    ctrl = f"{NVME_PCI}/nvme/nvme0"
    tree.files(ctrl, {"model": "Dell Ent NVMe", "serial": "S4ABC123"})
    base = f"{ctrl}/nvme0n1"
    queue = {**QUEUE, "scheduler": "[none] mq-deadline", "rotational": 0}
    tree.files(base, {"dev": "259:0", "size": 100 * SECTORS_1G, "removable": 0})
    tree.file(f"{base}/wwid", "eui.0025388b91b2c3d4")
    tree.files(f"{base}/queue", queue)
    tree.link_to(f"{base}/device", ctrl)
    tree.link_to("sys/block/nvme0n1", base)
    tree.link_to("sys/class/block/nvme0n1", base)
    return base


def virtual_disk(tree: SysTree, name: str, dev: str, attrs: dict[str, str | int]) -> str:
    """A device under sys/devices/virtual/block (md, dm, loop), with extra attribute files."""
    base = disk(tree, f"{VIRTUAL}/{name}", name, dev, queue={**QUEUE, "scheduler": "none"})
    tree.files(base, attrs)
    return base


def stack_on(tree: SysTree, upper: str, upper_name: str, lower: str, lower_name: str) -> None:
    """Link `upper` over `lower` both ways: upper/slaves/lower and lower/holders/upper."""
    tree.link_to(f"{upper}/slaves/{lower_name}", lower)
    tree.link_to(f"{lower}/holders/{upper_name}", upper)


def md_raid5(tree: SysTree, members: list[str]) -> str:
    """md0: raid5, 512 KiB chunks, over the partition directories `members`."""
    md0 = virtual_disk(
        tree, "md0", "9:0", {"md/level": "raid5", "md/chunk_size": 524288, "md/raid_disks": 3}
    )
    for part in members:
        name = part.rsplit("/", 1)[-1]
        tree.link_to(f"{md0}/md/dev-{name}/block", part)
        stack_on(tree, md0, "md0", part, name)
    return md0


def dm_on(tree: SysTree, lower: str) -> str:
    """dm-0, the LVM volume vg0/lv0, on the device directory `lower`."""
    dm0 = virtual_disk(tree, "dm-0", "253:0", {"dm/name": "vg0-lv0", "dm/uuid": "LVM-Xy12abc"})
    stack_on(tree, dm0, "dm-0", lower, lower.rsplit("/", 1)[-1])
    return dm0


def lab_loops(tree: SysTree) -> None:
    """iotuner's lab: loop3 holds the "bus" file system, whose files back loop4, loop5, loop6.

    loop5 and loop6 carry a btrfs raid0; the bus image itself lives on the root fs (sda1).
    """
    virtual_disk(tree, "loop3", "7:3", {"loop/backing_file": "/var/lib/iotuner/bus.img"})
    for number in (4, 5, 6):
        virtual_disk(
            tree,
            f"loop{number}",
            f"7:{number}",
            {
                "loop/backing_file": f"/mnt/iotuner-bus/disk{number}.img",
                "loop/offset": 0,
                "loop/dio": 1,
            },
        )
    fs_dir = "sys/fs/btrfs/4f1c2a9e-8d7b-4c3e-9a1f-2b3c4d5e6f70"
    tree.file(f"{fs_dir}/label", "scratch")
    tree.dir(f"{fs_dir}/allocation/data/raid0").dir(f"{fs_dir}/allocation/metadata/raid1")
    for number in (5, 6):
        tree.link_to(f"{fs_dir}/devices/loop{number}", f"{VIRTUAL}/loop{number}")
    tree.dir("sys/fs/btrfs/features")
    tree.file(
        "proc/self/mounts",
        "\n".join(
            [
                "/dev/sda1 / ext4 rw,relatime 0 0",
                "proc /proc proc rw 0 0",
                "/dev/loop3 /mnt/iotuner-bus ext4 rw,relatime 0 0",
                "/dev/loop5 /mnt/scratch btrfs rw,relatime,space_cache=v2 0 0",
            ]
        ),
    )


def full_host(tree: SysTree) -> None:
    """Every layout above in one root: SATA, SAS, NVMe, md, dm and the loop lab."""
    sda = sata_disk(tree)
    md_raid5(tree, sas_disks(tree))
    nvme_disk(tree)
    dm_on(tree, f"{sda}/sda2")
    lab_loops(tree)
