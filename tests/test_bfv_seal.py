"""Ren's BFV against Microsoft SEAL (through TenSEAL's ``sealapi``, skipped where TenSEAL is not
installed): the batch encoding is SEAL's ``BatchEncoder`` coefficient for coefficient, and the
noise budgets of the same N, t and chain are SEAL's (fresh, after a plaintext product) or
close to them (a ciphertext product: Ren's approximate extension to the auxiliary basis costs
a bit or two)."""

from __future__ import annotations

import numpy as np
import pytest
from test_bfv import context

sealapi = pytest.importorskip("tenseal.sealapi")


def test_encoding_and_noise_budget_match_seal():
    ctx = context()
    p, N, t = ctx.params, ctx.params.N, ctx.params.t
    s = sealapi
    parms = s.EncryptionParameters(s.SCHEME_TYPE.BFV)
    parms.set_poly_modulus_degree(N)
    parms.set_coeff_modulus([s.Modulus(q) for q in p.chain + p.special_moduli])
    parms.set_plain_modulus(t)
    seal = s.SEALContext(parms, True, s.SEC_LEVEL_TYPE.NONE)  # N = 2^10: insecure on purpose
    kg = s.KeyGenerator(seal)
    pk, rk = s.PublicKey(), s.RelinKeys()
    kg.create_public_key(pk)
    kg.create_relin_keys(rk)
    be, enc = s.BatchEncoder(seal), s.Encryptor(seal, pk)
    dec, ev = s.Decryptor(seal, kg.secret_key()), s.Evaluator(seal)

    x, y = (np.random.default_rng(k).integers(0, t, N) for k in (20, 21))
    pts = []
    for v in (x, y):
        pt = s.Plaintext()
        be.encode([int(a) for a in v], pt)
        pts.append(pt)
    coeffs = [pts[0][i] if i < pts[0].coeff_count() else 0 for i in range(N)]
    assert ctx.enc.encode(x).coeffs.tolist() == coeffs

    a, b = s.Ciphertext(), s.Ciphertext()
    enc.encrypt(pts[0], a)
    enc.encrypt(pts[1], b)
    prod_plain, prod = s.Ciphertext(), s.Ciphertext()
    ev.multiply_plain(a, pts[1], prod_plain)
    ev.multiply(a, b, prod)
    ev.relinearize_inplace(prod, rk)
    seal_bits = [dec.invariant_noise_budget(c) for c in (a, prod_plain, prod)]

    cx, cy = ctx.encrypt(x), ctx.encrypt(y)
    ren_bits = [ctx.dec.noise_budget(c) for c in (
        cx, ctx.ev.multiply_plain(cx, ctx.enc.encode(y)), ctx.ev.multiply(cx, cy))]
    assert abs(ren_bits[0] - seal_bits[0]) <= 1 and abs(ren_bits[1] - seal_bits[1]) <= 1
    assert seal_bits[2] - 4 <= ren_bits[2] <= seal_bits[2] + 1, (ren_bits, seal_bits)
