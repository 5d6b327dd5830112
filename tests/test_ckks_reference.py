"""CKKS on small insecure rings, bit for bit against `ren.reference.evaluate` (the big-integer,
schoolbook oracle), and the key relations checked with independent arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import context, random_slots

from ren.ckks import Ciphertext
from ren.reference import centred, crt, intt_limb
from ren.reference import evaluate as reference
from ren.rlwe import gadget_constants


def check_exact(ct_or_polys, label: str) -> None:
    """Evaluate with the oracle before realizing, then realize eagerly and compare residues."""
    polys = list(ct_or_polys.parts if isinstance(ct_or_polys, Ciphertext) else ct_or_polys)
    want = reference(*polys)
    polys[0].realize(*polys[1:])
    for i, (p, w) in enumerate(zip(polys, want)):
        assert np.array_equal(p.numpy(), w), f"{label}: part {i} differs from the reference"


CASES = {  # composite 40-bit scale (two primes per level) and a 25-bit one-prime scale
    "N32-composite": dict(N=32, depth=2, scale_bits=40, first_bits=50, dnum=2),
    "N32-single": dict(N=32, depth=2, scale_bits=25, first_bits=40, dnum=3),
    "N256-composite": dict(N=256, depth=1, scale_bits=40, first_bits=50),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def c(request):
    return context(steps=(1, -1, 3), **CASES[request.param])


def test_eager_ops_bit_exact(c):
    """Each op realized right away (eager), each compared with the oracle on its inputs."""
    rng = np.random.default_rng(3)
    x, y = random_slots(c.params.slots, rng), random_slots(c.params.slots, rng)
    cx, cy = c.encrypt(x), c.sk_encryptor.encrypt(c.enc.encode(y))
    check_exact(cx, "public-key encryption")
    check_exact(cy, "secret-key encryption")
    ev = c.ev
    steps = [
        ("add", lambda: ev.add(cx, cy)),
        ("sub plain", lambda: ev.sub_plain(cx, c.enc.encode(y))),
        ("add_scalar (constant)", lambda: ev.add_scalar(cx, 0.25)),
        ("multiply_int", lambda: ev.multiply(cx, -3)),
        ("multiply no relin", lambda: ev.multiply(cx, cy, relinearize=False)),
        ("multiply+relin", lambda: ev.multiply(cx, cy)),
        ("square", lambda: ev.square(cx)),
        ("rotate(1)", lambda: ev.rotate(cx, 1)),
        ("rotate(-1)", lambda: ev.rotate(cx, -1)),
        ("conjugate", lambda: ev.conjugate(cx)),
        ("drop_level", lambda: ev.drop_level(cx, 0)),
    ]
    for label, make in steps:
        check_exact(make(), label)
    m = ev.multiply(cx, cy)
    m.realize()
    r = ev.rescale(m)
    check_exact(r, "rescale")
    check_exact(ev.rotate(r, 3), "rotate(3) at level 1")
    # the digits clipped to r's level; r·r does not fit Q_0 (depth 1), a small scale does
    s = c.encrypt(y, level=r.level, scale=2**8)
    check_exact(ev.multiply(r, s), f"multiply+relin at level {r.level} (clipped digits)")


def test_lazy_program_bit_exact(c):
    """A whole program built lazily and realized once equals the oracle on the same graph."""
    rng = np.random.default_rng(4)
    x, y = random_slots(c.params.slots, rng), random_slots(c.params.slots, rng)
    ev = c.ev
    cx, cy = c.encrypt(x), c.encrypt(y)
    z = ev.rescale(ev.multiply(ev.rotate(cx, 1), ev.conjugate(cy)))
    z = ev.add(z, ev.rescale(ev.multiply_scalar(cx, 0.5, target_scale=z.scale)))
    check_exact(z, "lazy program")
    got = c.enc.decode(c.dec.decrypt(ev.drop_level(z, 0)))
    assert np.allclose(got, np.roll(x, -1) * np.conj(y) + 0.5 * x, atol=2**-12)


def _lift_ntt(rows: np.ndarray, moduli: tuple[int, ...], N: int) -> list[int]:
    coeff = np.stack([intt_limb(rows[i].astype(np.int64), q, N) for i, q in enumerate(moduli)])
    Q = int(np.prod(np.array(moduli, dtype=object)))
    return [centred(v, Q) for v in crt(coeff, moduli)]


@pytest.mark.parametrize("which", ["relin", "rotate 1", "conjugate"])
def test_switching_key_relation(c, which):
    """b_j + a_j·s − G_j·s' is a small error (|e| <= 6σ) in every digit, computed pointwise in
    the NTT domain and lifted with the oracle's own INTT and CRT."""
    p = c.params
    ring = p.key_ring
    q = np.array(ring.moduli, dtype=object).reshape(-1, 1)
    s = c.keygen.secret_key().poly.numpy().astype(object)
    N = p.N
    if which == "relin":
        key, s_from = c.ev.relin_key, s * s % q
    else:
        key = c.ev.rotation_keys.keys[
            pow(5, 1, 2 * N) if which == "rotate 1" else 2 * N - 1]
        s_from = c.keygen.secret_key().poly.automorph(key.galois).numpy().astype(object)
    for j, g in enumerate(gadget_constants(p)):
        b, a = key.b[j].numpy().astype(object), key.a[j].numpy().astype(object)
        e_ntt = (b + a * s - (g % q) * s_from) % q
        e = _lift_ntt(e_ntt, ring.moduli, N)
        assert max(abs(v) for v in e) <= int(6 * p.sigma) + 1
        assert any(v != 0 for v in e)  # a real error term, not a degenerate key


def test_public_key_relation(c):
    p = c.params
    ring = p.key_ring
    q = np.array(ring.moduli, dtype=object).reshape(-1, 1)
    pk = c.encryptor.key
    s = c.keygen.secret_key().poly.to_ring(ring).numpy().astype(object)
    e = _lift_ntt((pk.b.numpy().astype(object) + pk.a.numpy().astype(object) * s) % q,
                  ring.moduli, p.N)
    assert max(abs(v) for v in e) <= int(6 * p.sigma) + 1


def test_secret_is_ternary(c):
    s = c.keygen.secret_key().poly.coefficients()
    assert set(s) <= {-1, 0, 1} and len(set(s)) == 3
