"""NUMA nodes from node directories, old cpumap-only kernels, and machines without any."""

from __future__ import annotations

from probes.hostfs import HostFS
from probes.numa import online_cpus, probe_numa
from tests.sysfs_tree import SysTree

NODE = "sys/devices/system/node"


def two_nodes(tree: SysTree) -> SysTree:
    tree.files(f"{NODE}/node0", {"cpulist": "0-3", "distance": "10 21"})
    tree.file(f"{NODE}/node0/meminfo", "Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB")
    tree.files(f"{NODE}/node1", {"cpulist": "4-7", "distance": "21 10"})
    return tree


def test_two_nodes_with_cpus_memory_and_distances(tree: SysTree) -> None:
    nodes = probe_numa(HostFS(two_nodes(tree).root))
    assert [(n.os_index, n.cpus) for n in nodes] == [(0, (0, 1, 2, 3)), (1, (4, 5, 6, 7))]
    assert nodes[0].memory_bytes == 1024 * 1024
    assert nodes[1].distances == (21, 10)
    assert all(n.parent == "machine" for n in nodes)


def test_old_kernel_cpumap_only(tree: SysTree) -> None:
    tree.file(f"{NODE}/node0/cpumap", "00000003").file(f"{NODE}/node1/cpumap", "0000000c")
    nodes = probe_numa(HostFS(tree.root))
    assert [n.cpus for n in nodes] == [(0, 1), (2, 3)]


def test_sparse_node_ids_keep_their_numbers(tree: SysTree) -> None:
    tree.file(f"{NODE}/node0/cpulist", "0-5").file(f"{NODE}/node33/cpulist", "6-11")
    assert [n.os_index for n in probe_numa(HostFS(tree.root))] == [0, 33]


def test_no_node_directory_is_one_node_with_every_online_cpu(tree: SysTree) -> None:
    tree.file("sys/devices/system/cpu/online", "0-1")
    tree.file("proc/meminfo", "MemTotal:        2048 kB\n")
    (node,) = probe_numa(HostFS(tree.root))
    assert (node.os_index, node.cpus, node.memory_bytes) == (0, (0, 1), 2048 * 1024)


def test_nodes_claiming_the_same_cpus_collapse_with_a_warning(tree: SysTree) -> None:
    for i in range(4):
        tree.file(f"{NODE}/node{i}/cpulist", "0-7")
    tree.file("sys/devices/system/cpu/online", "0-7")
    fs = HostFS(tree.root)
    (node,) = probe_numa(fs)
    assert node.cpus == tuple(range(8))
    assert "claim the same CPUs" in fs.warnings[0]


def test_malformed_cpulist_and_distance_warn_without_failing(tree: SysTree) -> None:
    two_nodes(tree).file(f"{NODE}/node1/cpulist", "4-x").file(f"{NODE}/node0/distance", "10 zz")
    fs = HostFS(tree.root)
    nodes = probe_numa(fs)
    assert nodes[1].cpus == ()
    assert nodes[0].distances == ()
    assert any(w.startswith(f"{NODE}/node1/cpulist") for w in fs.warnings)
    assert any(w.startswith(f"{NODE}/node0/distance") for w in fs.warnings)


def test_offline_cpus_are_not_in_any_node(tree: SysTree) -> None:
    # Offline CPUs stay in the node's cpulist on some kernels; cpuN/online says 0 for them,
    # and a capture may lack cpu/online altogether (hwloc's 16em64t-4s2c2t-offlines).
    two_nodes(tree)
    for cpu in range(8):
        tree.file(f"sys/devices/system/cpu/cpu{cpu}/online", 0 if cpu in (2, 5) else 1)
    fs = HostFS(tree.root)
    assert online_cpus(fs) == (0, 1, 3, 4, 6, 7)
    assert [n.cpus for n in probe_numa(fs)] == [(0, 1, 3), (4, 6, 7)]


def test_cpus_outside_the_online_list_are_not_in_any_node(tree: SysTree) -> None:
    two_nodes(tree).file("sys/devices/system/cpu/online", "0-2,4-6")
    assert [n.cpus for n in probe_numa(HostFS(tree.root))] == [(0, 1, 2), (4, 5, 6)]


def test_cpulists_ending_in_newline_and_nul_keep_their_cpus(tree: SysTree) -> None:
    for node, cpus in ((0, "0-31"), (1, "32-63")):
        tree.dir(f"{NODE}/node{node}")
        (tree.root / f"{NODE}/node{node}/cpulist").write_bytes(f"{cpus}\n\0".encode())
    tree.dir("sys/devices/system/cpu")
    (tree.root / "sys/devices/system/cpu/online").write_bytes(b"0-63\n\0")
    fs = HostFS(tree.root)
    assert [n.cpus for n in probe_numa(fs)] == [tuple(range(32)), tuple(range(32, 64))]
    assert fs.warnings == []


def test_a_memtotal_no_machine_has_is_a_warning(tree: SysTree) -> None:
    tree.file("proc/meminfo", f"MemTotal: {'9' * 400} kB\nMemFree: 1 kB")
    fs = HostFS(tree.root)
    [node] = probe_numa(fs)
    assert node.memory_bytes is None
    assert len(fs.warnings) == 1 and "proc/meminfo: MemTotal" in fs.warnings[0]
    assert "implausible" in fs.warnings[0] and len(fs.warnings[0]) < 200


def test_a_memtotal_in_other_digits_is_not_read(tree: SysTree) -> None:
    tree.file("proc/meminfo", "MemTotal: \u0663\u0663 kB\n")
    fs = HostFS(tree.root)
    assert probe_numa(fs)[0].memory_bytes is None
