"""CPU probe: online CPUs, governors, model names across architectures."""

from __future__ import annotations

from probes.cpu import probe_cpu
from probes.hostfs import HostFS
from tests.sysfs_tree import SysTree

CPU = "sys/devices/system/cpu"


def test_governors_and_model(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-1")
    tree.files(
        f"{CPU}/cpu0/cpufreq", {"scaling_governor": "powersave", "cpuinfo_max_freq": 3_000_000}
    )
    tree.files(
        f"{CPU}/cpu1/cpufreq", {"scaling_governor": "powersave", "cpuinfo_max_freq": 3_500_000}
    )
    tree.file("proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6230\n")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.online == (0, 1)
    assert cpu.governor == "powersave"
    assert cpu.max_mhz == 3500.0
    assert cpu.model_name == "Intel(R) Xeon(R) Gold 6230"


def test_mixed_governors_have_no_single_governor(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-1")
    tree.file(f"{CPU}/cpu0/cpufreq/scaling_governor", "performance")
    tree.file(f"{CPU}/cpu1/cpufreq/scaling_governor", "ondemand")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.governor is None
    assert cpu.governors == ((0, "performance"), (1, "ondemand"))


def test_no_cpufreq_and_no_online_file(tree: SysTree) -> None:
    tree.dir(f"{CPU}/cpu0").dir(f"{CPU}/cpu1").dir(f"{CPU}/cpufreq")
    cpu = probe_cpu(HostFS(tree.root))
    assert cpu.online == (0, 1)
    assert cpu.governors == ()


def _cpu_topology(tree: SysTree, cpu: int, core: str, package: str, socket: int) -> None:
    tree.files(f"{CPU}/cpu{cpu}/topology", {"thread_siblings_list": core,
               "core_siblings_list": package, "physical_package_id": socket})  # fmt: skip


def test_places_come_from_the_sibling_lists(tree: SysTree) -> None:
    # Two sockets of two cores with two threads each; socket numbers as the kernel gives them.
    tree.file(f"{CPU}/online", "0-7")
    for cpu in range(8):
        socket = cpu // 4
        first = cpu - cpu % 2
        _cpu_topology(tree, cpu, f"{first}-{first + 1}", f"{socket * 4}-{socket * 4 + 3}", socket)
    places = {p.cpu: p for p in probe_cpu(HostFS(tree.root)).places}
    assert {p.core for p in places.values()} == {0, 2, 4, 6}
    assert {p.package for p in places.values()} == {0, 4}
    assert (places[5].core, places[5].package, places[5].socket) == (4, 4, 1)


def test_core_ids_that_repeat_on_two_dies_still_make_distinct_cores(tree: SysTree) -> None:
    # hwloc's 48amd64 capture: core_id 0-5 on each die of one package, one thread per core.
    tree.file(f"{CPU}/online", "0-11")
    for cpu in range(12):
        _cpu_topology(tree, cpu, str(cpu), "0-11", 0)
        tree.file(f"{CPU}/cpu{cpu}/topology/core_id", cpu % 6)
    places = probe_cpu(HostFS(tree.root)).places
    assert len({p.core for p in places}) == 12 and {p.package for p in places} == {0}


def test_socket_minus_one_is_no_socket_number_and_no_warning(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-1")
    for cpu in range(2):  # s390: sockets from the sibling lists, physical_package_id -1
        _cpu_topology(tree, cpu, str(cpu), "0-1", -1)
    fs = HostFS(tree.root)
    places = probe_cpu(fs).places
    assert [(p.core, p.package, p.socket) for p in places] == [(0, 0, None), (1, 0, None)]
    assert fs.warnings == []


def test_overlapping_or_huge_sibling_lists_give_a_warning_and_no_places(tree: SysTree) -> None:
    tree.file(f"{CPU}/online", "0-2")
    _cpu_topology(tree, 0, "0-1", "0-2", 0)
    _cpu_topology(tree, 1, "0-1", "0-2", 0)
    _cpu_topology(tree, 2, "1-2", "0-2", 0)  # claims CPU 1, already in core 0
    fs = HostFS(tree.root)
    assert probe_cpu(fs).places == ()
    assert any("cpu2/topology/thread_siblings_list: CPU lists that overlap" in w
               for w in fs.warnings)  # fmt: skip
    # Lists that name every possible CPU again and again stop at the budget, not at the end.
    other = SysTree(tree.root.parent / "huge")
    other.file(f"{CPU}/online", "0-15")
    for cpu in range(16):
        _cpu_topology(other, cpu, f"{cpu},16-65535", "0-15", 0)
    fs = HostFS(other.root)
    assert probe_cpu(fs).places == ()
    assert any("run too long" in w for w in fs.warnings)
