"""BFV serialization (`ren.bfv.serialize` over `ren.rlwe.serialize`): round trips of every kind,
the compact (seeded) form, and every truncation, byte flip, foreign parameter set, wrong kind and
forged field raising its SerializationError subclass.  Small insecure rings (N = 256): fast."""

from __future__ import annotations

import hashlib
import warnings
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ren.random
from ren.bfv import (
    BFVParams,
    Ciphertext,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    Plaintext,
    galois_keys,
)
from ren.bfv.serialize import MAGIC, dumps, loads, serialized_size
from ren.errors import ParameterError, SerializationError
from ren.rlwe import GaloisKeys, KeyGenerator, PublicKey, RelinKey, SecretKey
from ren.rlwe.serialize import (
    CorruptedDataError,
    FingerprintMismatchError,
    KindMismatchError,
    TruncatedDataError,
    ints_record,
    write_container,
)

N, T = 256, 7681


@cache
def params(t: int = T, chain: int = 3) -> BFVParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BFVParams.generate(N, t, chain, 1, insecure=True)


@cache
def ctx():
    p = params()
    with ren.random.seeded("test_bfv_serialize"):
        kg = KeyGenerator(p)
        sk, pk, rk = kg.secret_key(), kg.public_key(), kg.relin_key()
        gk = galois_keys(kg, [1, 3])
    return p, kg, sk, pk, rk, gk


