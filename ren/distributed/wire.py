"""What crosses the wire between a client and its workers, and the guard that keeps secrets home.

Ren objects travel as `Sealed` records (`ren.distributed.frames`): a small header (kind, JSON
metadata with the parameters' fingerprint, a ciphertext's level, scale (CKKS) or factor (BGV),
and a checksum against transit corruption, XXH3-128 where installed) and frames that are the
polynomials' own storage, never pickled Python objects and never copied into a byte string on
the way out:

* a `Ciphertext` (CKKS, BFV, BGV or RLWE), a CKKS `Plaintext`, a `PublicKey`, `RelinKey`,
  `GaloisKey` or `GaloisKeys` (under `CKKSParams`, `BFVParams`, `BGVParams`): one frame per
  polynomial, its words exactly as Ren stores them (Montgomery form: neither side converts a
  limb), and every uniform half (a key's ``a``, a fresh secret-key encryption's ``c1``) as its
  32-byte seed (the compact form), and a lean key (`KeyGenerator(..., lean=True)`) arrives
  lean; a `GaloisKeys` keeps its elements in their order (a
  `ren.jit` plan captured on the original keys is keyed by that structure and must match the
  decoded ones on a worker);
* a BFV/BGV `Plaintext`: its int64 coefficients as one frame;
* `EncapsulationKeys`: the bytes of `ren.ckks.dumps` (compact) as one frame;
* a `Poly`: its ring, device and one frame.

Records travel through Dask's own serialization family (registered for `Sealed`: header and
frames) or, inside anything Dask pickles, as pickle protocol 5 out-of-band buffers.  Records
sit inside plain lists, tuples and dicts; plain scalars, NumPy arrays and parameter objects
(`CKKSParams`, `BFVParams`: small and public) travel as they are.  A `Codec` encodes and
decodes such trees and keeps the table of parameters (fingerprint -> parameters) that decoding
needs; the parameters themselves travel once per job, beside the keys.  A corrupted or cut
record raises `SerializationError`; an unknown kind or missing parameters `WireError`.

**Secrets never leave the client.**  `Codec.encode` refuses a `SecretKey` and every object that
holds one (a `KeyGenerator`, a `Decryptor`, a secret-key `Encryptor`, of CKKS, BFV, BGV or RLWE)
with `SecretKeyError`, and `guarded_dumps` (the pickler of everything else a job sends:
captured JIT plans, functions) does the same for any such object it meets while pickling,
however deeply it is nested (a closure over a Decryptor included).  Two checks look at data
rather than types, against every `SecretKey` alive in the client process
(`live_secret_keys`): a Poly over a secret key's storage is refused by the codec, and a pickled
plan that contains a secret key's residues (a function that computes with the secret bakes it
in as a constant, or a function that closes over the secret's Poly, in the NTT or the
coefficient domain) by `refuse_secret_data`.
"""

from __future__ import annotations

import gc
import io
import numbers
import pickle
import weakref
from collections.abc import Callable
from fractions import Fraction
from itertools import compress
from typing import Any

import numpy as np

from ren.bfv.bgv import BGVCiphertext, BGVDecryptor, BGVEncryptor
from ren.bfv.bgv_params import BGVParams
from ren.bfv.encoder import Plaintext as BFVPlaintext
from ren.bfv.evaluator import Ciphertext as BFVCiphertext
from ren.bfv.evaluator import Decryptor as BFVDecryptor
from ren.bfv.evaluator import Encryptor as BFVEncryptor
from ren.bfv.params import BFVParams
from ren.ckks import dumps, loads
from ren.ckks.ciphertext import Ciphertext as CKKSCiphertext
from ren.ckks.ciphertext import Plaintext as CKKSPlaintext
from ren.ckks.encapsulation import EncapsulationKeys
from ren.ckks.encrypt import Decryptor as CKKSDecryptor
from ren.ckks.encrypt import Encryptor as CKKSEncryptor
from ren.ckks.params import CKKSParams
from ren.distributed.errors import SecretKeyError, WireError
from ren.distributed.frames import (
    Sealed,
    byte_view,
    digest,
    meta_int,
    meta_scale,
    pack_meta,
    poly_frame,
    polys_from,
    rebuild,
    register_dask,
    scale_meta,
    unpack_meta,
)
from ren.distributed.shm import Shared, receive
from ren.errors import SerializationError
from ren.poly import Poly, realize_polys
from ren.realization import is_realized
from ren.ring import RingSpec
from ren.rlwe.ciphertext import Ciphertext as RLWECiphertext
from ren.rlwe.encrypt import Decryptor as RLWEDecryptor
from ren.rlwe.encrypt import Encryptor as RLWEEncryptor
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKey, GaloisKeys, PublicKey, RelinKey, SecretKey, SwitchingKey
from ren.rlwe.params import RLWEParams
from ren.rlwe.serialize import parse_lean
from ren.tree import flatten

