"""CKKSParams: the modulus chain, composite scales, key-switching digits, presets and the
security check against the HE-standard table."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import pytest
from ckks_helpers import make_params

from ren.ckks import PRESETS, CKKSParams, InsecureParametersWarning
from ren.ckks.chain import PAIR_TOLERANCE_BITS, prime_pairs
from ren.ckks.params import HE_STANDARD_128, normalize_scale, rescaled
from ren.errors import ParameterError
from ren.ring import is_prime


def _is_ntt_prime(q: int, N: int) -> bool:
    return q < 2**31 and (q - 1) % (2 * N) == 0 and all(q % d for d in range(2, math.isqrt(q) + 1))


class TestChain:
    @pytest.mark.parametrize("N,depth,scale_bits,first", [
        (32, 3, 25, 40), (64, 4, 40, 55), (256, 2, 50, 60), (1 << 14, 7, 40, 58)])
    def test_primes_are_distinct_ntt_friendly(self, N, depth, scale_bits, first):
        p = make_params(N=N, depth=depth, scale_bits=scale_bits, first_bits=first,
                        insecure=True)
        everything = p.chain + p.special_moduli
        assert len(set(everything)) == len(everything)
        for q in everything:  # trial division: independent of ren's Miller-Rabin
            assert (q - 1) % (2 * N) == 0 and q < 2**31
            assert is_prime(q) and (q > 2**24 or _is_ntt_prime(q, N))
        assert len(p.level_moduli) == depth
        per = 1 if scale_bits <= 31 else 2
        for g in p.level_moduli:
            assert len(g) == per
            assert abs(math.log2(math.prod(g)) - scale_bits) <= PAIR_TOLERANCE_BITS
        assert abs(sum(math.log2(q) for q in p.base_moduli) - first) < 1.0

    def test_levels_are_prefixes_and_rescale_drops_the_top_group(self):
        p = make_params(N=64, depth=4, scale_bits=40, first_bits=55, insecure=True)
        for lv in range(p.depth + 1):
            assert p.ring(lv).moduli == p.chain[: p.limbs(lv)]
            assert p.ring_qp(lv).moduli == p.ring(lv).moduli + p.special_moduli
        for lv in range(1, p.depth + 1):
            assert p.ring(lv).moduli[-2:] == p.rescale_moduli(lv)
            assert p.ring(lv - 1).moduli == p.ring(lv).moduli[:-2]
        with pytest.raises(ParameterError):
            p.rescale_moduli(0)
        with pytest.raises(ParameterError):
            p.ring(p.depth + 1)

    def test_default_scales_follow_the_rescale_recurrence_exactly(self):
        p = make_params(N=64, depth=4, scale_bits=40, first_bits=55, insecure=True)
        assert p.scale(p.depth) == p.top_scale and p.top_scale.denominator == 1
        for lv in range(p.depth, 0, -1):  # exact: Fractions below the 1024-bit cap
            s = p.scale(lv)
            assert p.scale(lv - 1) == s * s / math.prod(p.rescale_moduli(lv))
            assert abs(math.log2(s) - 40) <= PAIR_TOLERANCE_BITS

    def test_deep_default_scales_stay_near_target(self):
        p = make_params(N=256, depth=12, scale_bits=45, first_bits=60, insecure=True)
        for lv in range(p.depth, 0, -1):  # past the cap: rounded to 512 bits, deterministically
            s = p.scale(lv)
            assert p.scale(lv - 1) == rescaled(normalize_scale(s * s), p.rescale_moduli(lv))
            assert abs(math.log2(s) - 45) <= PAIR_TOLERANCE_BITS
            assert s.numerator.bit_length() <= 2048

    def test_scarce_primes_n14_depth7(self):
        """N=2^14 has only seven primes ≡ 1 mod 2^15 below 2^20.75, yet depth 7 works."""
        p = CKKSParams.preset("N14")
        assert p.depth == 7 and p.primes_per_level == 2
        assert max(abs(math.log2(p.scale(lv)) - 40) for lv in range(8)) < 1.5
        assert p.log2_QP <= 438

    def test_unbuildable_chain_says_what_to_change(self):
        with pytest.raises(ParameterError) as e:
            make_params(N=1 << 16, depth=6, scale_bits=40, first_bits=60, insecure=True)
        msg = str(e.value)
        assert "N=65536" in msg and "scale_bits >=" in msg and "depth <=" in msg

    def test_pairs_are_disjoint_and_within_tolerance(self):
        pairs = prime_pairs(1 << 13, 40, 10, set())
        flat = [q for pq in pairs for q in pq]
        assert len(pairs) == 10 and len(set(flat)) == 20
        assert all(abs(math.log2(a * b) - 40) <= PAIR_TOLERANCE_BITS for a, b in pairs)

    def test_default_dnum_keeps_digits_within_p(self):
        p = CKKSParams.preset("N14")
        for a, b in p.digits:
            assert sum(math.log2(q) for q in p.chain[a:b]) <= p.log2_P
        assert p.digits_at(0) == ((0, 2),)
        with pytest.raises(ParameterError):
            make_params(N=64, depth=2, dnum=99, insecure=True)

    def test_scale_cap_is_deterministic_and_tiny(self):
        big = Fraction(3**900, 7**400)
        a, b = normalize_scale(big), normalize_scale(big)
        assert a == b and abs(a / big - 1) < Fraction(1, 2**500)
        assert rescaled(Fraction(2**80), (2**20 + 7,)) == Fraction(2**80, 2**20 + 7)


class TestSecurity:
    @pytest.mark.parametrize("name", sorted(PRESETS))
    def test_presets_are_secure(self, name):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            p = CKKSParams.preset(name)
        assert p.log2_QP <= HE_STANDARD_128[p.N] and p.security_bits >= 128

    def test_oversized_modulus_raises_then_warns_with_insecure(self):
        with pytest.raises(ParameterError, match="exceeds 109"):
            CKKSParams(N=1 << 12, depth=3, scale_bits=40, first_bits=60)
        with pytest.warns(InsecureParametersWarning, match="exceeds 109"):
            p = CKKSParams(N=1 << 12, depth=3, scale_bits=40, first_bits=60, insecure=True)
        assert p.security_bits < 128 and "INSECURE" in p.describe() and "INSECURE" in repr(p)

    def test_small_n_is_never_secure(self):
        with pytest.raises(ParameterError, match="outside the HE-standard table"):
            CKKSParams(N=64, depth=1)

    def test_describe_shows_chain_and_security(self):
        p = CKKSParams.preset("N14")
        text = p.describe()
        for item in ("N = 16384", "level 7", "special", "log2 QP", "dnum", "security"):
            assert item in text
        assert str(p.chain[-1]) in text and f"{p.log2_QP:.1f}" in text


class TestValidation:
    @pytest.mark.parametrize("kw", [
        dict(N=48, depth=1), dict(N=64, depth=-1), dict(N=64, depth=1, scale_bits=70),
        dict(N=64, depth=1, first_bits=10), dict(N=64, depth=1, special_primes=0),
        dict(N=64, depth=1, secret="gaussian"), dict(N=64, depth=1, secret=("sparse", 0)),
        dict(N=64, depth=1, sigma=-1.0), dict(N=64, depth=True)])
    def test_bad_arguments(self, kw):
        with pytest.raises(ParameterError):
            make_params(insecure=True, **kw)

    def test_unknown_preset(self):
        with pytest.raises(ParameterError, match="N14"):
            CKKSParams.preset("N99")

    def test_fingerprint_identifies_parameters(self):
        a = make_params(N=64, depth=2, insecure=True)
        b = make_params(N=64, depth=2, insecure=True)
        c = make_params(N=64, depth=2, secret=("sparse", 8), insecure=True)
        assert a == b and hash(a) == hash(b) and a.fingerprint == b.fingerprint
        assert a != c and a.fingerprint != c.fingerprint
        assert "sparse ternary, h=8" in c.describe()
