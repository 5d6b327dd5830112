"""A versioned, self-describing binary format for one polynomial.

`encode_poly` turns a ring, a domain and a (limbs × N) array of standard-form residues into
bytes; `decode_poly` turns such bytes back into a fresh ``(RingSpec, Domain, np.ndarray)``.

Format version 1 (all integers little-endian; ``L`` = limb count, ``P`` = payload length)::

    | offset     | size | type     | field                                                    |
    |------------|------|----------|----------------------------------------------------------|
    | 0          | 8    | bytes    | magic ``b"RENPOLY\\x00"``                                 |
    | 8          | 2    | u16      | format version (currently 1)                             |
    | 10         | 2    | u16      | header length H = 28 + 4·L (bytes before the payload)    |
    | 12         | 4    | u32      | ring dimension N (a power of two, 2 ≤ N ≤ 2^17)          |
    | 16         | 2    | u16      | limb count L (1 ≤ L ≤ MAX_LIMBS = 4096)                  |
    | 18         | 4·L  | u32[L]   | moduli q_0 … q_{L-1}, in ring order                      |
    | 18 + 4L    | 1    | u8       | domain code: 0 = COEFF, 1 = NTT                          |
    | 19 + 4L    | 1    | u8       | dtype code: 1 = u32 residues in standard form, 2 = u32   |
    |            |      |          | residues in Montgomery form (r·2^32 mod q_i)             |
    | 20 + 4L    | 8    | u64      | payload length P = 4·L·N (bytes)                         |
    | H          | P    | u32[L,N] | residues, row-major (limb i, coefficient j at i·N + j),  |
    |            |      |          | each 0 ≤ r < q_i (in either form)                        |
    | H + P      | 16   | bytes    | checksum: first 16 bytes of SHA-256 of bytes [0, H + P)  |

The total length is exactly ``H + P + 16``; the payload starts at a multiple of 4.

The Montgomery form (dtype 2) is how every Ren device stores residues, so a writer and a reader
that are both Ren skip two conversions per limb (``Poly.tobytes(form="montgomery")``; what
`ren.distributed` sends).  `decode_poly` returns standard-form residues for both; `read_poly`
returns the payload as stored, with its dtype, without copying it.

Decoding never misreads silently: every structural problem (wrong magic, unsupported version,
truncation, trailing bytes, inconsistent length fields, checksum mismatch, unknown codes, an
invalid ring, out-of-range residues) raises `ren.errors.SerializationError`.  Length fields are
bounded (N by RingSpec's limit, L by `MAX_LIMBS`) and compared with the actual data length
before anything is allocated, so a corrupted header cannot make decoding allocate more than about
twice the size of its input (a copy of a non-`bytes` input, and the result array).  The
checksum is verified before any payload value is interpreted.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import struct
from typing import Any

import numpy as np

from ren.errors import ParameterError, SerializationError, ShapeError, is_int
from ren.ring.modarith import from_mont
from ren.ring.ringspec import MAX_LOG_N, Domain, RingSpec
from ren.ring.tables import get_tables

__all__ = [
    "CHECKSUM_SIZE",
    "FORMAT_VERSION",
    "FORMS",
    "MAGIC",
    "MAX_LIMBS",
    "SUPPORTED_VERSIONS",
    "PayloadDType",
    "decode_poly",
    "encode_poly",
    "header_size",
    "payload_dtype",
    "read_poly",
    "standard_residues",
]

#: The 8 bytes every encoding starts with.
MAGIC = b"RENPOLY\x00"
#: The format version `encode_poly` writes.
FORMAT_VERSION = 1
#: The format versions `decode_poly` reads.
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
#: Length of the trailing checksum (a truncated SHA-256).
CHECKSUM_SIZE = 16
#: Most limbs a serialized polynomial may have (a format limit; RingSpec itself has none).
MAX_LIMBS = 4096
#: Largest ring dimension (RingSpec's limit).
MAX_N = 1 << MAX_LOG_N


class PayloadDType(enum.IntEnum):
    """The payload's element encoding (the dtype code byte)."""

    U32_STANDARD = 1  #: u32 little-endian residues in standard (not Montgomery) form
    U32_MONTGOMERY = 2  #: u32 little-endian residues in Montgomery form: r·2^32 mod q_i


