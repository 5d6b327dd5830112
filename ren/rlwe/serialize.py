"""The container every RLWE scheme serializes into: versioned, checksummed, compact where uniform.

A scheme (`ren.bfv.serialize`, and `ren.ckks.serialize` once it switches over) picks its own
8-byte magic and its object kinds; the layout, the seed records of the compact form, the
checks and the RLWE keys (secret, public, relinearization, Galois) are shared here.

Layout (little-endian)::

    magic     8   the scheme's, e.g. b"RENBFV\\x00\\x00"
    version   2   u16: 1, or 2 when a polynomial is stored as its seed (compact form)
    kind      1   u8: the scheme's object kind (keys: `KEY_KINDS`, 3 to 7, in every scheme)
    reserved  1   0
    params   16   the parameters' fingerprint (``params.fingerprint``)
    meta_len  4   u32 length of the metadata
    meta          UTF-8 JSON object (levels, scales, Galois elements, ...)
    count     4   u32 number of records
    records       each: u64 length, then one of
                    `Poly.tobytes()` (its own header and checksum, `ren.serialize`),
                    a seed record:    b"RENSEED\\x00", u8 domain (1 = NTT), 32-byte seed,
                    an integer record: b"RENINTS\\x00", u64 count, count × u64 (e.g. a BFV
                                      plaintext's coefficients mod t)
    checksum 16   first 16 bytes of SHA-256 of everything before it

**Compact form** (``compact=True``, SEAL's seeded serialization): a polynomial that is exactly
a uniform sample (the ``a`` half of a secret-key encryption, of a public key, of every
switching-key row) is written as its 32-byte seed and regenerated on reading (the samplers are
deterministic in the seed on every device).  The seed of a uniform half is public, as the half
is; errors and secrets are never derived from it.

**Reading** (`read_container`) never interprets a byte before it is checked: the size, the
magic (another Ren scheme's magic is a `KindMismatchError` naming the right ``loads``), the
version, then the checksum over everything (a mismatch is a `TruncatedDataError` when the
declared lengths need more bytes than there are, else a `CorruptedDataError`), then the
fingerprint (`FingerprintMismatchError`), the kind, the metadata and each record's ring,
domain and range.  All of them are `ren.errors.SerializationError` subclasses.

How ``ren.ckks.serialize`` switches to this module (its owner's change, not made here): keep
its MAGIC and KINDS, replace ``_HEAD``/``_SEED``/``_Reader``/``_read_polys``/``_from_seed``,
the checksum code in ``dumps`` and the header checks in ``loads`` by `write_container` and
`read_container` (passing ``magic=MAGIC``, ``who="ren.ckks.loads"``), its key branches of
``_parts``/``_build`` by `key_parts`/`build_key`, ``_int``/``_galois`` by `meta_int`/
`galois_element`, and ``serialized_size``'s per-polynomial sum by `record_size`.  The bytes it
writes stay the same (the layout above is its layout; the integer record is new and unused by
CKKS).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ren.errors import ParameterError, RenError, SerializationError
from ren.poly import Poly
from ren.random import RandomSpec
from ren.ring import Domain, RingSpec
from ren.rlwe.keys import GaloisKey, GaloisKeys, PublicKey, RelinKey, SecretKey
from ren.serialize import payload_dtype

VERSION = 1
COMPACT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
SEED_MAGIC = b"RENSEED\x00"
INTS_MAGIC = b"RENINTS\x00"
CHECKSUM_SIZE = 16
MAX_META = 1 << 16
_SEED = struct.Struct("<8sB32s")
_HEAD = struct.Struct("<8sHBB16sI")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

#: Every Ren scheme container's magic -> the function that reads it (for a KindMismatchError).
MAGICS: dict[bytes, str] = {b"RENCKKS\x00": "ren.ckks.loads", b"RENBFV\x00\x00": "ren.bfv.loads",
                            b"RENPOLY\x00": "ren.Poly.frombytes"}

#: The RLWE keys' kind codes, the same in every scheme's container.
KEY_KINDS: dict[type, int] = {SecretKey: 3, PublicKey: 4, RelinKey: 5, GaloisKey: 6,
                              GaloisKeys: 7}


class CorruptedDataError(SerializationError):
    """The bytes are not what a Ren ``dumps`` wrote: a checksum mismatch, a wrong magic or
    version, or a field out of range.  Get an intact copy of the data."""


class TruncatedDataError(CorruptedDataError):
    """The data ends before what its header declares (a partial write or download)."""


class FingerprintMismatchError(SerializationError):
    """The data was written under other parameters than the ones given to ``loads``."""


class KindMismatchError(SerializationError):
    """The data holds another kind of object (or another scheme's) than the one asked for."""


# -- writing ---------------------------------------------------------------------------------------
def seed_record(p: Poly) -> bytes | None:
    """The seed record of a Poly that is exactly a uniform sample, else None."""
    o = p.random_origin()
    if o is None or o.kind != "uniform" or len(o.seed) != 32:
        return None
    return _SEED.pack(SEED_MAGIC, 1 if p.domain is Domain.NTT else 0, o.seed)


def ints_record(values: np.ndarray) -> bytes:
    """An integer record: non-negative ints below 2^64 (e.g. plaintext coefficients)."""
    arr = np.ascontiguousarray(values, dtype="<u8")
    return INTS_MAGIC + _U64.pack(arr.size) + arr.tobytes()


def poly_records(polys: Sequence[Poly], compact: bool, form: str, who: str) -> list[bytes]:
    """Each Poly as a seed record (compact, uniform) or its `Poly.tobytes(form)`."""
    payload_dtype(form, who)  # a bad form fails before anything is realized
    seeds = [seed_record(p) if compact else None for p in polys]
    dense = [p for p, s in zip(polys, seeds) if s is None]
    if dense:  # (a seed record needs no words: a lean key's rows are not regenerated to write it)
        dense[0].realize(*dense[1:])
    return [s or p.tobytes(form) for p, s in zip(polys, seeds)]


def write_container(magic: bytes, kind: int, fingerprint: bytes, meta: Mapping[str, Any],
                    records: Sequence[bytes]) -> bytes:
    """The container of `records` (see the module docstring)."""
    meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
    version = COMPACT_VERSION if any(d.startswith(SEED_MAGIC) for d in records) else VERSION
    out = [_HEAD.pack(magic, version, kind, 0, fingerprint, len(meta_bytes)), meta_bytes,
           _U32.pack(len(records))]
    for data in records:
        out += [_U64.pack(len(data)), data]
    h = hashlib.sha256()
    for part in out:  # piece by piece: the records are copied once, by the join
        h.update(part)
    out.append(h.digest()[:CHECKSUM_SIZE])
    return b"".join(out)


def record_size(p: Poly, compact: bool = False) -> int:
    """The bytes a Poly takes in a container (its length field included)."""
    if compact and seed_record(p) is not None:
        return _U64.size + _SEED.size
    return _U64.size + 28 + 4 * p.ring.limbs + 4 * p.ring.limbs * p.ring.N + CHECKSUM_SIZE


def container_size(meta: Mapping[str, Any], record_sizes: Sequence[int]) -> int:
    """The length of a container with `meta` and records of these sizes (length fields
    included, as `record_size` counts them)."""
    meta_len = len(json.dumps(meta, separators=(",", ":")).encode())
    return _HEAD.size + meta_len + _U32.size + sum(record_sizes) + CHECKSUM_SIZE


# -- reading ---------------------------------------------------------------------------------------
class Reader:
    """The checked body of a container, read front to back; errors name `who`."""

    def __init__(self, buf: memoryview, pos: int, version: int, who: str) -> None:
        self.buf, self.pos, self.version, self.who = buf, pos, version, who

    def fail(self, msg: str, cls: type[SerializationError] = CorruptedDataError
             ) -> SerializationError:
        return cls(f"{self.who}: {msg}")

    def take(self, n: int, what: str) -> memoryview:
        if n > len(self.buf) - self.pos:
            raise self.fail(f"{what} needs {n} bytes, {len(self.buf) - self.pos} left",
                            TruncatedDataError)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def record(self, i: int) -> memoryview:
        (n,) = _U64.unpack(self.take(_U64.size, f"the length of record {i}"))
        return self.take(n, f"record {i}")

    def polys(self, count: int, ring: RingSpec, device: str = "python") -> list[Poly]:
        """`count` polynomials on `ring` (NTT domain): stored or regenerated from seeds."""
        out = []
        for i in range(count):
            data = self.record(i)
            if data[:len(SEED_MAGIC)] == SEED_MAGIC:
                out.append(self._from_seed(data, i, ring, device))
                continue
            try:  # the container's checksum, verified, covers these bytes
                p = Poly.frombytes(data, device, checksum=False)
            except RenError as exc:
                raise self.fail(f"polynomial {i}: {exc}") from exc
            if p.ring != ring or p.domain is not Domain.NTT:
                raise self.fail(f"polynomial {i} lives in {p.ring.short()} ({p.domain.name}); "
                                f"expected {ring.short()} (NTT) for these parameters")
            out.append(p)
        return out

    def _from_seed(self, data: memoryview, i: int, ring: RingSpec, device: str) -> Poly:
        if self.version < COMPACT_VERSION:
            raise self.fail(f"polynomial {i} is a seed record in a version-{self.version} "
                            "container")
        if len(data) != _SEED.size:
            raise self.fail(f"polynomial {i}: a seed record has {_SEED.size} bytes, got "
                            f"{len(data)}")
        _, domain, seed = _SEED.unpack(data)
        if domain != 1:
            raise self.fail(f"polynomial {i}: a seed record must be in the NTT domain (1), got "
                            f"{domain}")
        return Poly.from_random(RandomSpec("uniform", (), seed, device), ring, Domain.NTT)

    def ints(self, i: int, n: int, bound: int) -> np.ndarray:
        """An integer record of exactly `n` values in [0, bound), as int64."""
        data = self.record(i)
        head = len(INTS_MAGIC) + _U64.size
        if len(data) < head or data[:len(INTS_MAGIC)] != INTS_MAGIC:
            raise self.fail(f"record {i} must be an integer record ({INTS_MAGIC!r})")
        (count,) = _U64.unpack(data[len(INTS_MAGIC):head])
        if count != n or len(data) != head + 8 * n:
            raise self.fail(f"record {i} must hold {n} integers ({head + 8 * n} bytes), it says "
                            f"{count} in {len(data)} bytes")
        arr = np.frombuffer(data[head:], dtype="<u8")
        if arr.size and int(arr.max()) >= bound:
            raise self.fail(f"record {i}: a value {int(arr.max())} is not below {bound}")
        return arr.astype(np.int64)

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise self.fail(f"{len(self.buf) - self.pos} unexpected byte(s) after the last "
                            "record")


def _declared_end(buf: bytes) -> int | None:
    """Where the records' length fields say the body ends (None: they run past the data)."""
    pos = _HEAD.size + _HEAD.unpack_from(buf)[5]
    if pos + _U32.size > len(buf):
        return None
    (count,) = _U32.unpack_from(buf, pos)
    pos += _U32.size
    for _ in range(count):
        if pos + _U64.size > len(buf):
            return None
        pos += _U64.size + _U64.unpack_from(buf, pos)[0]
        if pos > len(buf):
            return None
    return pos


def read_container(data: Any, *, magic: bytes, fingerprint: bytes, kinds: Mapping[int, str],
                   who: str, scheme: str) -> tuple[int, dict, int, Reader]:
    """(kind, metadata, record count, reader of the records) of a checked container; every
    problem raises a `SerializationError` subclass (see the module docstring).  `kinds` maps the
    scheme's kind codes to names; `scheme` names its parameters in messages (e.g. "BFVParams")."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptedDataError(f"{who}: expected bytes, got {type(data).__name__}")
    try:
        buf = bytes(data)
    except (TypeError, ValueError) as exc:
        raise CorruptedDataError(f"{who}: cannot read the buffer: {exc}") from exc
    if len(buf) < _HEAD.size + _U32.size + CHECKSUM_SIZE:
        raise TruncatedDataError(f"{who}: truncated or not a Ren object: only {len(buf)} bytes")
    head_magic, version, kind, reserved, stored_fp, meta_len = _HEAD.unpack_from(buf)
    if head_magic != magic:
        other = MAGICS.get(head_magic)
        if other is not None:
            raise KindMismatchError(f"{who}: this is another scheme's object (magic "
                                    f"{head_magic!r}); read it with {other}")
        raise CorruptedDataError(f"{who}: not a Ren object of this scheme: wrong magic "
                                 f"{head_magic!r} (expected {magic!r})")
    if version not in SUPPORTED_VERSIONS:
        raise CorruptedDataError(f"{who}: unsupported container version {version}; this ren "
                                 f"reads {SUPPORTED_VERSIONS}")
    body, stored = memoryview(buf)[:-CHECKSUM_SIZE], buf[-CHECKSUM_SIZE:]
    if not hmac.compare_digest(hashlib.sha256(body).digest()[:CHECKSUM_SIZE], stored):
        end = _declared_end(buf)
        if end is None or end + CHECKSUM_SIZE > len(buf):
            raise TruncatedDataError(f"{who}: truncated: the data ends before its declared "
                                     f"length ({len(buf)} bytes); get the whole file")
        raise CorruptedDataError(f"{who}: checksum mismatch: the data is corrupted")
    if stored_fp != fingerprint:
        raise FingerprintMismatchError(
            f"{who}: the data was written under other parameters (fingerprint "
            f"{stored_fp.hex()}, these are {fingerprint.hex()}); load it with the {scheme} it "
            "was made with")
    if kind not in kinds or reserved != 0:
        raise CorruptedDataError(f"{who}: unknown object kind {kind} (reserved byte {reserved})")
    if meta_len > MAX_META:
        raise CorruptedDataError(f"{who}: metadata length {meta_len} exceeds {MAX_META}")
    r = Reader(body, _HEAD.size, version, who)
    try:
        meta = json.loads(bytes(r.take(meta_len, "the metadata")).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise r.fail(f"the metadata is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise r.fail("the metadata must be a JSON object")
    (count,) = _U32.unpack(r.take(_U32.size, "the record count"))
    return kind, meta, count, r


def check_kind(kind: int, kinds: Mapping[int, str], expect: type | None, codes: Mapping[type, int],
               who: str) -> None:
    """KindMismatchError when `expect` (a class, or None for any) is not the stored kind."""
    if expect is None:
        return
    if not isinstance(expect, type) or expect not in codes:
        raise ParameterError(f"{who}: expect must be one of "
                             f"{', '.join(sorted(c.__name__ for c in codes))} or None, got "
                             f"{expect!r}"[:300])
    if codes[expect] != kind:
        raise KindMismatchError(f"{who}: the data holds a {kinds[kind]}, not a "
                                f"{expect.__name__}")


def build_checked(r: Reader, kind_name: str, build: Callable[[], Any]) -> Any:
    """`build()`; a RenError other than SerializationError (a field a constructor rejects)
    becomes a CorruptedDataError; then no byte may be left over."""
    try:
        obj = build()
    except SerializationError:
        raise
    except RenError as exc:
        raise r.fail(f"the data describes an invalid {kind_name}: {exc}") from exc
    r.done()
    return obj


# -- metadata and the RLWE keys --------------------------------------------------------------------
def meta_int(r: Reader, meta: dict, key: str, lo: int, hi: int) -> int:
    v = meta.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise r.fail(f"metadata field {key!r} must be an int in [{lo}, {hi}], got {v!r}"[:300])
    return v


def galois_element(r: Reader, g: Any, N: int) -> int:
    if isinstance(g, bool) or not isinstance(g, int) or not 0 < g < 2 * N or g % 2 == 0:
        raise r.fail(f"Galois element must be an odd int in (0, {2 * N}), got {g!r}"[:300])
    return g


def key_parts(obj: Any, compact: bool = False) -> tuple[dict, list[Poly]] | None:
    """(metadata, polynomials) of an RLWE key, None for anything else.  In the compact form a
    lean key (`SwitchingKey.lean`) is marked ``"lean"`` (per element for `GaloisKeys`), and
    `build_key` makes it lean again: a plan captured on lean keys reads their b rows only."""
    if isinstance(obj, SecretKey):
        return {}, [obj.poly]
    if isinstance(obj, PublicKey):
        return {}, [obj.b, obj.a]
    if isinstance(obj, GaloisKey | RelinKey):
        meta: dict[str, Any] = {"galois": obj.galois} if isinstance(obj, GaloisKey) else {}
        if compact and obj.is_lean:
            meta["lean"] = True
        return meta, [*obj.b, *obj.a]
    if isinstance(obj, GaloisKeys):
        elements = list(obj.keys)  # in the object's order: a jit plan captured on it matches
        meta = {"elements": elements}
        if compact and any(obj.keys[g].is_lean for g in elements):
            meta["lean"] = [obj.keys[g].is_lean for g in elements]
        return meta, [q for g in elements for q in (*obj.keys[g].b, *obj.keys[g].a)]
    return None


def parse_lean(value: Any, count: int, many: bool) -> list[bool]:
    """The ``"lean"`` flags (`key_parts`) of a key's metadata value: of one key (a boolean) or
    of `count` keys (`many`: a list of booleans); absent (None): none is lean.  The one check
    of this flag, for the file container (`lean_flags`) and for `ren.distributed`'s wire
    records alike; CorruptedDataError (without a prefix) for anything else."""
    if value is None:
        return [False] * count
    if many and isinstance(value, list) and len(value) == count and \
            all(isinstance(f, bool) for f in value):
        return list(value)
    if not many and isinstance(value, bool):
        return [value]
    want = "a list of booleans, one per key" if many else "a boolean"
    raise CorruptedDataError(f"metadata field 'lean' must be {want}, got {value!r}"[:300])


def lean_flags(r: Reader, meta: dict, count: int, many: bool) -> list[bool]:
    """`parse_lean` of the metadata's ``"lean"``, its error naming the container (`r`)."""
    try:
        return parse_lean(meta.get("lean"), count, many)
    except CorruptedDataError as e:
        raise r.fail(str(e)) from None


def _expect_count(r: Reader, count: int, want: int, name: str) -> None:
    if count != want:
        raise r.fail(f"a {name} has {want} polynomials for these parameters, the data says "
                     f"{count}")


def build_key(kind: int, meta: dict, count: int, r: Reader, p: Any) -> Any:
    """The RLWE key of code `kind` (`KEY_KINDS`) under the RLWE parameters `p`."""
    dnum, ring, dev = len(p.digits), p.key_ring, p.device
    if kind == 3:
        _expect_count(r, count, 1, "SecretKey")
        return SecretKey(r.polys(1, ring, dev)[0], p)
    if kind == 4:
        _expect_count(r, count, 2, "PublicKey")
        b, a = r.polys(2, ring, dev)
        return PublicKey(b, a, p)
    if kind in (5, 6):
        _expect_count(r, count, 2 * dnum, "RelinKey" if kind == 5 else "GaloisKey")
        if kind == 6:
            g = galois_element(r, meta.get("galois"), p.N)
        lean = lean_flags(r, meta, 1, many=False)[0]
        polys = r.polys(2 * dnum, ring, dev)
        if kind == 5:
            return RelinKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p, lean=lean)
        return GaloisKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p, galois=g, lean=lean)
    if kind != 7:
        raise ParameterError(f"build_key: {kind} is not a key kind ({sorted(KEY_KINDS.values())})")
    elements = meta.get("elements")
    if not isinstance(elements, list) or len(elements) > p.N:
        raise r.fail("metadata field 'elements' must be a list of Galois elements")
    gs = [galois_element(r, g, p.N) for g in elements]
    if len(set(gs)) != len(gs):
        raise r.fail("metadata field 'elements' repeats a Galois element")
    _expect_count(r, count, 2 * dnum * len(gs), "GaloisKeys")
    flags = lean_flags(r, meta, len(gs), many=True)
    keys: dict[int, GaloisKey] = {}
    for g, lean in zip(gs, flags):
        polys = r.polys(2 * dnum, ring, dev)
        keys[g] = GaloisKey(tuple(polys[:dnum]), tuple(polys[dnum:]), p, galois=g, lean=lean)
    return GaloisKeys(keys, p)


__all__ = ["CHECKSUM_SIZE", "COMPACT_VERSION", "INTS_MAGIC", "KEY_KINDS", "MAGICS", "SEED_MAGIC",
           "SUPPORTED_VERSIONS", "VERSION", "CorruptedDataError", "FingerprintMismatchError",
           "KindMismatchError", "Reader", "TruncatedDataError", "build_checked", "build_key",
           "check_kind", "container_size", "galois_element", "ints_record", "key_parts",
           "lean_flags", "meta_int", "parse_lean", "poly_records", "read_container",
           "record_size", "seed_record", "write_container"]
