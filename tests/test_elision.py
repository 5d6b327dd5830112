"""Transform elision (`ren.passes.elision`, in pass 4): a rescale of an NTT-domain value
transforms only the dropped limbs, and stays bit-identical to the RESCALE kernel; a basis
extension of an NTT-domain value keeps the rows it shares (CONCAT) and converts only new ones.

Checked against Python big integers (floor((x + floor(P/2)) / P) of every coefficient), against
`ren.ring.divide_round`, and against the same graph scheduled without the elision rules; the
limb-transform count of a CKKS multiply + relinearize + rescale is pinned.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ren
from ren.ckks import (
    CKKSParams,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
)
from ren.corpus import build
from ren.interpret import evaluate_sink
from ren.ir import broadcast_const
from ren.node import Node
from ren.ops import DType, Op
from ren.passes import elision
from ren.passes import p04_simplify_domains as p04
from ren.passes.elision import ELISION_RULES
from ren.reference import evaluate, intt_limb, ntt_limb
from ren.replay import templates
from ren.rewrite import RuleSet
from ren.ring import Domain, RingSpec, divide_round
from ren.ring.ringspec import ntt_primes
from ren.runtime import record_units
from ren.schedule import run_passes, schedule

N = 16
ELISION_NAMES = {name for _, _, name in ELISION_RULES}


def without_elision(monkeypatch) -> None:
    """Schedule with pass 4's rules minus the elision rules (the pre-elision scheduler)."""
    monkeypatch.setattr(p04, "rules", RuleSet(
        [r for r in p04.rules.rules if r.name not in ELISION_NAMES]))
    templates.clear()  # a captured template of the elided graph would replay instead


def ntt_rows(coeffs: np.ndarray, ring: RingSpec) -> np.ndarray:
    """The reference NTT (direct evaluation) of standard residues, limb by limb."""
    return np.stack([ntt_limb(coeffs[i].astype(np.int64), q, ring.N)
                     for i, q in enumerate(ring.moduli)]).astype(np.uint32)


def residues(values: list[int], ring: RingSpec) -> np.ndarray:
    return np.array([[v % q for v in values] for q in ring.moduli], dtype=np.uint32)


