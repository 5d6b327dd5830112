"""The worker side of `ren.distributed`: the functions Dask runs in a worker process.

A map job sends two blobs once per worker (Dask's broadcast scatter) and one small task per
input, or per packed group of inputs (`ren.distributed.grouping`: the group's inputs are one
scattered list, and the task returns one list of their results).  The *context* blob holds
the parameters and the public evaluation keys (wire form,
`ren.distributed.wire`); the *program* blob holds the captured JIT plans (pickled: scheduled
kernels and their constants, compiled again when loaded) or a plain function.  A worker
decodes each blob once and keeps the result in a small per-process cache keyed by the blob's
content hash, so a batch of 64 inputs loads the keys and compiles the plan once, not 64 times.

`run_item` is one task: decode the input, replay the plan (or call the function), realize and
encode the result; it returns the wire result and the seconds each of those steps took (the
client adds them up to report the distributed path's overhead; wall seconds, and the task
thread's CPU seconds of the replay and of the whole item, ``run_cpu`` and ``cpu``, which a
loaded machine does not inflate), or (``keep=True``, a result
that stays on the cluster as an item of a `ren.distributed.Batch`) the wire result alone.  An
input may be a wire tree sent by the client or the wire result of an earlier task on the
cluster (a chained map).  An exception carries a note naming the input and the worker, and
travels back as it is.

`save_item` and `load_item` write and read one item as a file in Ren's versioned format
(`ren.ckks.dumps`), for `ren.distributed.save` / `load`.  `stats` counts, per worker process,
the blobs it decoded (a context or program loaded once serves every later task and job).
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ren.backend.malloc import tune_allocator
from ren.ckks import dumps, loads
from ren.distributed import posts, shm
from ren.distributed.errors import SlotTakenError, WireError
from ren.distributed.shmrecords import SlotPages
from ren.distributed.shmslots import borrowed_intact
from ren.distributed.shmslots import release as release_slots
from ren.distributed.wire import Codec, Sealed
from ren.errors import ParameterError
from ren.jit import JitPlan, jit
from ren.poly import Poly, realize_polys
from ren.realization import is_realized
from ren.replay import outputs_into
from ren.tree import flatten

#: decoded blobs kept per worker process (contexts and programs of recent jobs)
CACHE_ENTRIES = 8

_cache: OrderedDict[str, Any] = OrderedDict()
_cache_lock = threading.Lock()
#: blobs decoded by this process, by kind ("context", "program"): `stats`
_loads: Counter[str] = Counter()


def cached(key: str, blob: bytes, load: Callable[[bytes], Any]) -> Any:
    """`load(blob)`, computed once per process for each `key` (the blob's content hash)."""
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    value = load(blob)  # outside the lock: a slow load must not block other keys
    with _cache_lock:
        if key not in _cache:
            _loads[key.split("-")[1] if key.count("-") >= 2 else key] += 1
        value = _cache.setdefault(key, value)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    return value


def clear_cache() -> None:
    """Forget every decoded blob of this process."""
    with _cache_lock:
        _cache.clear()


def stats() -> dict[str, int]:
    """Blobs this process decoded so far, by kind (``{"context": 1, "program": 2}``): a job
    whose keys a worker holds already decodes no context (run it with ``client.run(stats)``)."""
    with _cache_lock:
        return dict(_loads)


@dataclass
class Context:
    """A job's parameters (as a Codec) and its decoded public keys (None when it has none)."""

    codec: Codec
    keys: Any
    has_keys: bool


@dataclass
class Program:
    """What a job runs: captured plans (`plans`, an input picks one by index) or a function."""

    plans: list[JitPlan] | None = None
    function: Callable[..., Any] | None = None
    #: capture `function` with `ren.jit` on the worker (once per input spec and process): a
    #: jitted function over inputs the client never saw (a Batch of unknown specs)
    capture: bool = False


def load_context(blob: Any) -> Context:
    """A job's context: the object `ren.distributed.batch` broadcast (the parameters and the
    keys' wire tree, its records' frames received out of band) or its pickle."""
    state = blob if isinstance(blob, dict) else pickle.loads(blob)
    if not isinstance(state, dict) or not {"params", "keys", "has_keys"} <= set(state):
        raise WireError(f"a context blob holds a {type(state).__name__} that is not a job's "
                        "context (a client of another ren version?); install the same ren "
                        "everywhere")
    codec = Codec({p.fingerprint: p for p in state["params"]})
    return Context(codec, codec.decode(state["keys"]), state["has_keys"])


def load_program(blob: bytes) -> Program:
    program = pickle.loads(blob)
    if not isinstance(program, Program):
        raise WireError(f"a program blob holds a {type(program).__name__}, not a Program (a "
                        "client of another ren version?); install the same ren everywhere")
    if program.capture and program.function is not None:
        program.function = jit(program.function)  # kept with the program in the cache
    return program


def worker_address() -> str:
    """This process's Dask worker address, or "local" outside a worker."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "local"


def realize_tree(tree: Any) -> None:
    """Realize every Poly of a result tree together (one schedule for all of them)."""
    polys: list[Poly] = []
    flatten(tree, polys, [])
    pending = [p for p in polys if not is_realized(p.node)]
    if pending:
        realize_polys(pending)


def run_item(plan_index: Any, item: Any, index: Any, *, context_key: str,
             context_blob: bytes, program_key: str, program_blob: bytes, keep: bool = False,
             group: bool = False, shm: tuple[str, int] | None = None,
             decoded: tuple[Any, float] | None = None, later: bool = False) -> Any:
    """One input of a map job (module doc): (the wire result, timings in seconds), or the wire
    result alone with ``keep=True``.  With ``group=True`` the task carries several inputs
    (`plan_index`, `item` and `index` are lists of the same length) and returns the list of
    their results; an exception names the input that raised (and carries it as
    ``ren_input``).  `shm`: the job's shared-memory prefix and smallest record
    (`ren.distributed.shm`): a result is written into segments while the client's job marker
    is here.  `decoded`: the input decoded already (`decode_ahead`) and the seconds it took;
    `later`: a result in a pool slot is returned unencoded (`_Encode`, for a group)."""
    if group:
        tune_allocator()  # (before the first decode; see below)
        item_post = item.post if isinstance(item, Packed) else ""
        if isinstance(item, Packed):
            item = item.unpack(index)
        out = _run_group(plan_index, item, index, context_key=context_key,
                         context_blob=context_blob, program_key=program_key,
                         program_blob=program_blob, keep=keep, shm=shm)
        post = item_post
        if post and shm is not None and not keep and posts.post(post, out, shm[0]):
            return posts.POSTED  # (the client takes `out` from the file: `ren.distributed.posts`)
        return out
    tune_allocator()  # Dask's nanny set MALLOC_TRIM_THRESHOLD_ (ren.backend.malloc)
    try:
        c0, t0 = time.thread_time(), time.perf_counter()
        context = cached(context_key, context_blob, load_context)
        program = cached(program_key, program_blob, load_program)
        t1 = time.perf_counter()
        if decoded is None:
            args = context.codec.decode(item)
        else:
            args, took = decoded
            t1 -= took  # (reported as this input's decode)
        args = args if type(args) is tuple else (args,)
        kwargs = {"keys": context.keys} if context.has_keys else {}
        c2, t2 = time.thread_time(), time.perf_counter()
        pages = None
        if program.plans is not None:
            assert plan_index is not None
            if shm is not None and not keep:  # the replay writes into the result's slot
                pages = SlotPages(*shm)
                with outputs_into(pages):
                    result = program.plans[plan_index](*args, **kwargs)
            else:
                result = program.plans[plan_index](*args, **kwargs)
        else:
            assert program.function is not None
            result = program.function(*args, **kwargs)
        realize_tree(result)
        c3, t3 = time.thread_time(), time.perf_counter()
    except Exception as e:
        _name(e, index)
        raise
    done = _Encode(context.codec, result, None if keep else shm, pages, item, index, keep,
                   dict(load=t1 - t0, decode=t2 - t1, run=t3 - t2, run_cpu=c3 - c2,
                        cpu=c3 - c0))
    if later and pages is not None and pages.slot is not None:
        return done  # its words are in a pool slot already: encoded after the group's replays
    return done.finish()


def _run_group(plan_index: list[Any], item: list[Any], index: list[Any], *, context_key: str,
               context_blob: bytes, program_key: str, program_blob: bytes, keep: bool,
               shm: tuple[str, int] | None) -> list[Any]:
    """The results of a packed group (`run_item` with ``group=True``), in order.  Its inputs
    read in place are decoded in a row before the first replay (`decode_ahead`), and its
    results in pool slots encoded in a row after the last one (`_Encode`).  A decode that
    failed is done again in its turn, which raises naming the input; the first failure in
    input order raises, and the slots of the results encoded so far are freed
    (`_Encode.discard`: none of the group's results is sent).

    Tried and not kept: decoding on a second thread of the worker beside the replays, where
    a core is free (one worker on two cores).  It moved ~0.2 ms per N = 2^14 input off the
    task thread, but the replays beside it ran slower: one process, a group of 14, 9
    alternated runs on a quiet 2-core VM, the replay's CPU 4.43 -> 4.72 ms per input and
    the group's wall 4.88 -> 5.01 ms per input.  Nor (stop 58, one worker, N = 2^14, 64 inputs,
    alternated runs of 8 jobs on a loaded 2-core VM) a worker with one Dask thread more than
    the groups it replays at once (a semaphore), so that the next group's task unpacks and
    decodes its inputs beside the current group (beside its replays, or after them, beside its
    encodes) and starts without Dask's ~1.5 ms between two tasks; nor XXH3 through ctypes
    with the GIL released (the `xxhash` package holds it; the overlap above then serializes).
    The bench's overhead (wall against the in-worker replay's wall) fell 15-21 % -> 9-15 % in
    12 of 12 pairs, but only because the replays' wall grew (preempted by the extra thread):
    the job's wall per replay CPU second did not move (1.17/1.19/1.39 -> 1.16/1.25/1.40,
    medians of three sets), so no ciphertext came back sooner."""
    where = worker_address()
    ahead = decode_ahead(item, context_key, context_blob)
    out: list[Any] = []
    encodes: list[_Encode] = []
    try:
        for k, (p, one, i) in enumerate(zip(plan_index, item, index, strict=True)):
            decoded, ahead[k] = ahead[k], None  # (its Polys go with its turn)
            done = run_item(p, one, i, context_key=context_key, context_blob=context_blob,
                            program_key=program_key, program_blob=program_blob, keep=keep,
                            shm=shm, decoded=decoded, later=True)
            if isinstance(done, _Encode):
                done.where = where
                encodes.append(done)
            out.append(done)
        for k, one in enumerate(item):
            if isinstance(out[k], _Encode):
                out[k] = out[k].finish()
            if not _in_frames(out[k] if keep else out[k][0]):
                # a pool slot read in place: back to the client (a result in frames may be a
                # view of the input's pages: its slot then goes when the last view goes)
                release_slots(one)
    except BaseException:
        for done in encodes:
            done.discard()
        raise
    return out


@dataclass(frozen=True)
class Packed:
    """A packed group's wire trees pickled on the client and carried in the task itself
    (`ren.distributed.grouping.Sender`), not scattered as data of their own: on the path of
    shared memory they are a few hundred bytes of slot names per input.  Dask then sends no
    scatter (``ncores_running``), no ``update_data`` to the worker and to the scheduler and no
    release of an input key (counted: ~40 % of the messages of a job).  Unpickled in the task
    (`run_item`), so the slots are mapped on the task's thread, not the worker's event loop.
    Pickled twice on the way (the client's graph, the scheduler's task), which a plain pickle
    of the wire trees would not survive: `Shared` records unpickle by mapping their slot.
    `post`: the name the task posts its results under (`ren.distributed.posts`), or ""."""

    blob: bytes
    post: str = ""

    def unpack(self, index: list[int]) -> Any:
        """The wire trees (their slots borrowed now); an error names the group's inputs."""
        try:
            return pickle.loads(self.blob)
        except Exception as e:
            if not isinstance(e, SlotTakenError):
                e.add_note(f"ren.distributed: while unpacking inputs {index[0]}-{index[-1]} "
                           f"on worker {worker_address()}")
            raise


