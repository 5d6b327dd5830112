"""Serialization of CKKS objects in Ren's versioned, checksummed container (`ren.rlwe.serialize`).

    data = dumps(ct, compact=True)        # bytes; a fresh symmetric encryption: about half size
    ct = loads(data, params)              # checked against params (its fingerprint)

Layout (little-endian; the container every Ren scheme shares, `ren.rlwe.serialize`)::

    magic     8   b"RENCKKS\\x00"
    version   2   u16: 1, or 2 when a polynomial is stored as its seed (compact form)
    kind      1   u8: 1 Plaintext, 2 Ciphertext, 3 SecretKey, 4 PublicKey, 5 RelinKey,
                      6 GaloisKey, 7 GaloisKeys (the RLWE keys' codes, the same in every scheme),
                      8 EncapsulationKeys (the dense-to-sparse key's rows over its small ring,
                      then the sparse-to-dense key's)
    reserved  1   0
    params   16   the parameters' fingerprint (`CKKSParams.fingerprint`)
    meta_len  4   u32 length of the metadata
    meta          UTF-8 JSON object (level and exact scale, Galois elements, the ephemeral
                  secret's weight, and in the compact form whether a key is lean)
    count     4   u32 number of polynomials
    polys         each: u64 length, then `Poly.tobytes()` (its own header and checksum), or
                  (version 2) a seed record: b"RENSEED\\x00", u8 domain (1 = NTT), 32-byte seed
    checksum 16   first 16 bytes of SHA-256 of everything before it

**Compact form** (``dumps(obj, compact=True)``, SEAL's seeded serialization): a polynomial that is
exactly a uniform sample (the ``a`` half of a secret-key encryption, of a public key, of every
relinearization, Galois and encapsulation key row) is written as its 32-byte seed, and `loads`
regenerates it (the samplers are deterministic in the seed, on every device).  A lean key
(``KeyGenerator(..., lean=True)``: its a rows kept as seeds) is marked so and `loads` makes it
lean again, so a `ren.jit` plan captured on lean keys replays on the loaded ones.  That halves fresh
symmetric ciphertexts and keys: a bootstrapping's evaluation keys travel at half their size to
a process that holds no secret (tests/test_ckks_bootstrap_remote.py).  The seed of the uniform
half is public data, as the half itself is; the error and the secret are never derived from it.
A public-key encryption has no uniform half, so its compact form is its full form.

`loads` checks the checksum before interpreting anything, then the fingerprint, then every
field and each polynomial's ring and domain; every problem raises a `SerializationError`
subclass of `ren.rlwe.serialize`: `TruncatedDataError` (the data ends before its declared
length), `CorruptedDataError` (checksum, magic, version, a field out of range),
`FingerprintMismatchError` (other parameters), `KindMismatchError` (another scheme's data, e.g.
a BFV object).  A secret key is written only when `dumps` gets ``allow_secret=True``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.encapsulation import Encapsulation, EncapsulationKeys
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError, check_bool, check_instance
from ren.poly import Poly
from ren.rlwe.keys import SecretKey, SwitchingKey
from ren.rlwe.serialize import (
    CHECKSUM_SIZE,
    COMPACT_VERSION,
    KEY_KINDS,
    SEED_MAGIC,
    SUPPORTED_VERSIONS,
    VERSION,
    Reader,
    build_checked,
    build_key,
    container_size,
    key_parts,
    lean_flags,
    meta_int,
    poly_records,
    read_container,
    record_size,
    write_container,
)

MAGIC = b"RENCKKS\x00"
MAX_SCALE_DIGITS = 700  # scales keep at most 1024-bit numerators and denominators

KINDS: dict[type, int] = {Plaintext: 1, Ciphertext: 2, **KEY_KINDS, EncapsulationKeys: 8}
_NAMES = {v: k.__name__ for k, v in KINDS.items()}
_WHO = "ren.ckks.loads"


# -- writing ---------------------------------------------------------------------------------------
def _scale_meta(scale: Fraction) -> list[str]:
    return [str(scale.numerator), str(scale.denominator)]


def _parts(obj: Any, compact: bool) -> tuple[dict, list[Poly]]:
    if isinstance(obj, Plaintext):
        return {"level": obj.level, "scale": _scale_meta(obj.scale)}, [obj.poly]
    if isinstance(obj, Ciphertext):
        return {"level": obj.level, "scale": _scale_meta(obj.scale)}, list(obj.parts)
    if isinstance(obj, EncapsulationKeys):  # the small ring follows from params and weight
        lean = {"lean": True} if compact and obj.is_lean else {}
        return {"weight": obj.weight, **lean}, [*obj.to_sparse.b, *obj.to_sparse.a,
                                                *obj.to_dense.b, *obj.to_dense.a]
    parts = key_parts(obj, compact)
    if parts is None:
        raise ParameterError(f"ren.ckks.dumps: cannot serialize a {type(obj).__name__}; expected "
                             "a Plaintext, Ciphertext or key")
    return parts


def dumps(obj: Any, *, allow_secret: bool = False, compact: bool = False,
          form: str = "standard") -> bytes:
    """The bytes of a CKKS object (realizes its Polys).  Secret keys need allow_secret=True.
    ``compact=True`` stores uniform halves as their seeds (see the module docstring);
    ``form="montgomery"`` writes the polynomials' words as Ren stores them (`Poly.tobytes`)."""
    allow_secret = check_bool(allow_secret, "ren.ckks.dumps: allow_secret")
    compact = check_bool(compact, "ren.ckks.dumps: compact")
    check_instance(form, str, "ren.ckks.dumps: form", hint="'standard' or 'montgomery'")
    if isinstance(obj, SecretKey) and not allow_secret:
        raise ParameterError("ren.ckks.dumps: refusing to serialize a SecretKey; pass "
                             "allow_secret=True if you really mean to write the secret out")
    meta, polys = _parts(obj, compact)
    records = poly_records(polys, compact, form, "ren.ckks.dumps")
    return write_container(MAGIC, KINDS[type(obj)], obj.params.fingerprint, meta, records)


