"""What a map job ships once per worker: its program (plans or a function) and its context.

`ren.distributed.batch.submit` asks this module for the program of a job (`program_of`: the
plans a jitted function replays for each input spec, captured on the client where there are
none, or the function itself), the program's pickle and name (`program_blob`, made once per
program and checked for secrets), the context (`context`: the parameters and the keys' wire
tree, no copy of the keys' bytes; each key object's record made once while it lives:
`encode_keys`) and its name (`context_name`, by content), and the stand-ins
of the results a ``keep=True`` job leaves on the cluster (`result_standins`).  Both names are
content hashes: the workers cache what they decoded under them, and the client keeps what it
broadcast under them for later jobs (`ren.distributed.remote.share`).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ren import settings
from ren.distributed.errors import WireError
from ren.distributed.remote import standin
from ren.distributed.wire import (
    Codec,
    LiveSecrets,
    Sealed,
    digest,
    guarded_dumps,
    refuse_secret_data,
    wire_bytes,
)
from ren.distributed.worker import Program
from ren.jit import JitPlan, Jitted
from ren.poly import Poly
from ren.rlwe.params import RLWEParams
from ren.tree import flatten

#: the wire record of each key object a job encoded (`encode_keys`), by the object: (its
#: Polys' nodes and its other leaves when it was encoded, the record)
_key_records: weakref.WeakKeyDictionary[Any, tuple[tuple, list[Any], Any]] = \
    weakref.WeakKeyDictionary()
_key_lock = threading.Lock()


def _same(a: list[Any], b: list[Any]) -> bool:
    """Whether two lists of leaves are the same objects or equal values."""
    def equal(x: Any, y: Any) -> bool:
        try:
            return x is y or (type(x) is type(y) and bool(x == y))
        except Exception:  # (an array compares elementwise)
            return False
    return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))


def encode_keys(codec: Codec, keys: Any, where: str = "keys") -> Any:
    """``codec.encode(keys, where)``, each key object's record made once while the object
    lives and holds the same Polys: a job's keys are encoded on the client for their name
    (`context_name`) even when the workers hold them already, and encoding checksums every
    byte of them (3.2 GB of lean keys at n16: most of the client's CPU in a job of four
    bootstrappings).  Lists and tuples of keys are walked here; any other tree is encoded
    whole."""
    t = type(keys)
    if t is list or t is tuple:
        return t(encode_keys(codec, v, f"{where}[{i}]") for i, v in enumerate(keys))
    params = getattr(keys, "params", None)
    if not isinstance(params, RLWEParams) or isinstance(keys, Poly):
        return codec.encode(keys, where)
    polys: list[Poly] = []
    others: list[Any] = []
    try:
        flatten(keys, polys, others, None, WireError)
    except WireError as e:
        raise WireError(f"{where}: {e}") from None
    nodes = tuple(p.node for p in polys)  # held: their ids cannot be reused meanwhile
    with _key_lock:
        try:
            hit = _key_records.get(keys)
        except TypeError:  # not weakly referenceable: encoded each time
            return codec.encode(keys, where)
    if hit is not None and len(hit[0]) == len(nodes) and all(
            a is b for a, b in zip(hit[0], nodes, strict=True)) and _same(hit[1], others):
        codec.register(params)
        return hit[2]
    record = codec.encode(keys, where)
    with _key_lock:
        _key_records[keys] = (nodes, others, record)
    return record


def _arguments(item: Any) -> tuple:
    return item if type(item) is tuple else (item,)


def program_of(fn: Any, items: list | None, keys: Any) -> tuple[Program, list[int | None]]:
    """The program a job ships and, per input, the index of the plan it replays.  `items`
    None: inputs of unknown specs (a Batch without stand-ins), whose plans a jitted function
    captures on the workers."""
    if isinstance(fn, Jitted) and settings.get("REN_JIT") and items is None:
        return Program(function=fn.fn, capture=True), []
    if isinstance(fn, Jitted) and settings.get("REN_JIT"):
        assert items is not None
        kwargs = {} if keys is None else {"keys": keys}
        plans: list[JitPlan] = []
        which: list[int | None] = []
        known: dict[int, int] = {}  # a Batch's inputs share their stand-ins: one lookup each
        for i, item in enumerate(items):
            if id(item) in known:
                which.append(known[id(item)])
                continue
            args = _arguments(item)
            try:
                plan = fn.plan_for(*args, **kwargs)
                if plan is None:  # capture: one call on the client
                    fn(*args, **kwargs)
                    plan = fn.plan_for(*args, **kwargs)
            except Exception as e:
                e.add_note(f"ren.distributed: while capturing the plan for input {i} on the "
                           "client")
                raise
            assert plan is not None
            j = next((k for k, p in enumerate(plans) if p is plan), None)
            if j is None:
                plans.append(plan)
                j = len(plans) - 1
            which.append(j)
            known[id(item)] = j
        return Program(plans=plans), which
    function = fn.fn if isinstance(fn, Jitted) else fn  # REN_JIT=0: eager on the workers
    return Program(function=function), [None] * len(items or ())



def context_name(fingerprints: list[bytes], keys_wire: Any, has_keys: bool) -> str:
    """The name of a job's context: a hash of what it means (the parameters' fingerprints and
    the keys' wire records, each by its kind, metadata and checksum over its frames), not of
    its pickle, which carries the parameters' caches too; no copy of the keys' bytes is made
    for it (a pickle of them was one more copy of every key in the client: 3.2 GB at n16)."""
    return "ren-context-" + digest(b"|".join(sorted(fingerprints)) + b"|" +
                                   _content(keys_wire) + (b"|1" if has_keys else b"|0"))


def _content(tree: Any) -> bytes:
    """A byte string that names a wire tree's content: a record by its kind, metadata and
    checksum (over its frames), parameters by their fingerprint, other leaves pickled."""
    if isinstance(tree, Sealed):
        return b"S%d:%s%d:%s%s:%s" % (len(tree.kind), tree.kind.encode(), len(tree.meta),
                                      tree.meta, tree.alg.encode(), tree.checksum)
    if isinstance(tree, RLWEParams):
        return b"P" + tree.fingerprint
    t = type(tree)
    if t is list or t is tuple:
        return b"L(" + b",".join(_content(v) for v in tree) + b")"
    if t is dict:
        return b"D(" + b",".join(guarded_dumps(k, "map: keys") + b"=" + _content(v)
                                 for k, v in tree.items()) + b")"
    return b"V" + guarded_dumps(tree, "map: keys")


def context(codec: Codec, keys_wire: Any, has_keys: bool) -> tuple[dict[str, Any], int]:
    """What a job's context sends (`ren.distributed.worker.load_context`): the parameters and
    the keys' wire tree, as an object that Dask pickles with every record's frames out of band
    (the keys' storage itself, no copy in the client), and its bytes."""
    params = list(codec.params.values())
    nbytes = len(guarded_dumps(params, "map: the parameters")) + wire_bytes(keys_wire)
    return {"params": params, "keys": keys_wire, "has_keys": has_keys}, nbytes


#: the name and blob of each program already pickled, by its plans (one pickle per program)
_blobs: weakref.WeakKeyDictionary[JitPlan, tuple[tuple[int, ...], str, bytes]] = \
    weakref.WeakKeyDictionary()


def program_blob(program: Program, secrets: LiveSecrets) -> tuple[str, bytes]:
    """The program's name and pickle, checked for secrets.  The pickle of a program of plans
    is made once: a later job of the same plans reuses its name and bytes (a plan's pickle
    carries its parameters' caches, which grow, so pickling it again gives other bytes)."""
    ids = tuple(id(p) for p in program.plans or ())
    if program.plans and not program.capture:
        memo = _blobs.get(program.plans[0])
        if memo is not None and memo[0] == ids:
            return memo[1], memo[2]
    blob = guarded_dumps(program, "map: the program (plans or function)")
    # by data, plans and functions alike: a function that closes over a secret's Poly pickles
    # its residues (the type guard sees a Poly, not a SecretKey)
    refuse_secret_data(blob, secrets.keys(), "map: the captured plan" if program.plans else
                       "map: the function (with what it closes over)")
    name = f"ren-program-{digest(blob)}"
    if program.plans:
        _blobs[program.plans[0]] = (ids, name, blob)
    return name, blob


def result_standins(program: Program, codec: Codec) -> list[Any] | None:
    """A stand-in of each plan's result (`ren.distributed.remote`); None for a function."""
    if not program.plans:
        return None
    return [standin(p.result(p.template.outputs), codec) for p in program.plans]


__all__ = ["context", "context_name", "encode_keys", "program_blob", "program_of",
           "result_standins"]
