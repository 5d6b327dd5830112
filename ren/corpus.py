"""A corpus of small Poly programs: the scheduler's test cases, golden snapshots and
`ren-inspect` examples.

Each program is a function returning a tuple of lazy Polys.  `build(name)` runs it with the
insecure seeded random stream (so RANDOM seeds, and therefore golden snapshots, are
reproducible).  Rings are small (N = 16) so the reference evaluator checks them quickly.
"""

from __future__ import annotations

from collections.abc import Callable

from ren import random as ren_random
from ren.poly import Poly
from ren.ring import Domain, RingSpec

N = 16
RING = RingSpec.generate(N, 3)
#: key-switching basis: Q (4 moduli) followed by the special moduli P (2)
RING_QP = RingSpec.generate(N, 6)
RING_Q = RING_QP.sub(0, 4)

PROGRAMS: dict[str, Callable[[], tuple[Poly, ...]]] = {}


def program(fn: Callable[[], tuple[Poly, ...]]) -> Callable[[], tuple[Poly, ...]]:
    PROGRAMS[fn.__name__] = fn
    return fn


def coeffs(seed: int, bound: int = 1 << 40, n: int = N) -> list[int]:
    """Deterministic signed test coefficients (a small LCG; no global randomness)."""
    out, x = [], seed * 2654435761 + 1
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(x % (2 * bound) - bound)
    return out


def poly(seed: int, ring: RingSpec = RING, domain: Domain = Domain.COEFF) -> Poly:
    p = Poly.from_coefficients(coeffs(seed), ring)
    return p.ntt() if domain is Domain.NTT else p


@program
def elementwise_chain() -> tuple[Poly, ...]:
    """((a + b)·3 - c + (-a)) - 5: one fused elementwise kernel after the inputs."""
    a, b, c = poly(1), poly(2), poly(3)
    return ((((a + b) * 3) - c) + (-a) - 5,)


@program
def fused_ntt_chain() -> tuple[Poly, ...]:
    """(a + b)·c + d with every input already in the NTT domain: exactly one compute kernel."""
    a, b, c, d = (poly(i, domain=Domain.NTT) for i in range(4))
    return ((a + b) * c + d,)


@program
def shared_subexpression() -> tuple[Poly, ...]:
    """s = a·b is used by two outputs: it is computed once, into its own buffer."""
    a, b, c = poly(4), poly(5), poly(6, domain=Domain.NTT)
    s = a * b
    return (s + c, s * 7 - c)


@program
def multi_output() -> tuple[Poly, ...]:
    """Three outputs realized together from the same inputs."""
    a, b = poly(7), poly(8)
    return (a + b, a - b, -(a + b) + 1)


@program
def ntt_product() -> tuple[Poly, ...]:
    """a·b from COEFF inputs (NTT result) and the same product asked for in COEFF form."""
    a, b = poly(9), poly(10)
    return (a * b, (a * b).intt())


@program
def rotations() -> tuple[Poly, ...]:
    """rotate and conjugate in both domains, including a negative rotation."""
    a = poly(11)
    an = a.ntt()
    return (a.rotate(1), an.rotate(-2), a.conjugate(), an.conjugate(), a.rotate(3).rotate(-3) + a)


@program
def rescales() -> tuple[Poly, ...]:
    """Divide-and-round by one and by two trailing moduli, from both domains."""
    x = Poly.from_coefficients(coeffs(12, bound=1 << 85), RING_QP)
    q = RING_QP.moduli
    return (x.rescale(q[-1]), x.rescale(q[-2:]), x.ntt().rescale(q[-1]))


@program
def ntt_rescales() -> tuple[Poly, ...]:
    """Divide-and-round of an NTT-domain product by one, two and three trailing moduli: pass 4
    transforms only the dropped limbs and corrects in the NTT domain (`ren.passes.elision`)."""
    a, b = poly(19, RING_QP, Domain.NTT), poly(20, RING_QP, Domain.NTT)
    x = a * b
    q = RING_QP.moduli
    return (x.rescale(q[-1]), x.rescale(q[-2:]), x.rescale(q[-3:]))


