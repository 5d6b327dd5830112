"""A key switch's mod-down by P followed by a rescale by q, fused (`ren.passes.elision`,
`split_ntt`): the second rounding looks through the first one's NTT-domain correction
(x = L + NTT(W)) and folds W into its own correction's NTT, so the two roundings cost one NTT
over the kept rows instead of two.  Bit-identical to the two roundings apart.

Checked against Python big integers (the two divide-and-round steps on CRT-lifted coefficients),
against the same graph scheduled with `LOOK_THROUGH = False`, and by counting the NTT rows the
schedule runs (CKKS multiply + relinearize + rescale; a double-hoisted linear transform).
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from ckks_helpers import context
from hypothesis import given, settings
from hypothesis import strategies as st

import ren
from ren.ckks import (
    CKKSParams,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
    LinearTransform,
)
from ren.errors import ParameterError
from ren.interpret import evaluate_sink
from ren.ir import pnode
from ren.ops import Op
from ren.passes import elision, p05_materialize
from ren.reference import evaluate, intt_limb, ntt_limb
from ren.replay import templates
from ren.ring import Domain, RingSpec
from ren.ring.ringspec import ntt_primes
from ren.schedule import run_passes, schedule

N = 16


def ntt_rows(coeffs: list[int], ring: RingSpec) -> np.ndarray:
    """The reference NTT of integer coefficients, limb by limb."""
    return np.stack([ntt_limb(np.array([c % q for c in coeffs], np.int64), q, ring.N)
                     for q in ring.moduli]).astype(np.uint32)


def crt_coeffs(words: np.ndarray, ring: RingSpec) -> list[int]:
    """The integer coefficients in [0, Q) of an NTT-domain polynomial's words."""
    rows = [intt_limb(words[i].astype(np.int64), q, ring.N) for i, q in enumerate(ring.moduli)]
    Q = ring.Q
    return [sum(int(rows[i][j]) * (Q // q) * pow(Q // q, -1, q) for i, q in enumerate(ring.moduli))
            % Q for j in range(ring.N)]


def divide_round(coeffs: list[int], d: int, modulus: int) -> list[int]:
    return [((c + d // 2) // d) % modulus for c in coeffs]


def ntt_rows_run(*outputs) -> int:
    """The NTT rows the schedule of `outputs` runs (each limb transform counted once)."""
    rows: Counter = Counter()
    for item in schedule(*outputs):
        if item.kind in ("ntt", "intt"):
            rows[item.kind] += item.space[0]
    return rows["ntt"]


@pytest.fixture
def unfused(monkeypatch):
    """Switch the look-through off (the two roundings apart), with fresh replay templates."""
    def off() -> None:
        monkeypatch.setattr(elision, "LOOK_THROUGH", False)
        templates.clear()
    yield off
    templates.clear()


@st.composite
def two_roundings(draw):
    """(ring Q·r·P, |r|, |P|, u words on Q·r·P, d0 words on Q·r): a random chain of 1..3 kept
    moduli, 1..2 rescale moduli r and 1..4 special moduli P, uniform words."""
    pool = ntt_primes(N, draw(st.sampled_from((30, 31))), 10)
    L, kr, kp = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 4))
    ring = RingSpec(N, tuple(draw(st.permutations(pool))[: L + kr + kp]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    u = np.stack([rng.integers(0, q, N) for q in ring.moduli]).astype(np.uint32)
    d0 = u[: L + kr][::-1].copy() if draw(st.booleans()) else \
        np.stack([rng.integers(0, q, N) for q in ring.moduli[: L + kr]]).astype(np.uint32)
    d0 %= np.array(ring.moduli[: L + kr], np.uint32)[:, None]
    return ring, kr, kp, u, d0


@settings(max_examples=40, deadline=None)
@given(two_roundings())
def test_mod_down_then_rescale_is_exact(case):
    """rescale_r(d0 + mod_down_P(u)): the fused graph's words are floor((d0 + floor((u + P/2)/P)
    + r/2) / r) of the big-integer coefficients, and the look-through fired (one NTT fewer)."""
    ring, kr, kp, u_words, d0_words = case
    ring_qr, ring_q = ring.drop_last(kp), ring.drop_last(kp + kr)
    P, r = ring.Q // ring_qr.Q, ring_qr.Q // ring_q.Q
    u = ren.Poly.from_residues(u_words, ring, Domain.NTT)
    d0 = ren.Poly.from_residues(d0_words, ring_qr, Domain.NTT)
    out = (d0 + u.rescale(ring.moduli[-kp:])).rescale(ring_qr.moduli[-kr:])
    y = divide_round(crt_coeffs(u_words, ring), P, ring_qr.Q)
    z = [(a + b) % ring_qr.Q for a, b in zip(crt_coeffs(d0_words, ring_qr), y, strict=True)]
    want = ntt_rows(divide_round(z, r, ring_q.Q), ring_q)
    trace = run_passes(out, upto=4)
    assert trace.ctx.stats["simplify_domains"]["rescale_in_ntt"] == 2
    sink = trace.sink
    assert np.array_equal(evaluate_sink(sink)[0], want)  # the rewritten graph
    # one NTT left: the rescale's, over the kept rows (the mod-down's joined it)
    assert sum(n.op is Op.NTT for n in sink.toposort()) == 1
    assert np.array_equal(out.numpy(), want)  # realized (NumPy backend)


def linear(draw, a, w, depth: int):
    """A random expression over a (NTT) and NTT(w): sums, differences, scalar products and limb
    selections (the forms `split_ntt` looks through), with a leaf that hides an NTT (a product
    of two polynomials) now and then."""
    kind = draw(st.sampled_from(("a", "ntt", "add", "sub", "mul", "prod") if depth else
                                ("a", "ntt", "prod")))
    if kind == "a":
        return a
    if kind == "ntt":
        return w.ntt()
    if kind == "prod":
        return a * w.ntt()  # a polynomial product: not looked through
    if kind == "mul":
        return linear(draw, a, w, depth - 1) * draw(st.integers(0, 2**40))
    x, y = linear(draw, a, w, depth - 1), linear(draw, a, w, depth - 1)
    return x + y if kind == "add" else x - y


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_split_ntt_is_exact(data):
    """x = L + NTT(W) for random linear expressions x, also on a limb selection of them; W is
    None exactly when no NTT is reachable through the looked-through ops."""
    ring = RingSpec(N, ntt_primes(N, 30, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in ring.moduli]), ring,
                               Domain.NTT)
    w = ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in ring.moduli]), ring,
                               Domain.COEFF)
    x = linear(data.draw, a, w, 3)
    if data.draw(st.booleans()):
        x = x.to_ring(ring.select(data.draw(st.permutations(ring.moduli))[:2]))
    lo, big_w = elision.split_ntt(x.node)
    if big_w is None:
        assert lo is x.node
        return
    recombined = pnode(Op.NTT, big_w) if lo is None else pnode(Op.ADD, lo, pnode(Op.NTT, big_w))
    assert np.array_equal(evaluate(recombined)[0], evaluate(x)[0])


def test_split_ntt_stops_at_products_and_extensions():
    ring = RingSpec(N, ntt_primes(N, 30, 3))
    a = ren.Poly.from_residues(np.ones((3, N), np.uint32), ring, Domain.NTT)
    w = ren.Poly.from_residues(np.ones((3, N), np.uint32), ring, Domain.COEFF)
    for x in (a * w.ntt(), (a + w.ntt()).to_ring(ring.drop_last(1)).to_ring(ring), a):
        assert elision.split_ntt(x.node) == (x.node, None)
    lo, big_w = elision.split_ntt((a - w.ntt()).node)
    assert lo is a.node and big_w is not None


def multiply_rescale(params: CKKSParams, seed: int = 3):
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
        enc, encryptor = Encoder(params), Encryptor(params, kg.public_key())
        a, b = (encryptor.encrypt(enc.encode(np.full(params.slots, v))) for v in (0.5, -0.25))
        ren.realize(list(a.parts + b.parts))
        ev = Evaluator(params, kg.relin_key())
    return ev.rescale(ev.multiply(a, b))


@pytest.mark.parametrize("special", [2, 4])  # the chain and the RESCALE-kernel mod-down
def test_multiply_relinearize_rescale_fewer_ntts_same_words(special, unfused):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=special,
                       insecure=True)
    fused = multiply_rescale(p)
    rows = ntt_rows_run(*fused.parts)
    words = [x.numpy() for x in fused.parts]
    unfused()
    apart = multiply_rescale(p)
    rows_apart = ntt_rows_run(*apart.parts)
    assert all(np.array_equal(w, x.numpy()) for w, x in zip(words, apart.parts, strict=True))
    limbs = p.ring(p.max_level).limbs  # the mod-down's NTT over Q_l, once per part
    assert rows_apart - rows == 2 * limbs


