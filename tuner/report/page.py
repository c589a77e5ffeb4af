"""The report page: one self-contained HTML file (no script, no link out), plots inlined."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from probes.printable import html_text as escape
from tuner import __version__
from tuner.report.data import ScalingCurve, SweepGrid, TuneRun, best_so_far
from tuner.report.diagram import SEVERITY_FILL, SEVERITY_ORDER, topology_svg
from tuner.report.figures import (
    convergence_figure,
    png_data_uri,
    scaling_figure,
    size_label,
    sweep_figure,
)
from tuner.rules.model import Finding
from tuner.rules.view import citations, setting_label
from tuner.topology.model import Machine, Topology
from tuner.units import human_bytes

_CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #111827; background: #ffffff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #e5e7eb; padding-bottom: 0.2em; margin-top: 2em; }
.meta, .hint { color: #4b5563; }
.hint code, td code { background: #f3f4f6; padding: 0 0.3em; }
.scroll { overflow-x: auto; border: 1px solid #e5e7eb; padding: 0.5em; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
th, td { border: 1px solid #d1d5db; padding: 0.35em 0.5em; text-align: left; vertical-align: top; }
th { background: #f9fafb; }
.sev { font-weight: bold; white-space: nowrap; }
.rule code { white-space: nowrap; }
figure { margin: 1em 0; } figcaption { color: #374151; font-size: 0.9em; }
img { max-width: 100%; height: auto; }
.better { color: #15803d; } .worse { color: #b91c1c; } .changed { font-weight: bold; }
"""


@dataclass(frozen=True)
class ReportInputs:
    """Everything the page shows; None or empty where there is nothing to show."""

    host: str
    workload: str
    topology: Topology
    findings: tuple[Finding, ...]
    scaling: tuple[ScalingCurve, ...]
    sweeps: tuple[SweepGrid, ...]
    tune: TuneRun | None
    generated: datetime | None = None
    notes: tuple[tuple[str, str], ...] = ()  # (section: bottleneck, sweep, tune; what to say)


def render_page(inputs: ReportInputs) -> str:
    """The whole page as one HTML string."""
    when = (inputs.generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    notes = dict(inputs.notes)
    sections = [
        _section("Topology", "topology", _topology(inputs)),
        _section("Findings", "findings", _findings(inputs.findings, inputs.workload)),
        _section(
            "Scaling: where the bottlenecks are",
            "scaling",
            _note(notes.get("bottleneck")) + _scaling(inputs.scaling),
        ),
        _section(
            "Request size by queue depth",
            "sweep",
            _note(notes.get("sweep")) + _sweeps(inputs.sweeps),
        ),
        _section(
            "Tune: convergence and before/after",
            "tune",
            _note(notes.get("tune")) + _tune(inputs.tune),
        ),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>iotuner report: {escape(inputs.host)}</title>\n<style>{_CSS}</style>\n"
        "</head>\n<body>\n"
        f"<h1>iotuner report: {escape(inputs.host)}</h1>\n"
        f'<p class="meta">{_host_line(inputs.topology)}</p>\n'
        f'<p class="meta">generated {when} by iotuner {escape(__version__)}; '
        f"findings for workload <code>{escape(inputs.workload)}</code></p>\n"
        + "\n".join(sections)
        + "\n</body>\n</html>\n"
    )


def _host_line(topology: Topology) -> str:
    """Host, kernel, CPU, CPUs and memory: what the page is about, at a glance."""
    machine = next(iter(topology.of_type(Machine)), None)
    cpu = topology.cpu
    parts = [
        f"host <strong>{escape(machine.hostname or machine.name) if machine else '?'}</strong>",
        f"kernel {escape(machine.kernel)}"
        if machine and machine.kernel
        else "kernel not recorded (a capture without proc/sys/kernel/osrelease)",
        f"CPU {escape(cpu.model_name)}" if cpu.model_name else "CPU model not recorded",
    ]
    if cpu.online:
        parts.append(f"{len(cpu.online)} CPUs")
    if machine and machine.memory_bytes:
        parts.append(f"{human_bytes(machine.memory_bytes)} memory")
    return "; ".join(parts)


def _note(text: str | None) -> str:
    return f'<p class="hint">{escape(text)}</p>\n' if text else ""


def _section(title: str, anchor: str, body: str) -> str:
    return f'<section id="{anchor}">\n<h2>{escape(title)}</h2>\n{body}\n</section>'


def _hint(text: str, command: str) -> str:
    return f'<p class="hint">{escape(text)} Run <code>{escape(command)}</code>.</p>'


def _topology(inputs: ReportInputs) -> str:
    svg = topology_svg(inputs.topology, inputs.findings)
    return (
        '<p class="meta">PCI tree down to disks and NICs with link speeds; each box is coloured '
        "by the most severe finding on it.</p>\n"
        f'<div class="scroll">{svg}</div>'
    )


def _findings(findings: tuple[Finding, ...], workload: str) -> str:
    if not findings:
        return (
            f"<p>No findings for workload <code>{escape(workload)}</code>: nothing the rule "
            "base knows to improve on this host.</p>"
        )
    rank = {severity: i for i, severity in enumerate(SEVERITY_ORDER)}
    rows = []
    for f in sorted(findings, key=lambda f: (rank.get(f.severity, 9), f.rule, f.target)):
        source = "; ".join(citations(f))
        colour = SEVERITY_FILL.get(f.severity, SEVERITY_FILL[None])
        settings = "<br>".join(f"<code>{escape(setting_label(x))}</code>" for x in f.settings)
        rows.append(
            f'<tr><td class="sev" style="background:{colour}">{escape(f.severity)}</td>'
            f'<td class="rule"><code>{escape(f.rule)}</code><br>{escape(f.title)}</td>'
            f"<td><code>{escape(f.target)}</code></td><td>{escape(f.evidence)}</td>"
            f"<td>{escape(f.recommendation)}</td><td>{settings or '-'}</td>"
            f"<td>{escape(source)}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("severity", "rule", "target", "evidence", "recommendation", "setting and value",
                  "source")
    )  # fmt: skip
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(rows) + "\n</table>"


