"""`ren.sampling.sample`'s lift of small signed coefficients to residues (L, N) is the plain
``c mod q_i`` on every limb, for every small-coefficient kind and both lift paths (small values
by a u32 wrap, large ones by a division)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import sample, sample_signed

RINGS = [RingSpec.generate(64, 3, 17), RingSpec.generate(256, 4, 30), RingSpec.generate(32, 2, 31)]
KINDS = [("gaussian", (3.2,)), ("gaussian", (90000.0,)), ("ternary", ()),
         ("sparse_ternary", (7,)), ("uniform_on_interval", (-50, 50)),
         ("uniform_on_interval", (-(1 << 31), (1 << 31) - 1))]


@settings(max_examples=40, deadline=None)
@given(seed=st.binary(max_size=16), ring=st.sampled_from(RINGS), kind=st.sampled_from(KINDS))
def test_small_coefficients_lift_to_c_mod_q(seed: bytes, ring: RingSpec, kind) -> None:
    spec = RandomSpec(kind[0], kind[1], seed, "python")
    c = [int(v) for v in sample_signed(spec, ring.N)]
    got = sample(spec, ring)
    assert got.dtype == np.uint32 and got.shape == (ring.limbs, ring.N)
    assert got.tolist() == [[v % q for v in c] for q in ring.moduli]


def test_coefficients_equal_to_the_smallest_modulus_are_reduced() -> None:
    """|c| = min(q_i) is the first value the division path takes: c = ±q_0 must come out 0 on
    that limb, not q_0 (a u32 wrap alone would leave it unreduced)."""
    ring = RINGS[0]
    q0 = min(ring.moduli)
    for c in (q0, -q0, q0 - 1, -(q0 - 1)):
        got = sample(RandomSpec("uniform_on_interval", (c, c), b"edge", "python"), ring)
        assert got.tolist() == [[c % q] * ring.N for q in ring.moduli]
