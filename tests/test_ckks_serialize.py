"""CKKS serialization: round trips for every object kind, the secret-key opt-in, other
parameters, and ≥ 10^4 fuzzed inputs that may only raise SerializationError."""

from __future__ import annotations

import hashlib
import json
import os
import struct

import numpy as np
import pytest
from ckks_helpers import context, random_slots

from ren.ckks import (
    Ciphertext,
    Evaluator,
    GaloisKey,
    GaloisKeys,
    Plaintext,
    PublicKey,
    RelinKey,
    SecretKey,
    dumps,
    loads,
)
from ren.ckks.serialize import CHECKSUM_SIZE, serialized_size
from ren.errors import ParameterError, SerializationError
from ren.poly import Poly
from ren.rlwe.serialize import (
    CorruptedDataError,
    FingerprintMismatchError,
    KindMismatchError,
    TruncatedDataError,
)

FUZZ_CASES = int(os.environ.get("REN_FUZZ_CASES", "10000"))


@pytest.fixture(scope="module")
def c():
    return context(N=32, depth=2, scale_bits=40, first_bits=50, steps=(1, -1, 3))


def polys_of(obj):
    if isinstance(obj, Plaintext | SecretKey):
        return [obj.poly]
    if isinstance(obj, Ciphertext):
        return list(obj.parts)
    if isinstance(obj, PublicKey):
        return [obj.b, obj.a]
    if isinstance(obj, GaloisKeys):
        return [p for g in obj.keys for p in polys_of(obj.keys[g])]
    return [*obj.b, *obj.a]


def objects(c):
    rng = np.random.default_rng(5)
    x = random_slots(16, rng)
    ct = c.encrypt(x)
    return {
        "plaintext": c.enc.encode(x, level=1),
        "ciphertext": ct,
        "ciphertext3": c.ev.multiply(ct, ct, relinearize=False),
        "rescaled": c.ev.rescale(c.ev.multiply(ct, ct)),
        "public": c.encryptor.key,
        "relin": c.ev.relin_key,
        "galois": next(iter(c.ev.rotation_keys.keys.values())),
        "galois_keys": c.ev.rotation_keys,
    }


@pytest.mark.parametrize("name", ["plaintext", "ciphertext", "ciphertext3", "rescaled",
                                  "public", "relin", "galois", "galois_keys", "secret"])
def test_round_trip(c, name):
    obj = c.keygen.secret_key() if name == "secret" else objects(c)[name]
    data = dumps(obj, allow_secret=name == "secret")
    assert len(data) == serialized_size(obj)
    back = loads(data, c.params)
    assert type(back) is type(obj) and back.params == c.params
    for a, b in zip(polys_of(obj), polys_of(back), strict=True):
        assert a.ring == b.ring and np.array_equal(a.numpy(), b.numpy())
    for attr in ("scale", "level", "galois"):
        assert getattr(back, attr, None) == getattr(obj, attr, None)
    if name == "galois_keys":  # the object's order (not sorted: a jit plan captured on it)
        assert list(back.keys) == list(obj.keys) != sorted(obj.keys)
    assert dumps(back, allow_secret=True) == data  # a fixed point


@pytest.mark.parametrize("name", ["plaintext", "ciphertext", "rescaled", "relin", "galois_keys"])
def test_montgomery_form(c, name):
    """form="montgomery" (what ren.distributed sends): the same objects, the same size, other
    bytes (the stored words, dtype code 2), and it loads to the same values."""
    obj = objects(c)[name]
    data, std = dumps(obj, form="montgomery"), dumps(obj)
    assert len(data) == len(std) and data != std
    back = loads(data, c.params)
    for a, b in zip(polys_of(obj), polys_of(back), strict=True):
        assert np.array_equal(a.numpy(), b.numpy())
    assert dumps(back, form="montgomery") == data and dumps(back) == std
    compact = dumps(obj, compact=True, form="montgomery")
    assert dumps(loads(compact, c.params), compact=True) == dumps(obj, compact=True)
    with pytest.raises(ParameterError, match="form must be 'standard' or 'montgomery'"):
        dumps(obj, form="mont")