#: Ren objects under parameters that travel as `Sealed` records (module doc)
WIRE_OBJECTS = (CKKSCiphertext, CKKSPlaintext, BFVCiphertext, BGVCiphertext, BFVPlaintext,
                RLWECiphertext, PublicKey, SwitchingKey, GaloisKeys, EncapsulationKeys)
#: the record kinds `Codec.decode` reads
RECORD_KINDS = ("poly", "ct", "pt", "pk", "swk", "gks", "bfv-pt", "ckks-blob")
_SCALARS = (type(None), bool, numbers.Number, str, bytes, Fraction, np.generic)
#: the form of the polynomials on the wire (see the module doc)
WIRE_FORM = "montgomery"


def secret_holder(obj: Any) -> str | None:
    """What secret `obj` is or holds ("a SecretKey", "a KeyGenerator", ...), or None."""
    if isinstance(obj, SecretKey):
        return "a SecretKey"
    if isinstance(obj, KeyGenerator):
        return "a KeyGenerator (it holds the secret key)"
    if isinstance(obj, CKKSDecryptor | RLWEDecryptor | BFVDecryptor | BGVDecryptor):
        return "a Decryptor (it holds the secret key)"
    if isinstance(obj, BFVEncryptor | BGVEncryptor):
        obj = obj._rlwe
    if isinstance(obj, CKKSEncryptor | RLWEEncryptor) and isinstance(obj.key, SecretKey):
        return "a secret-key Encryptor (it holds the secret key)"
    return None


def refuse_secret(obj: Any, where: str) -> None:
    """SecretKeyError if `obj` is or holds a secret key (see `secret_holder`)."""
    what = secret_holder(obj)
    if what is not None:
        raise SecretKeyError(
            f"{where}: refusing to send {what} to a worker.  Workers get ciphertexts and public "
            "evaluation keys (RelinKey, GaloisKeys, PublicKey) only: encrypt on the client, pass "
            "the public keys as keys=..., decrypt the results on the client (and do not let the "
            "function close over a Decryptor, KeyGenerator or secret key)")


def wire_bytes(tree: Any) -> int:
    """The bytes of every `Sealed` record in a wire tree (metadata and frames)."""
    if isinstance(tree, Sealed | Shared):
        return tree.nbytes
    if isinstance(tree, list | tuple):
        return sum(wire_bytes(v) for v in tree)
    if isinstance(tree, dict):
        return sum(wire_bytes(v) for v in tree.values())
    return 0


def _over_secret(p: Poly, buffers: set[int]) -> bool:
    from ren.ir import is_const, storage_buffer

    if is_const(p.node):
        return False
    b = storage_buffer(p.node)
    return id(b) in buffers or (b.base is not None and id(b.base) in buffers)