def test_double_hoisted_transform_fewer_ntts_same_words(unfused):
    """The end of a double-hoisted transform: out0 = mod_down(e0), out1 = mod_down(e1) + q1, then
    the rescale: both parts' mod-downs fuse with it."""
    c = context(N=64, depth=3, scale_bits=40, first_bits=55, steps=tuple(range(1, 32)))
    rng = np.random.default_rng(4)
    lt = LinearTransform(c.params, rng.uniform(-1, 1, (16, 16)), baby_steps=4, hoisting="double")

    def run():
        with ren.random.seeded(5):
            ct = c.encrypt(rng.uniform(-1, 1, c.params.slots))
            ren.realize(list(ct.parts))
        out = c.ev.linear_transform(ct, lt)
        return out, ntt_rows_run(*out.parts)

    fused, rows = run()
    words = [x.numpy() for x in fused.parts]
    rng = np.random.default_rng(4)
    rng.uniform(-1, 1, (16, 16))
    unfused()
    apart, rows_apart = run()
    assert all(np.array_equal(w, x.numpy()) for w, x in zip(words, apart.parts, strict=True))
    level = fused.level + 1  # the transform's level (one above its output)
    assert rows_apart - rows >= 2 * c.params.ring(level).limbs


def elementwise_traffic(outputs) -> tuple[int, int, int, int]:
    """(elementwise kernels, words they read, the RESCALE kernels' rows of 0 over Q, the distinct
    rings of those rows) in the schedule of `outputs`."""
    items = schedule(*outputs)
    wise = [i for i in items if i.kind == "elementwise"]
    calls = [i.ring_call for i in items if i.kind == "rescale"]
    zeros = sum(len(c.src) - len(c.dropped) for c in calls)
    rings = len({c.src[:len(c.src) - len(c.dropped)] for c in calls})
    return len(wise), sum(int(np.prod(b.shape)) for i in wise for b in i.inputs), zeros, rings