def _name(e: Exception, index: Any, where: str = "") -> None:
    e.add_note(f"ren.distributed: while running input {index} on worker "
               f"{where or worker_address()}")
    e.ren_input = index  # type: ignore[attr-defined]


@dataclass
class _Encode:
    """A replayed input's result still to encode (`run_item`): a packed group encodes its
    results after all its replays, one after another (measured, N = 2^14, one process: 0.39
    ms per result right after its replay, whose working set had evicted the encoder's Python
    objects and code from the caches, 0.14 ms in a row).  Only a result whose words the replay
    wrote into a pool slot waits (it holds no memory of its own); its input slot is freed
    after it is encoded."""

    codec: Codec
    result: Any
    shm: tuple[str, int] | None
    pages: SlotPages | None
    item: Any
    index: Any
    keep: bool
    timings: dict[str, float]
    #: the worker's address (`_run_group` sets it once per group), and the segments the
    #: encode filled (`discard`)
    where: str = ""
    made: list[Any] = field(default_factory=list)

    def finish(self) -> Any:
        """The wire result (and its `Timings`, module doc)."""
        try:
            c3, t3 = time.thread_time(), time.perf_counter()
            # (realized: `run_item` realized the result's Polys together after the replay)
            wire = encode_result(self.codec, self.result, self.shm, self.pages, self.made,
                                 realized=True)
            if not borrowed_intact(self.item):
                raise SlotTakenError("the input's shared-memory slot was written over "
                                         "while its task ran (its job ended?); send it again")
            c4, t4 = time.thread_time(), time.perf_counter()
        except Exception as e:
            _name(e, self.index, self.where)
            raise
        if self.keep:
            return wire
        _register_sizeof()
        t = self.timings
        return wire, Timings(load=t["load"], decode=t["decode"], run=t["run"],
                             encode=t4 - t3, run_cpu=t["run_cpu"], cpu=t["cpu"] + c4 - c3,
                             worker=self.where or worker_address())

    def discard(self) -> None:
        """A result that will not be sent (its group failed): free the pool slots and files
        its encode filled (else they stay taken until the job ends)."""
        for segments in self.made:
            segments.discard()
        self.made.clear()


