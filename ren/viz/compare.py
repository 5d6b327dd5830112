"""A comparison of pipelines, as a table, an SVG bar chart and a report section.

The measuring is `ren.passdev.compare` (a layer above this one); this module holds the records it
fills (`Measurement`, `Comparison`) and draws them, so the HTML report can show a comparison it is
given without importing the tools that made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

#: (attribute, column title, unit, lower is better) of each figure, in table order
FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("kernels", "kernels", "", True),
    ("transforms", "NTT/INTT", "", True),
    ("transform_rows", "NTT rows", "", True),
    ("basis_conversions", "basis conv.", "", True),
    ("bytes_moved", "bytes moved", "B", True),
    ("arena_bytes", "arena", "B", True),
    ("schedule_seconds", "schedule", "s", True),
    ("replay_seconds", "replay", "s", True),
    ("precision_bits", "precision", "bits", False),
)


@dataclass
class Measurement:
    """One program under one pipeline (`ren.passdev.measure`)."""

    name: str
    pipeline: str
    device: str = "python"
    nodes: dict[str, int] = field(default_factory=dict)  # stage name -> nodes after it
    pass_seconds: dict[str, float] = field(default_factory=dict)  # stage name -> wall time
    kernels: int = 0
    transforms: int = 0  # NTT/INTT kernels
    transform_rows: int = 0  # limbs those kernels transform (what an elision narrows)
    basis_conversions: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    arena_bytes: int = 0
    schedule_seconds: float = 0.0
    replay_seconds: float = 0.0
    precision_bits: float | None = None
    words: list[Any] = field(default_factory=list, repr=False)  # the outputs, for comparing

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written


def _fmt(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "B":
        for step, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if value >= step:
                return f"{value / step:.2f} {name}"
        return f"{value} B"
    if unit == "s":
        return f"{value * 1e3:.2f} ms"
    if unit == "bits":
        return f"{value:.1f}"
    return str(value)


@dataclass
class Comparison:
    """A program measured under several pipelines in one run, first row the reference."""

    program: str
    device: str
    rows: list[Measurement]

    def table(self) -> list[list[str]]:
        """Header and one row of formatted figures per pipeline."""
        head = ["pipeline", *(title for _, title, _, _ in FIGURES)]
        body = [[m.name, *(_fmt(getattr(m, a), u) for a, _, u, _ in FIGURES)]
                for m in self.rows]
        return [head, *body]

    def text(self) -> str:
        """The table as aligned text, then each pipeline's spec."""
        rows = self.table()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"{self.program} on {self.device}: the same words under every pipeline"]
        for r in rows:
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))))
        lines += [f"  {m.name}: {m.pipeline}" for m in self.rows]
        return "\n".join(lines)

    def svg(self, width: int = 720) -> str:
        """One group of bars per figure, each pipeline's value relative to the first row's
        (100 %), so figures of different units share one axis."""
        figures = [(a, t) for a, t, _, _ in FIGURES
                   if any(getattr(m, a) not in (None, 0) for m in self.rows)]
        n = max(len(self.rows), 1)
        bar, gap, left, top = 14, 10, 110, 24
        group = n * bar + gap
        height = top + len(figures) * group + 30
        scale = (width - left - 70) / 2.0  # 200 % at the right edge
        colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"]
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'class="compare" font-family="sans-serif" font-size="11">',
               f'<text x="{left}" y="14">relative to {escape(self.rows[0].name)} (100 %)</text>']
        x100 = left + scale
        out.append(f'<line x1="{x100:.1f}" y1="{top - 4}" x2="{x100:.1f}" '
                   f'y2="{height - 26}" stroke="#999" stroke-dasharray="3,3"/>')
        for gi, (attr, title) in enumerate(figures):
            y0 = top + gi * group
            out.append(f'<text x="{left - 6}" y="{y0 + n * bar / 2 + 4:.1f}" '
                       f'text-anchor="end">{escape(title)}</text>')
            base = getattr(self.rows[0], attr) or 0
            for ri, m in enumerate(self.rows):
                value = getattr(m, attr)
                rel = (value / base) if base and value is not None else 0.0
                w = min(rel, 2.0) * scale
                colour = colours[ri % len(colours)]
                out.append(f'<rect x="{left}" y="{y0 + ri * bar}" width="{w:.1f}" '
                           f'height="{bar - 2}" fill="{colour}"><title>{escape(m.name)}: '
                           f'{escape(_fmt(value, _unit(attr)))} ({rel:.0%})</title></rect>')
                out.append(f'<text x="{left + w + 4:.1f}" y="{y0 + ri * bar + bar - 4}">'
                           f'{rel:.0%}</text>')
        ly = height - 10
        for ri, m in enumerate(self.rows):
            out.append(f'<rect x="{left + ri * 150}" y="{ly - 9}" width="10" height="10" '
                       f'fill="{colours[ri % len(colours)]}"/><text x="{left + ri * 150 + 14}" '
                       f'y="{ly}">{escape(m.name)}</text>')
        out.append("</svg>")
        return "\n".join(out)

    def html(self) -> str:
        """A report section: the table, the chart and the specs."""
        rows = self.table()
        head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>"
                       for r in rows[1:])
        specs = "".join(f"<li><b>{escape(m.name)}</b>: <code>{escape(m.pipeline)}</code></li>"
                        for m in self.rows)
        return (f'<table class="compare-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>{self.svg()}<ul>{specs}</ul>")


    def _repr_html_(self) -> str:  # Jupyter shows the table and the chart
        return f'<div class="ren-repr ren-compare">{self.html()}</div>'

    def __str__(self) -> str:
        return self.text()


def _unit(attr: str) -> str:
    return next(u for a, _, u, _ in FIGURES if a == attr)


__all__ = ["FIGURES", "Comparison", "Measurement"]
