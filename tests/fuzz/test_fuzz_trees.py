"""Fuzzing captured trees: a scenario host's /sys and /proc with hostile files, probed and advised.

Each example takes the `hdd-scheduler-none` scenario (tests/fixtures/scenarios.py: PCI, HBAs,
disks, NUMA, IRQs), changes a few of the files the probes read (text no kernel writes, a FIFO,
a directory, a link out of the root or to itself, a huge file) and runs what `iotuner advise
--plan-out` runs: probe, facts, the rule base, the plan. Nothing may raise or take longer than
the limit, every warning is one line, and the plan written reads back.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from probes.host import probe_host
from probes.hostfs import MAX_FILE_BYTES, HostFS
from tests.fixtures.scenarios import build_scenario
from tests.fuzz.common import FUZZ, corpus, note, within
from tuner.facts import collect
from tuner.facts.target import FactOptions
from tuner.plan import parse_plan, plan_text
from tuner.rules.engine import evaluate
from tuner.rules.installed import load_rule_base
from tuner.rules.model import RuleBase
from tuner.rules.to_plan import plan_from_findings
from tuner.topology.document import to_document
from tuner.topology.model import Machine
from tuner.topology.view import render_topology

SPECIAL = [
    "sys/devices/system/cpu/online", "sys/devices/system/cpu/present",
    "sys/devices/system/cpu/cpu1/online", "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/node/node0/cpumap", "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node0/meminfo", "proc/interrupts", "proc/meminfo", "proc/mounts",
    "proc/self/mountinfo", "proc/sys/kernel/hostname", "proc/sys/vm/dirty_ratio",
    "proc/sys/net/ipv4/tcp_rmem", "proc/cpuinfo", "sys/block/sda/queue/scheduler",
    "sys/block/sda/queue/read_ahead_kb", "sys/block/sda/size", "sys/block/sda/dev",
    "sys/block/sda/queue/logical_block_size", "sys/block/sda/queue/max_sectors_kb",
    "proc/irq/24/smp_affinity_list", "proc/irq/25/effective_affinity_list",
    "proc/irq/26/smp_affinity", "sys/devices/system/node/online", "proc/sys/net/core/rmem_max",
]  # fmt: skip
DIRS = [
    "sys/class/block", "sys/block", "sys/bus/pci/devices", "sys/class/net",
    "sys/devices/system/node", "sys/devices/system/cpu", "proc/irq", "sys/class/scsi_host",
]  # fmt: skip
"""Directories the probes list: made files (or FIFOs, links) by the mutations too (issue 27)."""
TEXTS = [
    "0-4294967295", "4294967295", "0-99999999999999999999", "²", "٣", "1_000", "-128", "-1",
    "18446744073709551615", "0-31\n\0", "\0", "", "[[none] mq-deadline]]", "[none] [kyber]",
    "none\nmq-deadline", "CPU0 CPU99999999\n 0: 1 2 IO-APIC x", "CPU0\n ²: 1 IO-APIC y",
    "8:0\n", "²:0", "0x", "0-7:0/4", "0-7:9/4", "1e9", "nan", "10 20 30 40 50",
    "MemTotal: 99999999999999999999999 kB", "\x1b[31m[bold]red[/bold]", "a" * 5000, "\ufeff0-3",
    # issue 27: CPU lists that are slow to expand, numbers no float holds
    ",".join(["0-65535"] * 8192), ",".join(f"{n}-65535:1/{n % 64 + 2}" for n in range(4000)),
    ",".join(["ffffffff"] * 2048), "9" * 400, f"MemTotal: {'9' * 400} kB", f"{'9' * 400} GT/s PCIe",
    f"4096 131072 {'9' * 400}",
]  # fmt: skip


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[Path, list[str]]]:
    where = Path(tempfile.mkdtemp(prefix="iotuner-fuzz-base-"))
    root = where / "root"
    build_scenario("hdd-scheduler-none", root)
    files = sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink()
    )
    try:
        yield root, files
    finally:
        shutil.rmtree(where, ignore_errors=True)


Change = tuple[str, object]
"""What to make of one path: ("text", str), ("bytes", b), ("fifo", None), ("link", target)..."""


def _content(draw: st.DrawFn) -> Change:
    kind = draw(st.sampled_from(["text", "text", "text", "bytes", "fifo", "dir", "link", "gone",
                                 "huge"]))  # fmt: skip
    if kind == "text":
        return ("text", draw(st.one_of(st.sampled_from(TEXTS), st.text(max_size=60))))
    if kind == "bytes":
        return ("bytes", draw(st.binary(max_size=200)))
    if kind == "link":
        return ("link", draw(st.sampled_from(["/etc/shadow", "../../../../..", ".", "loop",
                                              "/proc/self/fd/0", "missing"])))  # fmt: skip
    return (kind, None)


@st.composite
def _changes(draw: st.DrawFn, files: list[str]) -> list[tuple[str, Change]]:
    count = draw(st.integers(1, 6))
    paths = st.one_of(st.sampled_from(SPECIAL), st.sampled_from(files), st.sampled_from(DIRS))
    return [(draw(paths), _content(draw)) for _ in range(count)]


def apply_change(root: Path, rel: str, change: Change) -> None:
    """Make `rel` below `root` what `change` says."""
    kind, value = change
    path = root / rel
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        # An earlier change made a directory above `rel` a file, FIFO or dangling link: nothing
        # can be made below it, in a capture as here.
        return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):  # a file, a link, or a FIFO an earlier change made
        path.unlink()
    if kind == "text":
        path.write_bytes(str(value).encode("utf-8", errors="surrogatepass"))
    elif kind == "bytes":
        assert isinstance(value, bytes)
        path.write_bytes(value)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "link":
        path.symlink_to(path.name if value == "loop" else str(value))
    elif kind == "huge":
        with path.open("wb") as out:
            out.truncate(MAX_FILE_BYTES + 1)


def handles(root: Path) -> None:
    """Probe, facts, rules and the plan, as advise --plan-out runs them: none may fail."""
    rules = _rules()
    with within():
        fs = HostFS(root)
        topology = probe_host(fs)
        json.dumps(to_document(topology))
        # The text view too: a 400-digit MemTotal once overflowed its float formatting.
        Console(file=io.StringIO(), width=100).print(render_topology(topology, None))
        targets = collect(topology, FactOptions(link_gbps=10, rtt_ms=50, live=False))
        for workload in ("stream-read", "disk-to-network"):
            result = evaluate(rules, targets, workload)
            host = next((m.name for m in topology.of_type(Machine)), "host")
            plan = plan_from_findings(result.findings, host, workload)
            assert parse_plan(plan_text(plan), "advise's plan") == plan
    assert all("\n" not in w and "\r" not in w for w in [*fs.warnings, *topology.warnings])
    note(f"{min(len(fs.warnings), 5)}+ warnings" if len(fs.warnings) >= 5 else
         f"{len(fs.warnings)} warnings")  # fmt: skip


@functools.cache
def _rules() -> RuleBase:
    return load_rule_base()


@FUZZ
@given(st.data())
def test_generated_trees(base: tuple[Path, list[str]], data: st.DataObject) -> None:
    root, files = base
    changes = data.draw(_changes(files))
    with tempfile.TemporaryDirectory(prefix="iotuner-fuzz-tree-") as folder:
        tree = Path(folder) / "root"
        shutil.copytree(root, tree, symlinks=True)
        for rel, change in changes:
            apply_change(tree, rel, change)
        handles(tree)


@pytest.mark.parametrize("path", corpus("trees"), ids=lambda p: p.name)
def test_trees_that_once_failed(base: tuple[Path, list[str]], path: Path, tmp_path: Path) -> None:
    """Each corpus file is a JSON list of [path, [kind, value]] changes to the scenario."""
    tree = tmp_path / "root"
    shutil.copytree(base[0], tree, symlinks=True)
    for rel, (kind, value) in json.loads(path.read_text()):
        apply_change(tree, rel, (kind, value))
    handles(tree)
