"""The memory plan as a picture: each planned buffer a rectangle over (schedule step × arena
offset), per device, with the arena bytes, planned bytes, peak-live bytes and the policy.

    view = plan_program(polys)                # schedule + plan_memory, nothing runs
    arena_svg(view)                           # one SVG per device, side by side in a <div>
    arena_ascii(view)                         # the same picture in characters (terminals)
    arena_rows(view)                          # one dict per planned buffer

Buffers are named as in the dump of the final graph (``buf3`` here is ``buf3`` in
``ren-inspect passes --pass 12``), steps by their schedule index and kernel name.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from ren.device import Buffer
from ren.dump import _lines, _Names
from ren.ir import storage_buffer
from ren.kernel import ScheduledKernel
from ren.memory import MemoryPlan, plan_memory
from ren.node import Node
from ren.ops import Op
from ren.schedule import ScheduleContext, as_sink, linearize, run_passes
from ren.viz.templating import render

WIDTH, HEIGHT = 880, 380  # plot area of one device's picture, in px


@dataclass
class ArenaView:
    """A schedule, its memory plan and the names of its buffers."""

    items: list[ScheduledKernel]
    plan: MemoryPlan
    names: dict[int, str] = field(default_factory=dict)  # id(Buffer) -> "bufN"
    outputs: set[Buffer] = field(default_factory=set)

    def name(self, b: Buffer) -> str:
        return self.names.get(id(b)) or self.names.get(id(same_value(b)), f"#{b.uid}")

    def step_name(self, i: int) -> str:
        """The kernel at schedule step `i` (``step i`` for a bare plan, which has no items)."""
        return self.items[i].name if i < len(self.items) else f"step {i}"

    def __repr__(self) -> str:
        return f"<ArenaView {len(self.items)} items, {self.plan!r}>"

    def _repr_html_(self) -> str:  # Jupyter: the arena picture and its tables
        from ren.viz.notebook import memory_html

        return memory_html(self)


def buffer_names(sink: Node) -> dict[int, str]:
    """id(Buffer) -> its name in the canonical dump of `sink` (``buf0``, ``buf1``, …)."""
    names = _Names()
    _lines(sink, names, "")
    return {k: v for k, v in names.buffers.items()}


def same_value(b: Buffer) -> Buffer:
    """The buffer of the dump whose value `b` holds: `b`, or the one whose value `linearize`
    computed again into `b` (`Buffer.again_of`), which pictures and reports name alike."""
    while b.again_of is not None:
        b = b.again_of
    return b


def name_again(names: dict[int, str], items: list[ScheduledKernel]) -> dict[int, str]:
    """`names` (id(Buffer) -> name) with every buffer of `items` that holds a named buffer's
    value again (`same_value`) named as that buffer."""
    for item in items:
        for b in item.bufs:
            if id(b) not in names and id(same_value(b)) in names:
                names[id(b)] = names[id(same_value(b))]
    return names


def plan_program(outputs: Any, policy: str = "auto") -> ArenaView:
    """Schedule the outputs (Polys, Nodes or a SINK) and plan their memory, as realization
    does, without running anything."""
    outs = outputs if isinstance(outputs, list | tuple) else (outputs,)
    sink = as_sink(*outs)
    ctx = ScheduleContext(outputs=sink.src)
    final = run_passes(sink, ctx=ctx).sink
    items = linearize(final)
    out_bufs = {storage_buffer(v) for v in ctx.becomes_map.values() if v.src[0].op is Op.BUFFER}
    plan = plan_memory(items, outputs=out_bufs, policy=policy)
    return ArenaView(items, plan, name_again(buffer_names(final), items), out_bufs)


def fmt_bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def devices(view: ArenaView) -> list[str]:
    return list(view.plan.arenas)


def arena_rows(view: ArenaView) -> list[dict[str, Any]]:
    """One row per planned buffer, in order of first use."""
    plan = view.plan
    rows = []
    for b in plan.planned:
        first, last = plan.live[b]
        rows.append({"buffer": view.name(b), "device": b.device,
                     "shape": f"{b.shape[0]}x{b.shape[1]}", "first": first, "last": last,
                     "offset": plan.offsets[b], "size": plan.sizes[b],
                     "written_by": view.step_name(first)})
    return rows


def summary_rows(view: ArenaView) -> list[dict[str, Any]]:
    """Per device: planned buffers, planned bytes, peak-live bytes, arena bytes, policy."""
    plan = view.plan
    out = []
    for dev, arena in plan.arenas.items():
        bufs = [b for b in plan.planned if b.device == dev]
        peak = plan.peaks[dev]
        out.append({"device": dev, "buffers": len(bufs),
                    "planned": sum(plan.sizes[b] for b in bufs), "peak": peak, "arena": arena,
                    "ratio": arena / peak if peak else 1.0, "policy": plan.policies[dev]})
    return out


def ckks_memory_rows(program: Any, view: ArenaView) -> list[dict[str, Any]]:
    """For a CKKS example (`Program.ckks`): where its bytes are — the evaluation keys it holds,
    its input and output ciphertexts, and the arena of its intermediates (empty otherwise)."""
    if getattr(program, "ckks", None) is None:
        return []
    ev = program.ckks.evaluator
    keys = [k for k in (ev.relin_key, ev.rotation_keys) if k is not None]
    ins = program.call()[1] if program.call() is not None else ()
    in_bytes = sum(p.ring.limbs * p.ring.N * 4 for ct in ins for p in ct.parts)
    out_bytes = sum(p.ring.limbs * p.ring.N * 4 for p in program.outputs())
    arena = sum(view.plan.arenas.values())
    rows = [("evaluation keys", sum(k.nbytes for k in keys),
             " + ".join(type(k).__name__ for k in keys) or "none"),
            ("input ciphertexts", in_bytes, f"{len(ins)} ciphertext(s)"),
            ("output polynomials", out_bytes, "the results"),
            ("arena (intermediates)", arena,
             "peak-live " + fmt_bytes(sum(view.plan.peaks.values())))]
    return [{"what": w, "bytes": b, "note": n} for w, b, n in rows]


def kept_text(view: ArenaView) -> str:
    """Why the buffers outside the arena keep their own storage, counted by reason."""
    reasons: dict[str, int] = {}
    for why in view.plan.excluded.values():
        reasons[why] = reasons.get(why, 0) + 1
    return ", ".join(f"{k} {why}" for why, k in reasons.items()) or "none"


def _hue(i: int) -> int:
    return (i * 137) % 360  # golden-angle steps: neighbours get distinct colours


def _device_picture(view: ArenaView, dev: str) -> dict[str, Any]:
    plan = view.plan
    steps = max(plan.steps, 1)
    arena = max(plan.arenas.get(dev, 0), 1)
    left, top = 78, 28
    sx, sy = WIDTH / steps, HEIGHT / arena
    rects = []
    for i, b in enumerate(b for b in plan.planned if b.device == dev):
        first, last = plan.live[b]
        x, w = left + first * sx, max((last - first + 1) * sx, 1.5)
        y, h = top + plan.offsets[b] * sy, max(plan.sizes[b] * sy, 1.0)
        name = view.name(b)
        text = f"{name} {fmt_bytes(plan.sizes[b])}"
        label = text if w > 7 * len(text) and h > 12 else (name if w > 7 * len(name)
                                                              and h > 12 else "")
        rects.append({"x": x, "y": y, "w": w, "h": h, "hue": _hue(i), "label": label, "name": name,
                      "title": f"{name} ({b.shape[0]}x{b.shape[1]}): steps {first}..{last} "
                               f"(written by {view.step_name(first)}), offset "
                               f"{plan.offsets[b]}, {plan.sizes[b]} bytes"})
    # live planned bytes per step: the lower bound's profile
    live = [0] * steps
    for b in plan.planned:
        if b.device == dev:
            first, last = plan.live[b]
            for s in range(first, last + 1):
                live[s] += plan.sizes[b]
    profile = " ".join(f"{left + s * sx:.1f},{top + v * sy:.1f} {left + (s + 1) * sx:.1f},"
                       f"{top + v * sy:.1f}" for s, v in enumerate(live))
    tick_every = max(1, steps // 16)
    xticks = [{"x": left + (s + 0.5) * sx, "label": str(s)} for s in range(0, steps, tick_every)]
    yticks = [{"y": top + arena * f * sy, "label": fmt_bytes(int(arena * f))}
              for f in (0, 0.25, 0.5, 0.75, 1.0)]
    peak = plan.peaks.get(dev, 0)
    return {"device": dev, "rects": rects, "profile": profile, "xticks": xticks,
            "yticks": yticks, "left": left, "top": top, "plot_w": WIDTH, "plot_h": HEIGHT,
            "width": left + WIDTH + 20, "height": top + HEIGHT + 40,
            "peak_y": top + peak * sy, "policy": plan.policies.get(dev, "—"),
            "title": f"{dev}: arena {fmt_bytes(plan.arenas.get(dev, 0))}, peak live "
                     f"{fmt_bytes(peak)}, policy {plan.policies.get(dev, '—')}"}


def arena_svgs(view: ArenaView) -> list[str]:
    """One SVG per device with planned buffers."""
    return [render("arena.svg.j2", **_device_picture(view, dev)) for dev in devices(view)]


def arena_svg(view: ArenaView) -> str:
    """The pictures of every device in one string (an empty-plan note when nothing is
    planned)."""
    svgs = arena_svgs(view)
    if not svgs:
        return render("arena_empty.svg.j2")
    return "\n".join(svgs)


def arena_ascii(view: ArenaView, width: int = 72, height: int = 16) -> str:
    """The picture in characters: columns are schedule steps, rows arena offsets; each
    planned buffer is drawn with its own letter (the key follows)."""
    plan = view.plan
    out = []
    letters = string.ascii_letters + string.digits
    for dev in devices(view):
        arena, steps = max(plan.arenas[dev], 1), max(plan.steps, 1)
        cols = min(width, steps)
        grid = [["." for _ in range(cols)] for _ in range(height)]
        key = []
        for i, b in enumerate(b for b in plan.planned if b.device == dev):
            ch = letters[i % len(letters)]
            key.append(f"{ch}={view.name(b)}")
            first, last = plan.live[b]
            c0, c1 = first * cols // steps, max(first * cols // steps, last * cols // steps)
            r0 = plan.offsets[b] * height // arena
            r1 = max(r0, (plan.offsets[b] + plan.sizes[b] - 1) * height // arena)
            for r in range(r0, min(r1, height - 1) + 1):
                for c in range(c0, min(c1, cols - 1) + 1):
                    grid[r][c] = ch
        out.append(f"{dev}: arena {fmt_bytes(arena)} (rows: offset, {fmt_bytes(arena // height)}"
                   f" each; columns: schedule steps 0..{steps - 1})")
        out.extend("  |" + "".join(row) + "|" for row in grid)
        out.append("  key: " + " ".join(key))
    return "\n".join(out) + ("\n" if out else "")


__all__ = ["ArenaView", "arena_ascii", "arena_rows", "arena_svg", "arena_svgs", "buffer_names",
           "ckks_memory_rows", "devices", "fmt_bytes", "kept_text", "name_again",
           "plan_program", "same_value", "summary_rows"]
