"""Elementwise kernels in the C-family vocabulary of `ren.backend.render_c`.

`render_elementwise(item, dialect)` renders one elementwise `ScheduledKernel`: every AST node one
SSA variable (index values i64 with the ALU table's semantics, residues u32 with Montgomery
arithmetic), moduli, per-limb constants and index tables baked into the source.  A thread per
element in the CUDA and shim dialects; in the loop dialect (plain C, the ``"cpu"`` device) a loop
nest whose values of the limb alone (moduli, per-limb constants, limb offsets, row classes, the
limb count) are tables passed at run time (`_Elementwise._emit_row`: kernels that differ only
in them are one compiled function), with render-time rewrites that keep the inner loop
vectorizable and short:

* a non-affine index map of the coefficient index alone (an automorphism's) becomes a table,
  passed as a kernel parameter (``("table", name)`` launch arguments, the arrays in
  ``Program.tables``) once it has `EXTERNAL_TABLE` entries, so rotations share one kernel;
* a WHERE whose condition depends on the limb alone (a CONCAT) is resolved per limb, one inner
  loop per class of limbs;
* a sum of 3+ Montgomery products under one modulus (an inner product) becomes 64-bit product
  sums (up to 16 terms each at 30 bits) with one or two Montgomery reductions per sum;
* a load through such a table (an automorphism's read) whose row is fixed per limb is staged:
  the coefficient loop runs in tiles of `STAGE_TILE`, and each tile first permutes the row's
  words into a buffer on the stack (``ren_permute``: a vector load and a lane permute per
  block of 16, which the map's block structure allows), which the loop then reads in order.

The loops themselves (the tiles, the row classes' switch, the (limb, piece) tasks) are
`ren.backend.elementwise_loop`'s; this module renders the lines they run.
"""

from __future__ import annotations

import numpy as np

from ren.alu import alu
from ren.backend.elementwise_loop import SPLIT_MAX_LIMBS as SPLIT_MAX_LIMBS
from ren.backend.elementwise_loop import STAGE_TILE as STAGE_TILE
from ren.backend.elementwise_loop import RowClass, loop_kernel
from ren.backend.elementwise_loop import block_preserving as _block_preserving
from ren.backend.render_c import (
    Dialect,
    Launch,
    Param,
    Program,
    finish_kernel,
    signature,
)
from ren.errors import RealizeError
from ren.ir import gidx
from ren.kernel import ScheduledKernel
from ren.node import Node, toposort
from ren.ops import DType, GroupOp, Op
from ren.ring import neg_inv32


def _array(ctype: str, name: str, values) -> str:
    suffix = "LL" if ctype == "i64" else "u"
    body = f"{suffix}, ".join(map(str, map(int, values))) + suffix
    return f"REN_CONST {ctype} {name}[{len(values)}] = {{{body}}};"


#: tables of at least this many entries (a coefficient map: an automorphism's, N entries) are
#: kernel parameters, not C arrays in the source: kernels that differ only in such a table
#: (the rotations of one hoisted set, say) then share one source and one compiled function, and
#: the compiler does not parse N numbers per kernel (at N = 2^16 a bootstrapping's sources held
#: ~26 million of them)
EXTERNAL_TABLE = 64
_NUMPY_TYPE = {"u32": np.uint32, "i64": np.int64}

#: index ops that keep an index expression from being affine in GIDX1 (a C compiler cannot
#: vectorize a load through them, and they cost several operations per element)
_NONAFFINE = GroupOp.NONAFFINE

#: the value of an index expression along one axis: int64 per index, or one int64 (no GIDX in it)
AxisValue = np.ndarray | np.int64


#: C text of the ops that are a fixed form of their sources' variables ({0}, {1}, {2}) and arg
_FORMS = {
    Op.IADD: "({0} + {1})", Op.IMUL: "({0} * {1})", Op.IAND: "({0} & {1})",
    Op.ISHR: "({0} >> {1})", Op.ISHL: "({0} << {1})",
    Op.CMPEQ: "((i64)({0} == {1}))",
    Op.BITREV: "ren_brev({0}, {arg:d})",
    Op.WHERE: "({0} != 0 ? {1} : {2})",
    Op.MODADD: "ren_modadd({0}, {1}, {2})",
    Op.MODSUB: "ren_modsub({0}, {1}, {2})",
    Op.MODNEG: "ren_modneg({0}, {1})",
    Op.MONTMUL: "ren_montmul({0}, {1}, {2}, {2}n)",  # {2}n: the modulus' Montgomery constant
}


