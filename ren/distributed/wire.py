"""What crosses the wire between a client and its workers, and the guard that keeps secrets home.

Ren objects travel in Ren's own versioned, checksummed formats, never as pickled Python objects:

* a CKKS `Ciphertext`, `Plaintext`, `PublicKey`, `RelinKey`, `GaloisKey`, `GaloisKeys` or
  `EncapsulationKeys` as the bytes of `ren.ckks.dumps` (keys in the compact form: every uniform
  half as its 32-byte seed), tagged with its parameters' fingerprint;
* a `Poly` as `Poly.tobytes()` and its device.

Both ends are Ren, so polynomials travel in the Montgomery form Ren stores them in
(``form="montgomery"``): neither side converts a limb.

Each becomes a `Sealed` record inside plain lists, tuples and dicts; plain scalars, NumPy arrays
and parameter objects (`CKKSParams`, small and public) travel as they are.  A `Codec` encodes
and decodes such trees and keeps the table of parameters (fingerprint -> `CKKSParams`) that
decoding needs; the parameters themselves travel once per job, beside the keys.

**Secrets never leave the client.**  `Codec.encode` refuses a `SecretKey` and every object that
holds one (a `KeyGenerator`, a `Decryptor`, a secret-key `Encryptor`) with `SecretKeyError`, and
`guarded_dumps` (the pickler of everything else a job sends: captured JIT plans, functions) does
the same for any such object it meets while pickling, however deeply it is nested (a closure
over a Decryptor included).  Two checks look at data rather than types, against every
`SecretKey` alive in the client process (`live_secret_keys`): a Poly over a secret key's
storage is refused by the codec, and a pickled plan that contains a secret key's residues (a
function that computes with the secret bakes it in as a constant, or a function that closes
over the secret's Poly, in the NTT or the coefficient domain) by `refuse_secret_data`.
"""

from __future__ import annotations

import gc
import hashlib
import io
import numbers
import pickle
import weakref
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ren.ckks import dumps, loads
from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.encapsulation import EncapsulationKeys
from ren.ckks.encrypt import Decryptor as CKKSDecryptor
from ren.ckks.encrypt import Encryptor as CKKSEncryptor
from ren.ckks.params import CKKSParams
from ren.distributed.errors import SecretKeyError, WireError
from ren.poly import Poly, realize_polys
from ren.realization import is_realized
from ren.rlwe.encrypt import Decryptor as RLWEDecryptor
from ren.rlwe.encrypt import Encryptor as RLWEEncryptor
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKeys, PublicKey, SecretKey, SwitchingKey
from ren.rlwe.params import RLWEParams
from ren.tree import flatten

#: CKKS objects that travel as `ren.ckks.dumps` bytes (keys in the compact form)
CKKS_OBJECTS = (Ciphertext, Plaintext, PublicKey, SwitchingKey, GaloisKeys, EncapsulationKeys)
_KEYS = (PublicKey, SwitchingKey, GaloisKeys, EncapsulationKeys)
_SCALARS = (type(None), bool, numbers.Number, str, bytes, Fraction, np.generic)
#: the form of the polynomials on the wire (see the module doc)
WIRE_FORM = "montgomery"


def secret_holder(obj: Any) -> str | None:
    """What secret `obj` is or holds ("a SecretKey", "a KeyGenerator", ...), or None."""
    if isinstance(obj, SecretKey):
        return "a SecretKey"
    if isinstance(obj, KeyGenerator):
        return "a KeyGenerator (it holds the secret key)"
    if isinstance(obj, CKKSDecryptor | RLWEDecryptor):
        return "a Decryptor (it holds the secret key)"
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


@dataclass(frozen=True)
class Sealed:
    """One Ren object on the wire.  `kind` "ckks": `data` is `ren.ckks.dumps` bytes and `tag` the
    parameters' fingerprint; `kind` "poly": `data` is `Poly.tobytes()` and `tag` the device."""

    kind: str
    tag: bytes | str
    data: bytes

    def __repr__(self) -> str:
        return f"<Sealed {self.kind} {len(self.data)} bytes>"

    def __reduce_ex__(self, protocol: Any) -> tuple:
        # pickle protocol 5 (Dask's): the data goes out of band, as a frame of its own, so
        # neither side copies megabytes into and out of the pickle stream
        data: Any = self.data
        if isinstance(protocol, int) and protocol >= 5:
            data = pickle.PickleBuffer(data)
        return Sealed._rebuild, (self.kind, self.tag, data)

    @staticmethod
    def _rebuild(kind: str, tag: bytes | str, data: Any) -> Sealed:
        # an out-of-band frame arrives as whatever buffer the transport made (a memoryview, a
        # bytearray): read-only bytes from here on, as the record promises
        return Sealed(kind, tag, data if type(data) is bytes else bytes(data))


