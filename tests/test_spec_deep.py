"""A polynomial's spec (ring, domain, device) is found without recursion: a pass that rebuilds
a long chain (a Horner chain of giant steps at N = 2^16 is thousands of nodes deep) must not
exhaust Python's recursion limit in `ren.spec.spec_of`."""

from __future__ import annotations

import sys

import ren
from ren.ir import pnode
from ren.ops import Op
from ren.ring import RingSpec
from ren.spec import spec_of


def test_the_spec_of_a_chain_deeper_than_the_recursion_limit():
    ring = RingSpec.generate(16, 2)
    x = ren.Poly.uniform(ring, domain="ntt").node
    n = x
    depth = 4 * sys.getrecursionlimit()
    chain = []
    for i in range(depth):  # new nodes, no spec cached on any of them yet
        n = pnode(Op.ADD, n, x) if i % 2 else pnode(Op.NEG, n)
        chain.append(n)
    spec = spec_of(n)
    assert spec is not None and spec.ring == ring and spec.domain.name == "NTT"
    assert all(m._spec == spec for m in chain)  # filled on the way, deepest first
    conv = pnode(Op.INTT, n)  # a rule that changes the domain reads the filled spec
    assert spec_of(conv).domain.name == "COEFF"