def test_a_flipped_payload_bit_is_caught_by_the_container_checksum(c):
    """loads checks each polynomial's bytes once, with the container's checksum."""
    data = bytearray(dumps(c.encrypt([0.5]), form="montgomery"))
    data[len(data) // 2] ^= 0x04
    with pytest.raises(SerializationError, match="checksum mismatch"):
        loads(bytes(data), c.params)


def test_loaded_objects_work(c):
    x = random_slots(16, np.random.default_rng(6))
    p = c.params
    ct = loads(dumps(c.encrypt(x)), p)
    ev = Evaluator(p, relin_key=loads(dumps(c.ev.relin_key), p),
                   rotation_keys=loads(dumps(c.ev.rotation_keys), p))
    out = ev.rescale(ev.multiply(ev.rotate(ct, 1), ct))
    assert np.abs(c.decrypt(out) - np.roll(x, -1) * x).max() < 2**-20
    assert isinstance(loads(dumps(c.ev.relin_key), p), RelinKey)
    gk = loads(dumps(c.ev.rotation_keys), p)
    assert gk.steps == c.ev.rotation_keys.steps and gk.has_conjugate
    assert all(isinstance(k, GaloisKey) for k in gk.keys.values())


@pytest.mark.parametrize("name", ["symmetric", "public", "relin", "galois_keys", "ciphertext"])
def test_compact_form(c, name):
    """Uniform halves stored as seeds: a secret-key encryption and every key shrink to about
    half, load to the same words (and work), and stay compact when written again; a public-key
    encryption has no uniform half, so its compact form is the full one."""
    x = random_slots(16, np.random.default_rng(8))
    obj = c.sk_encryptor.encrypt(c.enc.encode(x)) if name == "symmetric" else objects(c)[name]
    full, small = dumps(obj), dumps(obj, compact=True)
    assert len(small) == serialized_size(obj, compact=True)
    back = loads(small, c.params)
    for a, b in zip(polys_of(obj), polys_of(back), strict=True):
        assert np.array_equal(a.numpy(), b.numpy())
    assert dumps(back, compact=True) == small and dumps(back) == full
    if name == "ciphertext":
        assert small == full
    else:
        assert len(small) < 0.6 * len(full), (len(small), len(full))  # N = 32: headers weigh
        assert small[8:10] == b"\x02\x00" and full[8:10] == b"\x01\x00"  # the version field
    if name == "symmetric":
        assert np.abs(c.decrypt(back) - x).max() < 2**-20


def test_compact_seed_records_are_checked(c):
    ct = c.sk_encryptor.encrypt(c.enc.encode([0.5]))
    data = dumps(ct, compact=True)
    at = data.index(b"RENSEED\x00")
    for bad, match in ((data[:8] + b"\x01\x00" + data[10:], "seed record in a version-1"),
                       (data[:at + 8] + b"\x00" + data[at + 9:], "NTT domain"),):
        with pytest.raises(SerializationError, match=match):
            loads(_reseal(bad[:-CHECKSUM_SIZE]), c.params)
    longer = bytearray(data[:-CHECKSUM_SIZE])
    n = int.from_bytes(longer[at - 8:at], "little")
    longer[at - 8:at] = (n + 1).to_bytes(8, "little")
    longer[at + n:at + n] = b"\x00"
    with pytest.raises(SerializationError, match="a seed record has"):
        loads(_reseal(bytes(longer)), c.params)


def test_secret_key_needs_explicit_request(c):
    with pytest.raises(ParameterError, match="allow_secret"):
        dumps(c.keygen.secret_key())
    with pytest.raises(ParameterError):
        dumps("not a CKKS object")


def test_other_parameters_are_refused(c):
    other = context(N=32, depth=1, scale_bits=40, first_bits=50, steps=(1,))
    data = dumps(c.encrypt([0.5]))
    with pytest.raises(SerializationError, match="other parameters"):
        loads(data, other.params)


def test_every_truncation_fails(c):
    data = dumps(c.encrypt([0.5]))
    for n in range(len(data)):
        with pytest.raises(SerializationError):
            loads(data[:n], c.params)
    with pytest.raises(SerializationError):
        loads(data + b"\x00", c.params)


def _reseal(body: bytes) -> bytes:
    return body + hashlib.sha256(body).digest()[:CHECKSUM_SIZE]


def test_fuzz_only_serialization_errors(c):
    """Bit flips, truncations, insertions and random bytes, half of them with a recomputed
    checksum so that they reach the parser.  Inputs that still decode must be well-formed."""
    rng = np.random.default_rng(1234)
    seeds = [dumps(o) for o in objects(c).values() if not isinstance(o, GaloisKeys)]
    seeds += [dumps(c.sk_encryptor.encrypt(c.enc.encode([0.25])), compact=True),
              dumps(c.ev.relin_key, compact=True)]
    raised = decoded = 0
    for i in range(FUZZ_CASES):
        data = bytearray(seeds[i % len(seeds)])
        kind = i % 5
        if kind == 0:  # flip 1-4 bits
            for _ in range(rng.integers(1, 5)):
                pos = int(rng.integers(len(data)))
                data[pos] ^= 1 << int(rng.integers(8))
        elif kind == 1:  # truncate
            data = data[: int(rng.integers(len(data)))]
        elif kind == 2:  # random bytes
            data = bytearray(rng.bytes(int(rng.integers(0, 3000))))
        elif kind == 3:  # overwrite a header-ish byte range
            pos = int(rng.integers(min(len(data), 200)))
            data[pos:pos + 4] = rng.bytes(4)
        else:  # insert or delete bytes in the middle
            pos = int(rng.integers(len(data)))
            data = data[:pos] + rng.bytes(int(rng.integers(0, 9))) + data[pos + 1:]
        if i % 2 and len(data) > CHECKSUM_SIZE:  # reach the parser past the checksum
            data = bytearray(_reseal(bytes(data[:-CHECKSUM_SIZE])))
        try:
            obj = loads(bytes(data), c.params)
        except SerializationError:
            raised += 1
            continue
        decoded += 1  # a mutation that kept the data valid (e.g. another scale digit)
        assert obj.params == c.params
    print(f"[ckks fuzz] {FUZZ_CASES} inputs: {raised} SerializationError, {decoded} decoded")
    assert raised + decoded == FUZZ_CASES and raised >= 0.9 * FUZZ_CASES


def test_non_bytes_input(c):
    for bad in (None, "text", 3, [1, 2]):
        with pytest.raises(SerializationError):
            loads(bad, c.params)
    with pytest.raises(ParameterError):
        loads(b"", "not params")


# -- issue 38: dumps' options are checked (found by tests/api_fuzz.py) ---------------------------
@pytest.mark.parametrize("option, value, match", [
    ("compact", np.zeros(2), r"dumps: compact must be True or False"),
    ("compact", "yes", r"dumps: compact must be True or False"),
    ("allow_secret", 1, r"dumps: allow_secret must be True or False"),
    ("form", [], r"dumps: form must be a str, got list \[\]; 'standard' or 'montgomery'"),
    ("form", np.array(["standard"]), r"dumps: form must be a str"),
])
def test_dumps_options_are_checked(c, option, value, match):
    """Before: NumPy's ambiguous-truth ValueError (compact=array), TypeError "unhashable type"
    (form=[]), and a truthy string or 1 taken as True."""
    ct = c.encrypt([0.5])
    with pytest.raises(ParameterError, match=match):
        dumps(ct, **{option: value})


# -- the layout, read by hand (ren.ckks.serialize writes through ren.rlwe.serialize's container) --
def _read_by_hand(data: bytes) -> tuple[int, int, bytes, dict, list[bytes]]:
    """(version, kind, fingerprint, metadata, records) of a container, parsed with struct alone
    after the module docstring's layout; the checksum checked with hashlib."""
    assert data[-16:] == hashlib.sha256(data[:-16]).digest()[:16]
    magic, version, kind, reserved, fp, meta_len = struct.unpack_from("<8sHBB16sI", data)
    assert magic == b"RENCKKS\x00" and reserved == 0
    pos = 32
    meta = json.loads(data[pos:pos + meta_len])
    pos += meta_len
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    records = []
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", data, pos)
        records.append(data[pos + 8:pos + 8 + n])
        pos += 8 + n
    assert pos == len(data) - 16
    return version, kind, fp, meta, records


@pytest.mark.parametrize("name, kind", [("ciphertext", 2), ("plaintext", 1), ("relin", 5),
                                        ("galois_keys", 7), ("public", 4)])
def test_the_layout_read_by_hand(c, name, kind):
    """The bytes are the documented layout (the same since version 1): a reader of its own
    finds the kind, the fingerprint, the metadata and each polynomial, stored whole or (compact)
    as b"RENSEED\\0" + domain 1 + the 32-byte seed of its uniform sample."""
    obj = objects(c)[name]
    version, got_kind, fp, meta, records = _read_by_hand(dumps(obj))
    assert (version, got_kind, fp) == (1, kind, c.params.fingerprint)
    if kind in (1, 2):
        assert meta == {"level": obj.level, "scale": [str(obj.scale.numerator),
                                                      str(obj.scale.denominator)]}
    polys = polys_of(obj)
    assert len(records) == len(polys)
    for rec, p in zip(records, polys, strict=True):
        assert np.array_equal(Poly.frombytes(rec).numpy(), p.numpy())
    version, _, _, _, records = _read_by_hand(dumps(obj, compact=True))
    seeds = [p.random_origin().seed for p in polys if p.random_origin() is not None
             and p.random_origin().kind == "uniform"]
    assert version == (2 if seeds else 1)
    assert [r[9:] for r in records if r[:8] == b"RENSEED\x00"] == seeds
    assert all(r[8] == 1 for r in records if r[:8] == b"RENSEED\x00")  # the NTT domain
    keys = len(obj.keys) if name == "galois_keys" else 1
    assert len(seeds) == {"ciphertext": 0, "plaintext": 0, "relin": len(c.params.digits),
                          "galois_keys": len(c.params.digits) * keys, "public": 1}[name]


def test_each_problem_has_its_serialization_error_subclass(c):
    data = dumps(c.ev.relin_key, compact=True)
    with pytest.raises(TruncatedDataError, match=r"ren\.ckks\.loads: truncated"):
        loads(data[:len(data) // 2], c.params)
    flipped = bytearray(data)
    flipped[len(data) - 100] ^= 1  # inside the last record
    with pytest.raises(CorruptedDataError, match="checksum mismatch") as e:
        loads(bytes(flipped), c.params)
    assert not isinstance(e.value, TruncatedDataError)
    other = context(N=32, depth=1, scale_bits=40, first_bits=50, steps=(1,))
    with pytest.raises(FingerprintMismatchError, match="load it with the CKKSParams"):
        loads(data, other.params)
    with pytest.raises(KindMismatchError, match=r"read it with ren\.bfv\.loads"):
        loads(b"RENBFV\x00\x00" + data[8:], c.params)
    for cls in (TruncatedDataError, CorruptedDataError, FingerprintMismatchError,
                KindMismatchError):
        assert issubclass(cls, SerializationError)
