"""Quick tour: build lazy polynomials, look at the IR and the schedule, compute values.

Run:  python examples/quickstart.py
Look inside:  ren-inspect report examples/quickstart.py -o quickstart.html
(ren-inspect calls `program()`: the lazy polynomial to inspect.)
"""

from __future__ import annotations

import ren
from ren.dump import dump
from ren.reference import evaluate
from ren.schedule import as_sink, run_passes


def program() -> ren.Poly:
    ring = ren.RingSpec.generate(N=16, count=3)
    a = ren.Poly.from_coefficients([i - 8 for i in range(16)], ring)
    b = ren.Poly.from_coefficients([3] + [0] * 14 + [1], ring)  # 3 + X^15
    return (a * b).intt() + 5  # lazy: this only builds nodes


def main() -> None:
    c = program()
    print("ring:", c.ring)
    print("c =", c)
    print("\n-- the lazy graph --")
    print(dump(as_sink(c)))
    print("-- the schedule --")
    for item in ren.schedule(c):
        print(f"  {item.name:18s} {item.kind:12s} buffers {[b.uid for b in item.bufs]}")
    final = run_passes(c).sink
    print(f"\n-- after all twelve passes: {len(ren.toposort(final))} top-level nodes --")
    expected = evaluate(c)[0]  # the reference evaluator (slow, obviously correct)
    c.realize()  # schedule, plan memory, run on the NumPy backend
    print("c's coefficients:", c.coefficients())
    assert (c.numpy() == expected).all(), "backend and reference disagree"
    print("matches the reference evaluator")


if __name__ == "__main__":
    main()