def _scaling(curves: tuple[ScalingCurve, ...]) -> str:
    if not curves:
        return _hint(
            "No scaling results for this host yet: they come from read-only trials that keep "
            "1, 2, ... N devices of a group busy at once.",
            "iotuner bottleneck",
        )
    parts = []
    for curve in curves:
        caption = curve.verdict or _scaling_caption(curve)
        parts.append(
            f'<figure><img alt="scaling of {escape(curve.title)}" '
            f'src="{png_data_uri(scaling_figure(curve))}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _scaling_caption(curve: ScalingCurve) -> str:
    top = max(mbps for _, mbps in curve.points)
    text = f"{', '.join(curve.devices)} share {curve.component}: up to {top:.0f} MB/s"
    if curve.expected_mbps is not None:
        text += f", {curve.expected_mbps:.0f} MB/s expected"
    return text


def _sweeps(grids: tuple[SweepGrid, ...]) -> str:
    if not grids:
        return _hint(
            "No sweep results for this host yet: they come from read-only direct reads over a "
            "grid of request sizes and queue depths.",
            "iotuner sweep DEVICE",
        )
    parts = []
    for grid in grids:
        caption = grid.summary or f"{grid.device}: MB/s by request size and queue depth"
        if grid.half_power_size is not None and not grid.summary:
            caption += f"; half power from {size_label(grid.half_power_size)} requests"
        parts.append(
            f'<figure><img alt="sweep of {escape(grid.device)}" '
            f'src="{png_data_uri(sweep_figure(grid))}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _tune(run: TuneRun | None) -> str:
    if run is None:
        return _hint(
            "No tune results for this host yet: a tune searches host settings with short fio "
            "trials.",
            "iotuner tune",
        )
    highest = best_so_far(mbps for _, _, mbps in run.trials)[-1]
    # The caption's best is the table's: the chosen settings as confirmation measured them.
    # A single trial can read higher (noise, or a point confirmation did not keep).
    figure = (
        f'<figure><img alt="tune convergence" src="{png_data_uri(convergence_figure(run))}">'
        f"<figcaption>{len(run.trials)} trials; best {run.best_mbps:.1f} MB/s as confirmed "
        f"(highest single trial {highest:.1f} MB/s); stopped: "
        f"{escape(run.stop_reason or '?')}</figcaption></figure>"
    )
    return figure + "\n" + _before_after(run)


def _before_after(run: TuneRun) -> str:
    keys = list(dict.fromkeys([*run.baseline_settings, *run.best_settings]))
    rows = []
    for key in keys:
        before, after = run.baseline_settings.get(key), run.best_settings.get(key)
        # A changed value is neither better nor worse by itself: marked as changed, not green.
        mark = ' class="changed"' if before != after else ""
        rows.append(
            f"<tr><td><code>{escape(key)}</code></td><td>{_value(before)}</td>"
            f"<td{mark}>{_value(after)}</td></tr>"
        )
    gain = ""
    if run.gain is not None:  # a ratio, best over baseline, as `tune` prints it
        gain = f"x{run.gain:.3f} ({run.gain - 1:+.1%})"
        if run.ci is not None:
            gain += f", 95% interval x{run.ci[0]:.3f} .. x{run.ci[1]:.3f}"
    verdict_class, arrow = better_or_worse(run.gain, run.ci)
    verdict = "best recommended" if run.chosen else "baseline kept: no gain beyond the noise"
    if run.left_out:
        dropped = ", ".join(f"{escape(key)} {_value(v)}" for key, v in run.left_out.items())
        verdict += f"; left out, no measurable gain: {dropped}"
    return (
        "<table>\n<tr><th>setting</th><th>before (baseline)</th><th>after (best)</th></tr>\n"
        f"<tr><td>throughput</td><td>{run.baseline_mbps:.1f} MB/s</td>"
        f"<td>{run.best_mbps:.1f} MB/s</td></tr>\n"
        + "\n".join(rows)
        + f'\n<tr><td>gain</td><td colspan="2"{verdict_class}>{arrow}{escape(gain or "?")}; '
        f"{verdict}</td></tr>" + "\n</table>"
    )


def better_or_worse(gain: float | None, ci: tuple[float, float] | None) -> tuple[str, str]:
    """The gain cell's class and arrow: better (green, up) when the whole interval is above 1,
    worse (red, down) when it is below; scores are higher-is-better in every objective (p99
    latency as completions per second), so up always means better, never a number rising."""
    low, high = ci if ci is not None else (gain, gain)
    if low is not None and low > 1:
        return ' class="better"', "\u25b2 better: "
    if high is not None and high < 1:
        return ' class="worse"', "\u25bc worse: "
    return "", ""


def _value(value: Any) -> str:
    return "-" if value is None else escape(str(value))