def values(seed: int = 0, k: int = N) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(-(T // 2), T // 2, k)]


def residues(polys) -> list[np.ndarray]:
    return [np.asarray(q.numpy()) for q in polys]


def decrypt(ct: Ciphertext) -> list[int]:
    p, _, sk, *_ = ctx()
    return Encoder(p).decode(Decryptor(p, sk).decrypt(ct), signed=True).tolist()


def fresh(secret: bool = True, x: list[int] | None = None) -> Ciphertext:
    p, _, sk, pk, *_ = ctx()
    return Encryptor(p, sk if secret else pk).encrypt(Encoder(p).encode(x or values()))


# -- round trips -----------------------------------------------------------------------------------
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("secret", [False, True])
def test_ciphertext_round_trip_decrypts_the_same(compact, secret):
    x = values()
    ct = fresh(secret, x)
    back = loads(dumps(ct, compact=compact), ctx()[0], expect=Ciphertext)
    assert isinstance(back, Ciphertext) and back.size == 2
    for a, b in zip(residues(ct.parts), residues(back.parts), strict=True):
        np.testing.assert_array_equal(a, b)
    assert decrypt(back) == [((v + T // 2) % T) - T // 2 for v in x]


def test_three_part_product_and_montgomery_form():
    p, _, _, _, rk, _ = ctx()
    x, y = values(), values(7)
    ev = Evaluator(p, rk)
    prod = ev.multiply(fresh(True, x), fresh(True, y), relin=False)
    for form in ("standard", "montgomery"):
        back = loads(dumps(prod, form=form), p)
        assert back.size == 3
        got = decrypt(ev.relinearize(back))
        want = [((a * b + T // 2) % T) - T // 2 for a, b in zip(x, y, strict=True)]
        assert got == want


def test_plaintext_round_trip_and_range_check():
    p = ctx()[0]
    pt = Encoder(p).encode(values())
    back = loads(dumps(pt), p, expect=Plaintext)
    np.testing.assert_array_equal(back.coeffs, pt.coeffs)
    assert len(dumps(pt)) == serialized_size(pt)
    bad = pt.coeffs.copy()
    bad[5] = T  # not below t: a forged record with a valid checksum
    forged = write_container(MAGIC, 1, p.fingerprint, {}, [ints_record(bad)])
    with pytest.raises(CorruptedDataError, match="not below 7681"):
        loads(forged, p)


@pytest.mark.parametrize("compact", [False, True])
def test_keys_round_trip(compact):
    p, _, sk, pk, rk, gk = ctx()
    back_sk = loads(dumps(sk, allow_secret=True, compact=compact), p, expect=SecretKey)
    np.testing.assert_array_equal(back_sk.poly.numpy(), sk.poly.numpy())
    back_pk = loads(dumps(pk, compact=compact), p, expect=PublicKey)
    for a, b in zip(residues((pk.b, pk.a)), residues((back_pk.b, back_pk.a)), strict=True):
        np.testing.assert_array_equal(a, b)
    back_rk = loads(dumps(rk, compact=compact), p, expect=RelinKey)
    for a, b in zip(residues((*rk.b, *rk.a)), residues((*back_rk.b, *back_rk.a)), strict=True):
        np.testing.assert_array_equal(a, b)
    back_gk = loads(dumps(gk, compact=compact), p, expect=GaloisKeys)
    assert sorted(back_gk.keys) == sorted(gk.keys)
    one = gk.keys[sorted(gk.keys)[0]]
    assert loads(dumps(one, compact=compact), p).galois == one.galois
    # the loaded keys work: a rotation with them decrypts to the rotated row
    x = values()
    ev = Evaluator(p, back_rk, back_gk)
    got = decrypt(ev.rotate_columns(Encryptor(p, back_pk).encrypt(Encoder(p).encode(x)), 1))
    half = N // 2
    want = [((v + T // 2) % T) - T // 2 for v in x]
    assert got == want[1:half] + want[:1] + want[half + 1:] + want[half:half + 1]


def test_compact_is_about_half_and_sizes_are_predicted():
    _, _, _, pk, rk, gk = ctx()
    ct = fresh(True)
    for obj in (ct, pk, rk, gk):
        full, small = dumps(obj), dumps(obj, compact=True)
        assert 0.45 < len(small) / len(full) < 0.55, type(obj).__name__
        assert len(full) == serialized_size(obj)
        assert len(small) == serialized_size(obj, compact=True)
    # a public-key encryption has no uniform half: its compact form is its full form
    pub = fresh(False)
    assert dumps(pub, compact=True) == dumps(pub)


def test_secret_key_needs_allow_secret_and_bad_objects_are_refused():
    p, _, sk, *_ = ctx()
    with pytest.raises(ParameterError, match="allow_secret=True"):
        dumps(sk)
    with pytest.raises(ParameterError, match="cannot serialize a list"):
        dumps([1, 2])
    with pytest.raises(ParameterError, match="form"):
        dumps(fresh(), form="bogus")
    with pytest.raises(ParameterError, match="expect must be one of"):
        loads(dumps(fresh()), p, expect=int)


# -- every way the data can be wrong ---------------------------------------------------------------
def test_every_truncation_raises_truncated():
    p = ctx()[0]
    for data in (dumps(fresh(True), compact=True), dumps(Encoder(p).encode(values(9)))):
        for n in range(len(data)):
            with pytest.raises(TruncatedDataError):
                loads(data[:n], p)


def test_every_byte_flip_raises_corrupted():
    p = ctx()[0]
    data = dumps(fresh(True), compact=True)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x01
        with pytest.raises(CorruptedDataError):
            loads(bytes(bad), p)
    with pytest.raises(CorruptedDataError, match=r"unexpected|corrupted"):
        loads(data + b"\x00", p)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=8))
def test_random_byte_changes_raise(flips):
    p = ctx()[0]
    data = bytearray(_full_ct_bytes())
    for pos, x in flips:
        data[pos % len(data)] ^= x
    if bytes(data) == _full_ct_bytes():  # the flips cancelled out
        return
    with pytest.raises(SerializationError):
        loads(bytes(data), p)


@cache
def _full_ct_bytes() -> bytes:
    return dumps(fresh(True))


def test_other_parameters_and_other_kinds():
    p = ctx()[0]
    data = dumps(fresh(True))
    other_t = params(t=12289)  # the same chain, another t: another fingerprint
    with pytest.raises(FingerprintMismatchError, match="other parameters"):
        loads(data, other_t)
    with pytest.raises(KindMismatchError, match="holds a Ciphertext, not a RelinKey"):
        loads(data, p, expect=RelinKey)
    ckks_like = b"RENCKKS\x00" + data[8:]
    with pytest.raises(KindMismatchError, match=r"ren\.ckks\.loads"):
        loads(ckks_like, p)
    with pytest.raises(CorruptedDataError, match="wrong magic"):
        loads(b"XXXXXXXX" + data[8:], p)
    with pytest.raises(CorruptedDataError, match="expected bytes"):
        loads("text", p)  # type: ignore[arg-type]


def test_forged_fields_with_valid_checksums():
    p = ctx()[0]
    ct = fresh(True)
    polys = [q.tobytes() for q in ct.parts]
    cases = [
        (2, {}, polys[:1], "2 or 3 polynomials"),
        (2, {"level": 1}, polys, "no metadata"),
        (1, {}, polys[:1], "integer record"),
        (9, {}, polys, "unknown object kind"),
        (6, {"galois": 4}, polys, "polynomials for these parameters|odd int"),
        # a polynomial of another ring (the key ring Q·P) where Q is expected
        (2, {}, [ctx()[3].b.tobytes(), polys[1]], "expected"),
    ]
    for kind, meta, records, msg in cases:
        data = write_container(MAGIC, kind, p.fingerprint, meta, records)
        with pytest.raises(CorruptedDataError, match=msg):
            loads(data, p)
    # a seed record in a version-1 container (the version byte says no seeds)
    body = bytearray(dumps(ct, compact=True)[:-16])
    body[8] = 1
    forged = bytes(body) + hashlib.sha256(body).digest()[:16]
    with pytest.raises(CorruptedDataError, match="seed record in a version-1"):
        loads(forged, p)


def test_bgv_ciphertexts_keep_level_and_factor():
    bgv = pytest.importorskip("ren.bfv.bgv")
    from ren.bfv.bgv_params import BGVParams

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = BGVParams.generate(N, T, 2, insecure=True)
    with ren.random.seeded("test_bfv_serialize:bgv"):
        kg = KeyGenerator(p)
        sk, rk = kg.secret_key(), kg.relin_key()
    x, y = values(11), values(12)
    enc = Encoder(p)
    ev = bgv.BGVEvaluator(p, rk)
    prod = ev.multiply(bgv.BGVEncryptor(p, sk).encrypt(enc.encode(x)),
                       bgv.BGVEncryptor(p, sk).encrypt(enc.encode(y)))
    assert prod.level == 1 and prod.factor != 1  # the switch changed the factor
    back = loads(dumps(prod), p, expect=bgv.BGVCiphertext)
    assert (back.level, back.factor, back.size) == (prod.level, prod.factor, prod.size)
    got = enc.decode(bgv.BGVDecryptor(p, sk).decrypt(back)).tolist()
    assert got == [a * b % T for a, b in zip(x, y, strict=True)]
    assert len(dumps(prod)) == serialized_size(prod)
    # the plaintext and the keys under BGVParams
    np.testing.assert_array_equal(loads(dumps(enc.encode(x)), p).coeffs, enc.encode(x).coeffs)
    assert len(loads(dumps(rk, compact=True), p).b) == len(rk.b)
    # BFV data does not load under BGVParams, nor a forged BGV record under BFVParams
    with pytest.raises(FingerprintMismatchError):
        loads(dumps(fresh()), p)
    data = dumps(prod)
    with pytest.raises(KindMismatchError, match="holds a BGVCiphertext, not a Ciphertext"):
        loads(data, p, expect=Ciphertext)
    forged = write_container(MAGIC, 8, ctx()[0].fingerprint, {"level": 0, "factor": 1},
                             [q.tobytes() for q in fresh().parts])
    with pytest.raises(CorruptedDataError, match="needs BGVParams"):
        loads(forged, ctx()[0])
    bad = write_container(MAGIC, 8, p.fingerprint, {"level": 9, "factor": 1},
                          [q.tobytes() for q in prod.parts])
    with pytest.raises(CorruptedDataError, match="'level'"):
        loads(bad, p)
