"""Serialization of BFV objects in Ren's versioned, checksummed container (`ren.rlwe.serialize`).

    data = dumps(ct, compact=True)        # bytes; a fresh symmetric encryption: about half size
    ct = loads(data, params)              # checked against params (its fingerprint)
    ct = loads(data, params, expect=Ciphertext)   # and the kind (KindMismatchError otherwise)

BGV objects (`ren.bfv.bgv`, `BGVParams`) use the same container and functions.

Magic ``b"RENBFV\\x00\\x00"``; kinds: 1 `Plaintext` (its N coefficients mod t as an integer
record; BFV's and BGV's), 2 `Ciphertext` (BFV: 2 or 3 polynomials on Q), the RLWE keys with the
codes every Ren scheme uses (`ren.rlwe.serialize.KEY_KINDS`: 3 SecretKey, 4 PublicKey,
5 RelinKey, 6 GaloisKey, 7 GaloisKeys), and 8 `BGVCiphertext` (2 or 3 polynomials on Q_level,
metadata ``{"level": l, "factor": f}``).  A BFV plaintext's or ciphertext's metadata is ``{}``:
BFV has one level and no scale, and t is part of the parameters' fingerprint.

**Compact form** (``compact=True``): polynomials that are exactly uniform samples are written as
their 32-byte seeds: the ``c1`` of a fresh secret-key encryption and the ``a`` half of every key,
so those shrink to about half; a public-key encryption (and anything computed) has no uniform
half and keeps its full form, and so does a BGV ciphertext (its second half is t times a
uniform sample).  A secret key is written only with ``allow_secret=True``.

`loads` raises `ren.rlwe.serialize`'s SerializationError subclasses (re-exported by
`ren.bfv.errors`): `TruncatedDataError`, `CorruptedDataError` (checksum, magic, version, fields),
`FingerprintMismatchError` (other parameters), `KindMismatchError` (another kind than
``expect``, or another scheme's data).
"""

from __future__ import annotations

from typing import Any

from ren.bfv.encoder import Plaintext
from ren.bfv.evaluator import Ciphertext
from ren.bfv.params import BFVParams
from ren.errors import ParameterError, check_bool, check_instance
from ren.poly import Poly
from ren.rlwe.keys import SecretKey
from ren.rlwe.serialize import (
    KEY_KINDS,
    Reader,
    build_checked,
    build_key,
    check_kind,
    container_size,
    ints_record,
    key_parts,
    meta_int,
    poly_records,
    read_container,
    record_size,
    write_container,
)

MAGIC = b"RENBFV\x00\x00"
KINDS: dict[type, int] = {Plaintext: 1, Ciphertext: 2, **KEY_KINDS}
BGV_CIPHERTEXT = 8
_NAMES = {**{v: k.__name__ for k, v in KINDS.items()}, BGV_CIPHERTEXT: "BGVCiphertext"}


def _bgv() -> Any:
    """The BGV module (`ren.bfv.bgv`), None in a build without it."""
    try:
        from ren.bfv import bgv
    except ImportError:  # pragma: no cover
        return None
    return bgv


def _is_bgv_ct(obj: Any) -> bool:
    bgv = _bgv()
    return bgv is not None and isinstance(obj, bgv.BGVCiphertext)


def _parts(obj: Any, who: str, compact: bool) -> tuple[dict, list[Poly]]:
    if isinstance(obj, Ciphertext):
        return {}, list(obj.parts)
    if _is_bgv_ct(obj):
        return {"level": obj.level, "factor": obj.factor}, list(obj.parts)
    parts = key_parts(obj, compact)
    if parts is None:
        raise ParameterError(f"{who}: cannot serialize a {type(obj).__name__}; expected a BFV "
                             "Plaintext, Ciphertext or an RLWE key (SecretKey, PublicKey, "
                             "RelinKey, GaloisKey, GaloisKeys)")
    return parts


def _check_params(obj: Any, who: str) -> None:
    if not isinstance(getattr(obj, "params", None), BFVParams):
        raise ParameterError(f"{who}: the {type(obj).__name__} was made under "
                             f"{type(getattr(obj, 'params', None)).__name__}, not BFVParams; "
                             "use that scheme's dumps (e.g. ren.ckks.dumps)")


