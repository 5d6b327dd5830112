"""The precision meter of a CKKS program, as a table and a picture (bits per operation).

    report = precision_of(program)          # ren.ckks.debug.precision on its example inputs
    precision_svg(report)                   # bits after each operation, the largest loss marked

Only the built-in CKKS examples carry what the meter needs (their ``fn(ev, *cts)``, evaluator
and key generator); the secret key is used to decrypt every intermediate, which is what makes
this an inspection tool and not something to run on real data.
"""

from __future__ import annotations

import math
from html import escape

from ren import random as ren_random
from ren.ckks.debug import Report, budget, precision
from ren.ckks.keyplan import KeyPlan, plan_rotation_keys
from ren.errors import InspectError
from ren.viz.programs import Program

WIDTH, HEIGHT, PAD = 720, 240, 40


def precision_of(prog: Program) -> Report:
    """`ren.ckks.debug.precision` of a CKKS example on its example values (encrypted with the
    secret key, seeded)."""
    c = _ckks(prog, "the precision meter")
    with ren_random.seeded(prog.seed or f"inspect:{prog.name}"):
        return precision(c.fn, *c.values, evaluator=c.evaluator,
                         secret_key=c.keygen.secret_key())


def attainable_bits(report: Report) -> float:
    """The precision a fresh ciphertext of the report's parameters holds: the best of the
    meter's inputs (fresh encryptions at the default scale), else an estimate from the
    parameters (log2 of the scale less the fresh noise's largest slot, about σ·√N·√(2 ln
    slots))."""
    fresh = [s.bits for s in report.steps if s.op == "input" and math.isfinite(s.bits)]
    if fresh:
        return max(fresh)
    p = report.params
    return p.scale_bits - math.log2(p.sigma * math.sqrt(p.N * 2 * math.log(max(p.slots, 2))))


def _ckks(prog: Program, what: str):
    if getattr(prog, "bfv", None) is not None:
        raise InspectError(f"{prog.name} is a BFV/BGV program: {what} is CKKS's (exact "
                           "arithmetic loses no precision); its noise budget after every "
                           f"operation: ren-inspect budget {prog.name} "
                           "(ren.bfv.debug.budget_meter)")
    if prog.ckks is None:
        raise InspectError(f"{prog.name}: {what} needs a CKKS program (the built-in ckks_* "
                           "examples); from Python, call ren.ckks.debug or "
                           "ren.ckks.plan_rotation_keys on your function")
    return prog.ckks


def budget_of(prog: Program) -> Report:
    """`ren.ckks.debug.budget` of a CKKS example: levels and scales, traced (no kernel)."""
    c = _ckks(prog, "the level budget")
    return budget(c.fn, c.evaluator.params, *([None] * len(c.values)))


def keys_of(prog: Program) -> KeyPlan:
    """The rotation-key plan of a CKKS example (traced, no kernel)."""
    c = _ckks(prog, "the key planner")
    return plan_rotation_keys(c.fn, c.evaluator.params, *([None] * len(c.values)))


def precision_svg(report: Report) -> str:
    """Bits of precision after each operation, as a line over the program order; the step that
    lost the most is drawn in red, and every point has a tooltip (op, line, level, scale)."""
    steps = report.steps
    finite = [s.bits for s in steps if math.isfinite(s.bits)]
    top = math.ceil(max(finite, default=1)) + 1
    n = max(len(steps) - 1, 1)

    def xy(i: int, bits: float) -> tuple[float, float]:
        b = min(bits, top) if math.isfinite(bits) else top
        return (PAD + i * (WIDTH - 2 * PAD) / n, HEIGHT - PAD - b * (HEIGHT - 2 * PAD) / top)

    worst = report.worst
    pts = [xy(s.index, s.bits) for s in steps]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" class="precision">',
           f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
           'stroke="#888"/>',
           f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#888"/>',
           f'<text x="{PAD - 6}" y="{PAD}" text-anchor="end" font-size="11">{top}</text>',
           f'<text x="{PAD - 6}" y="{HEIGHT - PAD}" text-anchor="end" font-size="11">0</text>',
           f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="11">'
           'operation (program order)</text>',
           f'<text x="12" y="{HEIGHT / 2}" font-size="11" transform="rotate(-90 12 '
           f'{HEIGHT / 2})" text-anchor="middle">bits of precision</text>',
           '<polyline fill="none" stroke="#3465a4" stroke-width="2" points="'
           + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>']
    for s, (x, y) in zip(steps, pts, strict=True):
        bad = worst is not None and s.index == worst.index
        tip = (f"{s.index} {s.op}: {s.bits:.1f} bits"
               + ("" if math.isnan(s.lost) else f", lost {s.lost:.1f}")
               + f", level {s.level}, scale 2^{s.log2_scale:.1f} — {s.where}: {s.code}")
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{6 if bad else 4}" '
                   f'fill="{"#cc0000" if bad else "#3465a4"}"><title>{escape(tip)}</title>'
                   '</circle>')
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - PAD + 14}" text-anchor="middle" '
                   f'font-size="10">{s.index}</text>')
    out.append("</svg>")
    return "\n".join(out)


__all__ = ["attainable_bits", "budget_of", "keys_of", "precision_of", "precision_svg"]