def _object_polys(obj: Any) -> tuple[dict[str, Any], list[Poly]]:
    """(kind, metadata, polys) of a Ren object under parameters (module doc)."""
    if isinstance(obj, CKKSCiphertext | CKKSPlaintext):
        polys = list(obj.parts) if isinstance(obj, CKKSCiphertext) else [obj.poly]
        kind = "ct" if isinstance(obj, CKKSCiphertext) else "pt"
        return {"kind": kind, "level": obj.level, "scale": scale_meta(obj.scale)}, polys
    if isinstance(obj, BFVCiphertext):
        return {"kind": "ct"}, list(obj.parts)
    if isinstance(obj, BGVCiphertext):
        return {"kind": "ct", "level": obj.level, "factor": obj.factor}, list(obj.parts)
    if isinstance(obj, RLWECiphertext):
        return {"kind": "ct", "level": obj.level}, list(obj.parts)
    if isinstance(obj, PublicKey):
        return {"kind": "pk"}, [obj.b, obj.a]
    if isinstance(obj, SwitchingKey):
        which = "relin" if isinstance(obj, RelinKey) else \
            "galois" if isinstance(obj, GaloisKey) else "switching"
        return {"kind": "swk", "type": which, "galois": obj.galois, "lean": obj.is_lean}, \
            [*obj.b, *obj.a]
    assert isinstance(obj, GaloisKeys)
    elements = list(obj.keys)  # in the object's order: a jit plan's key is its structure
    # a lean key arrives lean: a plan captured on lean keys reads their b rows only
    return {"kind": "gks", "elements": elements,
            "lean": [obj.keys[g].is_lean for g in elements]}, \
        [p for g in elements for p in (*obj.keys[g].b, *obj.keys[g].a)]