#: The `form=` names of `Poly.tobytes` and `ren.ckks.dumps` → the payload dtype each writes.
FORMS: dict[str, PayloadDType] = {"standard": PayloadDType.U32_STANDARD,
                                  "montgomery": PayloadDType.U32_MONTGOMERY}


def payload_dtype(form: str, where: str) -> PayloadDType:
    """The payload dtype of a `form=` name; ParameterError naming `where` for another name."""
    if not isinstance(form, str) or form not in FORMS:  # (an unhashable form: no TypeError)
        raise ParameterError(f"{where}: form must be 'standard' or 'montgomery', got {form!r}")
    return FORMS[form]


#: Domain code byte ↔ Domain.
_DOMAIN_CODE: dict[Domain, int] = {Domain.COEFF: 0, Domain.NTT: 1}
_CODE_DOMAIN: dict[int, Domain] = {v: k for k, v in _DOMAIN_CODE.items()}

_VERSION = struct.Struct("<8sH")  # magic, version
_PREFIX = struct.Struct("<8sHHIH")  # magic, version, header length, N, limb count
_SUFFIX = struct.Struct("<BBQ")  # domain code, dtype code, payload length
_MODULUS = 4  # bytes per modulus
_WORD = 4  # bytes per residue


def header_size(limbs: int) -> int:
    """The header length H (bytes before the payload) of a version-1 encoding with `limbs`
    moduli."""
    return _PREFIX.size + _MODULUS * limbs + _SUFFIX.size


def _checksum(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).digest()[:CHECKSUM_SIZE]


# -- encoding -----------------------------------------------------------------------------------
def _as_domain(domain: Any) -> Domain:
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, str) and domain.upper() in Domain.__members__:
        return Domain[domain.upper()]
    raise ParameterError(f"encode_poly: unknown domain {domain!r}; use Domain.COEFF or Domain.NTT")


def standard_residues(ring: RingSpec, residues: Any, what: str = "encode_poly") -> np.ndarray:
    """`residues` validated as (limbs × N) integers with row i in [0, q_i), as '<u4'.

    Exact integers only (`ShapeError` otherwise): an integer-dtype array, or nested sequences of
    ints.  Sequences are checked element by element, because NumPy would silently turn a bool
    mixed in with ints into 0/1.
    """
    expected = (ring.limbs, ring.N)
    try:
        arr = (residues if isinstance(residues, np.ndarray)
               else np.asarray(residues, dtype=object))
    except (ValueError, TypeError):
        raise ShapeError(
            f"{what}: residues must be a (limbs × N) = {expected} integer array for "
            f"{ring!r}; could not make an array of {type(residues).__name__}"
        ) from None
    if arr.shape != expected:
        raise ShapeError(
            f"{what}: expected residues of shape {expected} for {ring!r}, got {arr.shape}"
        )
    q = np.array(ring.moduli, dtype=np.int64).reshape(-1, 1)
    kind = arr.dtype.kind
    if kind == "u":
        ok = arr < q.astype(np.uint64)
    elif kind == "i":
        ok = (arr >= 0) & (arr < q)
    elif kind == "O":
        flat = arr.tolist()
        ok = np.zeros(expected, dtype=bool)
        for i, (row, qi) in enumerate(zip(flat, ring.moduli)):
            for j, v in enumerate(row):
                if not is_int(v):
                    raise ShapeError(
                        f"{what}: residues must be integers; residue [{i}, {j}] is "
                        f"{type(v).__name__} {v!r}"
                    )
                ok[i, j] = 0 <= v < qi
        if ok.all():
            arr = np.array(flat, dtype=np.int64)
    else:
        raise ShapeError(
            f"{what}: residues must be an integer array, got dtype {arr.dtype}; convert "
            "standard-form residues to np.uint32 (each row i in [0, q_i))"
        )
    if not ok.all():
        i, j = (int(k) for k in np.argwhere(~ok)[0])
        raise ShapeError(
            f"{what}: residue [{i}, {j}] = {arr[i, j]!r} is out of range: row {i} needs "
            f"0 ≤ r < q_{i} = {ring.moduli[i]} (standard form, not Montgomery)"
        )
    return arr.astype("<u4", copy=False)


