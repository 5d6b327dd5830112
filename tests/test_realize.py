"""Realization on the CPU: corpus and random DAGs against the reference, becomes_map, reading."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren import random_programs
from ren import settings as ren_settings
from ren.corpus import PROGRAMS, build
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


@st.composite
def programs(draw) -> random_programs.Program:
    return random_programs.build(random_programs.DrawChooser(draw))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_dags_realize_to_reference(program):
    random_programs.check(program)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_dags_realize_to_reference_many(program):
    random_programs.check(program)


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


@pytest.mark.parametrize("device", ["python", "cpu"])
def test_montgomery_bytes_hold_the_stored_words(device):
    """tobytes("montgomery") writes the words as stored (r·2^32 mod q, checked with Python
    ints) and frombytes stores them back unconverted, on any device; decode_poly of those bytes
    gives the standard residues."""
    from ren.ir import storage_buffer
    from ren.serialize import decode_poly

    x = _ntt_input(8).to(device)
    x.realize()
    data = x.tobytes("montgomery")
    std = x.numpy()
    L, N = std.shape
    payload = np.frombuffer(data, "<u4", L * N, len(data) - 16 - 4 * L * N).reshape(L, N)
    want = [[(int(v) << 32) % q for v in row] for row, q in zip(std, x.ring.moduli)]
    assert payload.tolist() == want
    back = ren.Poly.frombytes(data, device)
    assert back.device == x.device and back.domain is x.domain
    assert np.array_equal(storage_buffer(back.node).copyout(), payload)
    assert np.array_equal(decode_poly(data)[2], std)
    assert ren.Poly.frombytes(x.tobytes(), device).tobytes("montgomery") == data
    with pytest.raises(ren.ParameterError, match="form must be 'standard' or 'montgomery'"):
        x.tobytes("raw")


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
