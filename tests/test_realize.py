"""Realization on the CPU: corpus and random DAGs against the reference, becomes_map, reading."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren import settings as ren_settings
from ren.corpus import PROGRAMS, build
from ren.errors import DeviceError
from ren.ops import Op
from ren.reference import evaluate
from ren.runtime import record_units

RQP = ren.RingSpec.generate(16, 5)
RINGS = [RQP.sub(0, 3), RQP]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("memplan", [True, False], ids=["arena", "no_memplan"])
def test_corpus_realizes_to_reference(name, memplan):
    outputs = build(name)
    expected = evaluate(*outputs)
    with ren_settings.override(REN_NO_MEMPLAN=int(not memplan)):
        outputs[0].realize(*outputs[1:])
    for i, (p, e) in enumerate(zip(outputs, expected, strict=True)):
        assert p.is_realized
        assert np.array_equal(p.numpy(), e), f"{name}: output {i}"


def _input(draw, ring) -> ren.Poly:
    kind = draw(st.sampled_from(["coeffs", "residues", "random"]))
    domain = draw(st.sampled_from(["COEFF", "NTT"]))
    if kind == "coeffs":
        bound = 1 << draw(st.integers(1, 120))
        cs = draw(st.lists(st.integers(-bound, bound), min_size=ring.N, max_size=ring.N))
        p = ren.Poly.from_coefficients(cs, ring)
        return p.ntt() if domain == "NTT" else p
    if kind == "residues":
        seed = draw(st.integers(0, 2**32))
        rng = np.random.default_rng(seed)
        res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
        return ren.Poly.from_residues(res, ring, domain)
    with ren.random.seeded(draw(st.integers(0, 1000))):
        return ren.Poly.ternary(ring) if domain == "COEFF" else ren.Poly.uniform(ring, domain="NTT")


def _partner(draw, pool, a: ren.Poly) -> ren.Poly:
    same = [p for p in pool if p.ring == a.ring and p.domain is a.domain]
    return draw(st.sampled_from(same))  # always non-empty: a itself is in the pool


def _step(draw, pool) -> ren.Poly:
    a = draw(st.sampled_from(pool))
    op = draw(st.sampled_from(["add", "sub", "mul", "neg", "scalar", "addc", "domain", "rotate",
                               "conj", "subset", "extend", "rescale", "copy", "times_zero",
                               "self_sub", "const", "const_chain"]))
    if op == "add":
        return a + _partner(draw, pool, a)
    if op == "sub":
        return a - _partner(draw, pool, a)
    if op == "mul":
        return a * draw(st.sampled_from([p for p in pool if p.ring == a.ring]))
    if op == "neg":
        return -a
    if op == "scalar":
        return a * draw(st.integers(-(1 << 70), 1 << 70))
    if op == "addc":
        return draw(st.integers(-5, 5)) + a
    if op == "domain":
        return a.intt() if a.domain is ren.Domain.NTT else a.ntt()
    if op == "rotate":
        return a.rotate(draw(st.integers(-9, 9)))
    if op == "conj":
        return a.conjugate()
    if op == "subset":
        moduli = list(a.ring.moduli)
        keep = draw(st.lists(st.sampled_from(moduli), min_size=1, max_size=len(moduli),
                             unique=True))
        return a.to_ring(a.ring.select(keep))
    if op == "extend" and a.ring != RQP:
        return a.to_ring(RQP)
    if op == "rescale" and a.ring.limbs > 1:
        return a.rescale(a.ring.moduli[-1])
    if op == "copy":
        return a.to("python:1").to("python")
    # constant sub-expressions, which scheduling folds (x*0, x-x, conversions of constants):
    # folding must never change a value, a domain or a ring
    if op == "times_zero":
        return a * 0
    if op == "self_sub":
        return a - a
    if op == "const":
        return ren.Poly.const(draw(st.integers(-(1 << 70), 1 << 70)), a.ring, a.domain)
    if op == "const_chain":
        c = ren.Poly.const(draw(st.integers(-9, 9)), a.ring)
        for step in draw(st.lists(st.sampled_from(["ntt_intt", "neg", "rot", "conj", "mul3"]),
                                  max_size=4)):
            c = {"ntt_intt": lambda c: c.ntt().intt(), "neg": lambda c: -c,
                 "rot": lambda c: c.rotate(1), "conj": lambda c: c.conjugate(),
                 "mul3": lambda c: c * 3}[step](c)
        return c.ntt() if a.domain is ren.Domain.NTT else c
    return a + a


@st.composite
def programs(draw):
    pool = [_input(draw, draw(st.sampled_from(RINGS))) for _ in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 12))):
        pool.append(_step(draw, pool))
    k = draw(st.integers(1, 3))
    outputs = draw(st.lists(st.sampled_from(pool[-6:]), min_size=1, max_size=k))
    return outputs


def _check_program(outputs) -> None:
    """Realize `outputs` together: values equal the reference's, and no Poly's ring or domain
    changes because it was realized."""
    specs = [(p.ring, p.domain) for p in outputs]
    expected = evaluate(*outputs)
    outputs[0].realize(*outputs[1:])
    for p, e, spec in zip(outputs, expected, specs, strict=True):
        assert (p.ring, p.domain) == spec
        assert np.array_equal(p.numpy(), e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_dags_realize_to_reference(outputs):
    _check_program(outputs)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_dags_realize_to_reference_many(outputs):
    _check_program(outputs)


def _ntt_input(seed: int) -> ren.Poly:
    rng = np.random.default_rng(seed)
    ring = RINGS[0]
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, "NTT")


def test_becomes_map_avoids_recomputation():
    a, b = _ntt_input(1), _ntt_input(2)
    c = a * b
    d = c + a
    expected = evaluate(d)[0]
    with record_units() as first:
        c.realize()
    assert c.is_realized and any(u.kind == "compute" for u in first)
    assert d.node.src[0] is c.node  # d's graph now reads c's buffer
    with record_units() as second:
        d.realize()
    assert [u.kind for u in second] == ["compute"]
    body_ops = {n.op for n in ren.toposort(second[0].item.ast)}
    assert Op.MONTMUL not in body_ops  # c = a*b is not recomputed
    assert np.array_equal(d.numpy(), expected)


def test_realizing_a_realized_poly_does_no_work():
    a = _ntt_input(3)
    b = (a + 1).realize()
    with record_units() as units:
        b.realize()
        a.realize()
        b.numpy()
    assert units == []


def test_outputs_realized_together_share_work():
    a, b = _ntt_input(4), _ntt_input(5)
    s = a * b
    x, y = s + 1, s * 3
    with record_units() as units:
        x.realize(y)
    montmuls = [u for u in units if u.kind == "compute"
                and any(n.op is Op.MONTMUL and all(src.op is Op.LOAD for src in n.src[:2])
                        for n in ren.toposort(u.item.ast))]
    assert len(montmuls) == 1


def test_reading_values():
    ring = RINGS[1]
    cs = [(-1) ** i * (i << 70) for i in range(ring.N)]
    p = ren.Poly.from_coefficients(cs, ring)
    assert p.coefficients() == cs
    rows = p.tolist()
    assert len(rows) == ring.limbs and all(len(r) == ring.N for r in rows)
    assert rows == [[c % q for c in cs] for q in ring.moduli]
    assert p.numpy().dtype == np.uint32 and p.numpy().shape == (ring.limbs, ring.N)
    pn = p.ntt()
    assert pn.coefficients() == cs  # NTT-domain values are transformed back on the host
    assert pn.tolist() != rows
    const = ren.Poly.const(-3, ring)
    assert const.coefficients() == [-3] + [0] * (ring.N - 1)


def test_unknown_backend_device_is_a_clear_error():
    p = ren.Poly.from_coefficients(list(range(16)), RINGS[0], device="cuda")
    with pytest.raises(DeviceError, match="cuda"):
        p.realize()


def test_check_mode_realizes_with_pass_verification():
    outputs = build("keyswitch")
    expected = evaluate(*outputs)
    with ren_settings.override(REN_CHECK=1):
        outputs[0].realize(outputs[1])
    assert np.array_equal(outputs[0].numpy(), expected[0])


def test_output_that_is_a_view_gets_its_own_buffer():
    # found by hypothesis: an output TO_RING onto a contiguous run of a realized buffer
    x = _ntt_input(6)
    sub = x.ring.sub(0, 1)
    y = x.to_ring(sub)
    expected = evaluate(y)[0]
    y.realize()
    assert y.is_realized and y.node.src[0].op is Op.BUFFER
    assert np.array_equal(y.numpy(), expected)


def test_serialization_round_trip_through_poly():
    x = _ntt_input(7)
    data = x.tobytes()
    back = ren.Poly.frombytes(data)
    assert back.ring == x.ring and back.domain is x.domain
    assert np.array_equal(back.numpy(), x.numpy())
    with pytest.raises(ren.SerializationError):
        ren.Poly.frombytes(data[:-1])


@pytest.mark.parametrize("num", [1, 4, 9, 11])
def test_check_mode_catches_a_pass_that_breaks_values(monkeypatch, num):
    """REN_CHECK=1 really checks: a pass whose rewrite changes a value (here: every ADD becomes
    a SUB) is reported by name, while without the check the wrong value would be computed."""
    from ren.passes import PASSES
    from ren.rewrite import P, rewrite

    _, name, mod = PASSES[num - 1]
    original = mod.run
    flip = {Op.ADD: Op.SUB, Op.MODADD: Op.MODSUB}
    swap = [(P(set(flip), name="n"), lambda n: n.replace(op=flip[n.op]), "add_becomes_sub")]

    def broken(sink, ctx=None):
        return rewrite(original(sink, ctx), swap, name="broken")

    monkeypatch.setattr(mod, "run", broken)
    ring = ren.RingSpec.generate(16, 2)
    a = ren.Poly.from_coefficients(range(16), ring)
    b = ren.Poly.from_coefficients([3] * 16, ring)
    with ren_settings.override(REN_CHECK=1), pytest.raises(ren.ScheduleError,
                                                          match=f"{num:02d}_{name}"):
        (a + b).realize()
    wrong = (a + b).realize()  # unchecked, the broken pass goes unnoticed
    assert wrong.coefficients() != [i + 3 for i in range(16)]