def _in_place(tree: Any) -> bool:
    """Whether a wire input decodes without new storage: records read in place from a
    borrowed pool slot (`ren.distributed.shmslots.borrow_slot`) with no seeded (regenerated)
    polynomial."""
    if isinstance(tree, Sealed):
        return tree.origin is not None and b'["s",' not in tree.meta
    if type(tree) in (list, tuple):
        return all(_in_place(v) for v in tree)
    return False


def decode_ahead(items: list[Any], context_key: str, context_blob: bytes
                 ) -> list[tuple[Any, float] | None]:
    """A packed group's inputs decoded one after another before the first replay, each with
    the seconds it took; None for one left to its turn.  Measured (N = 2^14, one process):
    a decode right after a replay took 0.49 ms (the replay had evicted the decoder's Python
    objects and code from the caches), 0.19 ms in a row.  Only inputs read in place
    (`_in_place`): their Polys are views of the slot's pages, so decoding them early holds no
    memory (a seeded half, regenerated, or a copy would; the worker's memory must not grow).
    An input whose decode fails is left to its turn, which raises in order, naming it.

    Each record's checksum is verified as always (a flipped bit or a frame cut short raises
    SerializationError in the input's turn), but not that every residue is below its modulus
    (`Codec.decode`'s ``ranges=False``): these inputs are the client's own records read in
    place from its pool slot, words of its Polys (stored reduced), and a worker runs whatever
    code its client sends, so that check guards the worker against nothing the verified
    checksum does not (measured: 0.09 ms per N = 2^14 input of the ~0.45 ms a worker spends
    outside the replay).  Every other path (Dask's frames, results on the client, `load_item`)
    keeps it."""
    out: list[tuple[Any, float] | None] = [None] * len(items)
    try:
        codec = cached(context_key, context_blob, load_context).codec
    except Exception:
        return out  # (each task raises it in its turn)
    for k, one in enumerate(items):
        if _in_place(one):
            t0 = time.perf_counter()
            try:
                out[k] = (codec.decode(one, ranges=False), time.perf_counter() - t0)
            except Exception:
                continue
    return out