class Codec:
    """Encodes trees of Ren objects into wire trees (module doc) and back.  `params` maps a
    fingerprint to its parameters (`CKKSParams`, `BFVParams`, ...): encoding adds the
    parameters it meets, decoding looks the fingerprints up (a `WireError` names a missing
    one)."""

    def __init__(self, params: dict[bytes, RLWEParams] | None = None,
                 secret_buffers: set[int] | Callable[[], set[int]] | None = None) -> None:
        self.params: dict[bytes, RLWEParams] = dict(params or {})
        # `secret_buffers()`: the storage of Polys to refuse; a callable gives them the first
        # time a Poly is encoded (`LiveSecrets.buffers`: a batch of ciphertexts needs none)
        self._secret_source = secret_buffers if callable(secret_buffers) else None
        self.secret_buffers: set[int] = set() if callable(secret_buffers) else \
            set(secret_buffers or ())
        register_dask()  # Dask's serialization family, where Dask is loaded (frames module)

    def register(self, params: RLWEParams) -> RLWEParams:
        """The table's parameters for `params`' fingerprint (`params` itself when new)."""
        return self.params.setdefault(params.fingerprint, params)

    # -- encoding -----------------------------------------------------------------------------
    def check(self, obj: Any, where: str) -> None:
        """Everything `encode` refuses, refused now (secrets, values that cannot travel), and
        the parameters registered, without serializing anything: a job checks all its inputs
        before it sends the first one."""
        self._encode(obj, where, dry=True)

    def encode(self, obj: Any, where: str, segments: Any = None, realized: bool = False
               ) -> Any:
        """The wire tree of `obj` (its Polys realized together first).  `where` names `obj` in
        error messages (e.g. ``"batch[3]"``).  With `segments` (a `ren.distributed.shm.Segments`)
        large records are written into shared memory and travel by name.  `realized`: the
        caller realized every Poly of `obj` already (a worker's result, `realize_tree`), so
        the walk that finds unrealized ones is skipped (it runs right after a replay, whose
        working set evicted its code and objects from the caches; a Poly that is not
        realized then raises RealizeError when its words are read)."""
        if not realized:
            polys: list[Poly] = []
            try:
                flatten(obj, polys, [], None, WireError)
            except WireError as e:
                raise WireError(f"{where}: {e}") from None
            pending = [p for p in polys if not is_realized(p.node)]
            if pending:
                realize_polys(pending)
        tree = self._encode(obj, where)
        return tree if segments is None else _into(tree, segments)

    def _encode(self, obj: Any, where: str, dry: bool = False) -> Any:
        refuse_secret(obj, where)
        if isinstance(obj, Poly):
            if self._secret_source is not None:
                self.secret_buffers, self._secret_source = self._secret_source(), None
            if self.secret_buffers and _over_secret(obj, self.secret_buffers):
                raise SecretKeyError(f"{where}: refusing to send a Poly over a secret key's "
                                     "storage (the secret itself); workers get ciphertexts and "
                                     "public keys only")
            if dry:
                return None
            desc, frame = poly_frame(obj, compact=False)
            meta = {"N": obj.ring.N, "moduli": list(obj.ring.moduli), "device": obj.device,
                    "polys": [desc]}
            return Sealed("poly", pack_meta(meta), (frame,))
        if isinstance(obj, WIRE_OBJECTS):
            params = obj.params
            if not isinstance(params, RLWEParams):
                raise WireError(f"{where}: a {type(obj).__name__} under {type(params).__name__} "
                                "cannot travel; ren.distributed sends objects under RLWEParams "
                                "(CKKSParams, BFVParams)")
            self.register(params)
            if dry:
                return None
            fp = params.fingerprint.hex()
            if isinstance(obj, EncapsulationKeys):  # its own container (two key rings)
                return Sealed("ckks-blob", pack_meta({"fp": fp}),
                              (dumps(obj, compact=True, form=WIRE_FORM),))
            if isinstance(obj, BFVPlaintext):
                coeffs = np.ascontiguousarray(obj.coeffs, dtype="<i8")
                return Sealed("bfv-pt", pack_meta({"fp": fp}), (byte_view(coeffs),))
            meta, polys = _object_polys(obj)
            pairs = [poly_frame(p, compact=True) for p in polys]
            meta.update(fp=fp, polys=[d for d, _ in pairs])
            kind = str(meta.pop("kind"))
            return Sealed(kind, pack_meta(meta),
                          tuple(f for _, f in pairs if f is not None))
        if isinstance(obj, RLWEParams):
            self.register(obj)
            return obj
        t = type(obj)
        if t is list or t is tuple:
            return t(self._encode(v, f"{where}[{i}]", dry) for i, v in enumerate(obj))
        if t is dict:
            for k in obj:
                if not isinstance(k, str | int) or isinstance(k, bool):
                    raise WireError(f"{where}: dict keys on the wire are str or int, got "
                                    f"{type(k).__name__} {k!r}")
            return {k: self._encode(v, f"{where}[{k!r}]", dry) for k, v in obj.items()}
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise WireError(f"{where}: a NumPy array of Python objects cannot travel; "
                                "convert it to a numeric dtype or a list")
            return obj
        if isinstance(obj, _SCALARS):
            return obj
        raise WireError(
            f"{where}: a {t.__name__} cannot travel to or from a worker.  On the wire are "
            "ciphertexts, plaintexts, public keys, Polys, parameters, numbers, strings, bytes, "
            "NumPy arrays and lists, tuples and dicts of them; put other values into one of those "
            "(a dataclass of ciphertexts as a dict, for example)")

    # -- decoding -----------------------------------------------------------------------------
    def decode(self, tree: Any, ranges: bool = True) -> Any:
        """The Ren objects of a wire tree (Polys on the device each was sent from; other
        objects on their parameters' device).  Every record's checksum is verified;
        ``ranges=False`` skips the check that each residue is below its modulus (only for
        records of a sender this process trusts with its code: a worker's inputs from its
        client, `ren.distributed.worker.decode_ahead`)."""
        if isinstance(tree, Sealed):
            return self._unseal(tree, ranges)
        if isinstance(tree, Shared):  # not through Dask: its segment mapped here
            return self._unseal(receive(tree.header()), ranges)
        if isinstance(tree, RLWEParams):
            return self.register(tree)
        t = type(tree)
        if t is list or t is tuple:
            return t(self.decode(v, ranges) for v in tree)
        if t is dict:
            return {k: self.decode(v, ranges) for k, v in tree.items()}
        return tree

    def _params(self, meta: dict[str, Any], kind: str) -> RLWEParams:
        fp = meta.get("fp")
        try:
            params = self.params.get(bytes.fromhex(fp)) if isinstance(fp, str) else None
        except ValueError:
            params = None
        if params is None:
            raise WireError(f"a {kind!r} record made under parameters {fp!r:.40} arrived, but "
                            "those parameters were not sent with the job; send objects made "
                            "under the job's parameters (or pass those parameters in the batch)")
        return params

    def _unseal(self, rec: Sealed, ranges: bool = True) -> Any:
        kind = rec.kind
        if kind not in RECORD_KINDS:
            raise WireError(f"an unknown wire record kind {kind!r} arrived (a newer ren on the "
                            "other side?); install the same ren everywhere")
        rec.verify()
        meta = unpack_meta(rec)
        what = f"a {kind!r} wire record"
        if kind == "poly":
            r = rebuild(what, RingSpec, meta.get("N"), tuple(meta.get("moduli") or ()))
            device = meta.get("device")
            if not isinstance(device, str):
                raise SerializationError(f"{what}: the device must be a string")
            return polys_from(meta.get("polys"), rec.frames, [r], device, what, ranges)[0]
        p = self._params(meta, kind)
        if kind == "ckks-blob":
            if len(rec.frames) != 1 or not isinstance(p, CKKSParams):
                raise SerializationError(f"{what}: one frame of a CKKS container expected")
            return loads(rec.frames[0], p)  # (a lean key's container says so itself)
        if kind == "bfv-pt":
            if len(rec.frames) != 1 or not isinstance(p, BFVParams):
                raise SerializationError(f"{what}: one frame of BFV coefficients expected")
            raw = rec.frames[0]
            if memoryview(raw).nbytes != 8 * p.N:
                raise SerializationError(f"{what}: the frame has {memoryview(raw).nbytes} bytes, "
                                         f"N={p.N} coefficients need {8 * p.N}")
            coeffs = np.frombuffer(raw, dtype="<i8").astype(np.int64)  # a copy of its own
            return rebuild(what, BFVPlaintext, coeffs, p)
        descs = meta.get("polys")
        if kind in ("ct", "pt"):
            bfv = isinstance(p, BFVParams) and not isinstance(p, BGVParams)  # one level only
            level = 0 if bfv else meta_int(meta, "level", 0, p.depth, what)
            n = len(descs) if isinstance(descs, list) else 0
            if (kind == "ct" and n not in (2, 3)) or (kind == "pt" and n != 1):
                raise SerializationError(f"{what}: {n} polynomial(s) is not a "
                                         f"{'ciphertext' if kind == 'ct' else 'plaintext'}")
            if kind == "pt" and not isinstance(p, CKKSParams):
                raise SerializationError(f"{what}: a plaintext record needs CKKS parameters")
            polys = polys_from(descs, rec.frames, [p.ring(level)] * n, p.device, what,
                               ranges)
            if isinstance(p, CKKSParams):
                scale = meta_scale(meta.get("scale"), what)
                if kind == "pt":
                    return rebuild(what, CKKSPlaintext, polys[0], scale, level, p)
                return rebuild(what, CKKSCiphertext, tuple(polys), scale, level, p)
            if isinstance(p, BGVParams):
                factor = meta_int(meta, "factor", 1, p.t - 1, what)
                return rebuild(what, BGVCiphertext, tuple(polys), level, factor, p)
            if isinstance(p, BFVParams):
                return rebuild(what, BFVCiphertext, tuple(polys), p)
            return rebuild(what, RLWECiphertext, tuple(polys), level, p)
        dnum = len(p.digits)
        if kind == "pk":
            b, a = polys_from(descs, rec.frames, [p.key_ring] * 2, p.device, what, ranges)
            return rebuild(what, PublicKey, b, a, p)
        if kind == "swk":
            cls = {"relin": RelinKey, "galois": GaloisKey, "switching": SwitchingKey}.get(
                str(meta.get("type")))
            if cls is None:
                raise SerializationError(f"{what}: unknown key type {meta.get('type')!r:.40}")
            rows = polys_from(descs, rec.frames, [p.key_ring] * 2 * dnum, p.device, what,
                              ranges)
            g = meta.get("galois")
            (lean,) = _lean(meta, 1, False, what)
            return rebuild(what, cls, tuple(rows[:dnum]), tuple(rows[dnum:]), p, galois=g,
                           lean=lean)
        elements = meta.get("elements")
        if not isinstance(elements, list) or len(elements) > p.N or \
                len(set(map(repr, elements))) != len(elements):
            raise SerializationError(f"{what}: 'elements' must be a list of distinct Galois "
                                     "elements")
        flags = _lean(meta, len(elements), True, what)
        rows = polys_from(descs, rec.frames, [p.key_ring] * 2 * dnum * len(elements), p.device,
                          what, ranges)
        keys = {}
        for i, g in enumerate(elements):
            mine = rows[2 * dnum * i: 2 * dnum * (i + 1)]
            keys[g] = rebuild(what, GaloisKey, tuple(mine[:dnum]), tuple(mine[dnum:]), p,
                              galois=g, lean=flags[i])
        return rebuild(what, GaloisKeys, keys, p)