@program
def ring_views() -> tuple[Poly, ...]:
    """to_ring onto a contiguous run (a view), a non-contiguous subset (a gather), and a basis
    extension (a conversion kernel); views feeding elementwise chains and an NTT."""
    x = Poly.from_coefficients(coeffs(13, bound=1 << 100), RING_QP)
    mid = RING_QP.sub(1, 3)
    odd = RING_QP.select(RING_QP.moduli[0::2])
    y = x.to_ring(mid)
    return (
        y + y,  # view fused into loads
        y.ntt(),  # a standalone view feeding a ring kernel
        x.to_ring(odd) * 2,  # non-contiguous subset: limb table in the loads
        x.to_ring(RING_QP.sub(0, 2)).to_ring(RING_QP),  # basis extension from a view
    )


@program
def constants() -> tuple[Poly, ...]:
    """Constants in both domains, a constant output, and folding."""
    a = poly(14)
    an = a.ntt()
    seven = Poly.const(7, RING)
    return (a + 7, an + 7, seven * a, (seven * 3 + 1).ntt(), an * 0 + an * 1, Poly.const(5, RING))


@program
def device_copy() -> tuple[Poly, ...]:
    """A copy to a second host device and arithmetic there."""
    a, b = poly(15), poly(16)
    moved = (a + b).to("python:1")
    return (moved * 2, moved + Poly.from_coefficients(coeffs(17), RING).to("python:1"))


@program
def random_inputs() -> tuple[Poly, ...]:
    """RANDOM leaves of every kind (seeded reproducibly by `build`)."""
    u = Poly.uniform(RING)
    t = Poly.ternary(RING)
    s = Poly.sparse_ternary(RING, 4)
    g = Poly.gaussian(RING)
    i = Poly.uniform_on_interval(RING, -3, 3)
    return (u * t, s + g - i, Poly.uniform(RING, domain=Domain.NTT) + 1)


@program
def keyswitch() -> tuple[Poly, ...]:
    """Hybrid key switching written with Poly ops: split x into two digits (views of Q), mod-up
    each by basis conversion to QP, NTT, multiply by key polynomials, sum, and mod-down by
    rescaling over the special moduli P."""
    x = Poly.from_coefficients(coeffs(18, bound=1 << 110), RING_Q)
    special = RING_QP.moduli[RING_Q.limbs :]
    digits = [RING_Q.sub(0, 2), RING_Q.sub(2, 4)]
    acc0 = acc1 = None
    for d in digits:
        up = x.to_ring(d).to_ring(RING_QP).ntt()
        k0 = Poly.uniform(RING_QP, domain=Domain.NTT)
        k1 = Poly.uniform(RING_QP, domain=Domain.NTT)
        acc0 = up * k0 if acc0 is None else acc0 + up * k0
        acc1 = up * k1 if acc1 is None else acc1 + up * k1
    assert acc0 is not None and acc1 is not None  # two digits
    return (acc0.intt().rescale(special), acc1.intt().rescale(special))


@program
def keyswitch_ntt() -> tuple[Poly, ...]:
    """Key switching as CKKS runs it, on an NTT-domain input (a product): each digit's mod-up
    keeps the digit's own rows and converts only the others, and the mod-down by P transforms
    only P's limbs (`ren.passes.elision`); plus an extension that also drops moduli."""
    a, b = poly(21, RING_Q, Domain.NTT), poly(22, RING_Q, Domain.NTT)
    x = a * b
    special = RING_QP.moduli[RING_Q.limbs :]
    acc0 = acc1 = None
    for d in (RING_Q.sub(0, 2), RING_Q.sub(2, 4)):
        up = x.to_ring(d).to_ring(RING_QP)
        k0 = Poly.uniform(RING_QP, domain=Domain.NTT)
        k1 = Poly.uniform(RING_QP, domain=Domain.NTT)
        acc0 = up * k0 if acc0 is None else acc0 + up * k0
        acc1 = up * k1 if acc1 is None else acc1 + up * k1
    partial = x.to_ring(RING_QP.select(RING_QP.moduli[1::2]))  # keeps q1, q3; adds one p
    assert acc0 is not None and acc1 is not None  # two digits
    return (acc0.rescale(special), acc1.rescale(special), partial)


def build(name: str) -> tuple[Poly, ...]:
    """Run corpus program `name` with the (insecure, reproducible) seeded random stream."""
    with ren_random.seeded(f"corpus:{name}"):
        return PROGRAMS[name]()
