"""Write your own scheduling pass: Karatsuba's tensor product for CKKS multiplication.

A CKKS product of (c0, c1) and (d0, d1) is the tensor (c0·d0, c0·d1 + c1·d0, c1·d1): four
ring products.  Karatsuba's identity makes the middle term from one product and the other two,

    c0·d1 + c1·d0 = (c0 + c1)·(d0 + d1) − c0·d0 − c1·d1,

three products instead of four, and *exact* in the ring (mod every q): the words are the same,
so Ren's checker can prove the pass right on every program, not just within a precision.

This file walks the whole loop a pass developer goes through, and `python
examples/custom_pass.py` prints each step:

  1. write it: a `ren.passes.Pass` whose rules are the pattern DSL (`P`, `X`), plus a small
     index of the products in the graph (a rule sees only a node and its sources);
  2. insert it: `default_pipeline().insert(karatsuba, after="lower_ring_ops")`;
  3. check it: `ren.passdev.check` — its contract, the later passes' contracts, its semantics
     (before vs after, reference interpreter) and the result, on the corpus, the CKKS examples
     and random programs; a wrong variant is caught with a shrunk counterexample;
  4. see it: ``ren-inspect report ckks_multiply --pipeline SPEC`` shows it as a stage;
  5. measure it: `ren.passdev.compare` on ckks_multiply against the default pipeline;
  6. snapshot it: the ``ren_golden`` pytest fixture (see ``tests/test_custom_pass_example.py``).

The pass's text form names it by module and attribute, so the CLI and ``REN_PIPELINE`` take
``default,+custom_pass:karatsuba@after=lower_ring_ops`` (with ``examples/`` on ``PYTHONPATH``).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid
from ren.ir import pnode
from ren.node import Node, toposort
from ren.ops import Op
from ren.passes import P, Pass, X, rewrite

NAME = "karatsuba"

#: the pipeline with the pass, in text (the CLI's --pipeline and REN_PIPELINE take it)
SPEC = "default,+custom_pass:karatsuba@after=lower_ring_ops"


def _products(sink: Node) -> dict[frozenset[Node], Node]:
    """Each ring product in the graph by its (unordered) operands."""
    return {frozenset(n.src): n for n in toposort(sink) if n.op is Op.MUL and len(n.src) == 2}


def _karatsuba(products: dict[frozenset[Node], Node]):
    def rule(left: Node, right: Node) -> Node | None:
        """ADD(a·d, b·c) -> (a + b)·(c + d) − a·c − b·d, when a·c and b·d are computed anyway."""
        for a, d in (left.src, left.src[::-1]):
            for b, c in (right.src, right.src[::-1]):
                ac, bd = products.get(frozenset((a, c))), products.get(frozenset((b, d)))
                if ac is not None and bd is not None and len({a, b, c, d}) == 4:
                    both = pnode(Op.MUL, pnode(Op.ADD, a, b), pnode(Op.ADD, c, d))
                    return pnode(Op.SUB, pnode(Op.SUB, both, ac), bd)
        return None
    return rule


def run(sink: Node, ctx=None) -> Node:
    rules = [(P(Op.ADD, P(Op.MUL, name="left"), P(Op.MUL, name="right")),
              _karatsuba(_products(sink)), "karatsuba_middle_term")]
    return rewrite(sink, rules, ctx, name=NAME)


#: after: no ADD of two products whose partner products exist (the rule ran to a fixed point)
karatsuba = Pass(
    NAME, run=run, doc=__doc__.split("\n\n")[0] + "\n\n"
    "Rewrites: ADD(a·d, b·c) -> (a+b)·(c+d) − a·c − b·d where a·c and b·d are in the graph.\n"
    "After: the graph computes the same words with one ring product fewer per such sum.",
    contract=Contract(forbid=(Forbid("a ROTATE (lower_ring_ops has run)", P(Op.ROTATE, X("x"))),)))

#: wrong on purpose (the sign of b·d): `check` finds it and shrinks the counterexample
karatsuba_wrong = Pass("karatsuba_wrong", run=lambda sink, ctx=None: rewrite(
    sink, [(P(Op.ADD, P(Op.MUL, name="left"), P(Op.MUL, name="right")),
            _wrong(_products(sink)), "karatsuba_wrong_sign")], ctx, name="karatsuba_wrong"),
    doc="Karatsuba with b·d added instead of subtracted (a deliberate bug).")


def _wrong(products: dict[frozenset[Node], Node]):
    good = _karatsuba(products)

    def rule(left: Node, right: Node) -> Node | None:
        out = good(left, right)
        return None if out is None else pnode(Op.ADD, out.src[0], out.src[1])
    return rule


def tensor_program():
    """A CKKS-style tensor product of two pairs of NTT-domain polynomials (small ring)."""
    from ren import corpus

    c0, c1, d0, d1 = (corpus.poly(seed).ntt() for seed in (51, 52, 53, 54))
    return (c0 * d0, c0 * d1 + c1 * d0, c1 * d1)


def main() -> None:
    from ren.passdev import check, compare
    from ren.passes import default_pipeline

    pipeline = default_pipeline().insert(karatsuba, after="lower_ring_ops")
    print(f"pipeline: {pipeline}\n")

    report = check(karatsuba, after="lower_ring_ops", random=10)
    print(report, "\n")

    wrong = check(karatsuba_wrong, after="lower_ring_ops", random=0)
    print(wrong, "\n")

    table = compare("ckks_multiply", {"default": "default", "karatsuba": pipeline}, repeat=5)
    print(table.text())


if __name__ == "__main__":
    import custom_pass  # the module, not __main__: its pass then has a text form

    custom_pass.main()
