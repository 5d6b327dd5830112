"""Where a Ren CKKS op's time goes: the kernels of its JIT plan, timed one by one, by category.

`plan_breakdown(plan, args, reps)` profiles a captured `ren.jit` plan (`JitPlan.profile`: each
kernel call of one replay timed on its own, through the device's graph runner) `reps` times,
takes the median per call and sums the calls by category:

  NTT, INTT            ring kernels (forward / inverse number-theoretic transform)
  basis conversion     fast basis conversion (the mod-up of key switching)
  mod-down (÷P)        the rescale kernel dividing by the special primes (end of key switching)
  rescale (÷q)         the rescale kernel dividing by a level's primes (CKKS rescale)
  key inner product    an elementwise kernel that multiplies by key material: a buffer no unit
                       writes and no argument holds (the switching key the function closes over)
  automorphism         an elementwise kernel with a permuted read: a load whose coefficient
                       index is not the kernel's own (X -> X^g); limb-index maps (a CONCAT of
                       rows, a broadcast row) do not count
  rescale/mod-down elementwise
                       an elementwise kernel with per-limb constant vectors (VCONST: P^-1 mod q,
                       P/2): in mul and rotate only a rescale or mod-down split into elementwise
                       steps uses them (when the scheduler does not emit one RESCALE kernel)
  other elementwise    the rest (tensor product, additions, ...)
  copies               copy units (e.g. an output copied out of an input)

A kernel fused from several of these counts once, in the first category of this list that it
matches (e.g. an automorphism fused with the mod-down's last step is an automorphism).

The categories come from the scheduled items: the item's kind (``ntt``, ``intt``,
``basis_convert``, ``rescale``, ``elementwise``, ``copy``), the RING_CALL's dropped moduli, and
the ops of an elementwise kernel's AST.  `breakdown_table` sets the kernel sum against the JIT
replay's and the eager op's median wall times: the differences are the engine's own time
(binding and dispatch for a replay; building the graph, looking its template up, allocating and
dispatching for an eager op).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ren.kernel import COPY, ELEMENTWISE, VIEW
from ren.node import toposort
from ren.ops import Op

CATEGORIES = ("NTT", "INTT", "basis conversion", "mod-down (÷P)", "rescale (÷q)",
              "key inner product", "automorphism", "rescale/mod-down elementwise",
              "other elementwise", "copies")
_TOTALS = ("kernels", "calls", "replay", "eager")
_RING_KINDS = {"ntt": "NTT", "intt": "INTT", "basis_convert": "basis conversion"}


def _root(b: Any) -> Any:
    while b.base is not None:
        b = b.base
    return b


def _permuted(n: Any) -> bool:
    """Whether `n` reads a buffer at another coefficient than the kernel's own (an INDEX whose
    coefficient index is not GIDX(1)), or is a REINDEX (a read at a computed index)."""
    if n.op is Op.REINDEX:
        return True
    if n.op is not Op.INDEX:
        return False
    c = n.src[2]
    return not (c.op is Op.GIDX and c.arg == 1)


def categorize(plan: Any, special_moduli: Iterable[int]) -> list[str]:
    """The category of each kernel call of `plan` (its units less the views), in order."""
    special = set(special_moduli)
    units = [u for u in plan.units if u.kind != VIEW]
    written = {_root(u.bufs[0]) for u in units}
    params = {_root(t) for t in plan.template.params}
    cats = []
    for u in units:
        item = u.item
        if u.kind == COPY:
            cats.append("copies")
        elif item.kind in _RING_KINDS:
            cats.append(_RING_KINDS[item.kind])
        elif item.kind == "rescale":
            dropped = set(item.ast.src[1].arg.dropped)
            cats.append("mod-down (÷P)" if dropped and dropped <= special else "rescale (÷q)")
        elif item.kind == ELEMENTWISE:
            nodes = toposort(item.ast)
            ops = {n.op for n in nodes}
            constant = any(_root(b) not in written and _root(b) not in params
                           for b in u.bufs[1:])
            if any(_permuted(n) for n in nodes):
                cats.append("automorphism")
            elif constant and ops & {Op.MONTMUL, Op.MUL}:
                cats.append("key inner product")
            elif Op.VCONST in ops:
                cats.append("rescale/mod-down elementwise")
            else:
                cats.append("other elementwise")
        else:
            cats.append(item.kind)
    return cats


def plan_breakdown(plan: Any, args: Sequence[Any], reps: int, special_moduli: Iterable[int],
                   totals: dict[str, Callable[[], Any]] | None = None) -> dict[str, float]:
    """Seconds per category of one replay of `plan` on `args` (median over `reps` profiles per
    kernel call), with "kernels" (their sum) and "calls" (how many).  `totals` (name -> a call
    to time, e.g. the replay and the eager op) are timed in the same loop, one call before each
    profile, so that a change of the machine's load hits the totals and the kernels alike;
    their medians come back under their names."""
    cats = categorize(plan, special_moduli)
    totals = totals or {}
    runs, samples = [], {name: [] for name in totals}
    for _ in range(max(1, reps)):
        for name, fn in totals.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
        runs.append(plan.profile(*args))
    if any(len(r) != len(cats) for r in runs):
        raise AssertionError(f"{plan.name}: the profile has {len(runs[0])} calls, the plan "
                             f"{len(cats)} non-view units")
    per_call = [statistics.median(ts) for ts in zip(*runs)]
    out = dict.fromkeys(CATEGORIES, 0.0)
    for cat, t in zip(cats, per_call):
        out[cat] = out.get(cat, 0.0) + t
    out["kernels"] = sum(per_call)
    out["calls"] = float(len(per_call))
    out.update({name: statistics.median(ts) for name, ts in samples.items()})
    return out


def breakdown_table(results: Sequence[Any], n: int) -> str:
    """One column per (Ren device, op): ms per category (share of the kernel sum), the kernel
    sum, then the JIT replay and the eager op with their overhead over the kernels."""
    cols = [(r, op) for r in results if r.breakdown for op in ("mul", "rotate")
            if op in r.breakdown]
    if not cols:
        return ""
    width = 17
    head = (f"where the time goes, N = 2^{n.bit_length() - 1} (ms)".ljust(34)
            + "".join(f"{r.device} {'mul' if op == 'mul' else 'rot'}".rjust(width)
                      for r, op in cols))
    lines = [head, "-" * len(head)]
    extra = {k for r, op in cols for k in r.breakdown[op]} - {*CATEGORIES, *_TOTALS}
    cats = [c for c in (*CATEGORIES, *sorted(extra))
            if any(r.breakdown[op].get(c, 0.0) > 0 for r, op in cols)]

    def cell(ms: float, total: float | None = None) -> str:
        share = f" ({100 * ms / total:3.0f}%)" if total else ""
        return f"{ms:.2f}{share}".rjust(width)

    for c in cats:
        lines.append(f"  {c}".ljust(34) + "".join(
            cell(r.breakdown[op].get(c, 0.0) * 1e3, r.breakdown[op]["kernels"] * 1e3)
            for r, op in cols))
    def total(r: Any, op: str, name: str) -> float:  # interleaved with the profiles if timed so
        key = "eager" if name == op else "replay"
        b = r.breakdown[op]
        return b[key] * 1e3 if key in b else r.median_ms(name)

    rows = [("kernels (sum)", lambda r, op: r.breakdown[op]["kernels"] * 1e3),
            ("JIT replay (median)", lambda r, op: total(r, op, f"{op} jit")),
            ("  engine: replay − kernels",
             lambda r, op: total(r, op, f"{op} jit") - r.breakdown[op]["kernels"] * 1e3),
            ("eager (median)", lambda r, op: total(r, op, op)),
            ("  engine: eager − kernels",
             lambda r, op: total(r, op, op) - r.breakdown[op]["kernels"] * 1e3),
            ("  of which build graph", lambda r, op: r.stages.get(op, {}).get("build graph",
                                                                           0.0) * 1e3)]
    for label, fn in rows:
        lines.append(label.ljust(34) + "".join(cell(fn(r, op)) for r, op in cols))
    lines.append("kernel calls".ljust(34) + "".join(
        f"{int(r.breakdown[op]['calls'])}".rjust(width) for r, op in cols))
    return "\n".join(lines)
