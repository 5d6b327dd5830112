"""CKKS exercises every seed op: the graphs it builds are inspected (op counts over
`toposort`, and the scheduler's per-pass trace)."""

from __future__ import annotations

from collections import Counter

import numpy as np
from ckks_helpers import context, random_slots

from ren.ir import is_extension, is_view_candidate
from ren.node import Node, toposort
from ren.ops import Op
from ren.schedule import run_passes
from ren.spec import spec_of


def nodes_of(ct) -> list[Node]:
    return toposort(*(p.node for p in ct.parts))


def ops_of(ct) -> Counter:
    return Counter(n.op for n in nodes_of(ct))


def test_encryption_uses_random_and_constants():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))
    ct = c.encrypt(random_slots(16, np.random.default_rng(0)))
    randoms = [n.arg.kind for n in nodes_of(ct) if n.op is Op.RANDOM]
    assert sorted(randoms) == ["gaussian", "gaussian", "ternary"]  # v, e0, e1
    sk_ct = c.sk_encryptor.encrypt(c.enc.encode([0.5]))
    assert {n.arg.kind for n in nodes_of(sk_ct) if n.op is Op.RANDOM} == {"uniform", "gaussian"}
    assert ops_of(ct)[Op.TO_RNS] == 1  # the plaintext enters through Poly.from_coefficients
    # public-key encryption works over Q·P' and divides by P' (RESCALE by the first special
    # primes: here 1 of the 3)
    p = c.params
    assert len(p.special_moduli) == 3 and p.encryption_special_moduli == p.special_moduli[:1]
    assert {n.arg for n in nodes_of(ct) if n.op is Op.RESCALE} == {p.encryption_special_moduli}
    const = c.ev.add_scalar(ct, 0.5)
    assert any(n.op is Op.CONST for n in nodes_of(const))
    assert any(n.op is Op.CONST for n in nodes_of(c.ev.multiply(ct, 7)))


def test_key_switching_is_modup_inner_product_moddown():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, dnum=2, steps=(1, -1, 3))
    p = c.params
    x = c.encrypt(random_slots(16, np.random.default_rng(1)))
    x.realize()
    prod = c.ev.multiply(x, x)
    nodes = nodes_of(prod)
    extensions = [n for n in nodes if is_extension(n)]
    assert len(extensions) == 2  # one mod-up per digit
    for n in extensions:  # from a digit's primes onto Q_l·P
        src = spec_of(n.src[0]).ring
        assert n.arg == p.ring_qp(p.depth) and src.limbs < p.limbs(p.depth)
    rescales = [n.arg for n in nodes if n.op is Op.RESCALE]
    assert rescales == [p.special_moduli] * 2  # mod-down of both parts by P (several moduli)
    assert len(p.special_moduli) > 1
    r = c.ev.rescale(prod)
    drops = Counter(n.arg for n in nodes_of(r) if n.op is Op.RESCALE)
    assert drops == {p.special_moduli: 2, p.rescale_moduli(2): 2}
    assert len(p.rescale_moduli(2)) == 2  # composite scale: two primes dropped at once


def test_rescale_by_one_modulus_with_a_single_prime_scale():
    c = context(N=32, depth=2, scale_bits=25, first_bits=40, dnum=3, steps=(1, -1, 3))
    x = c.encrypt([0.5]).realize()  # (fresh encryption divides by P': another RESCALE)
    r = c.ev.rescale(c.ev.multiply_plain(x, c.enc.encode([0.5])))
    drops = {n.arg for n in nodes_of(r) if n.op is Op.RESCALE}
    assert drops == {c.params.rescale_moduli(2)} and len(c.params.rescale_moduli(2)) == 1


def test_rotation_and_conjugation_ops():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))
    x = c.encrypt([0.5, 0.25])
    assert ops_of(c.ev.rotate(x, 3))[Op.ROTATE] == 2
    assert [n.arg for n in nodes_of(c.ev.rotate(x, -1)) if n.op is Op.ROTATE] == [-1, -1]
    assert ops_of(c.ev.conjugate(x))[Op.CONJUGATE] == 2


def test_level_drop_is_a_view_through_the_passes():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))
    x = c.encrypt([0.5, 0.25])
    x.realize()
    low = c.ev.drop_level(x, 0)
    to_rings = [n for n in nodes_of(low) if n.op is Op.TO_RING]
    assert len(to_rings) == 2 and all(is_view_candidate(n) for n in to_rings)
    trace = run_passes(*low.parts, trace=True)
    stages = dict(trace.graphs)
    assert any(n.op is Op.BUFFER_VIEW for n in toposort(stages["10_buffer_views"]))
    assert not any(n.op is Op.TO_RING for n in toposort(stages["10_buffer_views"]))
    # and the values are right: the first limbs of the realized parts
    low.realize()
    for lo, hi in zip(low.parts, x.parts):
        assert np.array_equal(lo.numpy(), hi.numpy()[: lo.ring.limbs])


def test_every_seed_op_appears_in_one_ckks_program():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))
    ev = c.ev
    x = c.encrypt(random_slots(16, np.random.default_rng(2)))
    y = ev.rescale(ev.multiply(ev.rotate(x, 1), ev.conjugate(x)))
    y = ev.add_scalar(ev.negate(y), 0.125)
    y = ev.sub(y, ev.drop_level(c.encrypt([0.1], scale=y.scale), 1))
    seen = ops_of(y)
    for op in (Op.RANDOM, Op.CONST, Op.TO_RNS, Op.TO_RING, Op.RESCALE, Op.ROTATE,
               Op.CONJUGATE, Op.NTT, Op.INTT, Op.MUL, Op.ADD, Op.SUB, Op.NEG):
        assert seen[op] > 0, f"{op.name} missing from the CKKS graph"
    kinds = {(is_extension(n), is_view_candidate(n)) for n in nodes_of(y) if n.op is Op.TO_RING}
    assert (True, False) in kinds and (False, True) in kinds  # basis conversion and view
    # by P' after encrypting (1 prime), by a level's primes (2), by P after key switching (3)
    assert {len(n.arg) for n in nodes_of(y) if n.op is Op.RESCALE} == {1, 2, 3}
    got = c.decrypt(y)
    assert np.isfinite(got).all()