def _lean(meta: dict[str, Any], count: int, many: bool, what: str) -> list[bool]:
    """A key record's flags that keys travelled lean (their a rows as seeds, kept so on
    arrival): `ren.rlwe.serialize.parse_lean`, the container's own check, named for `what`."""
    try:
        return parse_lean(meta.get("lean"), count, many)
    except SerializationError as e:
        raise SerializationError(f"{what}: {e}") from None


def _into(tree: Any, segments: Any) -> Any:
    """`tree` with its large records in `segments` (shared memory)."""
    if isinstance(tree, Sealed):
        return segments.seal(tree)
    t = type(tree)
    if t is list or t is tuple:
        return t(_into(v, segments) for v in tree)
    if t is dict:
        return {k: _into(v, segments) for k, v in tree.items()}
    return tree


# -- a secret's data inside a pickled plan ------------------------------------------------
def live_secret_keys() -> list[SecretKey]:
    """Every SecretKey alive in this process (the garbage collector's list of objects): what a
    payload must not contain, however the code that built it reached a key.  The walk over
    the objects runs in C (`itertools.compress` over their types): a client process holds a
    few hundred thousand objects (Dask's included), which a Python loop took ~20 ms over."""
    kinds: set[type] = set()
    todo: list[type] = [SecretKey]
    while todo:  # SecretKey and every subclass of it
        cls = todo.pop()
        if cls not in kinds:
            kinds.add(cls)
            todo += cls.__subclasses__()
    objects = gc.get_objects()
    return list(compress(objects, map(kinds.__contains__, map(type, objects))))


