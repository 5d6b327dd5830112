"""Self-describing kernels: a scheduled kernel can be run from its AST and `space` alone.

`run_kernel` below is a tiny independent evaluator (Python ints, one element at a time) that
reads only the AST — ops, SLOT types, MODULUS / VCONST / TABLE args, RingCall parameters — and
the kernel's iteration space; it never sees a ring object.  Every corpus program's schedule is
run through it and through the NumPy backend, buffer by buffer.  The ring-kernel tables
(`RingCall.tables`) are checked against textbook formulas, and a textbook NTT driven by them
reproduces `ren.ring.ntt`.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import brv, ring

import ren
from ren.backend.numpy_backend import RING_KERNELS
from ren.corpus import PROGRAMS, build
from ren.errors import ScheduleError
from ren.ir import gidx, iconst, ring_kernel_of
from ren.kernel import RING_KINDS, RingCall
from ren.node import Node
from ren.ops import Op
from ren.passes import p12_kernelize
from ren.reference import evaluate, intt_limb, ntt_limb, root_of_unity
from ren.ring import (
    Domain,
    RingKernel,
    RingSpec,
    get_tables,
    intt,
    kernel_tables,
    ntt,
    to_mont,
    twiddle_rows,
)
from ren.runtime import make_exec_units, run_exec_units
from ren.sampling import sample
from ren.schedule import run_passes, schedule

R = 1 << 32


# -- the independent evaluator ---------------------------------------------------------------
class Memory:
    """Flat lists of Python ints per base buffer; a slot is (base, offset) plus its Slot type."""

    def __init__(self) -> None:
        self.words: dict = {}

    def base(self, buf) -> list[int]:
        b = buf.base or buf
        if b not in self.words:
            init = b.copyout().reshape(-1).tolist() if b.is_allocated else [None] * b.size
            self.words[b] = init
        return self.words[b]

    def bind(self, buf, slot) -> tuple[list[int], int, tuple[int, int]]:
        assert slot.shape == buf.shape and slot.dtype.value == "u32"
        return self.base(buf), buf.offset if buf.base is not None else 0, slot.strides


def _read(bound, r: int, c: int) -> int:
    words, off, (s0, s1) = bound
    v = words[off + r * s0 + c * s1]
    assert v is not None, "read of a word no kernel wrote"
    return v


def _write(bound, r: int, c: int, v: int) -> None:
    words, off, (s0, s1) = bound
    words[off + r * s0 + c * s1] = int(v)


def _bitrev(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0


def _element(n: Node, l: int, j: int, slots: dict, memo: dict) -> int:
    if n in memo:
        return memo[n]
    op, a = n.op, n.arg
    if op is Op.LOAD:
        _, li, ni = n.src[0].src
        v = _read(slots[n.src[0].src[0].arg.index], _element(li, l, j, slots, memo),
                  _element(ni, l, j, slots, memo))
        memo[n] = v
        return v
    x = [_element(s, l, j, slots, memo) for s in n.src]
    if op is Op.GIDX:
        v = (l, j)[a]
    elif op is Op.ICONST:
        v = a
    elif op is Op.IADD:
        v = x[0] + x[1]
    elif op is Op.IMUL:
        v = x[0] * x[1]
    elif op is Op.IAND:
        v = x[0] & x[1]
    elif op is Op.ISHR:
        v = x[0] >> x[1]
    elif op is Op.ISHL:
        v = x[0] << x[1]
    elif op is Op.BITREV:
        v = _bitrev(x[0], a)
    elif op in (Op.TABLE, Op.MODULUS, Op.VCONST):
        v = a[x[0]]
    elif op is Op.CMPEQ:
        v = int(x[0] == x[1])
    elif op is Op.WHERE:
        v = x[1] if x[0] else x[2]
    elif op is Op.MODADD:
        v = (x[0] + x[1]) % x[2]
    elif op is Op.MODSUB:
        v = (x[0] - x[1]) % x[2]
    elif op is Op.MODNEG:
        v = (-x[0]) % x[1]
    elif op is Op.MONTMUL:
        v = x[0] * x[1] * pow(R, -1, x[2]) % x[2]
    else:
        raise AssertionError(f"{op.name} in an elementwise kernel")
    memo[n] = v
    return v


def _run_ring_call(call: RingCall, out, inp) -> None:
    n, src, dst = call.n, call.src, call.dst
    if call.kind is RingKernel.RANDOM:  # RANDOM's values are defined by ren.sampling
        vals = sample(call.random, RingSpec(n, dst)).tolist()
        for i, p in enumerate(dst):
            for c in range(n):
                _write(out, i, c, vals[i][c] * R % p)
        return
    if call.kind is RingKernel.TO_RNS:
        W = call.words
        ints = []
        for c in range(n):
            x = sum(_read(inp, c, k) << (32 * k) for k in range(W))
            ints.append(x - (1 << 32 * W) if x >> (32 * W - 1) else x)
        for i, p in enumerate(dst):
            for c in range(n):
                _write(out, i, c, ints[c] * R % p)
        return
    words = [[_read(inp, i, c) for c in range(n)] for i in range(len(src))]
    if call.kind in (RingKernel.NTT, RingKernel.INTT):  # linear: Montgomery words map directly
        fn = ntt_limb if call.kind is RingKernel.NTT else intt_limb
        for i, q in enumerate(src):
            for c, v in enumerate(fn(np.array(words[i], dtype=np.int64), q, n).tolist()):
                _write(out, i, c, v)
        return
    std = [[w * pow(R, -1, q) % q for w in row] for row, q in zip(words, src)]
    Q = 1
    for q in src:
        Q *= q
    if call.kind is RingKernel.BASIS_CONVERT:
        for k, p in enumerate(dst):
            for c in range(n):
                if p in src:
                    _write(out, k, c, words[src.index(p)][c])
                    continue
                v = sum(std[i][c] * pow(Q // q, -1, q) % q * (Q // q) for i, q in enumerate(src))
                _write(out, k, c, v % p * R % p)
        return
    assert call.kind is RingKernel.RESCALE and src[len(dst):] == call.dropped
    P = 1
    for p in call.dropped:
        P *= p
    for c in range(n):
        x = sum(std[i][c] * pow(Q // q, -1, q) * (Q // q) for i, q in enumerate(src)) % Q
        y = (x + P // 2) // P  # the centred lift differs by Q, a multiple of P·q_k: same residues
        for k, q in enumerate(dst):
            _write(out, k, c, y % q * R % q)


def run_kernel(kernel, bufs, mem: Memory) -> None:
    """Run one scheduled kernel (kind, ast, space only) on `bufs`, in `mem`."""
    store = kernel.ast
    slots = {}
    for s in (m for m in _walk(store) if m.op is Op.SLOT):
        slots[s.arg.index] = mem.bind(bufs[s.arg.index], s.arg)
    value = store.src[1]
    if kernel.kind == "elementwise":
        L, N = kernel.space
        for l in range(L):
            for j in range(N):
                _write(slots[0], l, j, _element(value, l, j, slots, {}))
    elif kernel.kind == "copy":
        rows, cols = kernel.space
        for r in range(rows):
            for c in range(cols):
                _write(slots[0], r, c, _read(slots[1], r, c))
    else:
        assert value.op is Op.RING_CALL and value.arg.kind.value == kernel.kind
        _run_ring_call(value.arg, slots[0], slots.get(1))


def _walk(root: Node) -> list[Node]:
    out, stack, seen = [], [root], set()
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            out.append(n)
            stack.extend(n.src)
    return out


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_kernels_run_from_their_ast_alone(program):
    items = schedule(*build(program))
    mem = Memory()
    for item in items:
        if item.kind != "view":
            run_kernel(SimpleNamespace(kind=item.kind, ast=item.ast, space=item.space),
                       item.bufs, mem)
    run_exec_units(make_exec_units(items))  # the NumPy backend, every buffer on its own
    checked = 0
    for item in items:
        if item.kind == "view":
            continue
        out = item.bufs[0]
        words = mem.words[out.base or out]
        off = out.offset if out.base is not None else 0
        mine = np.array(words[off : off + out.size], dtype=np.uint64).reshape(out.shape)
        assert np.array_equal(mine, out.copyout()), f"{program}: {item.name} differs"
        checked += 1
    assert checked >= 2


# -- the one list of ring kernels ----------------------------------------------------------
def test_one_list_of_ring_kernels():
    assert tuple(k.value for k in RingKernel) == RING_KINDS
    assert set(RING_KERNELS) == set(RingKernel)  # the NumPy backend implements every one
    a = Node(Op.AS_RING, arg=(ring(16, 3), Domain.COEFF))
    assert ring_kernel_of(Node(Op.NTT, src=(a,))) is RingKernel.NTT
    assert ring_kernel_of(Node(Op.ADD, src=(a, a))) is None


# -- ring-kernel tables as plain arrays ------------------------------------------------------
def test_ntt_tables_drive_a_textbook_ntt():
    r = ring(32, 3)
    t = RingCall(RingKernel.NTT, r.N, r.moduli, r.moduli).tables()
    ti = RingCall(RingKernel.INTT, r.N, r.moduli, r.moduli).tables()
    bits = r.logN
    for i, q in enumerate(r.moduli):
        psi = root_of_unity(q, r.N)
        assert int(t["psi"][i]) == psi
        assert t["twiddles"][i].tolist() == [pow(psi, brv(k, bits), q) for k in range(r.N)]
        assert t["twiddles_shoup"][i].tolist() == [(int(w) << 32) // q for w in t["twiddles"][i]]
        assert ti["inv_twiddles"][i].tolist() == [pow(psi, -brv(k, bits), q) for k in range(r.N)]
        assert int(ti["n_inv"][i]) * r.N % q == 1
        assert (q * int(t["qneg"][i])) % R == R - 1 and int(t["r2"][i]) == R * R % q
    x = np.random.default_rng(1).integers(0, min(r.moduli), (r.limbs, r.N)).astype(np.uint32)
    out = []
    for i, q in enumerate(r.moduli):  # in-place Cooley–Tukey, natural in, bit-reversed out
        a = [int(v) for v in x[i]]
        m, half = 1, r.N // 2
        while m < r.N:
            for blk in range(m):
                w = int(t["twiddles"][i][m + blk])
                for k in range(blk * 2 * half, blk * 2 * half + half):
                    u, v = a[k], a[k + half] * w % q
                    a[k], a[k + half] = (u + v) % q, (u - v) % q
            m, half = 2 * m, half // 2
        out.append(a)
    assert np.array_equal(np.array(out, dtype=np.uint32), ntt(x, r))
    assert np.array_equal(intt(ntt(x, r), r), x)


@pytest.mark.parametrize("kind", [RingKernel.NTT, RingKernel.INTT])
def test_twiddle_rows_are_the_stacked_tables_rows_one_per_modulus(kind):
    """`twiddle_rows` gives the rows of the (L, N) tables unstacked, one shared read-only row per
    modulus: calls over other limb sets holding the same prime get the same array."""
    r = ring(32, 4)
    name = "twiddles" if kind is RingKernel.NTT else "inv_twiddles"
    call = RingCall(kind, r.N, r.moduli, r.moduli)
    t = call.tables()
    rows, companions = call.twiddle_rows()
    assert np.array_equal(np.stack(rows), t[name])
    assert np.array_equal(np.stack(companions), t[f"{name}_shoup"])
    assert not any(a.flags.writeable for a in (*rows, *companions))
    lean = call.tables(twiddles=False)
    assert name not in lean and f"{name}_shoup" not in lean
    assert all(np.array_equal(lean[k], t[k]) for k in lean)
    other = RingCall(kind, r.N, (r.moduli[2], r.moduli[0]), (r.moduli[2], r.moduli[0]))
    assert other.twiddle_rows()[0][0] is rows[2] and other.twiddle_rows()[1][1] is companions[0]
    assert np.array_equal(kernel_tables(kind, r.N, r.moduli, r.moduli)[name], t[name])
    with pytest.raises(ValueError, match="has no twiddles"):
        twiddle_rows(RingKernel.RESCALE, r.N, r.moduli)


def test_conversion_rescale_and_to_rns_tables():
    qp = ring(16, 5)
    src, dst = qp.moduli[:2], qp.moduli
    Q = src[0] * src[1]
    t = RingCall(RingKernel.BASIS_CONVERT, 16, src, dst).tables()
    assert t["copy_from"].tolist() == [0, 1, -1, -1, -1]
    for j, p in enumerate(dst):
        assert t["bconv"][j].tolist() == [(Q // q) * R * R % p for q in src]
    assert t["qhat_inv"].tolist() == [pow(Q // q, -1, q) for q in src]
    t = RingCall(RingKernel.RESCALE, 16, qp.moduli, qp.moduli[:3],
                 dropped=qp.moduli[3:]).tables()
    P = qp.moduli[3] * qp.moduli[4]
    assert t["half"].tolist() == [(P // 2) * R % q for q in qp.moduli]
    assert t["p_inv"].shape == (2, 5)
    assert int(t["p_inv"][0][0]) == pow(qp.moduli[4], -1, qp.moduli[0]) * R % qp.moduli[0]
    t = RingCall(RingKernel.TO_RNS, 16, (), src, words=3).tables()
    assert t["word_weights"].tolist() == [[pow(2, 32 * k, q) for k in range(3)] for q in src]
    assert t["wrap"].tolist() == [pow(2, 96, q) for q in src]
    with pytest.raises(ValueError):
        t["wrap"][0] = 1  # shared, read-only


def test_montgomery_tables_match_ring_tables():
    r = ring(16, 4, 31)
    t = RingCall(RingKernel.RANDOM, 16, (), r.moduli).tables()
    rt = get_tables(r)
    assert t["q"].tolist() == rt.q32[:, 0].tolist() and t["qneg"].tolist() == rt.qneg[:, 0].tolist()
    one = np.ones((r.limbs, 1), np.uint32)
    assert to_mont(one, rt)[:, 0].tolist() == [R % q for q in r.moduli]


# -- pass 12's check can fail ----------------------------------------------------------------
def _kernel_nodes(sink):
    from ren.node import toposort

    return [n for n in toposort(sink) if n.op is Op.KERNEL]


def _swap_kernel(sink, kernel_node, **changes):
    from dataclasses import replace

    from ren.node import substitute

    new = kernel_node.replace(arg=replace(kernel_node.arg, **changes))
    return substitute(sink, {kernel_node: new})


def test_kernelize_check_rejects_kernels_that_do_not_describe_themselves():
    sink = run_passes(*build("ring_views")).sink
    p12_kernelize.check(sink)
    ew = next(k for k in _kernel_nodes(sink) if k.arg.kind == "elementwise")
    ring_k = next(k for k in _kernel_nodes(sink) if k.arg.kind == "ntt")
    with pytest.raises(ScheduleError, match="iterates over"):
        p12_kernelize.check(_swap_kernel(sink, ew, space=(1, 16)))
    # a residue op without its modulus operand
    body = ew.arg.ast
    mod = next(n for n in _walk(body) if n.op is Op.MODULUS)
    from ren.node import substitute

    bare = substitute(body, {mod: Node(Op.ICONST, mod.dtype, (), 7)})
    with pytest.raises(ScheduleError):
        p12_kernelize.check(_swap_kernel(sink, ew, ast=bare))
    # a ring call whose slot shapes disagree with its parameters
    call = ring_k.arg.ast.src[1]
    wrong = call.replace(arg=RingCall(call.arg.kind, 16, call.arg.src[:1], call.arg.dst))
    with pytest.raises(ScheduleError, match="needs"):
        p12_kernelize.check(_swap_kernel(sink, ring_k, ast=substitute(ring_k.arg.ast,
                                                                       {call: wrong})))


def test_kernelize_check_rejects_an_op_a_kernel_may_not_hold():
    sink = run_passes(*build("ring_views")).sink
    ew = next(k for k in _kernel_nodes(sink) if k.arg.kind == "elementwise")
    body = ew.arg.ast
    add = next(n for n in _walk(body) if n.op is Op.MODADD)
    from ren.node import substitute

    with pytest.raises(ScheduleError, match=r"contains \['ADD'\]"):
        p12_kernelize.check(_swap_kernel(sink, ew, ast=substitute(body,
                                                                  {add: add.replace(op=Op.ADD)})))


def test_a_subring_read_inside_a_kernel_is_an_offset_or_a_table():
    """TO_RING onto a subset, fused into an elementwise kernel: a contiguous run of moduli reads
    limb GIDX0 + first (an IADD a renderer turns into a pointer offset), any other selection
    a TABLE of source limbs."""
    from ren.corpus import RING_QP

    rng = np.random.default_rng(3)
    x, y = (ren.Poly.from_residues(np.stack([rng.integers(0, q, RING_QP.N)
                                             for q in RING_QP.moduli]), RING_QP, "NTT")
            for _ in range(2))
    picks = [RING_QP.moduli[i] for i in (0, 2, 5)]
    for sub, want in ((RING_QP.sub(1, 4), (Op.IADD, None)), (RING_QP.select(picks), (Op.TABLE,
                                                                                   (0, 2, 5)))):
        (k,) = [k for k in schedule((x + y).to_ring(sub) * 3) if k.kind == "elementwise"]
        loads = [n.src[0] for n in _walk(k.ast) if n.op is Op.LOAD]
        assert len(loads) == 2
        for index in loads:
            limb = index.src[1]
            assert (limb.op, limb.arg) == want
            if limb.op is Op.IADD:
                assert limb.src == (gidx(0), iconst(1))
        expected = evaluate((x + y).to_ring(sub) * 3)[0]
        assert np.array_equal(((x + y).to_ring(sub) * 3).numpy(), expected)


def _shared_shape(sink, kind: str) -> list[Node]:
    """Kernels of `kind` that share one hash-consed AST (the check walks it once)."""
    groups: dict = {}
    for k in _kernel_nodes(sink):
        groups.setdefault((k.arg.ast, k.arg.kind, k.arg.space), []).append(k)
    return next(g for (_, kd, _), g in groups.items() if kd == kind and len(g) > 1)


def _problem(sink) -> str:
    with pytest.raises(ScheduleError) as err:
        p12_kernelize.check(sink)
    return str(err.value)


def test_kernelize_check_names_each_kernels_own_problem():
    """Every way a KERNEL can fail to describe itself is reported with that kernel's name, also
    when kernels share one AST (the check's facts about an AST are found once per shape)."""
    from dataclasses import replace

    from ren.node import substitute

    sink = run_passes(*build("keyswitch_ntt")).sink
    p12_kernelize.check(sink)
    first, second = _shared_shape(sink, "elementwise")[:2]
    assert len(first.src) >= 2 and first.arg.ast is second.arg.ast
    name = second.arg.name
    # sources: a non-storage one; one whose buffer differs from its slot; one too many slots
    odd = second.replace(src=(second.src[0], iconst(3), *second.src[2:]))
    msg = _problem(substitute(sink, {second: odd}))
    assert msg.count(f"{name} has a non-storage source") == 1
    from ren.ir import storage_buffer

    shape = storage_buffer(second.src[1]).shape
    other = next(s for k in _kernel_nodes(sink) for s in k.src
                 if s.op is Op.BUFFER and storage_buffer(s).shape != shape)
    wrong_buffer = second.replace(src=(second.src[0], other, *second.src[2:]))
    assert f"{name} slot 1 is" in _problem(substitute(sink, {second: wrong_buffer}))
    more = _swap_kernel(sink, second, nslots=second.arg.nslots + 1)
    assert f"{name} slots {list(range(len(second.src)))} != sources" in _problem(more)
    # the first kernel of that shape is still fine: only the second is reported
    assert first.arg.name not in _problem(substitute(sink, {second: odd}))
    # the AST: a store to another index
    target = second.arg.ast.src[0]
    flipped = target.replace(src=(target.src[0], gidx(1), gidx(0)))
    ast = substitute(second.arg.ast, {target: flipped})
    assert f"{name} must store to INDEX(SLOT0, GIDX0, GIDX1)" in _problem(
        _swap_kernel(sink, second, ast=ast))
    # ring kernels: another kind's call; a call writing another shape (random: one slot only)
    ntt_k = next(k for k in _kernel_nodes(sink) if k.arg.kind == "ntt")
    assert f"{ntt_k.arg.name} must be STORE(SLOT0, RING_CALL) of intt" in _problem(
        _swap_kernel(sink, ntt_k, kind="intt"))
    rnd = next(k for k in _kernel_nodes(sink) if k.arg.kind == "random")
    call = rnd.arg.ast.src[1]
    fewer = call.replace(arg=replace(call.arg, dst=call.arg.dst[:-1]))
    assert f"{rnd.arg.name} writes" in _problem(
        _swap_kernel(sink, rnd, ast=substitute(rnd.arg.ast, {call: fewer})))


def test_kernelize_check_rejects_a_slot_no_buffer_binds():
    """A slot with the right shape but other strides is no buffer's slot: named, like a slot of
    another shape."""
    from dataclasses import replace

    from ren.node import substitute

    sink = run_passes(*build("keyswitch_ntt")).sink
    k = next(k for k in _kernel_nodes(sink) if k.arg.kind == "elementwise" and len(k.src) >= 2)
    slot = next(b for b in k.arg.ast.toposort() if b.op is Op.SLOT and b.arg.index == 1)
    strided = slot.replace(arg=replace(slot.arg, strides=(slot.arg.strides[0] * 2, 1)))
    ast = substitute(k.arg.ast, {slot: strided})
    assert f"{k.arg.name} slot 1 is" in _problem(_swap_kernel(sink, k, ast=ast))


def test_the_last_contract_walks_the_graph_once(monkeypatch):
    """The whole-graph checks of a contract share the check's walk of the graph."""
    from ren import contracts

    sink = run_passes(*build("keyswitch_ntt")).sink
    walks = []
    real = contracts.toposort
    monkeypatch.setattr(contracts, "toposort", lambda *roots: walks.append(roots) or real(*roots))
    p12_kernelize.check(sink)
    assert walks == [(sink,)]
    assert contracts.graph_order(sink) == real(sink)  # (and after the check: a walk of its own)
    assert len(walks) == 2 and not contracts._orders


def test_kernelize_check_walks_each_kernel_shape_once(monkeypatch):
    from ren.ir import storage_buffer

    sink = run_passes(*build("keyswitch_ntt")).sink
    kernels = _kernel_nodes(sink)
    shapes = {(k.arg.ast, k.arg.kind, k.arg.space) for k in kernels}
    walked = []
    real = p12_kernelize._body_facts
    monkeypatch.setattr(p12_kernelize, "_body_facts", lambda k: walked.append(k) or real(k))
    p12_kernelize.check(sink)
    assert len(walked) == len(shapes) < len(kernels)
    # and a space that disagrees with the output slot names both (a kernel whose input has
    # another shape than its output: the message must give the output's)
    ew = next(k for k in kernels if k.arg.kind == "elementwise" and len(k.src) > 1
              and storage_buffer(k.src[1]).shape != storage_buffer(k.src[0]).shape)
    out = storage_buffer(ew.src[0]).shape
    assert f"{ew.arg.name} iterates over (1, 16), its output is {out}" in _problem(
        _swap_kernel(sink, ew, space=(1, 16)))
