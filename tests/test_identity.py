"""Provenance (what the rewrite driver records while tracing) and the lasting node numbers the
pass trace builds on it (`ren.viz.identity`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

import ren
from ren.corpus import PROGRAMS, build
from ren.ir import pnode
from ren.ops import Op
from ren.rewrite import P, Provenance, X, rewrite
from ren.schedule import run_passes
from ren.viz import identity, trace

RING = ren.RingSpec.generate(16, 2)


def coeff_poly(seed: int) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, RING.N) for q in RING.moduli])
    return ren.Poly.from_residues(res, RING, ren.Domain.COEFF)


def mul_then_add() -> tuple[ren.Poly, ren.Poly, ren.Poly]:
    """-(a*b) on COEFF inputs: pass 3 puts the MUL on NTT inputs (rule mul_in_ntt); the NEG
    above it is only rebuilt."""
    a, b = coeff_poly(1), coeff_poly(2)
    return a, b, -(a * b)


@dataclass
class Ctx:
    stats: dict = field(default_factory=dict)
    provenance: Provenance | None = None


def test_the_driver_records_firings_and_rebuilds_only_when_asked():
    a = coeff_poly(3).node
    inner = pnode(Op.NEG, pnode(Op.NEG, a))  # -(-a) -> a
    top = pnode(Op.ADD, inner, a)  # rebuilt on the new source
    rules = [(P(Op.NEG, P(Op.NEG, X("x"))), lambda x: x, "double_neg")]
    ctx = Ctx(provenance=Provenance())
    out = rewrite(top, rules, ctx, name="toy")
    assert out.src == (a, a)
    prov = ctx.provenance
    assert [(f.rules, f.rule, f.replaced, f.product) for f in prov.firings] == [
        ("toy", "double_neg", inner, a)]
    assert prov.became[top] is out and prov.final(top) is out and prov.final(inner) is a
    assert prov.final(a) is a
    quiet = Ctx()
    assert rewrite(top, rules, quiet, name="toy") is out
    assert quiet.provenance is None and quiet.stats["toy"] == Counter(double_neg=1)


def test_run_passes_keeps_one_provenance_per_pass_only_when_tracing():
    *_, y = mul_then_add()
    traced = run_passes(y, trace=True)
    assert [name for name, _ in traced.provenance] == [name for name, _ in traced.graphs[1:]]
    assert traced.ctx.provenance is None  # nothing records after the run
    p3 = dict(traced.provenance)["03_inject_domains"]
    assert {f.rule for f in p3.firings} == {"mul_in_ntt"}
    assert run_passes(y).provenance == []


def test_a_rules_product_is_its_and_a_rebuilt_node_is_marked_as_such():
    *_, y = mul_then_add()
    t = trace.trace_passes(y)
    s2, s3 = t.stage(2), t.stage(3)
    mul0 = next(n for n in s2.order if n.op is Op.MUL)
    add0 = next(n for n in s2.order if n.op is Op.NEG)
    mul = next(n for n in s3.order if n.op is Op.MUL)
    add = next(n for n in s3.order if n.op is Op.NEG)
    assert s3.status[mul] == "rewritten" and s3.rule[mul] == "mul_in_ntt"
    assert s3.replaces[mul] is mul0
    assert s3.ident[mul] == s2.ident[mul0]  # the same MUL, on NTT inputs: the same number
    ntts = [n for n in s3.order if n.op is Op.NTT]
    assert len(ntts) == 2
    assert all(s3.status[n] == "added" and s3.rule[n] == "mul_in_ntt" for n in ntts)
    assert s3.status[add] == "rebuilt" and add not in s3.rule  # only its source changed
    assert s3.ident[add] == s2.ident[add0]
    assert s3.rule_nodes() == {"mul_in_ntt": [n for n in s3.order if n in s3.rule]}
    assert not s3.removed
    assert "* %" in trace.stage_text(s3, s2) and "# mul_in_ntt" in trace.stage_text(s3, s2)


def test_compare_without_provenance_pairs_rebuilds_by_op_and_arg():
    *_, y = mul_then_add()
    t = trace.trace_passes(y)
    s2, s3 = t.stage(2), t.stage(3)
    ch = identity.compare(s2.order, s3.order)  # a pass's own code leaves no provenance
    assert "rewritten" not in ch.status.values() and not ch.rule
    assert Counter(ch.status.values())["added"] == 2  # the NTTs
    assert {n.op for n in ch.partner} == {Op.MUL, Op.NEG, Op.SINK}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_numbers_last_across_the_passes(name):
    t = trace.trace_passes(*build(name))
    used: set[int] = set()
    for prev, stage in zip(t.stages, t.stages[1:], strict=False):
        used |= set(prev.ident.values())
        live = [stage.ident[n] for n in stage.order]
        gone = [prev.ident[n] for n in stage.removed]
        assert len(set(live)) == len(live)
        assert not set(live) & set(gone)  # a removed node never shares a number with a live one
        for n in stage.order:
            if n in prev.ident:
                assert stage.ident[n] == prev.ident[n]
            elif stage.ident[n] in used:  # an old number: it carries a vanished node on
                old = next(o for o, m in stage.partner.items() if m is n)
                assert (old.op, old.arg) == (n.op, n.arg)
        for n, rule in stage.rule.items():
            assert stage.status[n] in ("rewritten", "added")
            assert rule.split(".")[-1] in {r.split(".")[-1] for r in stage.rules}, rule
    names = [nm for nm, _ in t.rings()]
    assert len(names) == len(set(names))
