"""Ren's BFV against Microsoft SEAL (through TenSEAL's ``sealapi``, skipped where TenSEAL is not
installed): the batch encoding is SEAL's ``BatchEncoder`` coefficient for coefficient, and the
noise budgets of the same N, t and chain are SEAL's within 2 bits after every operation: fresh,
add, plaintext product, column rotation, row swap, ciphertext product with relinearization and
a chain of products to the end of the budget (Ren's product is textbook BFV exactly: the
operands are extended from Q exactly, as SEAL's BEHZ extension does)."""

from __future__ import annotations

import numpy as np
import pytest
from test_bfv import context

sealapi = pytest.importorskip("tenseal.sealapi")

#: the budgets (bits) may differ by this much: different keys and noise samples
SLACK = 2


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
    pk, rk, gk = s.PublicKey(), s.RelinKeys(), s.GaloisKeys()
    kg.create_public_key(pk)
    kg.create_relin_keys(rk)
    kg.create_galois_keys(gk)
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

    def out(fn, *args):
        c = s.Ciphertext()
        fn(*args, c)
        return c

    a, b = out(enc.encrypt, pts[0]), out(enc.encrypt, pts[1])
    seal_cts = {"fresh": a, "add": out(ev.add, a, b),
                "multiply_plain": out(ev.multiply_plain, a, pts[1]),
                # SEAL's rotate_rows(k) is Ren's rotate_columns(k); its rotate_columns swaps rows
                "rotate_columns": out(ev.rotate_rows, a, 1, gk),
                "rotate_rows": out(ev.rotate_columns, a, gk)}
    c = a
    for i in range(1, 4):
        c = out(ev.multiply, c, b)
        ev.relinearize_inplace(c, rk)
        seal_cts[f"multiply x{i}"] = c
    seal_bits = {k: dec.invariant_noise_budget(v) for k, v in seal_cts.items()}

    r = ctx.ev
    cx, cy = ctx.encrypt(x), ctx.encrypt(y)
    ren_cts = {"fresh": cx, "add": r.add(cx, cy),
               "multiply_plain": r.multiply_plain(cx, ctx.enc.encode(y)),
               "rotate_columns": r.rotate_columns(cx, 1), "rotate_rows": r.rotate_rows(cx)}
    c = cx
    for i in range(1, 4):
        c = r.multiply(c, cy)
        ren_cts[f"multiply x{i}"] = c
    ren_bits = {k: ctx.dec.noise_budget(v) for k, v in ren_cts.items()}
    assert seal_bits["multiply x3"] > 10  # the chain stays inside the budget
    for k in seal_bits:
        assert abs(ren_bits[k] - seal_bits[k]) <= SLACK, (k, ren_bits, seal_bits)
    # the same operations: SEAL's decryption of its results is Ren's of its own
    for k in ("rotate_columns", "rotate_rows", "multiply x3"):
        pt = s.Plaintext()
        dec.decrypt(seal_cts[k], pt)
        seal_values = np.array(be.decode_uint64(pt), np.int64)
        assert (seal_values == ctx.decrypt(ren_cts[k])).all(), k
