"""`iotuner bottleneck`: which shared component caps a group of devices, found by reading them."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer
from rich.table import Table

from probes.host import probe_host
from probes.host_root import live_host
from probes.hostfs import HostFS
from tuner.bottleneck import (
    Group,
    Plateau,
    Scaling,
    default_devices,
    device_groups,
    find_plateau,
    run_scaling,
    summary,
)
from tuner.bottleneck.scaling import BLOCK, IODEPTH
from tuner.console import output_console
from tuner.errors import BadInput, IotunerError
from tuner.lab.status import lab_status
from tuner.results import save_result
from tuner.topology.model import Topology
from tuner.trials.blockdev import block_number, kernel_name
from tuner.trials.faults import TrialFault
from tuner.units import human_rate

RESULT_NAME = "bottleneck"


def bottleneck(
    devices: Annotated[
        list[str] | None,
        typer.Option(
            "--devices",
            metavar="DEV[,DEV...]",
            help="Devices to group (names or /dev paths; repeat or comma-separate). "
            "Default: every disk, NVMe namespace and loop device.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    runtime: Annotated[
        float, typer.Option("--runtime", help="Seconds each scaling point reads.", min=0.5)
    ] = 3.0,
) -> None:
    """Group devices by the components they share and read 1..N of each group at once
    (read-only, direct I/O): where the summed throughput stops growing short of the devices'
    own sum, that component is the bottleneck. Never writes.

    Exit codes: 0 measured (capped or not), 1 failure (also a device's fault: an I/O error,
    a device gone, reported in one line naming it), 2 bad input.
    """
    started = time.monotonic()
    console = output_console(stderr=as_json)
    topology = probe_host(live_host())
    names = resolve(devices, topology, live_host())
    groups = device_groups(topology, names, lab_bus_names())
    results = []
    try:
        with console.status("scaling") as status:
            for group in groups:
                scaling = run_scaling(group, runtime, progress=status.update)
                results.append((group, scaling, find_plateau(scaling.totals, scaling.solo_mbps)))
    except TrialFault as fault:
        # Bottleneck only reads: nothing to restore; a curve with a hole in it is no result.
        raise fault.reported("bottleneck", "nothing changed, no result saved") from None
    doc = document(names, results, runtime, time.monotonic() - started)
    save_result(RESULT_NAME, doc, devices=names)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if not groups:
        console.print(
            f"no two of the devices ({', '.join(names) or 'none found'}) share a component "
            "above them: nothing to scale",
            highlight=False,
            markup=False,
        )
        return
    for group, scaling, plateau in results:
        console.print(render_curve(group, scaling))
        style = "bold red" if plateau.capped else "green"
        console.print(summary(group, plateau), style=style, highlight=False, markup=False)
        if scaling.flagged:
            console.print(
                f"flagged: {scaling.flagged}", style="yellow", highlight=False, markup=False
            )


def resolve(given: list[str] | None, topology: Topology, fs: HostFS) -> tuple[str, ...]:
    """Kernel names of the devices asked for (names, /dev paths, links), or the default set;
    `fs` reads the host whose /dev the paths name."""
    if not given:
        return default_devices(topology)
    names: list[str] = []
    for item in (part.strip() for arg in given for part in arg.split(",")):
        if not item:
            continue
        if topology.block_device(item) is not None:
            name: str | None = item
        else:
            path = item if item.startswith("/") else f"/dev/{item}"
            number = block_number(path)
            name = kernel_name(fs, number) if number is not None else None
        if name is None or topology.block_device(name) is None:
            raise BadInput(f"--devices {item}: not a block device")
        if name not in names:
            names.append(name)
    return tuple(names)


def lab_bus_names() -> dict[str, str]:
    """Kernel names of the lab's buses (loop1 -> bus0) when a lab is up, so they read as buses."""
    try:
        lab = lab_status()
    except IotunerError:  # a broken lab is `lab status`'s business, not a reason to stop here
        return {}
    if lab is None:
        return {}
    return {bus.device.removeprefix("/dev/"): bus.name for bus in lab.buses}


def document(
    devices: tuple[str, ...],
    results: list[tuple[Group, Scaling, Plateau]],
    runtime_s: float,
    seconds: float,
) -> dict[str, Any]:
    """The JSON result (also saved for `iotuner report`)."""
    groups = []
    for group, scaling, plateau in results:
        points = [
            {
                "busy": point.busy,
                "devices": list(group.devices[: point.busy]),
                "total_mbps": round(point.total_mbps, 1),
                "expected_mbps": round(sum(scaling.solo_mbps[: point.busy]), 1),
                "per_device_mbps": [round(rate, 1) for rate in point.per_device_mbps],
            }
            for point in scaling.points
        ]
        groups.append(
            {
                "component": {
                    "id": group.component.id,
                    "kind": group.component.kind,
                    "name": group.component.name,
                },
                "devices": list(group.devices),
                "solo_mbps": [round(rate, 1) for rate in scaling.solo_mbps],
                "points": points,
                "plateau": {
                    "ceiling_mbps": round(plateau.ceiling_mbps, 1),
                    "from_devices": plateau.from_devices,
                    "expected_mbps": round(plateau.expected_mbps, 1),
                    "capped": plateau.capped,
                },
                "summary": summary(group, plateau),
                "flagged": scaling.flagged,
                "seconds": round(scaling.seconds, 1),
            }
        )
    return {
        "command": "bottleneck",
        "devices": list(devices),
        "workload": {"rw": "read", "bs": BLOCK, "iodepth": IODEPTH, "direct": True},
        "runtime_s": runtime_s,
        "groups": groups,
        "seconds": round(seconds, 1),
    }


def render_curve(group: Group, scaling: Scaling) -> Table:
    """The scaling curve as a table: busy devices, summed MB/s, the sum of their solo rates."""
    table = Table(
        title=f"{group.component.label}: {', '.join(group.devices)}", title_justify="left"
    )
    table.add_column("busy", justify="right")
    table.add_column("measured", justify="right")
    table.add_column("expected", justify="right")
    table.add_column("per device", overflow="fold")
    for point in scaling.points:
        expected = sum(scaling.solo_mbps[: point.busy])
        shares = ", ".join(f"{rate:.0f}" for rate in point.per_device_mbps)
        table.add_row(str(point.busy), human_rate(point.total_mbps), human_rate(expected), shares)
    return table