class LiveSecrets:
    """The SecretKeys alive in this process (`live_secret_keys`) and their storage buffers
    (`secret_buffers`), looked up the first time a check needs them, then kept for the job:
    the lookup walks every object of the process (~20 ms of CPU in a client that holds a Dask
    cluster), and a job of ciphertexts whose program was pickled by an earlier job needs
    neither (only Polys and newly pickled programs are checked against the secrets' data)."""

    def __init__(self) -> None:
        self._keys: list[SecretKey] | None = None
        self._buffers: set[int] | None = None

    def keys(self) -> list[SecretKey]:
        """The live SecretKeys (looked up once)."""
        if self._keys is None:
            self._keys = live_secret_keys()
        return self._keys

    def buffers(self) -> set[int]:
        """The ids of their storage buffers (looked up once)."""
        if self._buffers is None:
            self._buffers = secret_buffers(self.keys())
        return self._buffers

    @property
    def looked_up(self) -> bool:
        """Whether the process's objects were walked for this job."""
        return self._keys is not None


def secret_buffers(secrets: list[SecretKey]) -> set[int]:
    """The ids of the storage buffers of `secrets` (a Poly over one of them is the secret)."""
    from ren.ir import storage_buffer

    out = set()
    for sk in secrets:
        if is_realized(sk.poly.node):
            out.add(id(storage_buffer(sk.poly.node)))
    return out


#: the fragments of each live secret key, computed once per key (an inverse NTT each)
_FRAGMENTS: weakref.WeakKeyDictionary[SecretKey, list[bytes]] = weakref.WeakKeyDictionary()


