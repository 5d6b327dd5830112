"""Pass 8 — lower automorphisms to explicit index maps.

An AUTOMORPH(x, g) becomes a REINDEX: the value of x read at a coefficient index computed from
the output position GIDX(1) (REINDEX(x, e)[l, j] = x[l, e(j)]).

  NTT domain (slot j holds x(psi^(2·brv(j)+1))):   a pure permutation
      e(j) = brv(((2·brv(j) + 1)·g mod 2N) >> 1)
  COEFF domain: a signed permutation — the ring reduction X^N = -1 gives the sign
      t = j·g^-1 mod 2N,   e(j) = t mod N,   negate where t >= N:
      WHERE(t >> log N, NEG(REINDEX(x, e)), REINDEX(x, e))
(mod 2N and mod N are ANDs with 2N-1 and N-1, so every map is a handful of integer ops that a
backend evaluates once per kernel.)
After: no AUTOMORPH remains.
Leaves: REINDEX, WHERE and index arithmetic (GIDX ICONST IADD IMUL IAND ISHR ISHL BITREV).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid
from ren.ir import gidx, iconst, idx, pnode
from ren.node import Node
from ren.ops import DType, Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.ring import Domain
from ren.spec import need_spec

NAME = "lower_automorphisms"


def ntt_index(N: int, g: int) -> Node:
    bits = N.bit_length() - 1
    e = idx(Op.IADD, idx(Op.ISHL, idx(Op.BITREV, gidx(1), arg=bits), iconst(1)), iconst(1))
    moved = idx(Op.IAND, idx(Op.IMUL, e, iconst(g)), iconst(2 * N - 1))
    return idx(Op.BITREV, idx(Op.ISHR, moved, iconst(1)), arg=bits)


def coeff_index(N: int, g: int) -> tuple[Node, Node]:
    """(source index, negate flag) of the coefficient-domain map."""
    h = pow(g, -1, 2 * N)
    t = idx(Op.IAND, idx(Op.IMUL, gidx(1), iconst(h)), iconst(2 * N - 1))
    return idx(Op.IAND, t, iconst(N - 1)), idx(Op.ISHR, t, iconst(N.bit_length() - 1))


def lower(x: Node, n: Node) -> Node:
    spec = need_spec(x)
    N, g = spec.ring.N, n.arg
    if spec.domain is Domain.NTT:
        return pnode(Op.REINDEX, x, ntt_index(N, g))
    src, negate = coeff_index(N, g)
    moved = pnode(Op.REINDEX, x, src)
    return pnode(Op.WHERE, negate, pnode(Op.NEG, moved), moved)


rules = RuleSet([(P(Op.AUTOMORPH, X("x"), name="n"), lower, "automorph_to_index_map")])

#: after: no AUTOMORPH (the op table); every REINDEX reads at an index expression
CONTRACT = Contract(8, forbid=(
    Forbid("a REINDEX whose index is not an index expression",
           P(Op.REINDEX, where=lambda n: n.src[1].dtype is not DType.INDEX)),))


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
