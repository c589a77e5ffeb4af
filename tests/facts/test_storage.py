"""Disk, array, partition and mount facts."""

from __future__ import annotations

import dataclasses

from tests.facts.model import AHCI, MIB, RAID, Host, link, sas_hba_with_disks
from tuner.facts import FactOptions, Target, collect
from tuner.facts.index import TopologyIndex
from tuner.facts.storage import data_members, storage_targets
from tuner.facts.xfs import XfsGeometry
from tuner.topology.model import LoopInfo, Mount, MultiDeviceFs, QueueSettings

CHUNK = 512 * 1024


def targets(host: Host, kind: str) -> dict[str, Target]:
    return {t.name: t for t in collect(host.build(), FactOptions())[kind]}


def raid5_host() -> Host:
    """md0: raid5, 512 KiB chunks, over sda1..sdd1 of four HDDs on one HBA."""
    host = Host()
    disks = sas_hba_with_disks(host, disks=4)
    for name in disks:
        host.partition(f"{name}1", name, 1 * MIB)
    host.md("md0", "raid5", CHUNK, [f"{name}1" for name in disks])
    return host


def test_md_raid5_over_four_hdds() -> None:
    md0 = targets(raid5_host(), "array")["md0"].facts
    assert (md0["level"], md0["is_parity"], md0["member_count"]) == ("raid5", True, 4)
    assert (md0["data_members"], md0["chunk_bytes"]) == (3, CHUNK)
    assert md0["stripe_width_bytes"] == 3 * CHUNK
    assert (md0["models"], md0["model_count"], md0["size_count"]) == ("ST4000NM0023", 1, 1)
    assert md0["mixed_rotational"] is False
    assert (md0["slowest_member_mbps"], md0["fastest_member_mbps"]) == (200.0, 200.0)


def test_mixed_models_in_one_array() -> None:
    host = Host()
    disks = sas_hba_with_disks(host, disks=4)
    host.nodes = [
        dataclasses.replace(node, model="WD4002FYYZ") if node.name in disks[2:] else node
        for node in host.nodes
    ]
    host.md("md1", "raid0", CHUNK, disks)
    md1 = targets(host, "array")["md1"].facts
    assert (md1["models"], md1["model_count"]) == ("ST4000NM0023,WD4002FYYZ", 2)
    assert md1["data_members"] == 4


def test_data_members_per_level() -> None:
    assert [data_members(level, 4) for level in ("raid0", "raid1", "raid5", "raid6", "raid10")] == [
        4,
        1,
        3,
        2,
        2,
    ]
    assert data_members("container", 4) is None
    assert data_members(None, 4) is None


def test_partition_misaligned_to_the_chunk_of_the_array_it_belongs_to() -> None:
    host = Host()
    disks = sas_hba_with_disks(host, disks=2)
    host.partition("sda1", "sda", 1 * MIB + 512)
    host.partition("sdb1", "sdb", 1 * MIB)
    host.md("md0", "raid0", CHUNK, ["sda1", "sdb1"])
    found = targets(host, "partition")
    sda1 = found["sda1"].facts
    assert (sda1["disk"], sda1["start_bytes"], sda1["chunk_bytes"]) == ("sda", 1 * MIB + 512, CHUNK)
    assert sda1["misalignment_bytes"] == 512
    assert sda1["stripe_width_bytes"] == 2 * CHUNK
    assert (sda1["physical_block_size"], sda1["misaligned_to_sector"]) == (4096, True)
    assert found["sdb1"].facts["misalignment_bytes"] == 0
    assert disks == ["sda", "sdb"]


def test_partition_of_an_md_array_is_judged_against_its_chunk() -> None:
    host = raid5_host()
    host.partition("md0p1", "md0", 1 * MIB + 512)
    md0p1 = targets(host, "partition")["md0p1"].facts
    assert (md0p1["disk"], md0p1["chunk_bytes"], md0p1["misalignment_bytes"]) == ("md0", CHUNK, 512)