def wire_bytes(tree: Any) -> int:
    """The bytes of every `Sealed` record in a wire tree."""
    if isinstance(tree, Sealed):
        return len(tree.data)
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


class Codec:
    """Encodes trees of Ren objects into wire trees (module doc) and back.  `params` maps a
    fingerprint to its `CKKSParams`: encoding adds the parameters it meets, decoding looks the
    fingerprints up (a `WireError` names a missing one)."""

    def __init__(self, params: dict[bytes, CKKSParams] | None = None,
                 secret_buffers: set[int] | None = None) -> None:
        self.params: dict[bytes, CKKSParams] = dict(params or {})
        self.secret_buffers = secret_buffers or set()  # `secret_buffers()`: Polys to refuse

    def register(self, params: CKKSParams) -> CKKSParams:
        """The table's parameters for `params`' fingerprint (`params` itself when new)."""
        return self.params.setdefault(params.fingerprint, params)

    # -- encoding -----------------------------------------------------------------------------
    def check(self, obj: Any, where: str) -> None:
        """Everything `encode` refuses, refused now (secrets, values that cannot travel), and
        the parameters registered, without serializing anything: a job checks all its inputs
        before it sends the first one."""
        self._encode(obj, where, dry=True)

    def encode(self, obj: Any, where: str) -> Any:
        """The wire tree of `obj` (its Polys realized together first).  `where` names `obj` in
        error messages (e.g. ``"batch[3]"``)."""
        polys: list[Poly] = []
        try:
            flatten(obj, polys, [], None, WireError)
        except WireError as e:
            raise WireError(f"{where}: {e}") from None
        pending = [p for p in polys if not is_realized(p.node)]
        if pending:
            realize_polys(pending)
        return self._encode(obj, where)

    def _encode(self, obj: Any, where: str, dry: bool = False) -> Any:
        refuse_secret(obj, where)
        if isinstance(obj, Poly):
            if self.secret_buffers and _over_secret(obj, self.secret_buffers):
                raise SecretKeyError(f"{where}: refusing to send a Poly over a secret key's "
                                     "storage (the secret itself); workers get ciphertexts and "
                                     "public keys only")
            return None if dry else Sealed("poly", obj.device, obj.tobytes(WIRE_FORM))
        if isinstance(obj, CKKS_OBJECTS):
            params = obj.params
            if not isinstance(params, CKKSParams):
                raise WireError(f"{where}: a {type(obj).__name__} under {type(params).__name__} "
                                "cannot travel; ren.distributed sends CKKS objects (CKKSParams)")
            self.register(params)
            if dry:
                return None
            return Sealed("ckks", params.fingerprint,
                          dumps(obj, compact=isinstance(obj, _KEYS), form=WIRE_FORM))
        if isinstance(obj, RLWEParams):
            if isinstance(obj, CKKSParams):
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
            "ciphertexts, plaintexts, public keys, Polys, CKKSParams, numbers, strings, bytes, "
            "NumPy arrays and lists, tuples and dicts of them; put other values into one of those "
            "(a dataclass of ciphertexts as a dict, for example)")

    # -- decoding -----------------------------------------------------------------------------
    def decode(self, tree: Any) -> Any:
        """The Ren objects of a wire tree (Polys on the device each was sent from; CKKS objects
        on their parameters' device)."""
        if isinstance(tree, Sealed):
            if tree.kind == "poly":
                return Poly.frombytes(tree.data, str(tree.tag))
            if tree.kind != "ckks":
                raise WireError(f"an unknown wire record kind {tree.kind!r} arrived (a newer "
                                "ren on the other side?); install the same ren everywhere")
            params = self.params.get(tree.tag) if isinstance(tree.tag, bytes) else None
            if params is None:
                tag = tree.tag.hex() if isinstance(tree.tag, bytes) else tree.tag
                raise WireError(f"a CKKS object made under parameters {tag} arrived, but those "
                                "parameters were not sent with the job; send objects made under "
                                "the job's parameters (or pass those parameters in the batch)")
            return loads(tree.data, params)
        if isinstance(tree, CKKSParams):
            return self.register(tree)
        t = type(tree)
        if t is list or t is tuple:
            return t(self.decode(v) for v in tree)
        if t is dict:
            return {k: self.decode(v) for k, v in tree.items()}
        return tree


# -- a secret's data inside a pickled plan ------------------------------------------------
def live_secret_keys() -> list[SecretKey]:
    """Every SecretKey alive in this process (the garbage collector's list of objects): what a
    payload must not contain, however the code that built it reached a key."""
    return [o for o in gc.get_objects() if isinstance(o, SecretKey)]


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


def digest(data: bytes) -> str:
    """A short content hash: the cache key of a blob on the workers."""
    return hashlib.sha256(data).hexdigest()[:32]


__all__ = [
    "CKKS_OBJECTS",
    "Codec",
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
