"""`iotuner probe`: show the host's I/O topology as a tree, as JSON, or capture it."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from probes.gather import write_capture
from probes.host_root import open_root
from probes.hostfs import HostFS
from tuner.arguments import path_value
from tuner.console import output_console, print_warning
from tuner.errors import BadInput
from tuner.outfile import check_output_path
from tuner.probe_warnings import summarise
from tuner.topology.document import to_document
from tuner.topology.model import Topology
from tuner.topology.view import render_topology
from tuner.tunables.observe import probe_with_settings


class Section(StrEnum):
    """The parts of the topology `--section` can show alone."""

    pci = "pci"
    storage = "storage"
    net = "net"
    irq = "irq"
    numa = "numa"


# Which flat lists of the JSON document belong to each section.
SECTION_KEYS = {
    Section.pci: ("pci_devices",),
    Section.storage: ("block_devices", "dax_devices", "mounts", "filesystems", "edges"),
    Section.net: ("net_devices", "tcp"),
    Section.irq: ("irqs",),
    Section.numa: ("numa_nodes", "dax_devices", "cpu"),
}


def probe(
    root: Annotated[
        Path,
        typer.Option(
            help="Root to probe: a directory, or a capture made by --gather.",
            parser=path_value("--root"),
        ),
    ] = Path("/"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the topology as a JSON document.")
    ] = False,
    section: Annotated[Section | None, typer.Option(help="Show only this part.")] = None,
    gather: Annotated[
        Path | None,
        typer.Option(
            help="Write what the probes read to this .tar.xz, for --root or a bug report."
        ),
    ] = None,
) -> None:
    """Discover PCI links, controllers, disks, storage stacks, NICs, IRQs and NUMA layout.

    Read-only. Unreadable or malformed attributes are listed as warnings (on stderr).
    Exit codes: 0 probed (also with warnings), 2 bad input (--root is not a directory or a
    capture, --gather names another format or a missing directory).
    """
    with ExitStack() as stack:
        fs = HostFS(open_root(root, stack))
        topology = probe_with_settings(fs)
        if gather is not None:
            _gather(fs, topology, gather)
            return
        if as_json:
            doc = to_document(topology)
            if section is not None:
                keep = ("schema_version", "root", *SECTION_KEYS[section], "warnings")
                doc = {key: doc[key] for key in keep}
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
            return
        output_console().print(render_topology(topology, section.value if section else None))
        print_warnings(topology.warnings)


def print_warnings(warnings: tuple[str, ...]) -> None:
    """The probes' warnings on stderr, one line per kind (`--json` keeps each one)."""
    groups = summarise(warnings)
    err = output_console(stderr=True)
    for group in groups:
        print_warning(group.line(), err)
    if len(groups) < len(warnings):
        err.print(
            f"{len(warnings)} warnings in all, summarised; `iotuner probe --json` lists each",
            style="dim",
            highlight=False,
        )


def _gather(fs: HostFS, topology: Topology, out: Path) -> None:
    check_output_path(out, "--gather")
    if not out.name.endswith((".tar.xz", ".txz")):
        raise BadInput(f"--gather {out}: the capture is written as .tar.xz; name it so")
    host = topology.nodes[0].name if topology.nodes else "host"
    count = write_capture(fs, out, f"iotuner-capture-{host}")
    output_console(stderr=True).print(
        f"captured {count} paths into {out}", highlight=False, markup=False
    )