def test_partition_outside_arrays_has_no_chunk() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=1)
    host.partition("sda1", "sda", 2048 * 512)
    sda1 = targets(host, "partition")["sda1"].facts
    assert (sda1["chunk_bytes"], sda1["misalignment_bytes"]) == (None, None)
    assert sda1["misaligned_to_sector"] is False


def test_disk_facts() -> None:
    host = raid5_host()
    host.mounts.append(Mount("/dev/md0", "/data", "xfs", ("rw", "noatime"), "md0"))
    found = targets(host, "disk")
    sda = found["sda"].facts
    assert (sda["kind"], sda["is_physical"], sda["is_nvme"]) == ("disk", True, False)
    assert (sda["expected_mbps"], sda["controller"], sda["numa_node"]) == (200.0, "0000:03:00.0", 0)
    assert (sda["scheduler"], sda["schedulers"]) == ("mq-deadline", "mq-deadline,none")
    assert (sda["behind_raid_controller"], sda["member_count"], sda["mounted"]) == (False, 0, False)
    md0 = found["md0"].facts
    assert (md0["kind"], md0["is_physical"], md0["controller"], md0["numa_node"]) == (
        "md",
        False,
        None,
        None,
    )
    assert (md0["member_count"], md0["mounted"], md0["expected_mbps"]) == (4, True, None)
    assert not {"sda1", "md0p1"} & set(found)


def test_one_big_logical_drive_behind_a_raid_controller() -> None:
    host = Host()
    fn = host.function("0000:03:00.0", host.host_bridge(), RAID, link(8.0, 8))
    host.disk("sda", host.port("host0", fn, "scsi_host"), model="PERC H740P", vendor="DELL")
    assert targets(host, "disk")["sda"].facts["behind_raid_controller"] is True


def test_empty_slots_and_unbound_loops_are_not_disks() -> None:
    host = Host()
    host.disk("loop0", "machine", size=0, queue=None)
    bound = host.disk("loop1", "machine", rotational=False, size=10 * MIB, queue=None)
    host.nodes[-1] = dataclasses.replace(bound, loop=LoopInfo("/var/img", "sda1"))
    host.disk("zram0", "machine", size=0, queue=None)
    found = targets(host, "disk")
    assert set(found) == {"loop1"}
    assert (found["loop1"].facts["kind"], found["loop1"].facts["is_physical"]) == ("loop", False)


def test_virtio_disk_is_not_physical_and_has_no_rate() -> None:
    host = Host()
    fn = host.function("0000:00:05.0", host.host_bridge(), 0x010000, None, vendor_id=0x1AF4)
    host.disk("vda", host.port("virtio1", fn, "virtio"), model=None, vendor=None)
    vda = targets(host, "disk")["vda"].facts
    assert (vda["is_physical"], vda["expected_mbps"], vda["controller"]) == (
        False,
        None,
        "0000:00:05.0",
    )


def test_mounts_on_arrays_and_atime() -> None:
    host = raid5_host()
    host.mounts.extend(
        [
            Mount("/dev/md0", "/data", "xfs", ("rw", "noatime"), "md0"),
            Mount("/dev/sda1", "/boot", "ext4", ("rw", "relatime"), "sdz1"),
            Mount("proc", "/proc", "proc", ("rw",), None),
        ]
    )
    found = targets(host, "mount")
    assert set(found) == {"/data"}  # sdz1 is not a known device; proc is no block device
    data = found["/data"].facts
    assert (data["device"], data["fstype"], data["options"]) == ("md0", "xfs", "rw,noatime")
    assert (data["atime_updates"], data["on_array"], data["chunk_bytes"]) == (False, True, CHUNK)
    # Not live: xfs_info is not run, so the geometry is unknown.
    assert (data["xfs_sunit_bytes"], data["geometry_matches"]) == (None, None)


def test_a_bind_mount_is_not_a_file_system_of_its_own() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=1)
    host.partition("sda1", "sda", 1 * MIB)
    options = ("rw", "relatime")
    host.mounts.extend(
        [
            Mount("/dev/sda1", "/", "ext4", options, "sda1"),
            Mount("/dev/sda1", "/run/netns", "ext4", options, "sda1"),  # ip netns's bind
            Mount("/dev/sda1", "/srv/ro", "ext4", ("ro", "noatime"), "sda1"),  # other options
        ]
    )
    assert set(targets(host, "mount")) == {"/", "/srv/ro"}


