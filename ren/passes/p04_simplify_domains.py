"""Pass 4 — simplify domain conversions, elide transforms, fold the constants this creates.

Rewrites:
  NTT(INTT(x)) -> x,  INTT(NTT(x)) -> x
  INTT(AUTOMORPH(NTT(x), g)) -> AUTOMORPH(x, g) with x in COEFF: the round trip around a slot
  permutation is replaced by the signed coefficient permutation (pass 8 lowers both kinds)
  transform elision (`ren.passes.elision`): NTT(RESCALE(INTT(x))) -> the rounding correction
  computed from the dropped limbs only (k INTT rows instead of L+k) and applied in the NTT
  domain, exact: the same words as the RESCALE kernel; NTT(TO_RING(INTT(x), R_ext)) ->
  CONCAT(x's rows, NTT(TO_RING(INTT(x), new moduli))): a mod-up converts and transforms only
  the moduli x lacks; a rescale of x = L + NTT(W) (e.g. d0 + a mod-down by P, `split_ntt`) folds
  W into its own correction's NTT (one NTT for the two roundings); CONCAT(a, b)·c with c = 0 on
  b's moduli -> CONCAT(a·c, 0) (times_p: P·x on Q·P without a mod-up)
  the shared constant rule set of pass 1 (`ren.passes.folding`) again: a conversion of a
  constant is the constant in the other domain, which can make a whole expression constant
  (e.g. NTT(c) · 3, AUTOMORPH(NTT(c)), RESCALE(INTT(NTT(c))) after pass 3's injections)
After: no NTT has an INTT source and no INTT an NTT source; between an INTT and an NTT there is
no RESCALE, and no TO_RING that keeps some of its source's moduli; no conversion of a constant;
no op whose operands are all constants.  Every node keeps its ring, domain and device.
Leaves: only conversions that are really needed; constants only as AS_RING(CONST) leaves, and
REINDEX(AS_RING(CONST), ICONST(0)) — a constant in every coefficient (`ren.ir.broadcast_const`)
— made by the elision rules; also made by them: CONCAT (rows of two polynomials in one ring;
pass 11 lowers it), limb selections and one-modulus basis extensions (TO_RING).
Statistics: conversions removed, transforms elided and constants folded (per rule).
"""

from __future__ import annotations

from ren import settings
from ren.contracts import (
    ALL_CONSTANT_OPERANDS,
    CONST_UNDER_AS_RING,
    Contract,
    Forbid,
    Require,
    fixed_point,
)
from ren.ir import pnode
from ren.node import Node
from ren.ops import GroupOp, Op
from ren.passes.elision import ELISION_RULES
from ren.passes.folding import CONSTANT_RULES
from ren.rewrite import P, RuleSet, X, rewrite

NAME = "simplify_domains"
#: the pipeline computes the same values without this pass (`ren.passes.Pipeline.without`)
OPTIONAL = True

_ROUND_TRIPS = [
    (P(Op.NTT, P(Op.INTT, X("x"))), lambda x: x, "ntt_of_intt"),
    (P(Op.INTT, P(Op.NTT, X("x"))), lambda x: x, "intt_of_ntt"),
    (P(Op.INTT, P(Op.AUTOMORPH, P(Op.NTT, X("x")), name="a")),
     lambda x, a: pnode(Op.AUTOMORPH, x, arg=a.arg), "automorph_in_coeff"),
]

rules = RuleSet([*_ROUND_TRIPS, *ELISION_RULES, *CONSTANT_RULES])
#: the rules under REN_NO_ELISION=1 (transforms around rescale and mod-up kept, for comparisons)
rules_without_elision = RuleSet([*_ROUND_TRIPS, *CONSTANT_RULES])


def _rules(ctx) -> RuleSet:
    """The rule set this run uses: the scheduling context says whether to elide transforms
    (`ren.schedule.ScheduleContext.elide`, from REN_NO_ELISION when the context was made)."""
    elide = ctx.elide if ctx is not None and hasattr(ctx, "elide") else \
        not settings.get("REN_NO_ELISION")
    return rules if elide else rules_without_elision


#: after: no rule of the set the run used applies (round trips, elisions, constant folding)
CONTRACT = Contract(4, forbid=(
    Forbid("an NTT of an INTT", P(Op.NTT, P(Op.INTT))),
    Forbid("an INTT of an NTT", P(Op.INTT, P(Op.NTT))),
    Forbid("a conversion of a constant", P(GroupOp.TRANSFORM, P(Op.AS_RING, P(Op.CONST)))),
    ALL_CONSTANT_OPERANDS,
), checks=(
    Require("no rule applies (round trips, transform elision, constant folding)",
            lambda sink, ctx: fixed_point(_rules(ctx)).find(sink, ctx)),
    CONST_UNDER_AS_RING))


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, _rules(ctx), ctx, name=NAME, keep_specs=True)