def dumps(obj: Any, *, allow_secret: bool = False, compact: bool = False,
          form: str = "standard") -> bytes:
    """The bytes of a BFV plaintext, ciphertext or key (realizes its Polys).  Secret keys need
    ``allow_secret=True``; ``compact=True`` stores uniform halves as seeds;
    ``form="montgomery"`` writes the words as Ren stores them (`Poly.tobytes`)."""
    who = "ren.bfv.dumps"
    allow_secret = check_bool(allow_secret, f"{who}: allow_secret")
    compact = check_bool(compact, f"{who}: compact")
    check_instance(form, str, f"{who}: form", hint="'standard' or 'montgomery'")
    if isinstance(obj, Plaintext):
        return write_container(MAGIC, KINDS[Plaintext], obj.params.fingerprint, {},
                               [ints_record(obj.coeffs)])
    meta, polys = _parts(obj, who, compact)
    _check_params(obj, who)
    if isinstance(obj, SecretKey) and not allow_secret:
        raise ParameterError(f"{who}: refusing to serialize a SecretKey; pass "
                             "allow_secret=True if you really mean to write the secret out")
    records = poly_records(polys, compact, form, who)
    kind = BGV_CIPHERTEXT if _is_bgv_ct(obj) else KINDS[type(obj)]
    return write_container(MAGIC, kind, obj.params.fingerprint, meta, records)


def loads(data: bytes | bytearray | memoryview, params: BFVParams, expect: type | None = None
          ) -> Any:
    """The object written by `dumps`, checked against `params` and, if given, the class
    `expect` (see the module docstring for the errors)."""
    who = "ren.bfv.loads"
    check_instance(params, BFVParams, f"{who}: params")
    scheme = type(params).__name__
    kind, meta, count, r = read_container(data, magic=MAGIC, fingerprint=params.fingerprint,
                                          kinds=_NAMES, who=who, scheme=scheme)
    bgv = _bgv()
    codes = KINDS if bgv is None else {**KINDS, bgv.BGVCiphertext: BGV_CIPHERTEXT}
    check_kind(kind, _NAMES, expect, codes, who)
    return build_checked(r, _NAMES[kind], lambda: _build(kind, meta, count, r, params))


def _build(kind: int, meta: dict, count: int, r: Reader, p: BFVParams) -> Any:
    if kind in (1, 2) and meta:
        raise r.fail(f"a BFV {_NAMES[kind]} has no metadata, the data has {sorted(meta)}"[:300])
    bgv = _bgv()
    is_bgv = bgv is not None and isinstance(p, bgv.BGVParams)
    if kind == BGV_CIPHERTEXT:
        if not is_bgv:
            raise r.fail("a BGVCiphertext needs BGVParams")
        level = meta_int(r, meta, "level", 0, p.depth)
        factor = meta_int(r, meta, "factor", 1, p.t - 1)
        if count not in (2, 3):
            raise r.fail(f"a BGVCiphertext has 2 or 3 polynomials, the data says {count}")
        return bgv.BGVCiphertext(tuple(r.polys(count, p.ring(level), p.device)), level, factor,
                                 p)
    if kind == 2 and is_bgv:
        raise r.fail("a BFV Ciphertext under BGVParams")
    if kind == 1:
        if count != 1:
            raise r.fail(f"a Plaintext has 1 record, the data says {count}")
        return Plaintext(r.ints(0, p.N, p.t), p)
    if kind == 2:
        if count not in (2, 3):
            raise r.fail(f"a Ciphertext has 2 or 3 polynomials, the data says {count}")
        return Ciphertext(tuple(r.polys(count, p.ring(0), p.device)), p)
    return build_key(kind, meta, count, r, p)


def serialized_size(obj: Any, compact: bool = False) -> int:
    """The length of ``dumps(obj, allow_secret=True, compact=compact)`` without building it."""
    compact = check_bool(compact, "ren.bfv.serialized_size: compact")
    if isinstance(obj, Plaintext):
        return container_size({}, [8 + 8 + 8 + 8 * obj.params.N])
    meta, polys = _parts(obj, "ren.bfv.serialized_size", compact)
    return container_size(meta, [record_size(q, compact) for q in polys])


__all__ = ["KINDS", "MAGIC", "dumps", "loads", "serialized_size"]
