"""Quick tour: build lazy polynomials, look at the IR, and compute values.

Run:  python examples/quickstart.py
"""

from __future__ import annotations

import ren
from ren.dump import dump
from ren.node import Node
from ren.ops import DType, Op
from ren.reference import evaluate


def main() -> None:
    ring = ren.RingSpec.generate(N=16, count=3)
    print("ring:", ring)
    a = ren.Poly.from_coefficients([i - 8 for i in range(16)], ring)
    b = ren.Poly.from_coefficients([3] + [0] * 14 + [1], ring)  # 3 + X^15
    c = (a * b).intt() + 5  # lazy: this only builds nodes
    print("c =", c)
    print(dump(Node(Op.SINK, DType.VOID, (c.node,))))
    (values,) = evaluate(c)  # the reference evaluator (slow, obviously correct)
    print("c mod q0:", values[0].tolist())


if __name__ == "__main__":
    main()
