"""ren.rlwe.cost and CKKSParams.key_switching_options: the counted cost of one key switch is
what the scheduler really emits, and the proposed shapes are secure and ranked by it."""

from __future__ import annotations

import warnings

import pytest

import ren
from ren.ckks import CKKSParams, KeyGenerator
from ren.errors import ParameterError
from ren.poly import Poly
from ren.rlwe.cost import key_switch_cost
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
    for cost, p in opts:  # the fewest special primes for its digit count
        assert cost.special_primes == len(p.special_moduli)
        if cost.special_primes > 1:
            fewer = CKKSParams(1 << 16, 20, 47, 60, special_primes=cost.special_primes - 1)
            assert fewer.dnum > p.dnum
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