@st.composite
def rescale_cases(draw):
    """(ring R, k, coefficients in [0, R.Q)): a random chain of 1..4 kept and k = 1..3 dropped
    moduli, coefficients mixing uniform values with the edges 0, Q - 1 and values next to
    multiples of P and to the rounding boundary m·P + floor(P/2)."""
    bits = draw(st.sampled_from((30, 31)))
    pool = ntt_primes(N, bits, 10)
    L, k = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    moduli = draw(st.permutations(pool))[: L + k]
    ring = RingSpec(N, tuple(moduli))
    Q, P = ring.Q, ring.Q // ring.drop_last(k).Q
    h = P // 2
    kind = st.sampled_from(["uniform", "zero", "top", "near_multiple", "near_half"])
    coeffs = []
    for _ in range(N):
        what = draw(kind)
        m = draw(st.integers(0, Q // P - 1))
        delta = draw(st.sampled_from((-1, 0, 1)))
        coeffs.append({"uniform": draw(st.integers(0, Q - 1)), "zero": 0, "top": Q - 1,
                       "near_multiple": (m * P + delta) % Q,
                       "near_half": (m * P + h + delta) % Q}[what])
    return ring, k, coeffs


@given(rescale_cases())
def test_rescale_in_ntt_is_exact(case):
    ring, k, coeffs = case
    keep = ring.drop_last(k)
    P = ring.Q // keep.Q
    x = ren.Poly.from_residues(ntt_rows(residues(coeffs, ring), ring), ring, Domain.NTT)
    y = x.rescale(ring.moduli[-k:])
    by_ints = ntt_rows(residues([(c + P // 2) // P for c in coeffs], keep), keep)
    by_ring = ntt_rows(divide_round(residues(coeffs, ring), ring, k), keep)
    assert np.array_equal(by_ints, by_ring)
    trace = run_passes(y, upto=4)
    assert trace.ctx.stats["simplify_domains"]["rescale_in_ntt"] == 1
    assert np.array_equal(evaluate_sink(trace.sink)[0], by_ints)  # the rewritten graph
    assert np.array_equal(y.numpy(), by_ints)  # the realized words (NumPy backend)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_elided_words_equal_the_rescale_kernel(k, monkeypatch):
    """CKKS-shaped: 8 kept moduli, k dropped; the realized words with and without elision."""
    ring = RingSpec.generate(64, 8 + k)
    rng = np.random.default_rng(k)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]).astype(np.uint32)

    def rescaled() -> np.ndarray:
        x = ren.Poly.from_residues(res, ring, Domain.NTT)
        return (x * x).rescale(ring.moduli[-k:]).numpy()

    elided = rescaled()
    without_elision(monkeypatch)
    plain = rescaled()
    templates.clear()
    assert np.array_equal(elided, plain)
    # and both are divide-and-round of the product's coefficients
    sq = ren.Poly.from_residues(res, ring, Domain.NTT)
    prod = (sq * sq).numpy()
    coeffs = np.stack([intt_limb(prod[i].astype(np.int64), q, ring.N)
                       for i, q in enumerate(ring.moduli)]).astype(np.uint32)
    keep = ring.drop_last(k)
    assert np.array_equal(elided, ntt_rows(divide_round(coeffs, ring, k), keep))


def ckks_multiply_rescale():
    """A CKKS multiply + relinearize + rescale at the top level: 8 + 2 moduli, dnum = 2."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=7, scale_bits=29, first_bits=31, special_primes=2, dnum=2,
                       insecure=True)
    assert p.ring(p.max_level).limbs == 8 and len(p.special_moduli) == 2 and p.dnum == 2
    with ren.random.seeded(3):
        kg = KeyGenerator(p)
        pk, rlk = kg.public_key(), kg.relin_key()
    enc, encryptor = Encoder(p), Encryptor(p, pk)
    a, b = (encryptor.encrypt(enc.encode(np.full(p.slots, v))) for v in (0.5, 0.25))
    for part in a.parts + b.parts:
        part.realize()
    return Evaluator(p, rlk).rescale(Evaluator(p, rlk).multiply(a, b)).parts


def limb_transforms(outputs) -> Counter:
    rows: Counter = Counter()
    for item in schedule(*outputs):
        if item.kind in ("ntt", "intt"):
            rows[item.kind] += item.space[0]
    return rows


def test_ckks_multiply_relin_rescale_limb_transforms(monkeypatch):
    outputs = ckks_multiply_rescale()
    after = limb_transforms(outputs)
    ctx_stats = run_passes(*outputs, upto=4).ctx.stats["simplify_domains"]
    assert ctx_stats["rescale_in_ntt"] == 4  # two mod-downs by P, two rescales
    assert ctx_stats["mod_up_in_ntt"] == 2  # one per digit
    with ren.random.seeded(7):
        fused = ckks_multiply_rescale()
    words = [p.numpy() for p in fused]
    # the mod-down's correction joins the rescale's NTT (`split_ntt`): 7 NTT rows per part for
    # both roundings instead of 8 + 7, and the same words
    monkeypatch.setattr(elision, "LOOK_THROUGH", False)
    templates.clear()
    assert limb_transforms(outputs) == {"intt": 14, "ntt": 42}  # the two roundings apart: 56
    with ren.random.seeded(7):
        unfused = ckks_multiply_rescale()
    assert all(np.array_equal(w, p.numpy()) for w, p in zip(words, unfused, strict=True))
    monkeypatch.setattr(elision, "LOOK_THROUGH", True)
    without_elision(monkeypatch)
    before = limb_transforms(outputs)
    assert before == {"intt": 44, "ntt": 50}  # 94 limb transforms
    # mod-down: 2 INTT rows instead of 10, per accumulator; rescale: 1 instead of 8, per part;
    # mod-up: 6 NTT rows instead of 10, per digit; one NTT of 7 rows per part for both
    assert after == {"intt": 14, "ntt": 26}  # 40


def test_no_elision_switch():
    """REN_NO_ELISION=1 schedules the round trips again (94 limb transforms), realizes the same
    words, and keeps its own replay templates (the switch is part of the template key)."""
    from ren import settings as ren_settings

    outputs = ckks_multiply_rescale()
    with ren_settings.override(REN_NO_ELISION=1):
        assert limb_transforms(outputs) == {"intt": 44, "ntt": 50}
    assert limb_transforms(outputs) == {"intt": 14, "ntt": 26}
    ring = RingSpec(N, ntt_primes(N, 30, 4))
    x = ren.Poly.from_residues(np.arange(4 * N, dtype=np.uint32).reshape(4, N) % 1000, ring,
                               "ntt")
    runs = {}
    for flag in (1, 0, 1):
        with ren_settings.override(REN_NO_ELISION=flag), record_units() as ran:
            words = x.rescale(ring.moduli[-2:]).numpy()
        runs.setdefault(flag, []).append((words, sum(u.kind == "compute" for u in ran)))
    assert np.array_equal(runs[0][0][0], runs[1][0][0])
    assert runs[1][0][1] == runs[1][1][1] != runs[0][0][1]  # each mode replays its own schedule


def test_broadcast_const_is_in_every_coefficient():
    ring = RingSpec.generate(N, 2)
    x = ren.Poly.from_residues(np.zeros((2, N), np.uint32), ring, Domain.COEFF)
    out = Node(Op.ADD, DType.U32, (x.node, broadcast_const(5, ring, "python")))
    sink = Node(Op.SINK, DType.VOID, (out,))
    trace = run_passes(sink, trace=True)
    for stage, graph in trace.graphs:
        assert np.array_equal(evaluate_sink(graph)[0], np.full((2, N), 5)), stage
    assert trace.ctx.stats["lower_constants"]["broadcast_const"] == 1


@st.composite
def ring_changes(draw):
    """(source ring, target ring): random moduli from one pool, so the target may extend the
    source, overlap it partly, select from it or share nothing with it."""
    pool = ntt_primes(N, 30, 8)
    src = draw(st.permutations(pool))[: draw(st.integers(1, 4))]
    dst = draw(st.permutations(pool))[: draw(st.integers(1, 6))]
    return RingSpec(N, tuple(src)), RingSpec(N, tuple(dst))


@given(ring_changes(), st.integers(0, 2**32 - 1))
def test_ring_change_in_ntt_keeps_shared_rows(rings, seed):
    src, dst = rings
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, N) for q in src.moduli]).astype(np.uint32)
    x = ren.Poly.from_residues(res, src, Domain.NTT)
    y = x.to_ring(dst)
    want = evaluate(y)[0]  # the oracle: big-integer basis conversion of the coefficients
    trace = run_passes(y, upto=4)
    shared = set(src.moduli) & set(dst.moduli)
    fired = trace.ctx.stats["simplify_domains"]["mod_up_in_ntt"]
    assert fired == (1 if shared and not set(dst.moduli) <= set(src.moduli) else 0)
    concat = [n for n in trace.sink.toposort() if n.op is Op.CONCAT]
    assert len(concat) == (1 if shared and set(dst.moduli) - set(src.moduli) else 0)
    assert np.array_equal(evaluate_sink(trace.sink)[0], want)
    assert np.array_equal(y.numpy(), want)  # realized: CONCAT lowered to a WHERE of two loads


def test_concat_takes_each_row_from_the_source_with_its_modulus():
    ring = RingSpec.generate(N, 5)
    a_ring, b_ring = ring.select(ring.moduli[3:0:-2]), ring.select(ring.moduli[::2])
    rng = np.random.default_rng(5)
    a = ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in a_ring.moduli]), a_ring,
                               Domain.COEFF)
    b = ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in b_ring.moduli]), b_ring,
                               Domain.COEFF)
    out = Node(Op.CONCAT, DType.U32, ((a + a).node, b.node), ring)
    a2, bv = (a + a).numpy(), b.numpy()
    want = np.stack([a2[a_ring.index(q)] if q in a_ring.moduli else bv[b_ring.index(q)]
                     for q in ring.moduli])
    sink = Node(Op.SINK, DType.VOID, (out,))
    assert np.array_equal(evaluate(out)[0], want)
    for stage, graph in run_passes(sink, trace=True).graphs:
        assert np.array_equal(evaluate_sink(graph)[0], want), stage
    assert np.array_equal(ren.Poly(out).numpy(), want)


def test_a_mod_up_read_by_two_kernels_is_not_copied():
    """Each digit's CONCAT feeds both key products (two output kernels): it is read in place,
    like a view, instead of being copied into a buffer of its own."""
    sink = run_passes(*build("keyswitch_ntt"), upto=5).sink
    nodes = sink.toposort()
    assert sum(n.op is Op.CONCAT for n in nodes) == 3
    copied = [n for n in nodes if n.op is Op.BUFFERIZE and n.src[0].op is Op.CONCAT]
    assert len(copied) == 1 and copied[0] in sink.src  # only the output `partial` is stored
    assert np.array_equal(evaluate_sink(sink)[0], evaluate(*build("keyswitch_ntt"))[0])


@pytest.mark.parametrize("level", [1, 3])
def test_times_p_is_concat_of_scaled_rows_and_zeros(level):
    """P·x on Q_l·P (`times_p`): the mod-up's converted rows times P are 0 mod every special
    prime, so `concat_times_zero_rows` drops their INTT, conversion and NTT: one elementwise
    kernel; the words are x·(P mod q) on Q_l and 0 on P (Python integers)."""
    import math

    from ren.rlwe.keyswitch import times_p

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = CKKSParams(N=64, depth=4, scale_bits=40, first_bits=55, special_primes=3,
                       insecure=True)
    ring, ring_qp = p.ring(level), p.ring_qp(level)
    rng = np.random.default_rng(level)
    words = np.stack([rng.integers(0, q, 64) for q in ring.moduli]).astype(np.uint32)
    y = times_p(ren.Poly.from_residues(words, ring, Domain.NTT), p, level)
    stats = run_passes(y, upto=4).ctx.stats["simplify_domains"]
    assert stats["concat_times_zero_rows"] == 1
    assert {item.kind for item in schedule(y)} == {"elementwise"}
    P = math.prod(p.special_moduli)
    want = [[int(w) * P % q for w in words[ring.index(q)]] if q in ring.moduli else [0] * 64
            for q in ring_qp.moduli]
    assert y.numpy().tolist() == want
