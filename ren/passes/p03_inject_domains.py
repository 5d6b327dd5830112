"""Pass 3 — inject NTT/INTT where an op needs a domain.

Requirements (the seed's rules):
  MUL of two polynomials    NTT inputs (the product is pointwise there); result in NTT
  AUTOMORPH                 NTT input (a pure permutation of slots); its result keeps the
                            source's domain, so a COEFF source becomes INTT(AUTOMORPH(NTT(x)))
  RESCALE                   COEFF input; an NTT source becomes NTT(RESCALE(INTT(x)))
  TO_RING with new moduli   COEFF input (basis conversion works on coefficients), likewise
MUL by a scalar constant works in either domain and is left alone.  The requirements are the op
table's ``needs_domain`` (`ren.ir.required_domain`); one rule per op that has one.
After: every non-scalar MUL and every AUTOMORPH has NTT-domain sources; every RESCALE and
every extending TO_RING has a COEFF-domain source.  Values are unchanged.
Leaves: round trips such as NTT(INTT(x)) for pass 4 to remove, and full-width conversions
around a RESCALE or basis extension of an NTT-domain value, NTT(RESCALE(INTT(x))) and
NTT(TO_RING(INTT(x))), which pass 4's elision rules (`ren.passes.elision`) narrow to the limbs
that really change (the dropped ones; the new ones).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid
from ren.ir import pnode, required_domain
from ren.node import Node
from ren.ops import GroupOp, Op
from ren.rewrite import P, RuleSet, rewrite
from ren.ring import Domain
from ren.spec import need_spec

NAME = "inject_domains"
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it)
REQUIRED_BECAUSE = (
    "pass simplify_domains and the ring kernels expect every MUL and AUTOMORPH to read NTT-"
    "domain values and every RESCALE and basis extension COEFF-domain ones, which "
    "inject_domains arranges")


def _domain(n: Node) -> Domain:
    return need_spec(n).domain


def _convert(x: Node, domain: Domain) -> Node:
    if _domain(x) is domain:
        return x
    return pnode(Op.NTT if domain is Domain.NTT else Op.INTT, x)


def _misplaced(n: Node) -> bool:
    want = required_domain(n)
    return want is not None and any(_domain(s) is not want for s in n.src)


def in_domain(n: Node) -> Node:
    """n computed on sources converted to the domain it needs, its result converted back to the
    domain n had (a MUL of two polynomials is NTT either way)."""
    want = required_domain(n)
    assert want is not None  # the rule fires only on ops that need a domain (_misplaced)
    out = n.replace(src=tuple(_convert(s, want) for s in n.src))
    return _convert(out, _domain(n))


def _rule_name(op: Op) -> str:
    """``mul_in_ntt``, ``rescale_in_coeff``, … (a TO_RING that needs a domain is a basis
    conversion)."""
    info = op.info
    assert info.needs_domain is not None, op
    what = info.ring_kernel.value if info.ring_kernel is not None else op.name.lower()
    return f"{what}_in_{info.needs_domain.name.lower()}"


rules = RuleSet([(P(op, name="n", where=_misplaced), in_domain, _rule_name(op))
                 for op in sorted(GroupOp.NEEDS_DOMAIN, key=lambda op: op.value)])

#: after: every op that needs a domain reads its sources in it (so its rule applies nowhere)
CONTRACT = Contract(3, forbid=(
    Forbid("an op that needs a domain reading a source in the other one "
           "(MUL of two polynomials, AUTOMORPH: NTT; RESCALE, extending TO_RING: COEFF)",
           P(GroupOp.NEEDS_DOMAIN, where=_misplaced)),))


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME, keep_specs=True)
