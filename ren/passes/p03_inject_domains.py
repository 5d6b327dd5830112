"""Pass 3 — inject NTT/INTT where an op needs a domain.

Requirements (the seed's rules):
  MUL of two polynomials    NTT inputs (the product is pointwise there); result in NTT
  AUTOMORPH                 NTT input (a pure permutation of slots); its result keeps the
                            source's domain, so a COEFF source becomes INTT(AUTOMORPH(NTT(x)))
  RESCALE                   COEFF input; an NTT source becomes NTT(RESCALE(INTT(x)))
  TO_RING with new moduli   COEFF input (basis conversion works on coefficients), likewise
MUL by a scalar constant works in either domain and is left alone.
After: every non-scalar MUL and every AUTOMORPH has NTT-domain sources; every RESCALE and
every extending TO_RING has a COEFF-domain source.  Values are unchanged.
Leaves: round trips such as NTT(INTT(x)) for pass 4 to remove, and full-width conversions
around a RESCALE or basis extension of an NTT-domain value, NTT(RESCALE(INTT(x))) and
NTT(TO_RING(INTT(x))), which pass 4's elision rules (`ren.passes.elision`) narrow to the limbs
that really change (the dropped ones; the new ones).
"""

from __future__ import annotations

from ren.ir import is_extension, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.ring import Domain
from ren.spec import is_scalar, spec_of

NAME = "inject_domains"


def _domain(n: Node) -> Domain:
    return spec_of(n).domain


def _ntt(x: Node) -> Node:
    return x if _domain(x) is Domain.NTT else pnode(Op.NTT, x)


def _mul_needs_ntt(n: Node) -> bool:
    a, b = n.src
    return not (is_scalar(a) or is_scalar(b)) and Domain.COEFF in (_domain(a), _domain(b))


def _in_coeff(n: Node) -> bool:
    return _domain(n.src[0]) is Domain.NTT


rules = RuleSet([
    (P(Op.MUL, X("a"), X("b"), where=_mul_needs_ntt), lambda a, b: pnode(Op.MUL, _ntt(a), _ntt(b)),
     "mul_in_ntt"),
    (P(Op.AUTOMORPH, X("x"), name="n", where=lambda n: _domain(n.src[0]) is Domain.COEFF),
     lambda x, n: pnode(Op.INTT, pnode(Op.AUTOMORPH, pnode(Op.NTT, x), arg=n.arg)),
     "automorph_in_ntt"),
    (P(Op.RESCALE, X("x"), name="n", where=_in_coeff),
     lambda x, n: pnode(Op.NTT, pnode(Op.RESCALE, pnode(Op.INTT, x), arg=n.arg)),
     "rescale_in_coeff"),
    (P(Op.TO_RING, X("x"), name="n", where=lambda n: is_extension(n) and _in_coeff(n)),
     lambda x, n: pnode(Op.NTT, pnode(Op.TO_RING, pnode(Op.INTT, x), arg=n.arg)),
     "basis_convert_in_coeff"),
])


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME, keep_specs=True)