def test_relatime_still_updates_atime() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=1)
    host.partition("sda1", "sda", 1 * MIB)
    host.mounts.append(Mount("/dev/sda1", "/srv", "ext4", ("rw", "relatime"), "sda1"))
    srv = targets(host, "mount")["/srv"].facts
    assert (srv["atime_updates"], srv["on_array"], srv["chunk_bytes"]) == (True, False, None)
    assert targets(host, "disk")["sda"].facts["mounted"] is True


def test_reads_enter_where_mounted_or_where_the_workload_reads_the_device_itself() -> None:
    host = Host()
    sas_hba_with_disks(host, disks=3)
    host.partition("sda1", "sda", 1 * MIB)
    host.mounts.append(Mount("/dev/sda1", "/srv", "ext4", ("rw",), "sda1"))
    options = FactOptions(read_devices=frozenset({"sdb"}))
    disks = {t.name: t.facts for t in collect(host.build(), options)["disk"]}
    assert [(d["reads_enter"], d["entry"]) for d in (disks["sda"], disks["sdb"], disks["sdc"])] == [
        (True, "holding a mounted file system"),
        (True, "read directly by the workload"),
        (False, None),
    ]
    assert disks["sdb"]["mounted"] is False


def test_xfs_geometry_is_read_only_on_the_live_host_and_compared_to_the_array() -> None:
    host = raid5_host()
    host.mounts.append(Mount("/dev/md0", "/data", "xfs", ("rw",), "md0"))
    calls: list[str] = []

    def reader(mountpoint: str) -> XfsGeometry:
        calls.append(mountpoint)
        return XfsGeometry(CHUNK, 3 * CHUNK)

    ix = TopologyIndex(host.build())
    assert storage_targets(ix, False, reader)["mount"][0].facts["geometry_matches"] is None
    assert calls == []
    live = storage_targets(ix, True, reader)["mount"][0].facts
    assert calls == ["/data"]
    assert (live["xfs_sunit_bytes"], live["xfs_swidth_bytes"]) == (CHUNK, 3 * CHUNK)
    assert live["geometry_matches"] is True
    wrong = storage_targets(ix, True, lambda _: XfsGeometry(0, 0))["mount"][0].facts
    assert wrong["geometry_matches"] is False


def test_multi_device_btrfs_is_an_array() -> None:
    host = Host()
    fn = host.function("0000:00:1f.2", host.host_bridge(), AHCI, None)
    for n, name in enumerate(("sda", "sdb", "sdc")):
        ata = host.port(f"ata{n + 1}", fn, "ata_port", 6.0, 1)
        ssd = QueueSettings(scheduler="none", physical_block_size=4096)
        host.disk(name, ata, rotational=False, vendor="ATA", model="Samsung SSD 870", queue=ssd)
    host.filesystems.append(
        MultiDeviceFs("btrfs", "4f1c", "scratch", ("sda", "sdb", "sdc"), "raid0")
    )
    host.mounts.append(Mount("/dev/sda", "/scratch", "btrfs", ("rw",), "sda"))
    scratch = targets(host, "array")["scratch"].facts
    assert (scratch["level"], scratch["chunk_bytes"], scratch["data_members"]) == (
        "raid0",
        65536,
        3,
    )
    assert scratch["slowest_member_mbps"] == 500.0
    assert targets(host, "mount")["/scratch"].facts["on_array"] is True
    assert all(t.facts["mounted"] for t in targets(host, "disk").values())


def test_a_cd_drive_is_no_disk() -> None:
    host = Host()
    fn = host.function("0000:00:1f.2", host.host_bridge(), AHCI, None)
    host.disk("sr0", host.port("ata2", fn, "ata_port"), model="DVD+-RW", vendor="TSSTcorp")
    host.disk("sda", host.port("ata1", fn, "ata_port", 6.0, 1))
    assert set(targets(host, "disk")) == {"sda"}
    (found,) = collect(host.build(), FactOptions())["host"]
    assert found.facts["hdd_count"] == 1
