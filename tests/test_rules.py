"""One focused test per rewrite rule (HEIR-style): a tiny input, the one pass, the expected graph.

Each case builds a small input, runs the single pass that owns the rule on it, and checks that
the rule fired (``ctx.stats``), that the result is the expected graph (nodes are hash-consed, so
a graph built in Python compares by identity) and that the pass kept the values
(`ren.interpret.check_pass`).  A rule's behaviour is pinned here without regenerating the golden
snapshots; `test_every_rule_has_a_case` fails when a rule is added without a case.  Rules with a
condition also get a case where the condition fails and the rule must not fire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest

import ren
from ren.interpret import check_pass
from ren.ir import broadcast_const, const_node, gidx, iconst, idx, is_const, pnode
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.passes import PASSES, get_pass
from ren.passes import p08_lower_automorphisms as p08
from ren.passes import p11_indexify as p11
from ren.rewrite import RuleSet, rewrite
from ren.ring import Domain, RingSpec
from ren.schedule import ScheduleContext, as_sink, run_passes

N = 16
R4 = RingSpec.generate(N, 4)
R = R4.sub(0, 3)  # the inputs' ring; R4 extends it by one modulus
COEFF, NTT = Domain.COEFF, Domain.NTT


def poly(seed: int, domain: Domain = COEFF, ring: RingSpec = R) -> ren.Poly:
    """A realized input (a buffer) with deterministic residues."""
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, domain)


@cache
def x(domain: Domain = COEFF) -> Node:
    """One input per domain (cached: each call to `poly` makes a new buffer, a new node)."""
    return poly(1, domain).node


@cache
def y(domain: Domain = COEFF) -> Node:
    return poly(2, domain).node


@cache
def z() -> Node:
    """An input on R2 (two of R's three moduli)."""
    return poly(4, ring=R.sub(0, 2)).node


def c(value: int, domain: Domain = COEFF, ring: RingSpec = R) -> Node:
    return const_node(value, ring, domain, "python")


def P(op: Op, *src: Node, arg=None) -> Node:
    return pnode(op, *src, arg=arg)


@dataclass
class Case:
    rule: str
    stage: int  # the pass that owns the rule
    build: Callable[[], list[Node]]  # the outputs, before `stage` (earlier passes run first)
    expect: Callable[[list[Node]], list[Node]] | None = None  # the outputs after `stage`
    fires: bool = True  # False: the rule's condition fails, it must not fire
    check: Callable[[Node], None] | None = None  # extra assertions on the SINK after the pass
    ctx: Callable[[], ScheduleContext] = ScheduleContext
    prepare: bool = False  # run passes 1..stage-1 first (inputs the earlier passes shape)
    case_id: str = ""


def _run(case: Case) -> tuple[Node, Node, ScheduleContext]:
    outputs = case.build()
    ctx = case.ctx()
    sink = as_sink(*outputs)
    ctx.outputs = sink.src
    if case.prepare and case.stage > 1:
        sink = run_passes(sink, upto=case.stage - 1, ctx=ctx).sink
    mod = get_pass(case.stage)
    return sink, mod.run(sink, ctx), ctx


def _is_const_of(sink: Node, ring: RingSpec) -> None:
    (out,) = sink.src
    assert is_const(out) and out.arg[0] == ring


def _only(op: Op, sink: Node) -> Node:
    found = [n for n in toposort(sink) if n.op is op]
    assert len(found) == 1, [n.op.name for n in found]
    return found[0]


def _no(op: Op, sink: Node) -> None:
    assert all(n.op is not op for n in toposort(sink)), op


def _stored(sink: Node) -> Node:
    """The value stored for output 0 (AS_RING(AFTER(B, STORE(B, value))))."""
    after = sink.src[0].src[0]
    assert after.op is Op.AFTER and after.src[1].op is Op.STORE
    return after.src[1].src[1]


# -- the cases -----------------------------------------------------------------------------------
R2 = R.sub(0, 2)
R1 = R.sub(0, 1)
ODD = R.select((R.moduli[0], R.moduli[2]))  # a non-contiguous subset


def _elided_rescale(sink: Node) -> None:
    """No RESCALE kernel: only the dropped limb goes through an INTT, the correction is
    applied to the kept limbs in the NTT domain."""
    _no(Op.RESCALE, sink)
    intt = _only(Op.INTT, sink)
    assert intt.src[0] is P(Op.TO_RING, x(NTT), arg=R.sub(2, 3))
    assert sink.src[0].op is Op.MUL and sink.src[0].src[0].src[0] is P(Op.TO_RING, x(NTT),
                                                                         arg=R2)


@cache
def _top() -> Node:
    """An NTT-domain input on R4's last modulus alone (the rows CONCAT puts above R's)."""
    return poly(3, NTT, ring=R4.sub(3, 4)).node


def _zero_top_rows(sink: Node) -> None:
    """CONCAT(a, b)·c with c = 0 mod b's modulus: b's rows are the constant 0 (b is not read),
    a's rows are a·c."""
    (out,) = sink.src
    assert out.op is Op.CONCAT and is_const(out.src[1]) and _top() not in toposort(out)
    assert out.src[0].op is Op.MUL and x(NTT) in out.src[0].src


def _view_check(sink: Node) -> None:
    view = _only(Op.BUFFER_VIEW, sink)
    assert view.arg.offset == 0 and view.arg.shape == (2, N)
    _no(Op.TO_RING, sink)


def _indexed(sink: Node) -> None:
    store = next(n for n in toposort(sink) if n.op is Op.STORE)
    target, value = store.src
    assert target.op is Op.INDEX and target.src[1:] == (gidx(0), gidx(1))
    assert value.op is Op.MODADD and value.src[-1].op is Op.MODULUS
    assert value.src[0].op is Op.LOAD and value.src[1].op is Op.LOAD


def _kernels(sink: Node) -> None:
    kernel = _only(Op.KERNEL, sink)
    assert kernel.arg.kind == "elementwise" and len(kernel.src) == 3  # output and two inputs
    _no(Op.STORE, sink)


def _index_map(g: int) -> Callable[[Node], None]:
    def check(sink: Node) -> None:
        _no(Op.AUTOMORPH, sink)
        reindex = _only(Op.REINDEX, sink)
        e = reindex.src[1]
        # the NTT-domain map, evaluated with Python ints: slot j of the result holds slot e(j)
        bits = N.bit_length() - 1

        def brv(v: int) -> int:
            return int(format(v, f"0{bits}b")[::-1], 2)

        want = [brv(((2 * brv(j) + 1) * g % (2 * N)) >> 1) for j in range(N)]
        assert [_eval_index(e, j) for j in range(N)] == want

    return check


def _eval_index(e: Node, j: int) -> int:
    """An index expression's value at coefficient position j (a tiny evaluator for the test)."""
    if e.op is Op.GIDX:
        return j if e.arg == 1 else 0
    if e.op is Op.ICONST:
        return e.arg
    a = [_eval_index(s, j) for s in e.src]
    if e.op is Op.BITREV:
        return int(format(a[0], f"0{e.arg}b")[::-1], 2)
    return {Op.IADD: lambda: a[0] + a[1], Op.IMUL: lambda: a[0] * a[1],
            Op.IAND: lambda: a[0] & a[1], Op.ISHR: lambda: a[0] >> a[1],
            Op.ISHL: lambda: a[0] << a[1]}[e.op]()


CASES: list[Case] = [
    # pass 1 and pass 4: the shared constant rules (ren.passes.folding)
    Case("fold_constants", 1, lambda: [P(Op.ADD, c(3), c(4))], lambda o: [c(7)]),
    Case("fold_constants", 1, lambda: [P(Op.ADD, x(), c(4))], lambda o: o, fires=False,
         case_id="fold_constants-needs-all-constant"),
    Case("fold_constants", 1, lambda: [P(Op.TO_RING, c(R.moduli[0] + 5), arg=R4)],
         check=lambda s: _is_const_of(s, R4), case_id="fold_constants-basis-extension"),
    Case("fold_constants", 1, lambda: [P(Op.RESCALE, c(3 * R.moduli[2] + 7), arg=R.moduli[2:])],
         lambda o: [c(3, ring=R2)], case_id="fold_constants-rescale"),
    Case("fold_constants", 1, lambda: [P(Op.RESCALE, c(-3 * R.moduli[2] - 7), arg=R.moduli[2:])],
         lambda o: [c(-3, ring=R2)], case_id="fold_constants-rescale-negative"),
    Case("fold_constants", 1,  # 3.6 rounds to 4
         lambda: [P(Op.RESCALE, c(3 * R.moduli[2] + 3 * R.moduli[2] // 5), arg=R.moduli[2:])],
         lambda o: [c(4, ring=R2)], case_id="fold_constants-rescale-rounds"),
    Case("fold_constants", 1, lambda: [P(Op.SUB, c(3), c(10))], lambda o: [c(-7)],
         case_id="fold_constants-sub"),
    Case("fold_constants", 1, lambda: [P(Op.MUL, c(3, NTT), c(10, NTT))], lambda o: [c(30, NTT)],
         case_id="fold_constants-mul"),
    Case("fold_constants", 1, lambda: [P(Op.NEG, c(3))], lambda o: [c(-3)],
         case_id="fold_constants-neg"),
    Case("fold_constants", 1, lambda: [P(Op.AUTOMORPH, c(9, NTT), arg=3)],
         lambda o: [c(9, NTT)], case_id="fold_constants-automorphism-fixes-constants"),
    Case("fold_constants", 1, lambda: [P(Op.COPY, c(9), arg="python:1")],
         lambda o: [const_node(9, R, COEFF, "python:1")], case_id="fold_constants-copy"),
    # a product of two polynomials is NTT; once one folds to 1 the driver keeps the domain
    Case("mul_one", 1, lambda: [P(Op.MUL, x(), P(Op.ADD, c(1), c(0)))],
         lambda o: [P(Op.NTT, x())], case_id="mul_one-keeps-the-declared-domain"),
    Case("ntt_of_const", 1, lambda: [P(Op.NTT, c(5))], lambda o: [c(5, NTT)]),
    Case("intt_of_const", 1, lambda: [P(Op.INTT, c(5, NTT))], lambda o: [c(5)]),
    Case("add_zero", 1, lambda: [P(Op.ADD, c(0), x())], lambda o: [x()]),
    Case("add_zero", 1, lambda: [P(Op.ADD, x(), c(1))], lambda o: o, fires=False,
         case_id="add_zero-not-one"),
    Case("sub_zero", 1, lambda: [P(Op.SUB, x(), c(0))], lambda o: [x()]),
    Case("zero_sub", 1, lambda: [P(Op.SUB, c(0), x())], lambda o: [P(Op.NEG, x())]),
    Case("mul_one", 1, lambda: [P(Op.MUL, x(), c(1))], lambda o: [x()]),
    Case("mul_zero", 1, lambda: [P(Op.MUL, c(0), x())], lambda o: [c(0)]),
    Case("mul_zero", 1, lambda: [P(Op.MUL, c(0), x(NTT))], lambda o: [c(0, NTT)],
         case_id="mul_zero-keeps-the-domain"),
    Case("sub_self", 1, lambda: [P(Op.SUB, x(), x())], lambda o: [c(0)]),
    Case("neg_neg", 1, lambda: [P(Op.NEG, P(Op.NEG, x()))], lambda o: [x()]),
    # pass 1: ring changes, automorphisms, copies
    Case("to_ring_same", 1, lambda: [P(Op.TO_RING, x(), arg=R)], lambda o: [x()]),
    Case("to_ring_compose", 1, lambda: [P(Op.TO_RING, P(Op.TO_RING, x(), arg=R2), arg=R1)],
         lambda o: [P(Op.TO_RING, x(), arg=R1)]),
    # a selection that undoes an extension: composes to x's own ring, i.e. x
    Case("to_ring_compose", 1, lambda: [P(Op.TO_RING, P(Op.TO_RING, z(), arg=R), arg=R2)],
         lambda o: [z()], case_id="to_ring_compose-undoes-an-extension"),
    # through an extension the composition is not exact: the new modulus is converted
    Case("to_ring_compose", 1,
         lambda: [P(Op.TO_RING, P(Op.TO_RING, x(), arg=R4), arg=R4.sub(2, 4))],
         lambda o: o, fires=False, case_id="to_ring_compose-not-through-an-extension"),
    Case("rotate_zero", 1, lambda: [P(Op.ROTATE, x(NTT), arg=0)], lambda o: [x(NTT)]),
    Case("automorph_identity", 1, lambda: [P(Op.AUTOMORPH, x(), arg=1)], lambda o: [x()]),
    Case("copy_same_device", 1, lambda: [P(Op.COPY, x(), arg="python")], lambda o: [x()]),
    Case("copy_same_device", 1, lambda: [P(Op.COPY, x(), arg="python:1")], lambda o: o,
         fires=False, case_id="copy_same_device-other-device"),
    Case("copy_copy", 1,
         lambda: [P(Op.COPY, P(Op.COPY, x(), arg="python:1"), arg="python:2")],
         lambda o: [P(Op.COPY, x(), arg="python:2")]),
    Case("contiguous_twice", 1,
         lambda: [P(Op.CONTIGUOUS, P(Op.CONTIGUOUS, P(Op.ADD, x(), y())))],
         lambda o: [P(Op.CONTIGUOUS, P(Op.ADD, x(), y()))]),
    # pass 2: ring ops to automorphisms
    Case("rotate", 2, lambda: [P(Op.ROTATE, x(NTT), arg=1)],
         lambda o: [P(Op.AUTOMORPH, x(NTT), arg=5)]),
    Case("rotate", 2, lambda: [P(Op.ROTATE, x(NTT), arg=-1)],
         lambda o: [P(Op.AUTOMORPH, x(NTT), arg=pow(5, -1, 2 * N))], case_id="rotate-negative"),
    Case("conjugate", 2, lambda: [P(Op.CONJUGATE, x(NTT))],
         lambda o: [P(Op.AUTOMORPH, x(NTT), arg=2 * N - 1)]),
    Case("compose_automorphisms", 2,
         lambda: [P(Op.AUTOMORPH, P(Op.AUTOMORPH, x(NTT), arg=3), arg=5)],
         lambda o: [P(Op.AUTOMORPH, x(NTT), arg=15)]),
    Case("compose_automorphisms", 2,  # 3 · 11 = 33 = 1 (mod 32): the identity, so x itself
         lambda: [P(Op.AUTOMORPH, P(Op.AUTOMORPH, x(NTT), arg=3), arg=11)], lambda o: [x(NTT)],
         case_id="compose_automorphisms-to-the-identity"),
    Case("automorph_identity", 2, lambda: [P(Op.AUTOMORPH, x(NTT), arg=1)], lambda o: [x(NTT)]),
    # pass 3: domains
    Case("mul_in_ntt", 3, lambda: [P(Op.MUL, x(), y())],
         lambda o: [P(Op.MUL, P(Op.NTT, x()), P(Op.NTT, y()))]),
    Case("mul_in_ntt", 3, lambda: [P(Op.MUL, x(), c(3))], lambda o: o, fires=False,
         case_id="mul_in_ntt-not-by-a-constant"),
    Case("automorph_in_ntt", 3, lambda: [P(Op.AUTOMORPH, x(), arg=3)],
         lambda o: [P(Op.INTT, P(Op.AUTOMORPH, P(Op.NTT, x()), arg=3))]),
    Case("rescale_in_coeff", 3, lambda: [P(Op.RESCALE, x(NTT), arg=(R.moduli[2],))],
         lambda o: [P(Op.NTT, P(Op.RESCALE, P(Op.INTT, x(NTT)), arg=(R.moduli[2],)))]),
    Case("basis_convert_in_coeff", 3, lambda: [P(Op.TO_RING, x(NTT), arg=R4)],
         lambda o: [P(Op.NTT, P(Op.TO_RING, P(Op.INTT, x(NTT)), arg=R4))]),
    Case("basis_convert_in_coeff", 3, lambda: [P(Op.TO_RING, x(NTT), arg=R2)], lambda o: o,
         fires=False, case_id="basis_convert_in_coeff-not-a-selection"),
    # pass 4: round trips and transform elision
    Case("ntt_of_intt", 4, lambda: [P(Op.NTT, P(Op.INTT, x(NTT)))], lambda o: [x(NTT)]),
    Case("intt_of_ntt", 4, lambda: [P(Op.INTT, P(Op.NTT, x()))], lambda o: [x()]),
    Case("automorph_in_coeff", 4,
         lambda: [P(Op.INTT, P(Op.AUTOMORPH, P(Op.NTT, x()), arg=3))],
         lambda o: [P(Op.AUTOMORPH, x(), arg=3)]),
    Case("rescale_in_ntt", 4,
         lambda: [P(Op.NTT, P(Op.RESCALE, P(Op.INTT, x(NTT)), arg=(R.moduli[2],)))],
         check=_elided_rescale),
    Case("rescale_in_ntt", 4,
         lambda: [P(Op.NTT, P(Op.RESCALE, P(Op.INTT, x(NTT)), arg=(R.moduli[2],)))],
         lambda o: o, fires=False, ctx=lambda: ScheduleContext(elide=False),
         case_id="rescale_in_ntt-off-without-elision"),
    Case("mod_up_in_ntt", 4, lambda: [P(Op.NTT, P(Op.TO_RING, P(Op.INTT, x(NTT)), arg=R4))],
         lambda o: [P(Op.CONCAT, x(NTT), P(Op.NTT, P(Op.TO_RING, P(Op.INTT, x(NTT)),
                                                      arg=R4.sub(3, 4))), arg=R4)]),
    Case("concat_times_zero_rows", 4, lambda: [P(Op.MUL, P(Op.CONCAT, x(NTT), _top(), arg=R4),
                                                    c(3 * R4.moduli[3], NTT, R4))],
         check=_zero_top_rows),
    Case("concat_times_zero_rows", 4, lambda: [P(Op.MUL, P(Op.CONCAT, x(NTT), _top(), arg=R4),
                                                    c(R4.moduli[3] + 1, NTT, R4))],
         lambda o: o, fires=False, case_id="concat_times_zero_rows-no-zero-rows"),
    # pass 6: storage
    Case("bufferize", 6, lambda: [P(Op.ADD, x(), y())], prepare=True,
         check=lambda s: (_no(Op.BUFFERIZE, s),
                          _stored(s) is P(Op.ADD, x(), y()) or pytest.fail("stored value"))),
    # pass 8: automorphisms to index maps
    Case("automorph_to_index_map", 8, lambda: [P(Op.AUTOMORPH, x(NTT), arg=3)], prepare=True,
         check=_index_map(3)),
    Case("automorph_to_index_map", 8, lambda: [P(Op.AUTOMORPH, x(), arg=3)], prepare=True,
         check=lambda s: (_no(Op.AUTOMORPH, s), _only(Op.WHERE, s), _only(Op.NEG, s)),
         case_id="automorph_to_index_map-coeff-signed"),
    # pass 9: constants
    Case("broadcast_const", 9, lambda: [P(Op.ADD, x(), broadcast_const(7, R, "python"))],
         lambda o: [P(Op.ADD, x(), P(Op.VCONST, arg=(R, _words(7))))]),
    Case("broadcast_const", 9,  # coefficient 1 of a COEFF constant is 0
         lambda: [P(Op.ADD, x(), P(Op.REINDEX, c(7), iconst(1)))],
         lambda o: [P(Op.ADD, x(), P(Op.VCONST, arg=(R, _words(0))))],
         case_id="broadcast_const-coefficient-1"),
    Case("lower_const_operands", 9, lambda: [P(Op.MUL, x(NTT), c(5))],
         lambda o: [P(Op.MUL, x(NTT), P(Op.VCONST, arg=(R, _words(5))))]),
    Case("lower_const_operands", 9, lambda: [P(Op.ADD, x(), c(5))],
         lambda o: [P(Op.ADD, x(), P(Op.WHERE, idx(Op.CMPEQ, gidx(1), iconst(0)),
                                       P(Op.VCONST, arg=(R, _words(5))),
                                       P(Op.VCONST, arg=(R, _words(0)))))],
         case_id="lower_const_operands-coeff-at-x0"),
    Case("lower_const_operands", 9, lambda: [c(5)], lambda o: o, fires=False,
         case_id="lower_const_operands-an-output-stays"),
    # pass 10: views
    Case("to_ring_to_view", 10, lambda: [P(Op.ADD, P(Op.TO_RING, x(), arg=R2), poly(3, ring=R2)
                                           .node)], prepare=True, check=_view_check),
    Case("to_ring_to_view", 10,
         lambda: [P(Op.ADD, P(Op.TO_RING, x(), arg=ODD), poly(3, ring=ODD).node)],
         prepare=True, fires=False, case_id="to_ring_to_view-not-contiguous"),
    # pass 11: indexify
    Case("indexify_store", 11, lambda: [P(Op.ADD, x(), y())], prepare=True, check=_indexed),
    # pass 12: kernels
    Case("kernelize", 12, lambda: [P(Op.ADD, x(), y())], prepare=True, check=_kernels),
]


def _words(value: int) -> tuple[int, ...]:
    return tuple(value % q * (1 << 32) % q for q in R.moduli)


def _rule_fired(ctx: ScheduleContext, stage: int, rule: str) -> int:
    return ctx.stats.get(get_pass(stage).NAME, {}).get(rule, 0)


@pytest.mark.parametrize("case", CASES, ids=[c.case_id or c.rule for c in CASES])
def test_rule(case: Case):
    before, after, ctx = _run(case)
    fired = _rule_fired(ctx, case.stage, case.rule)
    assert (fired > 0) == case.fires, (case.rule, dict(ctx.stats.get(get_pass(case.stage).NAME,
                                                                      {})))
    if case.expect is not None:
        want = case.expect(list(before.src))
        assert list(after.src) == want, (after.src, want)
    if case.check is not None:
        case.check(after)
    check_pass(before, after, ctx, f"{case.stage:02d}")


# -- pass 11's index folding rules (they rewrite kernel bodies, not the graph) --------------------
G = gidx(1)
INDEX_CASES = [
    ("iadd_zero", idx(Op.IADD, G, iconst(0)), G),
    ("iadd_zero", idx(Op.IADD, iconst(0), G), G),
    ("imul_one", idx(Op.IMUL, iconst(1), G), G),
    ("fold_index", idx(Op.IAND, iconst(13), iconst(6)), iconst(4)),
    ("fold_index", idx(Op.ISHL, iconst(3), iconst(2)), iconst(12)),
    ("iadd_assoc", idx(Op.IADD, idx(Op.IADD, G, iconst(2)), iconst(3)),
     idx(Op.IADD, G, iconst(5))),
    ("table_const", idx(Op.TABLE, iconst(1), arg=(4, 5, 6)), iconst(5)),
]


@pytest.mark.parametrize("rule, expr, want", INDEX_CASES, ids=[r for r, *_ in INDEX_CASES])
def test_index_rule(rule: str, expr: Node, want: Node):
    ctx = ScheduleContext()
    out = rewrite(expr, p11.index_rules, ctx, name="fold")
    assert out is want
    assert ctx.stats["fold"][rule] >= 1
    assert all(_eval_index(out, j) == _eval_index(expr, j) for j in range(N)
               if expr.op is not Op.TABLE)


def test_index_rules_leave_a_non_constant_alone():
    expr = idx(Op.IADD, G, iconst(1))
    assert rewrite(expr, p11.index_rules, None, name="fold") is expr


# -- coverage ------------------------------------------------------------------------------------
def _all_rules() -> dict[str, set[int]]:
    rules: dict[str, set[int]] = {}
    for num, _, mod in PASSES:
        for value in vars(mod).values():
            if isinstance(value, RuleSet):
                for r in value.rules:
                    rules.setdefault(r.name, set()).add(num)
    return rules


def test_every_rule_has_a_case():
    covered = {(c.rule, c.stage) for c in CASES if c.fires}
    covered |= {(rule, 11) for rule, *_ in INDEX_CASES}
    missing = []
    for rule, stages in _all_rules().items():
        # a rule shared by passes 1 and 4 (ren.passes.folding) is pinned once, in pass 1
        if not any((rule, s) in covered for s in stages):
            missing.append(f"{rule} (pass {sorted(stages)})")
    assert not missing, f"rules without a focused test in tests/test_rules.py: {missing}"
    assert len(_all_rules()) >= 41


def test_the_shared_constant_rules_run_in_pass_4_too():
    ctx = ScheduleContext()
    sink = as_sink(P(Op.NTT, c(5)))
    out = get_pass(4).run(sink, ctx)
    assert out.src == (c(5, NTT),) and ctx.stats["simplify_domains"]["ntt_of_const"] == 1


def test_the_coeff_index_map_is_a_signed_permutation():
    """Pass 8's COEFF map: x(X^g) puts coefficient i at i·g mod 2N, negated past N."""
    g = 3
    e, negate = p08.coeff_index(N, g)
    ginv = pow(g, -1, 2 * N)
    for j in range(N):
        t = j * ginv % (2 * N)
        assert _eval_index(e, j) == t % N and _eval_index(negate, j) == (t >= N)


def test_the_elided_rescale_is_the_rescale():
    """rescale_in_ntt's output equals the full INTT → RESCALE → NTT (both evaluated)."""
    a = poly(5, NTT)
    full = a.intt().rescale(R.moduli[2]).ntt()
    with ren.settings.override(REN_NO_ELISION=1):
        want = full.realize().tolist()
    got = poly(5, NTT).intt().rescale(R.moduli[2]).ntt().realize().tolist()
    assert got == want


def test_dtype_of_index_cases():
    for _, expr, want in INDEX_CASES:
        assert expr.dtype is DType.INDEX and want.dtype is DType.INDEX
