"""The loop dialect's shape of an elementwise kernel (the ``"cpu"`` device's C): the loops.

`ren.backend.elementwise_c` renders a kernel's lines per class of rows (`RowClass`); this module
puts them into loops: `RowClass.loop` is the coefficient loop of one limb (plain, or in tiles of
`STAGE_TILE` coefficients whose permuted rows are staged first through ``ren_permute``, which
`block_preserving` maps allow), and `loop_kernel` the kernel around them: a function per limb
(``@K_row``: one inner loop, or a switch over the row classes) called from the limb loop, or
from a loop over (limb, piece) tasks when the kernel has at most `SPLIT_MAX_LIMBS` limbs.
"""

from __future__ import annotations

import numpy as np

from ren.backend.render_c import PIECES_PRELUDE, team_path

#: coefficients per tile of a loop whose permuted loads are staged (`ren_permute`): the staged
#: rows of a tile (4 bytes a coefficient each; a hoisted inner product stages ~24) stay in L1
STAGE_TILE = 128
#: kernels over at most this many limbs loop over (limb, piece) tasks, so that threads that
#: outnumber the limbs (or an uneven count: 3 limbs on 2 threads) share one limb's coefficients
#: (`ren.backend.cpu`'s ``REN_PIECES``); kernels over more limbs split whole limbs only
SPLIT_MAX_LIMBS = 3
def block_preserving(values: np.ndarray) -> bool:
    """Whether every aligned block of 16 and of 8 entries of the map points into one aligned
    block of as many words: what `ren_permute`'s vector paths need (an automorphism's
    NTT-domain map has it; see `ren.backend.render_c.PERMUTE_HELPER`)."""
    n = len(values)
    if n < STAGE_TILE or n % STAGE_TILE:
        return False
    v = values.astype(np.int64)
    return all(bool(np.all(v.reshape(-1, b) // b == v[::b, None] // b)) for b in (8, 16))


class RowClass:
    """The rendered lines of one class of rows (`ren.backend.elementwise_c`'s
    `_Elementwise._row_classes`): its rows, lines (per line: whether it depends on the limb
    alone) and staged loads."""

    def __init__(self, rows: list[int], lines: list[str], row_line: list[bool],
                 staged: list[tuple[str, str, str]]):
        self.rows, self.lines, self.row_line, self.staged = rows, lines, row_line, staged

    def loop(self, N: int, pad: str, span: tuple[str, str] | None = None) -> str:
        """The coefficient loop of one limb: plain, or (with staged loads) in tiles of
        `STAGE_TILE` coefficients, each tile's permuted rows staged first; the lines of the limb
        alone (its row indices) run once per tile, before the staging that needs them.  `span`:
        the loop's bounds (C expressions, tile-aligned) when it covers a piece of the limb."""
        lo, hi = span or ("0", f"{N}LL")
        if not self.staged:
            plain = f"\n{pad}  ".join(self.lines)
            return f"{pad}for (i64 g1 = {lo}; g1 < {hi}; ++g1) {{\n{pad}  {plain}\n{pad}}}\n"
        tile = STAGE_TILE
        inner = pad + "  "
        head = [ln for ln, row in zip(self.lines, self.row_line) if row]
        body = [ln for ln, row in zip(self.lines, self.row_line) if not row]
        for buf, row, table in self.staged:
            head.append(f"u32 {buf}[{tile}]; ren_permute({buf}, {row}, {table} + g1t, {tile});")
        head_text = "".join(f"{inner}{ln}\n" for ln in head)
        body_text = f"\n{inner}  ".join(body)
        return (f"{pad}for (i64 g1t = {lo}; g1t < {hi}; g1t += {tile}) {{\n{head_text}"
                f"{inner}for (i64 g1 = g1t; g1 < g1t + {tile}; ++g1) {{\n{inner}  {body_text}\n"
                f"{inner}}}\n{pad}}}\n")


def rows_entry(N: int, count: str, decls: str, names: str, split: bool) -> str:
    """The row-range entry of a row-local kernel (`ren.backend.elementwise_c`'s
    ``_row_local``): ``i64 ren_rows_@K(void** a, i64 r0, i64 r1)`` runs limbs r0..r1-1 (clipped
    to its limb count, which it returns) on the calling thread, whole rows, no OpenMP; and
    ``ren_rowlen_@K()`` its row length N.  The plan runner calls it to run a chain of row-local
    kernels row by row, each thread on its own rows (cpu_ring_plan.c's tiles): the words are
    the limb loop's, row for row.  `decls`: the kernel's parameters declared from ``a``."""
    piece = f"0LL, {N}LL, " if split else ""
    return (f"i64 ren_rows_@K(void** a, i64 r0, i64 r1) {{\n  {decls}\n"
            f"  const i64 L_ = {count}[0];\n"
            f"  for (i64 g0 = r0; g0 < r1 && g0 < L_; ++g0) @K_row(g0, {piece}{names});\n"
            f"  return L_;\n}}\nlong long ren_rowlen_@K(void) {{ return {N}LL; }}\n")


def loop_kernel(groups: list[RowClass], L: int, N: int, count: str, rc: str, params: str,
                names: str, tables: str, decls: str | None = None) -> str:
    """The loop dialect's kernel template (name placeholder ``@K``) over `L` limbs of `N`
    coefficients: `groups` the row classes, `count` the one-entry table of the limb count,
    `rc` the table of each limb's class (when there are several), `params` the signature,
    `names` its parameter names, `tables` the constant arrays of the source; `decls` (a
    row-local kernel's parameters declared from ``void** a``): add its `rows_entry`."""
    # few limbs: the loop runs over (limb, piece) tasks, REN_PIECES(L, N, align) pieces
    # of each limb (1 unless the threads outnumber the limbs), so that one limb's words
    # are shared out too; more limbs keep the plain limb loop (and its source)
    split = L <= SPLIT_MAX_LIMBS
    span = ("c0", "c1") if split else None
    if len(groups) == 1:  # the coefficient loop (plain or tiled): one statement
        inner = f"{groups[0].loop(N, '  ', span)}"
    else:  # one inner loop per row class, chosen per limb
        cases = [f"    case {k}:\n{group.loop(N, '      ', span)}      break;"
                 for k, group in enumerate(groups)]
        inner = (f"    switch ({rc}[g0]) {{\n" + "\n".join(cases) + "\n    }\n")
    # the limb's loops live in a function of their own, called once per limb (or task)
    # from the kernel's limb loop: under OpenMP, the parallel loop's body is outlined
    # into a function that reads the pointers from a struct, their `restrict` is lost,
    # and GCC 12 left such a body unvectorized (a 6-slot inner product ran 4x slower
    # than the same loop compiled without -fopenmp); `REN_ROW` keeps it a call
    bounds = "i64 g0, i64 c0, i64 c1" if split else "i64 g0"
    if len(groups) > 1:
        inner = "  {\n" + inner + "  }\n"
    row = f"REN_ROW void @K_row({bounds}, {params}) {{\n{inner}}}\n"
    if decls is not None:
        row += rows_entry(N, count, decls, names, split)
    if split:
        align = STAGE_TILE if any(g.staged for g in groups) else 16
        body = (f"const i64 g0 = task / np_, c0 = (task % np_) * ({N}LL / np_);\n"
                f"    @K_row(g0, c0, c0 + {N}LL / np_, {names});")
        walk = "for (i64 task = 0; task < L_ * np_; ++task)"
        head = (f"  const i64 L_ = {count}[0];\n"
                f"  const i64 np_ = REN_PIECES(L_, {N}LL, {align}LL);\n")
        return (f"{PIECES_PRELUDE}{tables}\n{row}REN_KERNEL void @K({params}) {{\n{head}"
                f"{team_path(walk, body)}"
                f"  REN_PARALLEL_LIMBS(L_ * np_ > 1 ? L_ * {N}LL : 0LL)\n"
                f"  {walk} {{\n    {body}\n  }}\n}}\n")
    # the words the limb loop touches: its OpenMP threshold
    walk, body = "for (i64 g0 = 0; g0 < L_; ++g0)", f"@K_row(g0, {names});"
    return (f"{tables}\n{row}REN_KERNEL void @K({params}) {{\n"
            f"  const i64 L_ = {count}[0];\n{team_path(walk, body)}"
            f"  REN_PARALLEL_LIMBS(L_ * {N}LL)\n  {walk} {body}\n}}\n")


__all__ = ["SPLIT_MAX_LIMBS", "STAGE_TILE", "RowClass", "block_preserving", "loop_kernel",
           "rows_entry"]
