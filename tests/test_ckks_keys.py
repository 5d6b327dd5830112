"""Key objects: sizes in bytes, rotation-step bookkeeping, the progress bar."""

from __future__ import annotations

import pytest
from ckks_helpers import context, make_params

import ren
from ren.ckks import GaloisKeys, KeyGenerator
from ren.errors import ParameterError
from ren.rlwe import normalize_steps


def test_key_sizes_in_bytes():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))
    p = c.params
    qp = p.key_ring
    assert c.keygen.secret_key().nbytes == 4 * qp.limbs * p.N
    assert c.encryptor.key.nbytes == 2 * 4 * qp.limbs * p.N  # the public key lives over QP
    assert c.ev.relin_key.nbytes == 2 * p.dnum * 4 * qp.limbs * p.N
    gk = c.ev.rotation_keys
    assert gk.nbytes == len(gk) * c.ev.relin_key.nbytes
    assert f"{gk.nbytes} bytes" in repr(gk) and "conjugation" in repr(gk)


def test_steps_are_normalized_mod_slots():
    assert normalize_steps([1, -1, 17, 16, 0, 33], 16) == [1, 15]
    assert normalize_steps(None, 16) == [1, 2, 4, 8]
    with pytest.raises(ParameterError):
        normalize_steps([1.5], 16)


def test_rotation_keys_with_progress_bar(capsys):
    p = make_params(N=32, depth=1, scale_bits=40, first_bits=50, insecure=True)
    with ren.random.seeded(1):
        gk = KeyGenerator(p).rotation_keys([1, -1, 3, 17], conjugate=True, progress=True)
    assert isinstance(gk, GaloisKeys)
    assert gk.steps == [1, 3, 15] and gk.has_conjugate  # 17 ≡ 1 (mod 16)
    assert len(gk) == 4


def test_sparse_secret_and_depth_zero():
    c = context(N=64, depth=0, scale_bits=30, first_bits=50, secret=("sparse", 8), steps=(1,))
    s = c.keygen.secret_key().poly.coefficients()
    assert sum(1 for v in s if v) == 8 and set(s) <= {-1, 0, 1}
    ct = c.encrypt([0.5, -0.5])
    assert ct.level == 0
    got = c.decrypt(c.ev.rotate(ct, 1))
    assert abs(got[0] + 0.5) < 1e-4 and abs(got[-1] - 0.5) < 1e-4