# -- reading ---------------------------------------------------------------------------------------
def _scale(r: Reader, meta: dict) -> Fraction:
    v = meta.get("scale")
    if not (isinstance(v, list) and len(v) == 2 and all(
            isinstance(s, str) and s.isascii() and s.isdigit() and 0 < len(s) <= MAX_SCALE_DIGITS
            for s in v)):
        raise r.fail(f"metadata field 'scale' must be two decimal strings, got {v!r}"[:300])
    num, den = int(v[0]), int(v[1])
    if num == 0 or den == 0:
        raise r.fail("metadata field 'scale' must be positive")
    return Fraction(num, den)


def loads(data: bytes | bytearray | memoryview, params: CKKSParams) -> Any:
    """The object written by `dumps`, checked against `params` (a SerializationError subclass
    otherwise: see the module docstring)."""
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"ren.ckks.loads: params must be CKKSParams, got "
                             f"{type(params).__name__}")
    kind, meta, count, r = read_container(data, magic=MAGIC, fingerprint=params.fingerprint,
                                          kinds=_NAMES, who=_WHO, scheme="CKKSParams")
    return build_checked(r, _NAMES[kind], lambda: _build(kind, meta, count, r, params))


def _expect_count(r: Reader, count: int, want: int, kind: int) -> None:
    if count != want:
        raise r.fail(f"a {_NAMES[kind]} has {want} polynomials for these parameters, the data "
                     f"says {count}")


def _build(kind: int, meta: dict, count: int, r: Reader, p: CKKSParams) -> Any:
    if kind in (1, 2):
        level = meta_int(r, meta, "level", 0, p.depth)
        scale = _scale(r, meta)
        if kind == 1:
            _expect_count(r, count, 1, kind)
            return Plaintext(r.polys(1, p.ring(level), p.device)[0], scale, level, p)
        if count not in (2, 3):
            raise r.fail(f"a Ciphertext has 2 or 3 polynomials, the data says {count}")
        return Ciphertext(tuple(r.polys(count, p.ring(level), p.device)), scale, level, p)
    if kind == KINDS[EncapsulationKeys]:
        weight = meta_int(r, meta, "weight", 1, p.N)
        small = Encapsulation(p, weight).small
        d, dnum = len(small.digits), len(p.digits)
        _expect_count(r, count, 2 * d + 2 * dnum, kind)
        lean = lean_flags(r, meta, 1, many=False)[0]
        sparse = r.polys(2 * d, small.key_ring, p.device)
        dense = r.polys(2 * dnum, p.key_ring, p.device)
        return EncapsulationKeys(
            SwitchingKey(tuple(sparse[:d]), tuple(sparse[d:]), small, lean=lean),
            SwitchingKey(tuple(dense[:dnum]), tuple(dense[dnum:]), p, lean=lean), weight)
    return build_key(kind, meta, count, r, p)


def serialized_size(obj: SwitchingKey | Any, compact: bool = False) -> int:
    """The length of `dumps(obj, allow_secret=True, compact=compact)` without building it."""
    compact = check_bool(compact, "ren.ckks.serialized_size: compact")
    meta, polys = _parts(obj, compact)
    return container_size(meta, [record_size(q, compact) for q in polys])


__all__ = ["CHECKSUM_SIZE", "COMPACT_VERSION", "KINDS", "MAGIC", "SEED_MAGIC",
           "SUPPORTED_VERSIONS", "VERSION", "dumps", "loads", "serialized_size"]
