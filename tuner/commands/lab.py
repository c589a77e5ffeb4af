"""`iotuner lab up SPEC | down | status`: the emulated storage topology and network path
(docs/lab.md)."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from tuner import completion
from tuner.cli_help import Command, Group, examples
from tuner.codec import encode
from tuner.console import output_console, plain, plain_cells
from tuner.lab.spec import builtin_spec_names, load_spec
from tuner.units import human_bytes, human_rate

# Each subcommand imports its own part of the lab when it runs: `lab status` and `lab down`
# never load the builders (nbdkit, the namespaces), `lab down` nor the checks.
if TYPE_CHECKING:
    from tuner.lab.model import Lab, LabNetwork

app = typer.Typer(
    help="Build, inspect and remove an emulated storage lab (loop devices, buses, ceilings) "
    "and network path (namespaces, a rate, a round-trip time). "
    "Exit codes: 0 ok, 1 the lab failed or disagrees with the system, 2 bad input.",
    epilog=examples("lab"),
    no_args_is_help=True,
    cls=Group,
)

JSON_OPTION = typer.Option("--json", help="Print the result as JSON.")


@app.command(name="up", cls=Command, epilog=examples("up"))
def up(
    spec: Annotated[
        str,
        typer.Argument(
            help=f"A built-in spec ({', '.join(builtin_spec_names())}) or a spec .yaml file.",
            autocompletion=completion.lab_specs,
        ),
    ],
    as_json: Annotated[bool, JSON_OPTION] = False,
) -> None:
    """Build the lab a spec describes; refuses if one is already up (`lab down` first).

    Needs root. Exit codes: 0 up, 1 building failed (everything built so far is removed),
    2 bad input (an unknown or malformed spec, a lab already up, not root).
    """
    from tuner.lab.build import lab_up

    parsed = load_spec(spec)
    started = time.monotonic()
    lab = lab_up(parsed)
    if as_json:
        sys.stdout.write(json.dumps(encode(lab), indent=2) + "\n")
        return
    console = output_console()
    title = f"lab {lab.spec_name} up in {time.monotonic() - started:.0f} s"
    if lab.disks or lab.buses:
        console.print(_lab_table(lab, title))
    else:
        console.print(title, highlight=False, markup=False)
    if lab.network:
        console.print(_network_text(lab.network), highlight=False, markup=False)
    if lab.mountpoint:
        console.print(f"scratch file system: {lab.mountpoint}", highlight=False, markup=False)
    if lab.cgroup:
        console.print(f"ceilings apply to processes in {lab.cgroup}", highlight=False, markup=False)


@app.command(name="down", cls=Command, epilog=examples("down"))
def down(as_json: Annotated[bool, JSON_OPTION] = False) -> None:
    """Remove everything the lab created, also after a crash; 'no lab' if there is none.

    Exit codes: 0 removed (or nothing to remove), 1 something could not be removed, 2 not root.
    """
    from tuner.lab.teardown import lab_down

    removed = lab_down()
    if as_json:
        sys.stdout.write(json.dumps({"removed": removed}, indent=2) + "\n")
    elif not removed:
        typer.echo("no lab")
    else:
        typer.echo("\n".join(f"removed {line}" for line in removed))


@app.command(name="status", cls=Command, epilog=examples("lab status"))
def status(as_json: Annotated[bool, JSON_OPTION] = False) -> None:
    """What the lab has (devices, ceilings, mountpoints), checked against the system.

    Exit codes: 0 no lab is recorded or the lab checks out, 1 the system disagrees.
    """
    from tuner.lab.status import lab_check

    check = lab_check()
    if as_json:
        sys.stdout.write(json.dumps(encode(check), indent=2) + "\n")
    elif check is None:
        typer.echo("no lab")
    else:
        console = output_console()
        if check.lab is not None and (check.lab.disks or check.lab.buses):
            console.print(_lab_table(check.lab, f"lab {check.spec_name} ({check.state})"))
        if check.lab is not None and check.lab.network:
            console.print(_network_text(check.lab.network), highlight=False, markup=False)
        table = Table(title=plain(f"recorded in {check.record}"), title_justify="left")
        for column in ("kind", "name", "device", "target", "present", "ceilings now"):
            table.add_column(column)
        for part in check.parts:
            table.add_row(plain(part.kind), plain(part.label), plain(part.device or "-"),
                          plain(part.target), "yes" if part.present else Text("no", style="red"),
                          plain(_caps_text(part.caps or {})))  # fmt: skip
        console.print(table)
        for problem in check.problems:
            console.print(Text("problem: ", style="red") + plain(problem), highlight=False)
    if check is not None and check.problems:
        raise typer.Exit(1)


def _lab_table(lab: Lab, title: str) -> Table:
    from tuner.lab.modelled import describe

    table = Table(title=plain(title), title_justify="left")
    for column in ("name", "device", "bus", "read", "write", "IOPS", "size", "mount"):
        table.add_column(column)
    for bus in lab.buses:
        table.add_row(*plain_cells(bus.name, bus.device, "-", human_rate(bus.read_mbps),
                      human_rate(bus.write_mbps), "-", "-", bus.mountpoint or "-"))  # fmt: skip
    for disk in lab.disks:
        if disk.model is not None:  # no ceilings: what its model does
            rate, what = describe(disk.model)
            table.add_row(*plain_cells(disk.name, disk.device, disk.bus or "-", rate, "same", what,
                          human_bytes(disk.size_bytes), "-"))  # fmt: skip
            continue
        table.add_row(*plain_cells(
            disk.name, disk.device, disk.bus or "-", human_rate(disk.read_mbps),
            human_rate(disk.write_mbps), str(disk.iops), human_bytes(disk.size_bytes), "-",
        ))  # fmt: skip
    if lab.stripe:
        table.add_row(*plain_cells("stripe", "btrfs raid0", "-", "-", "-", "-", "-", lab.stripe))
    return table


def _network_text(net: LabNetwork) -> str:
    loss = f", {net.loss_percent:g} % loss" if net.loss_percent else ""
    return (
        f"network: {net.rate_mbit:g} Mbit/s each way, {net.rtt_ms:g} ms round trip{loss}, "
        f"MTU {net.mtu}\n  sender   {net.sender} ({net.sender_address}{_files(net.sender_mount)})"
        f"\n  receiver {net.receiver} ({net.receiver_address}{_files(net.receiver_mount)})"
        f"\n  run at an end: ip netns exec {net.sender} COMMAND"
    )


def _files(mount: str | None) -> str:
    return f", files on {mount}" if mount else ""


def _caps_text(caps: dict[str, int]) -> str:
    """{'read_bps': 250000000, 'read_iops': 200, ...} -> 'read 250 MB/s, write 250 MB/s, ...'."""
    parts = []
    for key, unit in (("read_bps", "MB/s"), ("write_bps", "MB/s"), ("read_iops", "IOPS"),
                      ("write_iops", "IOPS")):  # fmt: skip
        if caps.get(key):
            value = caps[key] / 1e6 if unit == "MB/s" else caps[key]
            parts.append(f"{key.split('_')[0]} {value:g} {unit}")
    return ", ".join(parts)