def encode_poly(ring: RingSpec, domain: Domain, residues: np.ndarray,
                dtype: PayloadDType = PayloadDType.U32_STANDARD) -> bytes:
    """Serialize one polynomial (format version `FORMAT_VERSION`; layout in the module doc).

    `residues` is the (limbs × N) array of residues in `domain`, row i in [0, q_i), in the form
    `dtype` names (standard by default; `PayloadDType.U32_MONTGOMERY` for Ren's stored words).
    Raises `ShapeError` for a wrong shape, a non-integer dtype or an out-of-range residue, and
    `ParameterError` for a bad ring, domain or dtype.
    """
    if not isinstance(ring, RingSpec):
        raise ParameterError(f"encode_poly: expected a RingSpec, got {type(ring).__name__}")
    domain = _as_domain(domain)
    if ring.limbs > MAX_LIMBS:
        raise ParameterError(
            f"encode_poly: the format holds at most {MAX_LIMBS} limbs, the ring has {ring.limbs}"
        )
    if dtype not in tuple(PayloadDType):
        raise ParameterError(f"encode_poly: unknown payload dtype {dtype!r}; use one of "
                             f"{', '.join(d.name for d in PayloadDType)}")
    words = np.ascontiguousarray(standard_residues(ring, residues))
    payload = words.data.cast("B")  # no copy: hashed and joined as it is
    header = b"".join((
        _PREFIX.pack(MAGIC, FORMAT_VERSION, header_size(ring.limbs), ring.N, ring.limbs),
        struct.pack(f"<{ring.limbs}I", *ring.moduli),
        _SUFFIX.pack(_DOMAIN_CODE[domain], int(dtype), len(payload)),
    ))
    h = hashlib.sha256(header)
    h.update(payload)
    return b"".join((header, payload, h.digest()[:CHECKSUM_SIZE]))


# -- decoding -----------------------------------------------------------------------------------
def _fail(msg: str) -> SerializationError:
    return SerializationError(f"decode_poly: {msg}")


