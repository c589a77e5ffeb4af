"""Hardware fingerprints on fixture hosts and hwloc's machine dumps: what groups, what splits."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.host import probe_host
from probes.hostfs import HostFS
from tests.conftest import HWLOC_DUMPS
from tests.fixtures.scenarios import build_scenario
from tuner.errors import BadInput
from tuner.fleet.fingerprint import fingerprint, fingerprint_of_document
from tuner.topology.document import to_document
from tuner.topology.model import Topology


def probed(root: Path) -> Topology:
    """The topology of a fixture root, as the facts module probes it."""
    return probe_host(HostFS(root))


def host(tmp_path: Path, name: str, scenario: str = "well-configured") -> Path:
    """A fresh copy of a paper scenario's host under tmp_path/name."""
    root = tmp_path / name
    build_scenario(scenario, root)
    return root


def test_identical_hosts_share_a_fingerprint_whatever_their_names(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b")
    # What differs between two copies of a server: host name, serials and WWNs, kernel names.
    (b / "proc/sys/kernel/hostname").write_text("storage02\n")
    lun = (b / "sys/block/sda/device").resolve()
    (lun / "wwid").write_text("naa.5000c500deadbeefa1b2\n")
    wwns = {probed(root).block_device("sda").wwn for root in (a, b)}  # type: ignore[union-attr]
    assert len(wwns) == 2
    first, second = fingerprint(probed(a)), fingerprint(probed(b))
    assert first.digest == second.digest
    assert len(first.digest) == 12 and int(first.digest, 16) >= 0
    assert first.summary == (
        "2 NUMA nodes x 8 CPUs; 1000:0097 mpt3sas x8 8 GT/s (4 hdd 7.3 TiB ST8000NM0075); "
        "144d:a808 nvme x4 8 GT/s (1 nvme 1.7 TiB SAMSUNG MZQLB1T9HAJR-00007); "
        "8086:1572 i40e x8 8 GT/s (nic i40e 10 Gb/s)"
    )


def test_a_disk_of_another_size_splits_the_group(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b")
    (b / "sys/block/sdb/size").write_text(f"{4 * 1024**4 // 512}\n")  # a 4 TiB disk
    first, second = fingerprint(probed(a)), fingerprint(probed(b))
    assert first.digest != second.digest
    assert "(1 hdd 4.0 TiB ST8000NM0075, 3 hdd 7.3 TiB ST8000NM0075)" in second.summary


@pytest.mark.parametrize(
    "scenario",
    ["hba-downtrained", "powersave-governor", "nic-downtrained", "sixteen-hdd-one-wide-port"],
)
def test_links_and_disks_split_groups_and_settings_do_not(tmp_path: Path, scenario: str) -> None:
    base = fingerprint(probed(host(tmp_path, "base"))).digest
    other = fingerprint(probed(host(tmp_path, scenario, scenario))).digest
    # A governor is a setting, the very thing the plan changes: the hardware is the same.
    assert (other == base) == (scenario == "powersave-governor")


def test_devices_limit_storage_to_those_disks_and_their_controllers(tmp_path: Path) -> None:
    topology = probed(host(tmp_path, "a"))
    sda = fingerprint(topology, ["sda"])
    assert sda.digest == fingerprint(topology, ["/dev/sdb"]).digest  # the same kind of disk
    assert sda.digest != fingerprint(topology, ["nvme0n1"]).digest
    assert sda.digest != fingerprint(topology).digest
    assert "nvme" not in sda.summary and "1 hdd 7.3 TiB ST8000NM0075" in sda.summary
    with pytest.raises(BadInput, match="sdz: no such block device"):
        fingerprint(topology, ["sdz"])


def test_the_probe_document_gives_the_same_fingerprint(tmp_path: Path) -> None:
    topology = probed(host(tmp_path, "a"))
    doc = to_document(topology)
    assert fingerprint_of_document(doc).digest == fingerprint(topology).digest
    assert fingerprint_of_document(doc, ["sdc"]) == fingerprint(topology, ["sdc"])
    with pytest.raises(BadInput, match="not an iotuner probe document"):
        fingerprint_of_document({"schema_version": 99})


def test_real_machines_each_have_their_own_fingerprint(hwloc_root) -> None:  # type: ignore[no-untyped-def]
    prints = {name: fingerprint(probed(hwloc_root(name))) for name in HWLOC_DUMPS}
    assert len({p.digest for p in prints.values()}) == len(prints)
    nvme = prints["32em64t-2n8c+dax+nvme+mic+dimms"]
    assert nvme.summary.startswith("2 NUMA nodes x 8 CPUs; 8086:1d02 ahci (1 hdd 232.9 GiB")
    assert "8086:0953 nvme (1 nvme 372.6 GiB)" in nvme.summary
    assert prints["16amd64-8n2c"].summary == "8 NUMA nodes x 2 CPUs"


def test_a_machine_probed_twice_and_from_json_keeps_its_fingerprint(hwloc_root) -> None:  # type: ignore[no-untyped-def]
    root = hwloc_root("40intel64-2g2n4c+pcilocality")
    first, second = probed(root), probed(root)
    assert fingerprint(first) == fingerprint(second)
    assert fingerprint_of_document(to_document(first), ["sda"]) == fingerprint(second, ["sda"])
    assert "1000:0079 megaraid_sas (1 hdd 1.6 TiB PERC H700)" in fingerprint(first).summary


def test_an_array_stands_for_its_member_disks(tmp_path: Path) -> None:
    topology = probed(host(tmp_path, "a"))
    md0 = fingerprint(topology, ["md0"])
    # md0 (raid10 over sda1-sdd1): the array, and the four disks below it with their HBA.
    assert "1000:0097 mpt3sas x8 8 GT/s (4 hdd 7.3 TiB ST8000NM0075)" in md0.summary
    assert md0.summary.endswith("; 1 md 14.6 TiB")
    assert md0.digest != fingerprint(topology, ["sda"]).digest
    raid5 = fingerprint(probed(host(tmp_path, "b", "md-raid5")), ["md0"])
    assert raid5.document["disks"][0]["md"] == ["raid5", 512 * 1024, 4]
    assert raid5.digest != md0.digest
