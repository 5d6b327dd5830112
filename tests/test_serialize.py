"""ren.serialize: the versioned binary format of one polynomial.

Round trips over many rings, the byte layout pinned against a hand-built encoding, every
documented error with its message, and a fuzz corpus (truncations, bit flips, garbage, trailing
bytes, forged-but-checksummed headers) on which decoding may only raise SerializationError.
"""

from __future__ import annotations

import hashlib
import random
import struct
import tracemalloc
from functools import cache

import numpy as np
import pytest
from conftest import ring
from hypothesis import given, settings
from hypothesis import strategies as st

from ren.errors import ParameterError, SerializationError, ShapeError
from ren.ring import Domain, RingSpec
from ren.serialize import (
    CHECKSUM_SIZE,
    FORMAT_VERSION,
    MAGIC,
    MAX_LIMBS,
    SUPPORTED_VERSIONS,
    PayloadDType,
    decode_poly,
    encode_poly,
    header_size,
    read_poly,
)

NS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


# -- helpers ------------------------------------------------------------------------------------
def random_residues(ring_: RingSpec, seed: int) -> np.ndarray:
    """(limbs × N) standard residues with the edge values 0, 1, q-1 planted at the start."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in ring_.moduli:
        row = rng.integers(0, q, ring_.N, dtype=np.int64)
        row[: min(3, ring_.N)] = (0, q - 1, 1)[: min(3, ring_.N)]
        rows.append(row)
    return np.array(rows, dtype=np.uint32)


def forge(N: int, moduli, payload, *, domain: int = 0, dtype: int = 1, version: int = 1,
          magic: bytes = MAGIC, hlen: int | None = None, plen: int | None = None,
          checksum: bool = True) -> bytes:
    """Bytes laid out per the format table, with arbitrary field values and a correct checksum
    (so decoding gets past the integrity check and must catch the semantic problem)."""
    L = len(moduli)
    body = np.asarray(payload, dtype="<u4").tobytes() if not isinstance(payload, bytes) \
        else payload
    hlen = 28 + 4 * L if hlen is None else hlen
    plen = len(body) if plen is None else plen
    data = (magic + struct.pack("<HHIH", version, hlen, N, L)
            + b"".join(struct.pack("<I", q) for q in moduli)
            + struct.pack("<BBQ", domain, dtype, plen) + body)
    return data + (hashlib.sha256(data).digest()[:16] if checksum else bytes(16))


def expect_error(data, *fragments: str) -> SerializationError:
    """decode_poly(data) must raise exactly SerializationError whose message has `fragments`."""
    try:
        decode_poly(data)
    except SerializationError as exc:
        assert type(exc) is SerializationError
        msg = str(exc)
        for frag in fragments:
            assert frag in msg, f"{frag!r} not in {msg!r}"
        return exc
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped decode_poly: {exc!r}")
    pytest.fail(f"decode_poly accepted bad input {bytes(data)[:48]!r}...")


def must_reject(data) -> None:
    """Fuzz check: only SerializationError, never success, never another type."""
    try:
        decode_poly(data)
    except SerializationError as exc:
        assert type(exc) is SerializationError, type(exc)
        return
    except Exception as exc:
        raise AssertionError(
            f"{type(exc).__name__} escaped decode_poly on {bytes(data)[:48]!r}...: {exc!r}"
        ) from exc
    raise AssertionError(f"decode_poly accepted corrupted input {bytes(data)[:48]!r}...")


@cache
def samples() -> tuple[bytes, ...]:
    """A few valid encodings of different shapes (cached; bytes are immutable)."""
    out = []
    for i, (N, L, bits, dom) in enumerate([(2, 1, 30, Domain.COEFF), (4, 2, 31, Domain.NTT),
                                           (8, 3, 31, Domain.NTT), (16, 6, 30, Domain.COEFF),
                                           (64, 2, 30, Domain.NTT),
                                           (256, 2, 31, Domain.COEFF)]):
        r = ring(N, L, bits)
        out.append(encode_poly(r, dom, random_residues(r, 1000 + i)))
    return tuple(out)


# -- round trips --------------------------------------------------------------------------------
@given(N=st.sampled_from(NS), L=st.integers(1, 6), bits=st.sampled_from((30, 31)),
       domain=st.sampled_from(list(Domain)), seed=st.integers(0, 2**32 - 1))
def test_roundtrip(N, L, bits, domain, seed):
    r = ring(N, L, bits)
    res = random_residues(r, seed)
    data = encode_poly(r, domain, res)
    assert isinstance(data, bytes)
    assert len(data) == header_size(L) + 4 * L * N + CHECKSUM_SIZE
    ring2, domain2, res2 = decode_poly(data)
    assert ring2 == r and ring2.moduli == r.moduli
    assert domain2 is domain
    assert res2.dtype == np.uint32 and res2.shape == (L, N)
    assert res2.flags.c_contiguous and res2.flags.writeable and res2.flags.owndata
    np.testing.assert_array_equal(res2, res)
    assert encode_poly(ring2, domain2, res2) == data  # canonical: one encoding per value


@given(N=st.sampled_from(NS), L=st.integers(1, 6), bits=st.sampled_from((30, 31)),
       domain=st.sampled_from(list(Domain)), seed=st.integers(0, 2**32 - 1))
def test_montgomery_payload_roundtrip_against_python_ints(N, L, bits, domain, seed):
    """dtype 2 stores r·2^32 mod q_i (checked with Python ints, not with ren's own conversion);
    decode_poly returns standard residues for it, read_poly the stored words and their form."""
    r = ring(N, L, bits)
    res = random_residues(r, seed)
    mont = np.array([[(int(x) << 32) % q for x in row] for row, q in zip(res, r.moduli)],
                    dtype=np.uint32)
    data = encode_poly(r, domain, mont, PayloadDType.U32_MONTGOMERY)
    assert len(data) == header_size(L) + 4 * L * N + CHECKSUM_SIZE
    assert data[19 + 4 * L] == 2  # the dtype code byte
    ring2, domain2, res2 = decode_poly(data)
    assert (ring2, domain2) == (r, domain)
    assert res2.flags.c_contiguous and res2.flags.writeable and res2.dtype == np.uint32
    np.testing.assert_array_equal(res2, res)
    ring3, domain3, form, stored = read_poly(data)
    assert (ring3, domain3, form) == (r, domain, PayloadDType.U32_MONTGOMERY)
    np.testing.assert_array_equal(stored, mont)
    assert not stored.flags.writeable  # a view of the bytes: the caller copies
    assert encode_poly(r, domain, mont, PayloadDType.U32_MONTGOMERY) == data


def test_read_poly_without_checksum_skips_only_the_checksum():
    r = ring(8, 2, 30)
    data = bytearray(encode_poly(r, Domain.NTT, random_residues(r, 3)))
    data[header_size(2)] ^= 0x01  # residue [0, 0] = 0 becomes 1: only the checksum can tell
    with pytest.raises(SerializationError, match="checksum mismatch"):
        read_poly(bytes(data))
    ring2, _, _, words = read_poly(memoryview(data), checksum=False)
    assert ring2 == r and words.shape == (2, 8)
    bad = bytearray(data)
    bad[12:16] = struct.pack("<I", 3)  # N = 3: still refused
    with pytest.raises(SerializationError, match="N=3 is not a power of two"):
        read_poly(bytes(bad), checksum=False)
    over = bytearray(data)
    over[header_size(2):header_size(2) + 4] = struct.pack("<I", r.moduli[0])  # = q_0
    with pytest.raises(SerializationError, match="is not below its modulus"):
        read_poly(bytes(over), checksum=False)


def test_encode_poly_refuses_an_unknown_dtype():
    r = ring(4, 1, 30)
    with pytest.raises(ParameterError, match="unknown payload dtype 7"):
        encode_poly(r, Domain.COEFF, random_residues(r, 1), 7)


@given(st.data())
def test_roundtrip_hypothesis_residues(data):
    """Residues drawn element by element (edge values often) for small rings."""
    N = data.draw(st.sampled_from((2, 4, 8)))
    r = ring(N, data.draw(st.integers(1, 6)), data.draw(st.sampled_from((30, 31))))
    rows = [data.draw(st.lists(st.one_of(st.sampled_from((0, 1, q - 1)), st.integers(0, q - 1)),
                               min_size=N, max_size=N)) for q in r.moduli]
    domain = data.draw(st.sampled_from(list(Domain)))
    r2, d2, res = decode_poly(encode_poly(r, domain, np.array(rows, dtype=np.int64)))
    assert (r2, d2) == (r, domain)
    assert res.tolist() == rows


def test_roundtrip_extremes():
    """The largest N RingSpec allows, and many limbs."""
    r = ring(1 << 17, 1, 31)
    res = random_residues(r, 7)
    _, _, back = decode_poly(encode_poly(r, Domain.NTT, res))
    np.testing.assert_array_equal(back, res)
    r = ring(2, 64, 31)
    res = random_residues(r, 8)
    _, _, back = decode_poly(encode_poly(r, Domain.COEFF, res))
    np.testing.assert_array_equal(back, res)


def test_decode_accepts_bytes_like_and_returns_a_fresh_array():
    data = samples()[2]
    want = decode_poly(data)
    big = bytearray(b"xx" + data + b"yy")
    octets, words = np.frombuffer(data, np.uint8), np.frombuffer(data, "<u4")  # whole words
    for form in (bytearray(data), memoryview(data), memoryview(big)[2:-2], octets.data,
                 octets.reshape(-1, 4).data, words.data, words.reshape(-1, 2).data):
        got = decode_poly(form)
        assert got[:2] == want[:2]
        np.testing.assert_array_equal(got[2], want[2])
    # the result does not alias the input buffer
    buf = bytearray(data)
    _, _, res = decode_poly(buf)
    before = res.copy()
    buf[header_size(3):header_size(3) + 8] = bytes(8)
    np.testing.assert_array_equal(res, before)
    res[0, 0] = 0  # writable


def test_encode_accepts_integer_forms():
    r = ring(4, 2, 30)
    res = random_residues(r, 3)
    want = encode_poly(r, Domain.COEFF, res)
    for form in (res.astype(np.int64), res.astype(np.uint64), res.tolist(),
                 res.astype(object), np.asfortranarray(res), res.astype(">u4")):
        assert encode_poly(r, Domain.COEFF, form) == want
    assert encode_poly(r, "ntt", res) == encode_poly(r, Domain.NTT, res)


# -- the layout ---------------------------------------------------------------------------------
def test_layout_matches_the_documented_table():
    r = ring(2, 2, 30)
    res = np.array([[0, r.moduli[0] - 1], [5, 7]], dtype=np.uint32)
    data = encode_poly(r, Domain.NTT, res)
    q0, q1 = r.moduli
    body = (b"RENPOLY\x00"                  # magic
            + (1).to_bytes(2, "little")     # version
            + (36).to_bytes(2, "little")    # header length 28 + 4·2
            + (2).to_bytes(4, "little")     # N
            + (2).to_bytes(2, "little")     # limbs
            + q0.to_bytes(4, "little") + q1.to_bytes(4, "little")
            + bytes([1])                    # domain NTT
            + bytes([1])                    # dtype u32 standard
            + (16).to_bytes(8, "little")    # payload length 4·2·2
            + b"".join(int(v).to_bytes(4, "little") for v in res.ravel()))
    assert data == body + hashlib.sha256(body).digest()[:16]
    assert header_size(2) == 36 and header_size(2) % 4 == 0
    assert FORMAT_VERSION == 1 and SUPPORTED_VERSIONS == (1,)


# -- encode errors ------------------------------------------------------------------------------
def test_encode_rejects_bad_input():
    r = ring(4, 2, 30)
    q0, q1 = r.moduli
    good = random_residues(r, 4)
    with pytest.raises(ShapeError, match=r"shape \(2, 4\)"):
        encode_poly(r, Domain.COEFF, good[:1])
    with pytest.raises(ShapeError, match="shape"):
        encode_poly(r, Domain.COEFF, good.ravel())
    with pytest.raises(ShapeError):
        encode_poly(r, Domain.COEFF, [[1, 2, 3, 4], [1, 2]])
    with pytest.raises(ShapeError, match="integer"):
        encode_poly(r, Domain.COEFF, good.astype(np.float64))
    with pytest.raises(ShapeError, match="integer"):
        encode_poly(r, Domain.COEFF, good.astype(bool))
    with pytest.raises(ShapeError, match="integer"):
        encode_poly(r, Domain.COEFF, [[1, 2, 3, 4], [1, 2, 3.0, 4]])
    with pytest.raises(ShapeError, match=r"integers; residue \[1, 2\] is str"):
        encode_poly(r, Domain.COEFF, np.array([[1, 2, 3, 4], [1, 2, "3", 4]], dtype=object))
    with pytest.raises(ShapeError, match=r"\[0, 1\].*out of range"):
        encode_poly(r, Domain.COEFF, [[1, 2**70, 3, 4], [1, 2, 3, 4]])
    for bad_value, row in ((-1, 0), (q0, 0), (q1, 1), (2**40, 1)):
        bad = good.astype(np.int64)
        bad[row, 2] = bad_value
        with pytest.raises(ShapeError, match=rf"\[{row}, 2\].*q_{row}"):
            encode_poly(r, Domain.COEFF, bad)
        with pytest.raises(ShapeError, match=rf"\[{row}, 2\]"):
            encode_poly(r, Domain.COEFF, bad.tolist())
    # q1 < q0: q1 is a fine residue in row 0 but not in row 1
    ok = good.copy()
    ok[0, 0] = q1
    encode_poly(r, Domain.COEFF, ok)
    with pytest.raises(ParameterError, match="RingSpec"):
        encode_poly((4, (q0, q1)), Domain.COEFF, good)
    with pytest.raises(ParameterError, match="domain"):
        encode_poly(r, "eval", good)


# -- decode errors, one by one --------------------------------------------------------------------
def test_wrong_magic():
    data = samples()[0]
    expect_error(b"XENPOLY\x00" + data[8:], "wrong magic", "RENPOLY")
    expect_error(b"PK\x03\x04", "wrong magic")
    expect_error(b"", "truncated")
    expect_error(b"REN", "truncated")


def test_unsupported_version_names_the_supported_ones():
    r = ring(2, 1, 30)
    res = random_residues(r, 0)
    for v in (0, 2, 65535):
        exc = expect_error(forge(2, r.moduli, res, version=v), f"unsupported format version {v}",
                           "version(s) 1")
        if v > 1:
            assert "upgrade" in str(exc)
    # the version is checked before anything else after the magic, even in short data
    expect_error(MAGIC + struct.pack("<H", 9), "unsupported format version 9")


def test_truncated_and_trailing():
    data = samples()[1]
    expect_error(data[:9], "truncated")
    expect_error(data[:15], "truncated", "fixed header")
    expect_error(data[:30], "truncated", "header")
    expect_error(data[:-1], "truncated", "1 missing")
    expect_error(data + b"\x00", "1 trailing byte")
    expect_error(data + data, "trailing")


def test_inconsistent_length_fields():
    r = ring(4, 2, 30)
    res = random_residues(r, 1)
    expect_error(forge(4, r.moduli, res, hlen=40), "header length field says 40", "exactly 36")
    expect_error(forge(4, r.moduli, res, plen=31), "payload length field says 31",
                 "exactly 32")
    expect_error(forge(4, r.moduli, res, plen=2**64 - 1), "payload length")


def test_checksum_mismatch_is_reported_before_payload_values():
    r = ring(4, 2, 30)
    data = bytearray(encode_poly(r, Domain.COEFF, random_residues(r, 2)))
    data[header_size(2)] ^= 0xFF  # may push a residue out of range: the checksum wins
    expect_error(data, "checksum mismatch", "corrupted")
    expect_error(forge(4, r.moduli, random_residues(r, 2), checksum=False), "checksum mismatch")
    data = bytearray(encode_poly(r, Domain.COEFF, random_residues(r, 2)))
    data[-1] ^= 1
    expect_error(data, "checksum mismatch")


def test_unknown_codes():
    r = ring(4, 1, 30)
    res = random_residues(r, 5)
    for code in (2, 255):
        expect_error(forge(4, r.moduli, res, domain=code), f"unknown domain code {code}",
                     "0 = COEFF", "1 = NTT")
    for code in (0, 3, 255):
        expect_error(forge(4, r.moduli, res, dtype=code), f"unknown dtype code {code}",
                     "1 = U32_STANDARD", "2 = U32_MONTGOMERY")


def test_invalid_ring_is_chained():
    r = ring(8, 2, 30)
    q0 = r.moduli[0]
    res = np.zeros((2, 8), dtype=np.uint32)
    cases = {
        "not prime": (q0, _composite_1_mod(16)),
        "NTT-friendly": (q0, _a_prime_not_1_mod(16)),
        "distinct": (q0, q0),
        "out of range": (q0, 2**31 + 1),
    }
    for frag, moduli in cases.items():
        exc = expect_error(forge(8, moduli, res), "invalid ring", frag)
        assert isinstance(exc.__cause__, ParameterError)


def _prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, int(n**0.5) + 1))


def _composite_1_mod(m: int) -> int:
    n = (1 << 29) + 1
    while _prime(n):
        n += m
    return n


def _a_prime_not_1_mod(m: int) -> int:
    n = (1 << 29) + 1
    while not (_prime(n) and n % m != 1):
        n += 2
    return n


def test_residue_not_below_its_modulus():
    r = ring(4, 2, 31)
    q1 = r.moduli[1]
    res = random_residues(r, 6).astype(np.int64)
    res[1, 3] = q1
    expect_error(forge(4, r.moduli, res), "residue [1, 3]", f"q_1 = {q1}",
                 "reduced below their moduli")
    res[1, 3] = 2**32 - 1
    expect_error(forge(4, r.moduli, res), "residue [1, 3]")


def test_header_limits_refused_without_allocating():
    q = ring(2, 1, 30).moduli[0]
    for N in (0, 1, 3, 6, 1 << 18, 2**32 - 1):
        expect_error(forge(N, (q,), b""), f"N={N}", "power of two")
    for L in (0, MAX_LIMBS + 1, 65535):
        data = MAGIC + struct.pack("<HHIH", 1, min(28 + 4 * L, 65535), 2, L) + bytes(64)
        expect_error(data, f"limb count {L}")
    # a header claiming N = 2^17 with MAX_LIMBS limbs (2 GiB payload) on a few hundred bytes
    data = MAGIC + struct.pack("<HHIH", 1, 28 + 4 * MAX_LIMBS, 1 << 17, MAX_LIMBS) + bytes(300)
    tracemalloc.start()
    try:
        expect_error(data, "truncated")
        data2 = forge(1 << 17, (q,) * 4, b"", plen=4 * 4 << 17)
        expect_error(data2, "truncated")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_non_bytes_input():
    for bad in ("RENPOLY", 12, None, [1, 2, 3], np.zeros(4, np.uint8)):
        expect_error(bad, "expected bytes")
    mv = memoryview(bytearray(samples()[0]))
    mv.release()
    expect_error(mv, "cannot read")


def test_encode_refuses_more_limbs_than_the_format_holds():
    r = ring(2, MAX_LIMBS + 1, 31)
    with pytest.raises(ParameterError, match=str(MAX_LIMBS)):
        encode_poly(r, Domain.COEFF, np.zeros((r.limbs, 2), np.uint32))


# -- fuzzing ------------------------------------------------------------------------------------
def test_fuzz_every_truncation():
    count = 0
    for data in samples():
        for k in range(len(data)):
            must_reject(data[:k])
            count += 1
    assert count > 2000


def test_fuzz_single_bit_flips():
    """Every bit of the small encodings, a random sample of the big one."""
    rng = random.Random(1)
    count = 0
    for data in samples():
        nbits = 8 * len(data)
        bits = range(nbits) if nbits <= 3000 else rng.sample(range(nbits), 1500)
        for b in bits:
            flipped = bytearray(data)
            flipped[b // 8] ^= 1 << (b % 8)
            must_reject(flipped)
            count += 1
    assert count > 5000


def test_fuzz_multi_bit_flips_and_byte_substitutions():
    rng = random.Random(2)
    for _ in range(2000):
        data = rng.choice(samples())
        bad = bytearray(data)
        if rng.random() < 0.5:
            for b in rng.sample(range(8 * len(bad)), rng.randint(2, 16)):
                bad[b // 8] ^= 1 << (b % 8)
        else:
            for i in rng.sample(range(len(bad)), rng.randint(1, 8)):
                bad[i] = (bad[i] + rng.randint(1, 255)) % 256
        assert bad != data
        must_reject(bytes(bad))


def test_fuzz_header_region_flips():
    """Concentrated on the header, where a flip changes lengths, codes, N or moduli."""
    rng = random.Random(3)
    for _ in range(1500):
        data = rng.choice(samples())
        hlen = struct.unpack_from("<H", data, 10)[0]
        bad = bytearray(data)
        for i in rng.sample(range(hlen), rng.randint(1, 3)):
            bad[i] ^= rng.randint(1, 255)
        must_reject(bad)


def test_fuzz_garbage_and_trailing():
    rng = random.Random(4)
    prefixes = [b"", MAGIC, MAGIC + b"\x01\x00"] + [s[:20] for s in samples()] \
        + [s[: header_size(struct.unpack_from("<H", s, 16)[0])] for s in samples()]
    for i in range(3000):
        prefix = prefixes[i % len(prefixes)]
        tail = rng.randbytes(rng.choice((0, 1, 7, 16, 40, 200, rng.randint(0, 2000))))
        must_reject(prefix + tail)
    for data in samples():
        for _ in range(100):
            must_reject(data + rng.randbytes(rng.randint(1, 64)))
        must_reject(data + data)


_POOL = ring(8, 4, 31).moduli + ring(8, 3, 30).moduli  # NTT-friendly for N <= 8


@settings(max_examples=400)
@given(N=st.sampled_from((2, 4, 8) * 4 + (0, 3, 1 << 18, 2**32 - 1)),
       moduli=st.lists(st.one_of(st.sampled_from(_POOL), st.sampled_from(_POOL),
                                 st.integers(0, 2**32 - 1)), min_size=1, max_size=4),
       domain=st.sampled_from((0, 1, 0, 1, 2)), dtype=st.sampled_from((1, 1, 1, 0, 2)),
       extra=st.sampled_from((0, 0, 0, 0, 0, -1, 1, -4, 4)), seed=st.integers(0, 2**16),
       version=st.sampled_from((1, 1, 1, 1, 0, 2)))
def test_fuzz_forged_headers_with_valid_checksums(N, moduli, domain, dtype, extra, seed, version):
    """Well-checksummed bytes with arbitrary field values: decode either raises
    SerializationError or returns a value that re-encodes to exactly the same bytes."""
    rng = np.random.default_rng(seed)
    words = max(0, len(moduli) * min(N, 64) + extra)
    payload = rng.integers(0, 2**32, words, dtype=np.uint64)
    if rng.random() < 0.7 and moduli:  # mostly in range, to reach the later checks
        payload %= np.uint64(max(min(moduli), 1))
    data = forge(N, moduli, payload.astype("<u4"), domain=domain, dtype=dtype, version=version)
    try:
        r, d, res = decode_poly(data)
    except SerializationError as exc:
        assert type(exc) is SerializationError
        return
    r2, d2, form, stored = read_poly(data)
    assert (r2, d2, form) == (r, d, PayloadDType(dtype))
    assert encode_poly(r, d, stored, form) == data
    if form is PayloadDType.U32_STANDARD:
        np.testing.assert_array_equal(res, stored)