@pytest.mark.parametrize("special", [3, 4])  # the RESCALE-kernel mod-down (k >= 3)
def test_mod_down_zero_rows_are_a_scalar(special, monkeypatch):
    """The rows of 0 over Q under a RESCALE kernel (a mod-down's, and a rescale's from
    `RESCALE_KERNEL_FROM` dropped moduli on) are the constant 0, a scalar of the CONCAT kernel: no
    kernel stores a buffer of zeros and no CONCAT reads one (the "broadcast" form stores one per
    ring, that every CONCAT over it reads).  The words are the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=special,
                       insecure=True)
    # pass 5 as before its `_scalar`: a broadcast constant is stored in a buffer of its own
    # (`test_broadcast_constants_are_scalar_operands` checks the form after)
    monkeypatch.setattr(p05_materialize, "_scalar", p05_materialize.is_leaf)
    templates.clear()
    const = multiply_rescale(p)
    kernels, reads, zeros, rings = elementwise_traffic(const.parts)
    words = [x.numpy() for x in const.parts]
    monkeypatch.setattr(elision, "ZERO_ROWS", "broadcast")
    templates.clear()
    stored = multiply_rescale(p)
    kernels_b, reads_b, zeros_b, rings_b = elementwise_traffic(stored.parts)
    templates.clear()
    assert all(np.array_equal(w, x.numpy()) for w, x in zip(words, stored.parts, strict=True))
    assert (zeros, rings) == (zeros_b, rings_b) and zeros >= 2 * p.ring(p.max_level).limbs
    assert kernels_b - kernels == rings  # one buffer of zeros per ring, read by every CONCAT
    assert reads_b - reads == zeros * p.N


def test_zero_rows_knob_names_its_values(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=3,
                       insecure=True)
    monkeypatch.setattr(elision, "ZERO_ROWS", "zeros")
    templates.clear()
    with pytest.raises(ParameterError, match=r"ZERO_ROWS is 'zeros'.*'const'"):
        run_passes(*multiply_rescale(p).parts, upto=4)
    templates.clear()


def _constant_writers(items) -> int:
    """Elementwise kernels that read no buffer: they store a constant (a broadcast h or 0)."""
    return sum(1 for i in items if i.kind == "elementwise" and not i.inputs)


@pytest.mark.parametrize("special", [1, 2])  # the chain of one-modulus lifts: z = y + h
def test_broadcast_constants_are_scalar_operands(special, monkeypatch):
    """h = floor(P/2) in every coefficient (`ren.ir.broadcast_const`), which every rounding of
    the chain form reads, is a scalar operand of each kernel that reads it (pass 5), not a buffer
    that a kernel of its own fills: one such kernel fewer per broadcast constant, the same words
    as storing it (`_scalar` = `is_leaf`, the form before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=special,
                       insecure=True)
    templates.clear()
    scalar = multiply_rescale(p)
    items = schedule(*scalar.parts)
    words = [x.numpy() for x in scalar.parts]
    monkeypatch.setattr(p05_materialize, "_scalar", p05_materialize.is_leaf)
    templates.clear()
    stored = multiply_rescale(p)
    items_b = schedule(*stored.parts)
    templates.clear()
    assert all(np.array_equal(w, x.numpy()) for w, x in zip(words, stored.parts, strict=True))
    wise, wise_b = ([i for i in it if i.kind == "elementwise"] for it in (items, items_b))
    assert _constant_writers(items) == 0 and _constant_writers(items_b) >= 1
    assert len(wise_b) - len(wise) == _constant_writers(items_b)