class Timings(dict):
    """A task's timings (`run_item`): a dict whose size Dask takes as a constant instead of
    walking its keys and values each time it sizes a task's result (a packed group's result
    holds one per input; measured: ~0.3 ms per sizing of a group of 16 with plain dicts, and
    the worker sizes each result several times)."""

    __slots__ = ()


_sized = False


def _register_sizeof() -> None:
    """Register `Timings`' size with Dask in this process (once)."""
    global _sized
    if not _sized:
        from dask.sizeof import sizeof

        sizeof.register(Timings)(lambda timings: 400)
        _sized = True


def _in_frames(tree: Any) -> bool:
    """Whether a wire tree holds a record whose frames travel in the message (not in shared
    memory): they may be views of an input's storage (a function that returns its input)."""
    if isinstance(tree, Sealed):
        return True
    if type(tree) in (list, tuple):
        return any(_in_frames(v) for v in tree)
    if type(tree) is dict:
        return any(_in_frames(v) for v in tree.values())
    return False


def encode_result(codec: Codec, result: Any, job: tuple[str, int] | None,
                  pages: SlotPages | None = None, made: list[Any] | None = None,
                  realized: bool = False) -> Any:
    """The wire tree of a result: its large records in shared-memory segments while the job
    (its prefix and smallest record) is alive on this machine (`ren.distributed.shm`: the
    marker is checked after the segments are made, and they are unlinked again when it is
    gone), else in frames.  `pages`: the pool slot the replay wrote the result into
    (`SlotPages`); a record whose frames are there goes out in it without a copy.  `made`:
    gets the `Segments` that hold the wire result's records (to discard one never sent).
    `realized`: every Poly of `result` is realized already (`Codec.encode`'s)."""
    if job is None or not shm.job_alive(job[0]):
        return codec.encode(result, "the result", realized=realized)
    shm_prefix = job[0]
    segments = shm.Segments(*job, pooled=True, filled=pages)
    try:
        wire = codec.encode(result, "the result", segments, realized)
    except BaseException:
        segments.discard()
        raise
    if shm.job_alive(shm_prefix):
        if made is not None:
            made.append(segments)
        return wire
    segments.discard()  # the job ended meanwhile: its cleanup may have listed the files already
    return codec.encode(result, "the result", realized=realized)


