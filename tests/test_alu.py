"""The ALU table (ren.alu) against Python integers: index ops, the Montgomery constant and the
residue ops on u32 words."""

from __future__ import annotations

import numpy as np
from conftest import brv, ring
from hypothesis import given
from hypothesis import strategies as st

from ren.alu import ALU_OPS, Moduli, alu, fold_index, moduli_table
from ren.node import toposort
from ren.ops import LOWERED_ALU, GroupOp, Op
from ren.ring import neg_inv32

R = 1 << 32
MODULI = ring(16, 4, 31).moduli + ring(16, 3, 30).moduli


def test_table_covers_index_and_residue_ops():
    assert ALU_OPS == GroupOp.ALU  # the op table's ALU ops, no more, no less
    assert (GroupOp.INDEX - {Op.GIDX, Op.ICONST}) | set(LOWERED_ALU.values()) | {
        Op.WHERE, Op.VCONST, Op.MODULUS} == ALU_OPS


@given(st.integers(0, 1 << 20), st.integers(0, 20))
def test_index_ops_match_python_ints(a, b):
    for op, expect in ((Op.IADD, a + b), (Op.IMUL, a * b), (Op.IAND, a & b),
                       (Op.ISHR, a >> b), (Op.ISHL, a << b)):
        assert fold_index(op, None, a, b) == expect
        arr = alu(op)(np.array([a], np.int64), np.array([b], np.int64))
        assert arr.tolist() == [expect]
    assert bool(alu(Op.CMPEQ)(a, b)) == (a == b)


def test_bitrev_table_and_where():
    for bits in (1, 4, 7):
        i = np.arange(1 << bits)
        assert alu(Op.BITREV, bits)(i).tolist() == [brv(j, bits) for j in range(1 << bits)]
    assert alu(Op.TABLE, (5, 7, 9))(np.array([2, 0])).tolist() == [9, 5]
    assert fold_index(Op.TABLE, (5, 7, 9), 1) == 7
    c = alu(Op.CMPEQ)(np.arange(4), 0)
    assert alu(Op.WHERE)(c, np.uint32(3), np.uint32(8)).tolist() == [3, 8, 8, 8]


def test_montgomery_constant():
    q = np.array(MODULI, dtype=np.uint64)
    for qq, c in zip(MODULI, neg_inv32(q).tolist()):
        assert (qq * c) % R == R - 1  # q · (-q^-1) ≡ -1 (mod 2^32)


@given(st.data())
def test_residue_ops_match_python_ints(data):
    limbs = data.draw(st.lists(st.integers(0, len(MODULI) - 1), min_size=1, max_size=6))
    m = alu(Op.MODULUS, MODULI)(np.array(limbs)[:, None])
    assert isinstance(m, Moduli) and m.q32.shape == (len(limbs), 1)
    qs = [MODULI[i] for i in limbs]
    a = [data.draw(st.sampled_from((0, 1, q - 1)) | st.integers(0, q - 1)) for q in qs]
    b = [data.draw(st.sampled_from((0, 1, q - 1)) | st.integers(0, q - 1)) for q in qs]
    A = np.array(a, np.uint32)[:, None]
    B = np.array(b, np.uint32)[:, None]
    rinv = [pow(R, -1, q) for q in qs]
    cases = {
        Op.MODADD: ((A, B, m), [(x + y) % q for x, y, q in zip(a, b, qs)]),
        Op.MODSUB: ((A, B, m), [(x - y) % q for x, y, q in zip(a, b, qs)]),
        Op.MODNEG: ((A, m), [(-x) % q for x, q in zip(a, qs)]),
        Op.MONTMUL: ((A, B, m), [x * y * ri % q for x, y, ri, q in zip(a, b, rinv, qs)]),
    }
    for op, (args, expect) in cases.items():
        out = alu(op)(*args)
        assert out.dtype == np.uint32 and out[:, 0].tolist() == expect, op


def test_vconst_and_modulus_tables():
    limb = np.array([[2], [0]])
    assert alu(Op.VCONST, (10, 20, 30))(limb)[:, 0].tolist() == [30, 10]
    assert moduli_table(MODULI[:3]) is moduli_table(MODULI[:3])  # computed once per table
    assert alu(Op.MODULUS, MODULI[:3])(limb).q32[:, 0].tolist() == [MODULI[2], MODULI[0]]


# -- pass 11's index folding against plain Python evaluation ------------------------------------
_PY = {Op.IADD: lambda a, b: a + b, Op.IMUL: lambda a, b: a * b, Op.IAND: lambda a, b: a & b,
       Op.ISHR: lambda a, b: a >> b, Op.ISHL: lambda a, b: a << b}
_TABLE = (3, 0, 2, 1)


def _py_eval(n, l: int, j: int) -> int:
    if n.op is Op.GIDX:
        return (l, j)[n.arg]
    if n.op is Op.ICONST:
        return n.arg
    if n.op is Op.TABLE:
        return n.arg[_py_eval(n.src[0], l, j)]
    return _PY[n.op](*(_py_eval(s, l, j) for s in n.src))


@st.composite
def index_exprs(draw, depth: int = 4):
    """Index expressions over GIDX(0) ∈ [0, 4), GIDX(1) ∈ [0, 8) and small constants (0 and 1,
    which the rules fold, and -1, 2, … which they must not), TABLE lookups of a limb index."""
    from ren.ir import gidx, iconst, idx

    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(st.sampled_from([gidx(0), gidx(1)]),
                              st.integers(-2, 3).map(iconst)))
    kind = draw(st.sampled_from(["IADD", "IMUL", "IAND", "ISHR", "ISHL", "TABLE"]))
    if kind == "TABLE":
        return idx(Op.TABLE, draw(st.sampled_from([gidx(0), iconst(2)])), arg=_TABLE)
    a = draw(index_exprs(depth - 1))
    if kind in ("ISHR", "ISHL"):  # shift amounts: small and non-negative
        return idx(Op[kind], a, iconst(draw(st.integers(0, 3))))
    return idx(Op[kind], a, draw(index_exprs(depth - 1)))


@given(index_exprs())
def test_index_folding_keeps_values_and_leaves_nothing_to_fold(e):
    from ren.passes.p11_indexify import index_rules
    from ren.rewrite import rewrite

    folded = rewrite(e, index_rules, name="test")
    for l in range(4):
        for j in range(8):
            assert _py_eval(folded, l, j) == _py_eval(e, l, j)
    for n in toposort(folded):
        consts = [s.op is Op.ICONST for s in n.src]
        if n.op in _PY or n.op is Op.TABLE:
            assert not all(consts), f"{n.op.name} of constants left unfolded"
        if n.op is Op.IADD:
            assert all(s.op is not Op.ICONST or s.arg != 0 for s in n.src), "x + 0 left"
        if n.op is Op.IMUL:
            assert all(s.op is not Op.ICONST or s.arg != 1 for s in n.src), "x · 1 left"
