"""ren.rlwe.cost and CKKSParams.key_switching_options: the counted cost of one key switch is
what the scheduler really emits, the proposed shapes are secure and ranked by it, and none of them
buys its speed with precision (its key switch adds no more noise than a rescale, as estimated by
`key_switch_noise_bits` and as measured)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ren
from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
from ren.errors import ParameterError
from ren.poly import Poly
from ren.rlwe.cost import MAX_NOISE_BITS, key_switch_cost, key_switch_noise_bits
from ren.rlwe.keyswitch import key_switch
from ren.rlwe.params import max_log_qp
from ren.schedule import schedule


def _params(**kw) -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CKKSParams(N=64, scale_bits=30, first_bits=40, insecure=True, **kw)


@pytest.mark.parametrize("depth, special, dnum", [(4, 1, None), (4, 2, None), (4, 3, None),
                                                  (4, 2, 4), (4, 1, 3), (6, 2, None), (6, 4, None)])
def test_the_count_is_what_the_schedule_runs(depth, special, dnum):
    """Limb transforms (INTT + NTT rows) and conversion work (source × output rows of every
    basis conversion: the mod-up's, and the mod-down's one-modulus lifts) of a scheduled key
    switch, against the model; at the top level and one below."""
    p = _params(depth=depth, special_primes=special, dnum=dnum)
    with ren.random.seeded(1):
        key = KeyGenerator(p).relin_key()
    for level in (p.depth, p.depth - 1):
        with ren.random.seeded(2):
            d = Poly.uniform(p.ring(level), domain="NTT").realize()
        items = schedule([u.node for u in key_switch(d, key, level)])
        rows = {"ntt": 0, "intt": 0}
        macs = rescale_macs = 0
        for it in items:
            if it.kind in rows:
                rows[it.kind] += it.bufs[0].shape[0]
            elif it.kind == "basis_convert":
                macs += it.bufs[0].shape[0] * it.bufs[1].shape[0]
            elif it.kind == "rescale":
                rescale_macs += it.bufs[0].shape[0] * len(it.ring_call.dropped)
        cost = key_switch_cost(p, level)
        assert rows["ntt"] + rows["intt"] == cost.ntt_limbs
        assert macs == cost.conversion_macs + cost.moddown_rows
        assert rescale_macs == cost.moddown_macs
        assert (cost.moddown_macs > 0) == (special >= 3)
        assert (cost.moddown_rows > 0) == (special < 3)
        assert cost.dnum == len(p.digits_at(level)) and cost.special_primes == special
        # the inner product: each digit, extended over Q_level·P, times the key's b and a rows
        assert cost.product_macs == 2 * cost.dnum * (p.ring(level).limbs + special)


def test_options_are_secure_ranked_and_one_per_digit_count():
    opts = CKKSParams.key_switching_options(1 << 16, 20, 47, 60)
    works = [c.work for c, _ in opts]
    assert works == sorted(works) and len(opts) >= 5
    assert len({p.dnum for _, p in opts}) == len(opts)
    assert all(p.log2_QP <= max_log_qp(p.N) and p.security_bits >= 128 for _, p in opts)
    for cost, p in opts:  # the fewest special primes for its digit count, within the noise bound
        assert cost.special_primes == len(p.special_moduli)
        assert cost.noise_bits == key_switch_noise_bits(p) <= MAX_NOISE_BITS
        if cost.special_primes > 1:
            fewer = CKKSParams(1 << 16, 20, 47, 60, special_primes=cost.special_primes - 1,
                               dnum=p.dnum)
            assert key_switch_noise_bits(fewer) > MAX_NOISE_BITS
    seal = key_switch_cost(CKKSParams(1 << 16, 20, 47, 60, special_primes=2, dnum=21))
    fastest = CKKSParams.fastest_key_switching(1 << 16, 20, 47, 60)
    assert fastest == opts[0][1] and 2 <= fastest.dnum <= 4  # as measured (ren.rlwe.cost)
    assert key_switch_cost(fastest).work < seal.work / 1.5
    assert "one key switch at the top: dnum" in fastest.describe()


def test_options_refuse_what_they_choose_and_impossible_chains():
    with pytest.raises(ParameterError, match="chooses special_primes and dnum"):
        CKKSParams.key_switching_options(1 << 14, 7, 40, special_primes=3)
    with pytest.raises(ParameterError, match="no special-prime count gives secure"):
        CKKSParams.key_switching_options(1 << 12, 6, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        insecure = CKKSParams.key_switching_options(64, 3, 30, 40, insecure=True)
    # no security bound: every digit count down to one digit (P as large as Q)
    assert sorted(p.dnum for _, p in insecure)[:2] == [1, 2] and len(insecure) >= 3


def _max_digit_bits(p: CKKSParams) -> float:
    return max(sum(math.log2(q) for q in p.chain[a:b]) for a, b in p.digits)


@pytest.mark.parametrize("first_bits", [60, 58])  # the bench's chain, the N14 preset's
def test_fastest_shape_at_n14_keeps_p_well_above_its_digits(first_bits):
    """Issue 38: at N = 2^14, depth 7, a 40-bit scale the cheapest shape was 2 special primes
    (62 bits) over 7 digits of up to 61.2 bits, and rotations lost 7-8 bits against SEAL's and
    the preset's shapes.  Now its key switch adds no more noise than a rescale, which takes P
    at least log2(σ·sqrt(N)/π) ≈ 7 bits above the largest digit (module docstring of
    ren.rlwe.cost)."""
    p = CKKSParams.fastest_key_switching(1 << 14, 7, 40, first_bits)
    assert key_switch_noise_bits(p) <= MAX_NOISE_BITS
    assert p.log2_P >= _max_digit_bits(p) + 7, (p.log2_P, _max_digit_bits(p), p.dnum)
    assert "noise 2^" in p.describe()  # the estimate is part of the summary
    # the old rule (None: digits at most P) is still there on request, and noisier
    noisy = CKKSParams.fastest_key_switching(1 << 14, 7, 40, first_bits, max_noise_bits=None)
    assert key_switch_noise_bits(noisy) >= key_switch_noise_bits(p)


def _canonical_max(coeffs: np.ndarray) -> float:
    """The largest |e(ζ)| over the primitive 2N-th roots of unity ζ (every slot, conjugates
    included)."""
    n = len(coeffs)
    return float(np.abs(np.fft.ifft(coeffs * np.exp(1j * np.pi * np.arange(n) / n)) * n).max())


def _centred(poly: Poly, moduli: tuple[int, ...]) -> np.ndarray:
    """Poly's coefficients (coefficient domain) as centred integers mod the product, as floats."""
    Q = math.prod(moduli)
    parts = [(Q // q) * pow(Q // q, -1, q) for q in moduli]
    out = []
    for col in poly.numpy().T.tolist():
        v = sum(int(r) * c for r, c in zip(col, parts)) % Q
        out.append(float(v - Q if v > Q // 2 else v))
    return np.array(out)


@pytest.mark.parametrize("special, dnum", [(2, 7), (2, 8), (3, 5), (1, 16), (2, 10)])
def test_noise_estimate_is_the_measured_key_switch_noise(special, dnum):
    """The estimate (largest slot error of a key switch, against a rescale's rounding) is within
    a bit or two of a measured key switch, on the safe side: u0 + u1·s − d·s² for a relin key,
    its largest slot error over B_rescale.  N = 2^11 (insecure), seeded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = CKKSParams(1 << 11, 7, 40, 60, special_primes=special, dnum=dnum, insecure=True)
    with ren.random.seeded(3):
        kg = KeyGenerator(p)
        key, s = kg.relin_key(), kg.secret_key().poly.to_ring(p.ring(p.depth))
        d = Poly.uniform(p.ring(p.depth), domain="NTT").realize()
        u0, u1 = key_switch(d, key, p.depth)
        err = _centred((u0 + u1 * s - d * s * s).intt(), p.chain)
    h = 2 * p.N / 3
    rescale = math.sqrt(2 * math.log(p.N) * p.N * (1 + h) / 12)
    measured = math.log2(_canonical_max(err) / rescale)  # the mod-down's rounding included
    estimate = key_switch_noise_bits(p)
    assert measured <= max(estimate, 0.0) + 1, (measured, estimate)
    if estimate > 2:  # a noisy shape: the estimate does not cry wolf either
        assert measured >= estimate - 2.5, (measured, estimate)


def _rotation_bits(p: CKKSParams) -> float:
    """-log2 of the largest error of a rotation by one, inputs uniform in [-1, 1], seeded."""
    with ren.random.seeded(5):
        kg = KeyGenerator(p)
        ev = Evaluator(p, rotation_keys=kg.rotation_keys([1]))
        enc, dec = Encoder(p), Decryptor(p, kg.secret_key())
        x = np.random.default_rng(5).uniform(-1, 1, p.slots)
        ct = Encryptor(p, kg.public_key()).encrypt(enc.encode(x))
        got = np.real(np.asarray(enc.decode(dec.decrypt(ev.rotate(ct, 1)))))
    return -math.log2(np.abs(got - np.roll(x, -1)).max())


def test_fastest_shape_rotates_as_precisely_as_a_wide_margin_one():
    """The chosen shape's rotation is within a bit of a shape whose key-switching noise is
    nothing (4 special primes, a prime per digit: P ~ 2^124 over digits of 30 bits).  N = 2^12,
    depth 4 (insecure, so every shape down to one digit is on offer)."""
    chain = dict(N=1 << 12, depth=4, scale_bits=40, first_bits=60, insecure=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = CKKSParams.fastest_key_switching(**chain)
        wide = CKKSParams(**chain, special_primes=4, dnum=len(chosen.chain))
    assert key_switch_noise_bits(wide) < -20
    assert _rotation_bits(chosen) >= _rotation_bits(wide) - 1, chosen.describe()


@pytest.mark.parametrize("bad", ["0", math.nan, True, 65, -65])
def test_max_noise_bits_is_checked(bad):
    with pytest.raises(ParameterError, match="max_noise_bits"):
        CKKSParams.key_switching_options(1 << 14, 7, 40, 60, max_noise_bits=bad)


def test_max_noise_bits_out_of_reach_says_so():
    with pytest.raises(ParameterError, match="allow more noise"):
        CKKSParams.key_switching_options(1 << 14, 7, 40, 60, max_noise_bits=-60)
    # a looser bound may choose a cheaper, noisier shape, never a costlier one
    loose = CKKSParams.key_switching_options(1 << 14, 7, 40, 60, max_noise_bits=10)[0][0]
    strict = CKKSParams.key_switching_options(1 << 14, 7, 40, 60)[0][0]
    assert loose.work <= strict.work and loose.noise_bits <= 10