def save_item(item: Any, path: str, index: int, *, context_key: str, context_blob: bytes
              ) -> int:
    """Write one item (a wire tree of a CKKS object) to `path` in Ren's versioned format
    (`ren.ckks.dumps`), through a temporary file renamed into place (a reader never sees half
    a file); returns the bytes written."""
    try:
        context = cached(context_key, context_blob, load_context)
        data = dumps(context.codec.decode(item))
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as e:
            raise ParameterError(f"save: cannot write {path} on this worker ({e}); give a "
                                 "directory every worker can write to") from e
    except Exception as e:
        e.add_note(f"ren.distributed.save: while writing item {index} to {path} on worker "
                   f"{worker_address()}")
        raise
    return len(data)


def load_item(path: str, index: int, *, context_key: str, context_blob: bytes) -> Any:
    """The wire tree of the CKKS object in the file `path` (written by `save_item` or
    `ren.ckks.dumps`), read under the context's one parameter set."""
    try:
        context = cached(context_key, context_blob, load_context)
        (params,) = context.codec.params.values()
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ParameterError(f"load: cannot read {path} on this worker ({e}); give files "
                                 "every worker sees (save's paths)") from e
        obj = loads(data, params)
        return context.codec.encode(obj, f"the item in {path}")
    except Exception as e:
        e.add_note(f"ren.distributed.load: while reading item {index} from {path} on worker "
                   f"{worker_address()}")
        raise


__all__ = [
    "CACHE_ENTRIES",
    "Context",
    "Packed",
    "Program",
    "Timings",
    "cached",
    "clear_cache",
    "decode_ahead",
    "encode_result",
    "load_context",
    "load_item",
    "load_program",
    "realize_tree",
    "run_item",
    "save_item",
    "stats",
    "tune_allocator",
    "worker_address",
]