def _reached(value: Node, choose: dict[Node, Node], stop: dict[Node, bool]) -> set[Node]:
    """The nodes `value` reads, each WHERE of `choose` through its chosen branch only, not going
    past the nodes `stop` marks (folded tables: what they replace is not read)."""
    seen: set[Node] = set()
    stack = [value]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            if not stop.get(n):
                stack.extend((choose[n],) if n in choose else n.src)
    return seen


class _Elementwise:
    """Renders one elementwise AST (see `render_elementwise`).  With `fold_tables` (the loop
    dialects), a non-affine index expression of the coefficient index alone — an automorphism's
    map, say — is evaluated once here into a table of N entries, so the loop reads one table
    entry instead of recomputing it for every limb; and a WHERE whose condition depends on the
    limb alone (a CONCAT of rows from two buffers) is resolved per limb: limbs taking the same
    branches share one inner loop that loads only from the taken branch."""

    def __init__(self, ast: Node, space: tuple[int, int], fold_tables: bool = False):
        self.space = space
        self.fold_tables = fold_tables
        self.tables: list[str] = []
        self._table_names: dict[tuple[str, bytes], str] = {}
        #: parameter name -> (C type, contents) of the tables passed as parameters
        self.external: dict[str, tuple[str, np.ndarray]] = {}
        self.lines: list[str] = []
        #: per line: whether it depends on the limb alone (it may run before a tile's loop)
        self.row_line: list[bool] = []
        #: the staged loads of the row class being emitted: (buffer, row pointer, table)
        self.staged: list[tuple[str, str, str]] = []
        self._staged_of: dict[tuple[int, Node, Node], str] = {}
        #: folded tables: node -> (table name, whether `ren_permute` can stage loads through it)
        self._folded: dict[Node, tuple[str, bool]] = {}
        self.var: dict[Node, str] = {}
        self.slots: dict[int, object] = {}
        self._render(ast)

    def _foldable(self, order: list[Node]) -> dict[Node, bool]:
        """Nodes to evaluate at render time: non-affine index expressions of GIDX1 only."""
        coeff_only: dict[Node, bool] = {}
        nonaffine: dict[Node, bool] = {}
        for n in order:
            if n.dtype is not DType.INDEX:  # (LOAD, INDEX and SLOT are u32)
                coeff_only[n], nonaffine[n] = False, False
                continue
            if n.op is Op.GIDX:
                coeff_only[n] = n.arg == 1
            else:
                coeff_only[n] = all(coeff_only.get(x, False) for x in n.src)
            nonaffine[n] = n.op in _NONAFFINE or any(nonaffine.get(x, False) for x in n.src)
        return {n: coeff_only[n] and nonaffine[n] for n in order}

    def _row_foldable(self, order: list[Node]) -> dict[Node, bool]:
        """Nodes whose value depends on the limb alone, evaluated at render time into a table
        of one entry per limb (a kernel parameter, `_emit_row`): index expressions of GIDX0
        (a limb offset ``g0 + 2``, a limb map), and the per-limb moduli and constants (MODULUS
        and VCONST of such an index).  Kernels that differ only in these values (the same
        step at another level, over other primes) then render to one source."""
        row_only = self._row_only_of
        out: dict[Node, bool] = {}
        for n in order:
            if n.dtype is DType.INDEX:
                out[n] = bool(row_only.get(n)) and n.op not in GroupOp.INDEX_LEAF
            else:
                out[n] = n.op in GroupOp.LIMB_VALUE and bool(row_only.get(n.src[0]))
        return out

    def _row_values(self, n: Node) -> np.ndarray:
        """The value of a limb-only index expression at every limb (int64, one per row).  A
        lookup out of its table's range (a row of another row class, whose branch does not read
        it) reads the nearest entry: the value is never used there."""
        memo = self._row_memo
        if n not in memo:
            L = self.space[0]
            if n.op is Op.GIDX:
                v = np.arange(L, dtype=np.int64)
            elif n.op is Op.ICONST:
                v = np.full(L, int(n.arg), dtype=np.int64)
            elif n.op is Op.TABLE:
                v = np.asarray(n.arg, dtype=np.int64)[self._row_limbs(n.src[0], len(n.arg))]
            else:
                with np.errstate(all="ignore"):
                    v = alu(n.op, n.arg)(*(self._row_values(x) for x in n.src))
            memo[n] = np.broadcast_to(np.asarray(v).astype(np.int64), (L,))
        return memo[n]

    def _row_limbs(self, n: Node, size: int) -> np.ndarray:
        """`_row_values` of an index into a table of `size` entries, clipped into its range."""
        return np.clip(self._row_values(n), 0, size - 1)

    def _emit_row(self, n: Node, name: str) -> None:
        """The line of a `_row_foldable` node: its value read from a table of one entry per limb
        (the modulus with its Montgomery constant, a per-limb constant, an index)."""
        if n.op is Op.MODULUS:
            moduli = np.asarray(n.arg, dtype=np.uint64)[self._row_limbs(n.src[0], len(n.arg))]
            self._row_moduli[n] = moduli
            q = self._table("u32", moduli, row=True)
            qn = self._table("u32", neg_inv32(moduli), row=True)
            self._line(f"const u32 {name} = {q}[g0], {name}n = {qn}[g0];")
        elif n.op is Op.VCONST:
            words = np.asarray(n.arg, dtype=np.uint32)[self._row_limbs(n.src[0], len(n.arg))]
            self._line(f"const u32 {name} = {self._table('u32', words, row=True)}[g0];")
        else:
            table = self._table("i64", self._row_values(n), row=True)
            self._line(f"const i64 {name} = {table}[g0];", row=True)

    def _axis_values(self, n: Node, axis: int,
                     memo: dict[Node, AxisValue]) -> AxisValue:
        """The value of an index expression of GIDX`axis` alone at every index of that axis
        (int64; one int64 for an expression without GIDX), evaluated through the ALU table."""
        if n not in memo:
            if n.op is Op.GIDX:
                memo[n] = np.arange(self.space[axis], dtype=np.int64)
            elif n.op is Op.ICONST:
                memo[n] = np.int64(n.arg)
            else:
                memo[n] = alu(n.op, n.arg)(*(self._axis_values(x, axis, memo) for x in n.src))
        return memo[n]

    def _table(self, ctype: str, values, row: bool = False) -> str:
        """The name of a table of `values`: a parameter (``t<k>``) in the loop dialect when it
        is large (a coefficient map) or a `row` table (one entry per limb: moduli, per-limb
        constants, row indices, the limb count), else a constant array in the source."""
        arr = np.asarray(values, dtype=_NUMPY_TYPE[ctype])
        key = (ctype, arr.tobytes())
        name = self._table_names.get(key)
        if name is None:  # one table per distinct contents (row classes share them)
            if self.fold_tables and (row or len(arr) >= EXTERNAL_TABLE):
                name = f"t{len(self.external)}"
                self.external[name] = (ctype, arr)
            else:
                name = f"@K_t{len(self.tables)}"
                self.tables.append(_array(ctype, name, arr.tolist()))
            self._table_names[key] = name
        return name

    def _expr(self, n: Node) -> str:
        v = self.var
        s = [v[x] for x in n.src] if n.op is not Op.LOAD else []
        op = n.op
        if op is Op.GIDX:
            return ("g0", "g1")[n.arg]
        if op is Op.ICONST:
            return f"((i64){int(n.arg)}LL)"
        if op in _FORMS:  # {0}, {1}, {2}: the sources' variables
            return _FORMS[op].format(*s, arg=n.arg)
        if op is Op.TABLE:
            return f"{self._table('i64', n.arg)}[{s[0]}]"
        if op is Op.VCONST:
            return f"{self._table('u32', n.arg)}[{s[0]}]"
        if op is Op.LOAD:
            index = n.src[0]
            slot = index.src[0].arg
            self.slots[slot.index] = slot
            li, ci = (v[x] for x in index.src[1:])
            return f"s{slot.index}[{li} * {slot.strides[0]}LL + {ci} * {slot.strides[1]}LL]"
        raise RealizeError(f"render_c: {op.name} cannot appear in an elementwise kernel")

    @staticmethod
    def _row_only(order: list[Node]) -> dict[Node, bool]:
        """Index expressions of the limb index alone (GIDX0 and constants)."""
        row_only: dict[Node, bool] = {}
        for n in order:
            if n.op is Op.GIDX:
                row_only[n] = n.arg == 0
            elif n.op is Op.ICONST:
                row_only[n] = True
            else:
                row_only[n] = n.dtype is DType.INDEX and all(row_only.get(x, False) for x in n.src)
        return row_only

    def _row_classes(self, order: list[Node]) -> list[tuple[list[int], dict[Node, Node]]]:
        """Rows grouped by the branch every limb-only WHERE takes there (a CONCAT's source
        buffer, say): per group, its rows and the branch chosen at each such WHERE."""
        row_only = self._row_only_of
        wheres = [n for n in order if n.op is Op.WHERE and row_only.get(n.src[0])]
        L = self.space[0]
        if not wheres:
            return [(list(range(L)), {})]
        memo: dict[Node, AxisValue] = {}
        conds = [np.broadcast_to(self._axis_values(w.src[0], 0, memo) != 0, (L,)) for w in wheres]
        groups: dict[tuple[bool, ...], list[int]] = {}
        for row in range(L):
            groups.setdefault(tuple(bool(c[row]) for c in conds), []).append(row)
        return [(rows, {w: w.src[1] if taken else w.src[2] for w, taken in zip(wheres, sig)})
                for sig, rows in groups.items()]

    def _dot_products(self, order: list[Node], live: set[Node],
                      users: dict[Node, list[Node]]
                      ) -> tuple[dict[Node, tuple[list[Node], list[Node]]], set[Node]]:
        """Sums of Montgomery products under one modulus (the key-switching inner product):
        root MODADD -> (its MONTMUL terms, its other terms), and the nodes the fused sum
        replaces."""
        def one_user_in_chain(x: Node, modulus: Node) -> bool:
            us = users.get(x, [])
            return len(us) == 1 and us[0].op is Op.MODADD and us[0].src[2] is modulus

        dots: dict[Node, tuple[list[Node], list[Node]]] = {}
        skip: set[Node] = set()
        for n in order:
            if n not in live or n.op is not Op.MODADD or n.src[2].op is not Op.MODULUS:
                continue
            modulus = n.src[2]
            if one_user_in_chain(n, modulus):
                continue  # not a root: part of a longer sum
            terms, inner, stack = [], [], [n.src[0], n.src[1]]
            while stack:
                x = stack.pop()
                if x.op is Op.MODADD and x.src[2] is modulus and one_user_in_chain(x, modulus):
                    inner.append(x)
                    stack += [x.src[0], x.src[1]]
                else:
                    terms.append(x)
            products = [t for t in terms if t.op is Op.MONTMUL and t.src[2] is modulus]
            if len(products) < 3:
                continue
            # other terms (a product by the Montgomery one simplifies to its operand) are added
            # to the fused sum of the products
            dots[n] = (products, [t for t in terms if t not in products])
            skip.update(inner)
            skip.update(t for t in products if len(users.get(t, [])) == 1)
        return dots, skip

    def _dot(self, root: Node, products: list[Node], others: list[Node]) -> str:
        """The fused sum of `_dot_products`: its products' `_product_sum`, plus its other terms."""
        modulus = root.src[2]
        expr = self._product_sum(modulus, products)
        for other in others:
            expr = f"ren_modadd({expr}, {self.var[other]}, {self.var[modulus]})"
        return expr

    @staticmethod
    def _sum_plan(q: int, terms: int) -> tuple[int, ...]:
        """How `_product_sum` sums `terms` products under modulus `q`: () one sum and one REDC
        (k·q < 2^32), else (k,) sums of k terms (k·q² < 2^64) each reduced by `ren_redc64`."""
        if terms <= max(1, ((1 << 32) - 1) // q):
            return ()
        return (min(terms, max(1, min(32, ((1 << 64) - 1) // (q * q)))),)

    def _product_sum(self, modulus: Node, terms: list[Node]) -> str:
        """Montgomery products (each a·b < q²) summed in 64 bits: one sum below q·2^32 (k·q <
        2^32 for the largest modulus: 3 terms at 30 bits) and one Montgomery reduction; more in
        sums below 2^64 (k·q² < 2^64: 16 terms at 30 bits, 4 at 31), each reduced by
        `ren_redc64`.  Either way every sum leaves as its canonical residue.  The largest
        modulus is that of the rows being rendered (`_rows`): `_render` renders rows whose
        moduli take different plans (`_sum_plan`: 31-bit special primes beside 29-bit ones,
        say) in classes of their own, so a 30-bit row sums 32 products before a reduction
        instead of the 4 a 31-bit row allows."""
        q = self.var[modulus]
        moduli = [modulus.arg[r] for r in self._rows]
        self._plans.append(tuple(self._sum_plan(m, len(terms)) for m in moduli))
        plan = self._sum_plan(max(moduli), len(terms))
        if not plan:
            return "ren_redc(" + " + ".join(f"(u64){self.var[t.src[0]]} * {self.var[t.src[1]]}"
                                            for t in terms) + f", {q}, {q}n)"
        (k,) = plan
        row_moduli = self._row_moduli.get(modulus)
        if row_moduli is not None:  # one entry per row (`_emit_row`)
            r, limb = self._table("u32", (1 << 32) % row_moduli, row=True), "g0"
        else:
            r = self._table("u32", [(1 << 32) % m for m in modulus.arg])
            limb = self.var[modulus.src[0]]
        sums = []
        for i in range(0, len(terms), k):
            chunk = terms[i : i + k]
            prods = " + ".join(f"(u64){self.var[t.src[0]]} * {self.var[t.src[1]]}" for t in chunk)
            sums.append(f"ren_redc64({prods}, {q}, {q}n, {r}[{limb}])")
        expr = sums[0]
        for other in sums[1:]:
            expr = f"ren_modadd({expr}, {other}, {q})"
        return expr

    def _render(self, store: Node) -> None:
        if store.op is not Op.STORE or store.src[0].op is not Op.INDEX:
            raise RealizeError("render_c: an elementwise kernel must be STORE(INDEX(...), value)")
        target, value = store.src
        out = target.src[0].arg
        if out.index != 0 or target.src[1:] != (gidx(0), gidx(1)):
            raise RealizeError("render_c: elementwise kernels store to slot 0 at (GIDX0, GIDX1)")
        self.slots[0] = out
        order = toposort(value)
        for n in order:  # every slot is a parameter, even one that no row class reads
            if n.op is Op.SLOT:
                self.slots[n.arg.index] = n.arg
        self._row_only_of = self._row_only(order)
        self.row_local = self._row_local(order, out)
        fold = self._foldable(order) if self.fold_tables else {}
        self._row_fold = self._row_foldable(order) if self.fold_tables else {}
        self._row_memo: dict[Node, np.ndarray] = {}
        self._row_moduli: dict[Node, np.ndarray] = {}
        classes = self._row_classes(order) if self.fold_tables else \
            [(list(range(self.space[0])), {})]
        memo: dict[Node, AxisValue] = {}
        self.groups: list[RowClass] = []
        for rows, choose in classes:
            self._emit_class(rows, choose, order, value, fold, memo, out)
            plans = list(zip(*self._plans))  # per row: the plan of each product sum
            if len(set(plans)) > 1:  # rows whose sums differ: a class for each plan
                del self.groups[-1]
                by_plan: dict[tuple, list[int]] = {}
                for row, plan in zip(rows, plans):
                    by_plan.setdefault(plan, []).append(row)
                for part in by_plan.values():
                    self._emit_class(part, choose, order, value, fold, memo, out)

    def _row_local(self, order: list[Node], out) -> bool:
        """Whether limb g0 of the kernel reads and writes words of row g0 alone, each slot's
        row g0 being its N words from g0 * N: every load's limb index is GIDX0 itself, every
        slot's row stride N, and every coefficient offset (a map of the coefficient alone, an
        automorphism's, say) within [0, N).  The plan runner may then run such a kernel row by
        row, chained with other row-local kernels on the same rows (`ren_rows_*`,
        ren/backend/cpu_plan.py's tiles): a kernel that mixes rows (a limb map, a CONCAT of
        rows at an offset, a broadcast row) must not be."""
        N = self.space[1]
        if out.strides != (N, 1):
            return False
        memo: dict[Node, AxisValue] = {}
        for n in order:
            if n.op is not Op.INDEX or n.src[0].op is not Op.SLOT:
                continue
            slot, li, ci = n.src[0].arg, n.src[1], n.src[2]
            if li != gidx(0) or slot.strides[0] != N:
                return False
            if ci == gidx(1) and slot.strides[1] == 1:
                continue
            if any(x.op is Op.GIDX and x.arg == 0 for x in toposort(ci)):
                return False
            try:
                offsets = np.asarray(self._axis_values(ci, 1, memo)) * slot.strides[1]
            except Exception:  # an index op the ALU table cannot evaluate: not shown local
                return False
            if offsets.min() < 0 or offsets.max() >= N:
                return False
        return True

    def _emit_class(self, rows: list[int], choose: dict[Node, Node], order: list[Node],
                    value: Node, fold: dict[Node, bool], memo: dict[Node, AxisValue],
                    out) -> None:
        """Render the class of `rows` (its lines, appended to `groups`)."""
        self.var, self.lines, self.row_line = {}, [], []
        self.staged, self._staged_of = [], {}
        self._rows = rows
        self._plans: list[tuple[tuple[int, ...], ...]] = []
        self._emit(order, value, fold, choose, memo)
        self._line(f"s0[g0 * {out.strides[0]}LL + g1 * {out.strides[1]}LL] = "
                   f"{self.var[value]};")
        self.groups.append(RowClass(rows, self.lines, self.row_line, self.staged))

    def _line(self, text: str, row: bool = False) -> None:
        self.lines.append(text)
        self.row_line.append(row)

    def _stage(self, load: Node) -> str | None:
        """The stack buffer a LOAD reads instead of its source, when it can be staged: its
        coefficient index is a folded table of block-preserving u32 entries (`_block_preserving`),
        its row is fixed per limb and its coefficients are contiguous."""
        index = load.src[0]
        slot = index.src[0].arg
        li, ci = index.src[1:]
        table, stageable = self._folded.get(ci, ("", False))
        if not stageable or slot.strides[1] != 1 or not self._row_only_of.get(li):
            return None
        key = (slot.index, li, ci)
        if key not in self._staged_of:
            buf = self._staged_of[key] = f"b{len(self.staged)}"
            row = f"s{slot.index} + {self.var[li]} * {slot.strides[0]}LL"
            self.staged.append((buf, row, table))
        return self._staged_of[key]

    def _emit(self, order: list[Node], value: Node, fold: dict[Node, bool],
              choose: dict[Node, Node], memo: dict[Node, AxisValue]) -> None:
        """The lines computing `value` where each WHERE of `choose` takes its chosen branch
        (the other branch's loads are not emitted)."""
        # what a folded table replaces is not read (nor an ICONST only it used): kernels that
        # differ only in their tables then render to one source
        stop = {n: bool(fold.get(n) or self._row_fold.get(n)) for n in order}
        live = _reached(value, choose, stop)
        users: dict[Node, list[Node]] = {}
        for n in live:
            for x in (choose[n],) if n in choose else n.src:
                users.setdefault(x, []).append(n)
        dots, skip = self._dot_products(order, live, users) if self.fold_tables else ({}, set())
        for n in order:
            # memory (SLOTs) and element addresses (INDEX) are not values
            if n not in live or n.op in GroupOp.MEMORY or n.op is Op.INDEX or n in skip:
                continue
            if self._row_fold.get(n):
                self.var[n] = name = f"v{len(self.var)}"
                self._emit_row(n, name)
                continue
            if n in choose:
                self.var[n] = self.var[choose[n]]
                continue
            if n in dots:
                self.var[n] = name = f"v{len(self.var)}"
                self._line(f"const u32 {name} = {self._dot(n, *dots[n])};")
                continue
            name = f"v{len(self.var)}"
            self.var[n] = name
            if fold.get(n):
                values = np.broadcast_to(self._axis_values(n, 1, memo), (self.space[1],))
                ctype = "u32" if values.min() >= 0 and values.max() < (1 << 32) else "i64"
                table = self._table(ctype, values)
                self._folded[n] = (table, ctype == "u32" and _block_preserving(values))
                self._line(f"const i64 {name} = (i64){table}[g1];")
                continue
            if n.op is Op.MODULUS:  # the modulus and its Montgomery constant, per limb
                q = self._table("u32", n.arg)
                qn = self._table("u32", neg_inv32(np.array(n.arg, dtype=np.uint64)))
                limb = self.var[n.src[0]]
                self._line(f"const u32 {name} = {q}[{limb}], {name}n = {qn}[{limb}];")
                continue
            staged = self._stage(n) if self.fold_tables and n.op is Op.LOAD else None
            if staged is not None:
                self._line(f"const u32 {name} = {staged}[g1 - g1t];")
                continue
            ctype = "i64" if n.dtype is DType.INDEX else "u32"
            self._line(f"const {ctype} {name} = {self._expr(n)};",
                       row=n.dtype is DType.INDEX and self._row_only_of.get(n, False))

    def params(self) -> tuple[Param, ...]:
        n = max(self.slots) + 1
        if sorted(self.slots) != list(range(n)):
            raise RealizeError(f"render_c: kernel slots {sorted(self.slots)} are not 0..{n - 1}")
        slots = tuple(Param(f"s{i}", "u32*" if i == 0 else "const u32*") for i in range(n))
        return slots + tuple(Param(name, f"const {ctype}*")
                             for name, (ctype, _) in self.external.items())

    def template(self, loop: bool) -> str:
        """The kernel's body template (name placeholder ``@K``); call it before `params`: the
        loop dialect's row tables (the row classes, the limb count) become parameters here."""
        if loop:
            return self._loop_template()
        L, N = self.space
        total = L * N
        params = signature(self.params(), restrict=True)
        (group,) = self.groups
        body = "\n    ".join(group.lines)
        tables = "\n".join(self.tables)
        walk = (f"const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n"
                f"  if (gid >= {total}LL) return;\n  {{")
        return (f"{tables}\nREN_KERNEL void @K({params}) {{\n  {walk}\n"
                f"    const i64 g0 = gid / {N}LL, g1 = gid % {N}LL;\n    {body}\n  }}\n}}\n")

    def _loop_template(self) -> str:
        """The loop dialect's body: limbs outside, coefficients inside (affine indices the C
        compiler vectorizes).  The limb count is a parameter (``L_``, read from a one-entry
        table), like every per-limb value (`_emit_row`): the source depends on the ring degree,
        the strides and the kernel's shape alone, so one compiled function serves every level
        and set of primes of one step."""
        L, N = self.space
        count = self._table("i64", [L], row=True)
        classes = [0] * L
        for k, group in enumerate(self.groups):
            for r in group.rows:
                classes[r] = k
        rc = self._table("u32", classes, row=True) if len(self.groups) > 1 else ""
        decls = " ".join(f"{p.ctype} {p.name} = ({p.ctype})a[{i}];"
                         for i, p in enumerate(self.params()))
        return loop_kernel(self.groups, L, N, count, rc, signature(self.params(), restrict=True),
                           ", ".join(p.name for p in self.params()), "\n".join(self.tables),
                           decls=decls if self.row_local else None)


def render_elementwise(item: ScheduledKernel, dialect: Dialect) -> Program:
    """The program of an elementwise kernel: one function, one launch over ``item.space``."""
    ast, (rows, cols) = item.body()
    r = _Elementwise(ast, (rows, cols), fold_tables=dialect.elementwise_loop)
    template = r.template(dialect.elementwise_loop)  # (adds the loop dialect's row tables)
    params = r.params()
    kernel = finish_kernel("ren_ew", template, params)
    grid, block = dialect.elementwise_launch(rows * cols)
    slots = len(params) - len(r.external)
    args = (*(("slot", i) for i in range(slots)), *(("table", name) for name in r.external))
    launch = Launch(kernel.name, grid, block, args)  # type: ignore[arg-type]
    return Program(item.name, (kernel,), (launch,),
                   tables={name: values for name, (_, values) in r.external.items()})


__all__ = ["render_elementwise"]
