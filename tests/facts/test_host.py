"""Host facts: governors, writeback thresholds, TCP, the path from the options, controllers."""

from __future__ import annotations

from tests.facts.model import GIB, NVME, SAS_HBA, Host, link, sas_hba_with_disks
from tuner.facts import FactOptions, collect
from tuner.facts.host import dirty_limit_bytes
from tuner.topology.model import CpuInfo, TcpSettings, VmSettings


def host_facts(host: Host, options: FactOptions | None = None) -> dict[str, object]:
    (target,) = collect(host.build(), options or FactOptions())["host"]
    return target.facts


def test_dirty_defaults_on_a_256_gib_host() -> None:
    host = Host(memory_bytes=256 * GIB, vm=VmSettings(20, 10, 0, 0, 3000))
    facts = host_facts(host)
    assert (facts["dirty_ratio"], facts["dirty_background_ratio"]) == (20, 10)
    # 20% of 256 GiB can be dirty before writers stall; writeback starts at 10%.
    assert facts["dirty_limit_bytes"] == 256 * GIB * 20 // 100
    assert facts["dirty_background_limit_bytes"] == 256 * GIB // 10
    assert facts["dirty_expire_centisecs"] == 3000


def test_dirty_bytes_override_the_ratio() -> None:
    assert dirty_limit_bytes(1 << 30, 20, 256 * GIB) == 1 << 30
    assert dirty_limit_bytes(0, 20, 100) == 20
    assert dirty_limit_bytes(0, None, 100) is None
    assert dirty_limit_bytes(None, 20, None) is None


def test_powersave_on_every_cpu() -> None:
    host = Host(
        cpu=CpuInfo(online=(0, 1, 2, 3), governors=tuple((c, "powersave") for c in range(4)))
    )
    facts = host_facts(host)
    assert (facts["governor"], facts["governors"], facts["non_performance_cpus"]) == (
        "powersave",
        "powersave",
        4,
    )


def test_mixed_and_absent_governors() -> None:
    mixed = CpuInfo(online=(0, 1), governors=((0, "performance"), (1, "schedutil")))
    facts = host_facts(Host(cpus=2, cpu=mixed))
    assert (facts["governor"], facts["governors"], facts["non_performance_cpus"]) == (
        None,
        "performance,schedutil",
        1,
    )
    absent = host_facts(Host(cpus=2))
    assert (absent["governor"], absent["governors"], absent["non_performance_cpus"]) == (
        None,
        "",
        0,
    )


def test_tcp_buffers_and_bdp_from_the_options() -> None:
    tcp = TcpSettings(
        tcp_rmem=(4096, 131072, 4194304),
        tcp_wmem=(4096, 16384, 4194304),
        rmem_max=4194304,
        wmem_max=4194304,
        congestion_control="cubic",
        available_congestion_control=("reno", "cubic"),
        default_qdisc="pfifo_fast",
    )
    facts = host_facts(Host(tcp=tcp), FactOptions(link_gbps=10, rtt_ms=100))
    assert (facts["tcp_rmem_max"], facts["tcp_wmem_max"]) == (4194304, 4194304)
    assert (facts["link_gbps"], facts["rtt_ms"], facts["bdp_bytes"]) == (10, 100, 125_000_000)
    assert (facts["congestion_control"], facts["available_congestion_control"]) == (
        "cubic",
        "reno,cubic",
    )
    assert facts["bbr_available"] is False
    assert facts["default_qdisc"] == "pfifo_fast"
    unknown = host_facts(Host())
    assert (unknown["bdp_bytes"], unknown["bbr_available"], unknown["tcp_rmem_max"]) == (
        None,
        None,
        None,
    )


def test_controllers_crowding_one_node_and_disk_counts() -> None:
    host = Host(cpus=8, numa_nodes=2)
    bridge = host.host_bridge("80")
    for n in range(3):
        host.function(f"0000:8{n + 1}:00.0", bridge, SAS_HBA, link(8.0, 8), numa_node=1)
    sas_hba_with_disks(host, disks=4)  # node unknown: no numa_node on the function
    nvme = host.function("0000:41:00.0", host.host_bridge("40"), NVME, link(8.0, 4), numa_node=0)
    host.disk("nvme0n1", nvme, rotational=False, model="PM1733", vendor=None)
    facts = host_facts(host)
    assert (facts["storage_controllers"], facts["busiest_node"]) == (5, 1)
    assert facts["busiest_node_controllers"] == 3
    assert (facts["hdd_count"], facts["ssd_count"]) == (4, 1)
    assert (facts["cpu_count"], facts["numa_node_count"], facts["name"]) == (8, 2, "box")