def _ternary_window(row: np.ndarray, words: int) -> int | None:
    """The start of the first window of `words` coefficients of a ternary secret's limb (0, 1
    and q - 1) distinctive enough to look for: at least half nonzero, both signs at least
    twice.  None when there is none (a sparse secret's coefficients are mostly 0, and a run of
    zeros is in every blob)."""
    if len(row) < words:
        return None
    windows = np.lib.stride_tricks.sliding_window_view(row, words)
    ones = (windows == 1).sum(axis=1)
    nonzero = (windows != 0).sum(axis=1)
    minus = nonzero - ones
    good = np.flatnonzero((nonzero >= words // 2) & (ones >= 2) & (minus >= 2))
    return int(good[0]) if len(good) else None


def secret_fragments(sk: SecretKey, words: int = 16) -> list[bytes]:
    """Byte strings that appear wherever the secret's data is stored: the first `words` u32 of
    every limb, as stored (Montgomery form) and in standard form; and, in the coefficient
    domain (`sk.poly.intt()`, standard and Montgomery form), a distinctive window of every
    limb (`_ternary_window`; none for a sparse secret)."""
    from ren.ir import storage_buffer

    if words == 16 and sk in _FRAGMENTS:
        return _FRAGMENTS[sk]
    sk.poly.realize()
    stored = np.ascontiguousarray(storage_buffer(sk.poly.node).copyout(), dtype=np.uint32)
    standard = np.ascontiguousarray(sk.poly.numpy(), dtype=np.uint32)
    out = [row[:words].tobytes() for arr in (stored, standard) for row in arr]
    coefficients = sk.poly.intt()
    coefficients.realize()
    c_standard = np.ascontiguousarray(coefficients.numpy(), dtype=np.uint32)
    c_stored = np.ascontiguousarray(storage_buffer(coefficients.node).copyout(), dtype=np.uint32)
    for limb, row in enumerate(c_standard):
        start = _ternary_window(row, words)
        if start is not None:
            out += [arr[limb, start:start + words].tobytes() for arr in (c_standard, c_stored)]
    if words == 16:
        _FRAGMENTS[sk] = out
    return out


def refuse_secret_data(blob: bytes, secrets: list[SecretKey], where: str) -> None:
    """SecretKeyError if the data of any of `secrets` occurs in `blob` (a captured plan that
    computes with a secret key bakes it in as a constant)."""
    for sk in secrets:
        if any(f in blob for f in secret_fragments(sk)):
            raise SecretKeyError(
                f"{where} contains the data of a secret key of this process: the captured plan "
                "computes with the secret key (it is baked in as a constant).  Decrypt on the "
                "client; a function sent to workers may use public keys only")


# -- pickling what is not data: plans and functions ------------------------------------------
def _pickler_base() -> type:
    try:
        import cloudpickle  # a dependency of Dask: functions defined in __main__ travel by value
    except ImportError:  # pragma: no cover - the distributed extra installs it
        return pickle.Pickler
    return cloudpickle.Pickler


class _Guarded:
    """Mixed into the pickler class: refuses secret holders wherever pickling meets them."""

    where = "a job"

    def reducer_override(self, obj: Any) -> Any:
        refuse_secret(obj, self.where)
        return super().reducer_override(obj)  # type: ignore[misc]


def guarded_dumps(obj: Any, where: str) -> bytes:
    """`obj` pickled (with cloudpickle where installed), or SecretKeyError naming `where` when a
    secret key or an object holding one is anywhere inside it."""
    base = _pickler_base()
    if not hasattr(base, "reducer_override"):  # the C pickler has none to call up to
        Guarded = type("Guarded", (base,), {"reducer_override": _plain_override, "where": where})
    else:
        Guarded = type("Guarded", (_Guarded, base), {"where": where})
    buf = io.BytesIO()
    Guarded(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _plain_override(self: Any, obj: Any) -> Any:
    refuse_secret(obj, self.where)
    return NotImplemented


__all__ = [
    "RECORD_KINDS",
    "WIRE_OBJECTS",
    "Codec",
    "LiveSecrets",
    "Sealed",
    "digest",
    "guarded_dumps",
    "live_secret_keys",
    "refuse_secret",
    "refuse_secret_data",
    "secret_buffers",
    "secret_fragments",
    "secret_holder",
    "wire_bytes",
]