def _as_buffer(data: Any) -> bytes | memoryview:
    """`data` as bytes or a byte-wise memoryview over it (no copy)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _fail(f"expected bytes, bytearray or memoryview, got {type(data).__name__}")
    if isinstance(data, bytes):
        return data
    try:
        view = memoryview(data)
        return view if view.format == "B" and view.ndim == 1 else view.cast("B")
    except (ValueError, TypeError) as exc:  # e.g. a released memoryview
        raise _fail(f"cannot read the buffer: {exc}") from exc


def decode_poly(data: bytes | bytearray | memoryview) -> tuple[RingSpec, Domain, np.ndarray]:
    """Parse bytes written by `encode_poly` into ``(ring, domain, residues)``.

    `residues` is a fresh, writable, C-contiguous (limbs × N) ``np.uint32`` array of
    standard-form residues (a Montgomery-form payload is converted).  Any problem with the data
    raises `SerializationError`; no other exception escapes for any bytes-like input.
    """
    ring, domain, dtype, stored = read_poly(data)
    if dtype is PayloadDType.U32_MONTGOMERY:
        return ring, domain, np.ascontiguousarray(from_mont(stored, get_tables(ring)))
    return ring, domain, stored.astype(np.uint32, order="C", copy=True)


def read_poly(data: bytes | bytearray | memoryview, checksum: bool = True
              ) -> tuple[RingSpec, Domain, PayloadDType, np.ndarray]:
    """Parse bytes written by `encode_poly` into ``(ring, domain, dtype, residues)``, the
    residues as stored (`dtype` says in which form), as a read-only view of `data`: copy it
    before `data` changes.  ``checksum=False`` skips the checksum, for a caller that has just
    verified one covering these bytes (a CKKS container's); every other check still runs.
    Raises `SerializationError` as `decode_poly` does.
    """
    buf = _as_buffer(data)
    size = len(buf)

    # magic and version: everything else depends on them
    if size < len(MAGIC):
        if MAGIC.startswith(buf):
            raise _fail(f"truncated: {size} bytes is shorter than the {len(MAGIC)}-byte magic")
        raise _fail(f"not a Ren polynomial: wrong magic {bytes(buf)!r} (expected {MAGIC!r})")
    if buf[: len(MAGIC)] != MAGIC:
        raise _fail(
            f"not a Ren polynomial: wrong magic {bytes(buf[: len(MAGIC)])!r} (expected "
            f"{MAGIC!r})"
        )
    if size < _VERSION.size:
        raise _fail(f"truncated: {size} bytes, too short to hold the format version")
    _, version = _VERSION.unpack_from(buf)
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        newer = " (written by a newer ren? upgrade ren to read it)" if version > FORMAT_VERSION \
            else ""
        raise _fail(
            f"unsupported format version {version}{newer}; this ren reads version(s) {supported}"
        )

    # version 1: fixed prefix, bounded before anything depends on it
    if size < _PREFIX.size:
        raise _fail(f"truncated: {size} bytes, too short for the {_PREFIX.size}-byte fixed header")
    _, _, hlen, N, limbs = _PREFIX.unpack_from(buf)
    if N < 2 or N > MAX_N or N & (N - 1):
        raise _fail(
            f"invalid header: N={N} is not a power of two in [2, 2^{MAX_LOG_N}]; the data is "
            "corrupted or not a Ren polynomial"
        )
    if not 1 <= limbs <= MAX_LIMBS:
        raise _fail(
            f"invalid header: limb count {limbs} is outside [1, {MAX_LIMBS}]; the data is "
            "corrupted or not a Ren polynomial"
        )
    expected_hlen = header_size(limbs)
    if hlen != expected_hlen:
        raise _fail(
            f"inconsistent header: header length field says {hlen} bytes, but {limbs} limb(s) "
            f"need exactly {expected_hlen}"
        )
    if size < hlen:
        raise _fail(
            f"truncated: {size} bytes, too short for the {hlen}-byte header ({limbs} limbs)"
        )
    dom_code, dtype_code, plen = _SUFFIX.unpack_from(buf, hlen - _SUFFIX.size)
    expected_plen = _WORD * limbs * N
    if plen != expected_plen:
        raise _fail(
            f"inconsistent header: payload length field says {plen} bytes, but N={N} with "
            f"{limbs} limb(s) of u32 residues needs exactly {expected_plen}"
        )
    total = hlen + plen + CHECKSUM_SIZE
    if size < total:
        raise _fail(
            f"truncated: expected {total} bytes for N={N}, {limbs} limb(s), got {size} "
            f"({total - size} missing); the data was cut short or its header is corrupted"
        )
    if size > total:
        raise _fail(
            f"{size - total} trailing byte(s) after the checksum: expected exactly {total} bytes "
            f"for N={N}, {limbs} limb(s); pass one encoded polynomial per call (several "
            "concatenated ones can be split using the header and payload length fields)"
        )

    # integrity before interpretation
    if checksum:
        stored = bytes(buf[total - CHECKSUM_SIZE :])
        computed = _checksum(memoryview(buf)[: total - CHECKSUM_SIZE])
        if not hmac.compare_digest(stored, computed):
            raise _fail(
                f"checksum mismatch (stored {stored.hex()}, computed {computed.hex()}): the data "
                "is corrupted; re-transfer or re-encode it"
            )

    if dom_code not in _CODE_DOMAIN:
        codes = ", ".join(f"{c} = {d.name}" for c, d in sorted(_CODE_DOMAIN.items()))
        raise _fail(f"unknown domain code {dom_code}; version {version} defines {codes}")
    if dtype_code not in {d.value for d in PayloadDType}:
        codes = ", ".join(f"{d.value} = {d.name}" for d in PayloadDType)
        raise _fail(f"unknown dtype code {dtype_code}; version {version} defines {codes}")

    moduli = tuple(int(q) for q in np.frombuffer(buf, "<u4", limbs, _PREFIX.size))
    try:
        ring = RingSpec(N, moduli)
    except ParameterError as exc:
        raise _fail(f"the header describes an invalid ring: {exc}") from exc

    stored_res = np.frombuffer(buf, "<u4", limbs * N, hlen).reshape(limbs, N)
    bad = stored_res >= np.array(moduli, dtype=np.uint32).reshape(-1, 1)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise _fail(
            f"residue [{i}, {j}] = {int(stored_res[i, j])} is not below its modulus "
            f"q_{i} = {moduli[i]} ({int(bad.sum())} out-of-range residue(s) in all); the "
            "writer did not store residues reduced below their moduli"
        )
    return ring, _CODE_DOMAIN[dom_code], PayloadDType(dtype_code), stored_res
