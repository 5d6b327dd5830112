"""Serialization of CKKS objects: a versioned container around Ren's Poly format.

Layout (little-endian)::

    magic     8   b"RENCKKS\\x00"
    version   2   u16: 1, or 2 when a polynomial is stored as its seed (compact form)
    kind      1   u8: 1 Plaintext, 2 Ciphertext, 3 SecretKey, 4 PublicKey, 5 RelinKey,
                      6 GaloisKey, 7 GaloisKeys, 8 EncapsulationKeys (the dense-to-sparse
                      key's rows over its small ring, then the sparse-to-dense key's)
    reserved  1   0
    params   16   the parameters' fingerprint (`CKKSParams.fingerprint`)
    meta_len  4   u32 length of the metadata
    meta          UTF-8 JSON object (level and exact scale, Galois elements, the ephemeral
                  secret's weight)
    count     4   u32 number of polynomials
    polys         each: u64 length, then `Poly.tobytes()` (its own header and checksum), or
                  (version 2) a seed record: b"RENSEED\\x00", u8 domain (1 = NTT), 32-byte seed
    checksum 16   first 16 bytes of SHA-256 of everything before it

**Compact form** (``dumps(obj, compact=True)``, SEAL's seeded serialization): a polynomial that is
exactly a uniform sample (the ``a`` half of a secret-key encryption, of a public key, of every
relinearization and Galois key row) is written as its 32-byte seed, and `loads` regenerates it
(the samplers are deterministic in the seed, on every device).  That halves fresh symmetric
ciphertexts and keys.  The seed of the uniform half is public data, as the half itself is; the
error and the secret are never derived from it.  A public-key encryption has no uniform half,
so its compact form is its full form.

`loads` checks the checksum before interpreting anything, then the fingerprint, then every
field and each polynomial's ring and domain; any problem raises `SerializationError`.  A secret
key is written only when `dumps` gets ``allow_secret=True``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from fractions import Fraction
from typing import Any

from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.encapsulation import Encapsulation, EncapsulationKeys
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError, RenError, SerializationError, check_bool, check_instance
from ren.poly import Poly
from ren.random import RandomSpec
from ren.ring import Domain, RingSpec
from ren.rlwe.keys import GaloisKey, GaloisKeys, PublicKey, RelinKey, SecretKey, SwitchingKey
from ren.serialize import payload_dtype

MAGIC = b"RENCKKS\x00"
VERSION = 1
COMPACT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
SEED_MAGIC = b"RENSEED\x00"
_SEED = struct.Struct("<8sB32s")
CHECKSUM_SIZE = 16
_HEAD = struct.Struct("<8sHBB16sI")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
MAX_META = 1 << 16
MAX_SCALE_DIGITS = 700  # scales keep at most 1024-bit numerators and denominators

KINDS = {Plaintext: 1, Ciphertext: 2, SecretKey: 3, PublicKey: 4, RelinKey: 5, GaloisKey: 6,
         GaloisKeys: 7, EncapsulationKeys: 8}
_NAMES = {v: k.__name__ for k, v in KINDS.items()}


def _fail(msg: str) -> SerializationError:
    return SerializationError(f"ren.ckks.loads: {msg}")


# -- writing ---------------------------------------------------------------------------------------
def _scale_meta(scale: Fraction) -> list[str]:
    return [str(scale.numerator), str(scale.denominator)]


def _parts(obj: Any) -> tuple[dict, list[Poly]]:
    if isinstance(obj, Plaintext):
        return {"level": obj.level, "scale": _scale_meta(obj.scale)}, [obj.poly]
    if isinstance(obj, Ciphertext):
        return {"level": obj.level, "scale": _scale_meta(obj.scale)}, list(obj.parts)
    if isinstance(obj, SecretKey):
        return {}, [obj.poly]
    if isinstance(obj, PublicKey):
        return {}, [obj.b, obj.a]
    if isinstance(obj, GaloisKey):
        return {"galois": obj.galois}, [*obj.b, *obj.a]
    if isinstance(obj, RelinKey):
        return {}, [*obj.b, *obj.a]
    if isinstance(obj, GaloisKeys):
        elements = sorted(obj.keys)
        return {"elements": elements}, [p for g in elements for p in (*obj.keys[g].b,
                                                                      *obj.keys[g].a)]
    if isinstance(obj, EncapsulationKeys):  # the small ring follows from params and weight
        return {"weight": obj.weight}, [*obj.to_sparse.b, *obj.to_sparse.a, *obj.to_dense.b,
                                        *obj.to_dense.a]
    raise ParameterError(f"ren.ckks.dumps: cannot serialize a {type(obj).__name__}; expected a "
                         "Plaintext, Ciphertext or key")


def _seed_record(p: Poly) -> bytes | None:
    """The seed record of a Poly that is exactly a uniform sample, else None."""
    o = p.random_origin()
    if o is None or o.kind != "uniform" or len(o.seed) != 32:
        return None
    return _SEED.pack(SEED_MAGIC, 1 if p.domain is Domain.NTT else 0, o.seed)


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
    meta, polys = _parts(obj)
    if polys:
        polys[0].realize(*polys[1:])
    payload_dtype(form, "ren.ckks.dumps")  # a bad name fails before anything is written
    meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
    records = [(_seed_record(p) if compact else None) or p.tobytes(form) for p in polys]
    version = COMPACT_VERSION if any(d.startswith(SEED_MAGIC) for d in records) else VERSION
    out = [_HEAD.pack(MAGIC, version, KINDS[type(obj)], 0, obj.params.fingerprint,
                      len(meta_bytes)), meta_bytes, _U32.pack(len(polys))]
    for data in records:
        out += [_U64.pack(len(data)), data]
    h = hashlib.sha256()
    for part in out:  # hashed piece by piece: the polynomials are copied once, by the join
        h.update(part)
    out.append(h.digest()[:CHECKSUM_SIZE])
    return b"".join(out)


# -- reading ---------------------------------------------------------------------------------------
def _int(meta: dict, key: str, lo: int, hi: int) -> int:
    v = meta.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _fail(f"metadata field {key!r} must be an int in [{lo}, {hi}], got {v!r}")
    return v


def _scale(meta: dict) -> Fraction:
    v = meta.get("scale")
    if not (isinstance(v, list) and len(v) == 2 and all(
            isinstance(s, str) and s.isascii() and s.isdigit() and 0 < len(s) <= MAX_SCALE_DIGITS
            for s in v)):
        raise _fail(f"metadata field 'scale' must be two decimal strings, got {v!r}")
    num, den = int(v[0]), int(v[1])
    if num == 0 or den == 0:
        raise _fail("metadata field 'scale' must be positive")
    return Fraction(num, den)


class _Reader:
    def __init__(self, buf: bytes | memoryview, pos: int, version: int = VERSION) -> None:
        self.buf, self.pos, self.version = buf, pos, version

    def take(self, n: int, what: str) -> bytes | memoryview:
        if n > len(self.buf) - self.pos:
            raise _fail(f"truncated: {what} needs {n} bytes, {len(self.buf) - self.pos} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out


def _read_polys(r: _Reader, count: int, ring: RingSpec, device: str = "python") -> list[Poly]:
    out = []
    for i in range(count):
        (n,) = _U64.unpack(r.take(_U64.size, f"the length of polynomial {i}"))
        data = r.take(n, f"polynomial {i}")
        if data[:len(SEED_MAGIC)] == SEED_MAGIC:
            out.append(_from_seed(data, i, r.version, ring, device))
            continue
        try:  # the container's checksum, verified, covers these bytes
            p = Poly.frombytes(data, device, checksum=False)
        except RenError as exc:  # decode_poly raises SerializationError; from_residues others
            raise _fail(f"polynomial {i}: {exc}") from exc
        if p.ring != ring or p.domain is not Domain.NTT:
            raise _fail(f"polynomial {i} lives in {p.ring.short()} ({p.domain.name}); expected "
                        f"{ring.short()} (NTT) for these parameters")
        out.append(p)
    return out


def _from_seed(data: bytes | memoryview, i: int, version: int, ring: RingSpec, device: str
               ) -> Poly:
    if version < COMPACT_VERSION:
        raise _fail(f"polynomial {i} is a seed record in a version-{version} container")
    if len(data) != _SEED.size:
        raise _fail(f"polynomial {i}: a seed record has {_SEED.size} bytes, got {len(data)}")
    _, domain, seed = _SEED.unpack(data)
    if domain != 1:
        raise _fail(f"polynomial {i}: a seed record must be in the NTT domain (1), got {domain}")
    return Poly.from_random(RandomSpec("uniform", (), seed, device), ring, Domain.NTT)


def loads(data: bytes | bytearray | memoryview, params: CKKSParams) -> Any:
    """The object written by `dumps`, checked against `params` (SerializationError otherwise)."""
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"ren.ckks.loads: params must be CKKSParams, got "
                             f"{type(params).__name__}")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _fail(f"expected bytes, got {type(data).__name__}")
    try:
        buf = bytes(data)
    except (TypeError, ValueError) as exc:
        raise _fail(f"cannot read the buffer: {exc}") from exc
    if len(buf) < _HEAD.size + _U32.size + CHECKSUM_SIZE:
        raise _fail(f"truncated or not a CKKS object: only {len(buf)} bytes")
    magic, version, kind, reserved, fingerprint, meta_len = _HEAD.unpack_from(buf)
    if magic != MAGIC:
        raise _fail(f"not a Ren CKKS object: wrong magic {magic!r} (expected {MAGIC!r})")
    if version not in SUPPORTED_VERSIONS:
        raise _fail(f"unsupported container version {version}; this ren reads {SUPPORTED_VERSIONS}")
    body, stored = memoryview(buf)[:-CHECKSUM_SIZE], buf[-CHECKSUM_SIZE:]  # a view: no copy
    if not hmac.compare_digest(hashlib.sha256(body).digest()[:CHECKSUM_SIZE], stored):
        raise _fail("checksum mismatch: the data is truncated or corrupted")
    if fingerprint != params.fingerprint:
        raise _fail(f"the data was written under other parameters (fingerprint "
                    f"{fingerprint.hex()}, these are {params.fingerprint.hex()}); load it with the "
                    "CKKSParams it was made with")
    if kind not in _NAMES or reserved != 0:
        raise _fail(f"unknown object kind {kind} (reserved byte {reserved})")
    if meta_len > MAX_META:
        raise _fail(f"metadata length {meta_len} exceeds {MAX_META}")
    r = _Reader(body, _HEAD.size, version)
    try:
        meta = json.loads(bytes(r.take(meta_len, "the metadata")).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(f"the metadata is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise _fail("the metadata must be a JSON object")
    (count,) = _U32.unpack(r.take(_U32.size, "the polynomial count"))
    try:
        obj = _build(kind, meta, count, r, params)
    except SerializationError:
        raise
    except RenError as exc:  # a field the constructor rejects
        raise _fail(f"the data describes an invalid {_NAMES[kind]}: {exc}") from exc
    if r.pos != len(body):
        raise _fail(f"{len(body) - r.pos} unexpected byte(s) after the last polynomial")
    return obj


def _expect_count(count: int, want: int, kind: int) -> None:
    if count != want:
        raise _fail(f"a {_NAMES[kind]} has {want} polynomials for these parameters, the data "
                    f"says {count}")


def _build(kind: int, meta: dict, count: int, r: _Reader, p: CKKSParams) -> Any:
    dnum = len(p.digits)
    if kind in (1, 2):
        level = _int(meta, "level", 0, p.depth)
        scale = _scale(meta)
        if kind == 1:
            _expect_count(count, 1, kind)
            return Plaintext(_read_polys(r, 1, p.ring(level), p.device)[0], scale, level, p)
        if count not in (2, 3):
            raise _fail(f"a Ciphertext has 2 or 3 polynomials, the data says {count}")
        return Ciphertext(tuple(_read_polys(r, count, p.ring(level), p.device)), scale, level, p)
    if kind == 3:
        _expect_count(count, 1, kind)
        return SecretKey(_read_polys(r, 1, p.key_ring, p.device)[0], p)
    if kind == 4:
        _expect_count(count, 2, kind)
        b, a = _read_polys(r, 2, p.key_ring, p.device)
        return PublicKey(b, a, p)
    if kind in (5, 6):
        _expect_count(count, 2 * dnum, kind)
        polys = _read_polys(r, 2 * dnum, p.key_ring, p.device)
        if kind == 5:
            return RelinKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p)
        g = _galois(meta.get("galois"), p)
        return GaloisKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p, galois=g)
    if kind == 8:
        small = Encapsulation(p, _int(meta, "weight", 1, p.N)).small
        d = len(small.digits)
        _expect_count(count, 2 * d + 2 * dnum, kind)
        sparse = _read_polys(r, 2 * d, small.key_ring, p.device)
        dense = _read_polys(r, 2 * dnum, p.key_ring, p.device)
        return EncapsulationKeys(SwitchingKey(tuple(sparse[:d]), tuple(sparse[d:]), small),
                                 SwitchingKey(tuple(dense[:dnum]), tuple(dense[dnum:]), p),
                                 meta["weight"])
    elements = meta.get("elements")
    if not isinstance(elements, list) or len(elements) > p.N:
        raise _fail("metadata field 'elements' must be a list of Galois elements")
    gs = [_galois(g, p) for g in elements]
    if len(set(gs)) != len(gs):
        raise _fail("metadata field 'elements' repeats a Galois element")
    _expect_count(count, 2 * dnum * len(gs), kind)
    keys: dict[int, GaloisKey] = {}
    for g in gs:
        polys = _read_polys(r, 2 * dnum, p.key_ring, p.device)
        keys[g] = GaloisKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p, galois=g)
    return GaloisKeys(keys, p)


def _galois(g: Any, p: CKKSParams) -> int:
    if isinstance(g, bool) or not isinstance(g, int) or not 0 < g < 2 * p.N or g % 2 == 0:
        raise _fail(f"Galois element must be an odd int in (0, {2 * p.N}), got {g!r}")
    return g


def serialized_size(obj: SwitchingKey | Any, compact: bool = False) -> int:
    """The length of `dumps(obj, allow_secret=True, compact=compact)` without building it."""
    meta, polys = _parts(obj)
    meta_len = len(json.dumps(meta, separators=(",", ":")).encode())
    per = [_U64.size + (_SEED.size if compact and _seed_record(q) is not None else
                        28 + 4 * q.ring.limbs + 4 * q.ring.limbs * q.ring.N + 16) for q in polys]
    return _HEAD.size + meta_len + _U32.size + sum(per) + CHECKSUM_SIZE
