"""ren.distributed.worker: a packed group's inputs read in place are decoded before its first
replay and its results in pool slots encoded after its last (`decode_ahead`, `_run_group`): the
same words, in order; the other inputs, and one whose decode fails, are left to their turn,
which raises naming the input; a group that fails frees the slots of the results it encoded."""

from __future__ import annotations

import gc
import os
import pickle
import threading

import pytest

pytest.importorskip("distributed", reason="ren.distributed needs dask[distributed]")

from ckks_helpers import context
from distributed_helpers import shm_job

from ren.ckks import Evaluator, dumps
from ren.distributed import shm
from ren.distributed.errors import SlotTakenError
from ren.distributed.wire import Codec, Sealed
from ren.distributed.worker import Program, decode_ahead, run_item
from ren.errors import SerializationError

pytestmark = pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


@pytest.fixture
def job():
    with shm_job("-ahead") as name:
        yield name


def _doubled(ct):
    return Evaluator(ct.params).add(ct, ct)


def _flip_last_byte(shared) -> None:
    with open(os.path.join(shm.SHM_DIR, shared.name), "r+b") as f:
        f.seek(shared.offsets[-1] + shared.sizes[-1] - 1)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 4]))


def test_inputs_read_in_place_are_decoded_ahead_and_the_others_left(ckks, job):
    codec = Codec()
    cts = [ckks.encrypt([0.5]), ckks.encrypt([-0.25]), ckks.encrypt([0.125])]
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    borrowed = [shm.receive(codec.encode(ct, "ct", writer).header()) for ct in cts[:2]]
    in_frames = codec.encode(cts[2], "ct")  # a record in the message: copied, left
    seeded = codec.encode(ckks.ev.relin_key, "rlk")  # a key's `a` rows travel as seeds
    seeded.origin = ("a-slot", 1)  # (as if borrowed: its seeded rows would be new memory)
    bad = codec.encode(cts[0], "ct", writer)
    broken = shm.receive(bad.header())
    _flip_last_byte(bad)
    ctx = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    got = decode_ahead([*borrowed, in_frames, seeded, broken], "ren-context-ahead", ctx)
    assert [g is None for g in got] == [False, False, True, True, True]
    assert [dumps(g[0]) for g in got[:2]] == [dumps(ct) for ct in cts[:2]]
    assert all(g[1] >= 0 for g in got[:2])
    shm.release([*borrowed, broken])


def test_inputs_decoded_ahead_skip_the_range_check_not_the_checksum(ckks, job):
    """`decode_ahead` verifies each record's checksum but not that its residues are below
    their moduli (the client's own words, read in place: worker.decode_ahead's doc); a plain
    decode of the same record still refuses the residue, and a flipped bit is refused with
    ``ranges=False`` too."""
    import numpy as np

    from ren.distributed.frames import checksum, stored_words

    codec = Codec()
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    q0 = ckks.params.ring(ckks.params.depth).moduli[0]
    ctx = {"params": [ckks.params], "keys": None, "has_keys": False}

    def forged(flip: bool = False) -> dict:
        """A record in a pool slot whose residue [0, 5] is q_0, its checksum made to match
        (then, with `flip`, a bit of its last frame flipped)."""
        sent = codec.encode(ckks.encrypt([0.5]), "ct", writer)
        with open(os.path.join(shm.SHM_DIR, sent.name), "r+b") as f:
            f.seek(sent.offsets[0] + 4 * 5)
            f.write(np.uint32(q0).tobytes())
            frames = []
            for offset, size in zip(sent.offsets, sent.sizes):
                f.seek(offset)
                frames.append(f.read(size))
        r = sent.record
        head = {**sent.header(), "sum": checksum(r.alg, [r.kind.encode(), r.meta, *frames])}
        if flip:
            _flip_last_byte(sent)
        return head

    (got,) = decode_ahead([shm.receive(forged())], "ren-context-ahead-ranges", ctx)
    assert got is not None and int(stored_words(got[0].parts[0])[0, 5]) == q0  # as sent
    with pytest.raises(SerializationError, match=r"residue \[0, 5\] .* not below"):
        codec.decode(shm.receive(forged()))
    assert decode_ahead([shm.receive(forged(flip=True))], "ren-context-ahead-ranges",
                        ctx) == [None]
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(shm.receive(forged(flip=True)), ranges=False)


def test_a_group_gives_the_same_results_and_a_bad_input_fails_in_its_turn(ckks, job,
                                                                         monkeypatch):
    """A group of replays into pool slots: its inputs decoded once each (ahead), its results
    encoded after the replays, in their slots without a copy, the same words; a corrupted
    input fails in its turn, and the slot the replay before it wrote is freed with the
    failure (not claimed by any record)."""
    import ren
    from ren.distributed import shmslots

    codec = Codec()
    decoded, copies = [], []
    real, fill = Codec.decode, shmslots._Slot.fill

    def counting(self, tree):
        if isinstance(tree, Sealed):
            decoded.append(tree)
        return real(self, tree)

    monkeypatch.setattr(Codec, "decode", counting)
    from ren.distributed import worker

    steps: list[tuple[str, str]] = []

    def noting(fn, step):
        def wrapped(*a, **k):
            steps.append((step, threading.current_thread().name))
            return fn(*a, **k)
        return wrapped

    for name, step in (("realize_tree", "run"), ("encode_result", "encode")):
        monkeypatch.setattr(worker, name, noting(getattr(worker, name), step))
    monkeypatch.setattr(shmslots._Slot, "fill",
                        lambda self, *a: copies.append(1) or fill(self, *a))
    cts = [ckks.encrypt([0.5]), ckks.encrypt([-0.25]), ckks.encrypt([0.75])]
    fn = ren.jit(_doubled)
    want = [dumps(fn(ct)) for ct in cts]
    blob = pickle.dumps(Program(plans=[fn.plan_for(cts[0])]))
    codec.register(cts[0].params)
    ctx = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    writer = shm.Segments(job, 0, pooled=True, borrow=True)

    def run(items):
        return run_item([0] * len(items), items, list(range(len(items))),
                        context_key="ren-context-ahead2", context_blob=ctx,
                        program_key="ren-program-ahead2", program_blob=blob, group=True,
                        shm=(job, 0))

    items = [shm.receive(codec.encode(ct, "ct", writer).header()) for ct in cts]
    copies.clear()
    out = run(items)
    # the replays, then the encodes in a row, all on this thread; each input and result once
    here = threading.current_thread().name
    assert steps == [("run", here)] * 3 + [("encode", here)] * 3
    assert len(decoded) == 3  # each input once: ahead, not again in its turn
    assert copies == [] and all(isinstance(w, shm.Shared) for w, _ in out)  # in their slots
    assert all(t["decode"] >= 0 and t["encode"] >= 0 for _, t in out)
    assert [dumps(real(codec, w)) for w, _ in out] == want
    sent = [codec.encode(ct, "ct", writer) for ct in cts]
    items = [shm.receive(s.header()) for s in sent]
    _flip_last_byte(sent[1])
    with pytest.raises(SerializationError, match="checksum") as info:
        run(items)
    assert info.value.ren_input == 1  # named, in its turn
    shm.release(items)
    del info  # (its traceback holds the first input's result, replayed into a pool slot)
    gc.collect()
    pools = [n for n in os.listdir(shm.SHM_DIR) if n.startswith(job.rsplit("-", 1)[0])
             and "-pool-" in n]
    for n in pools:  # every slot free again: the inputs' released, the result's dropped
        with open(os.path.join(shm.SHM_DIR, n), "rb") as f:
            assert f.read(8) == bytes(8), n


def _pool_slots_free(job: str) -> list[str]:
    """The names of this client's pool slots that are taken (their state word not 0)."""
    taken = []
    for n in os.listdir(shm.SHM_DIR):
        if n.startswith(job.rsplit("-", 1)[0]) and "-pool-" in n:
            with open(os.path.join(shm.SHM_DIR, n), "rb") as f:
                if f.read(8) != bytes(8):
                    taken.append(n)
    return taken


def test_a_group_whose_encode_fails_frees_the_slots_of_the_results_it_encoded(ckks, job,
                                                                              monkeypatch):
    """A result's encode that fails (its input's slot taken back, say)
    fails the group naming that input, and the results encoded before and after it give
    their pool slots back: none of them is sent."""
    import ren
    from ren.distributed import worker

    codec = Codec()
    cts = [ckks.encrypt([0.5]), ckks.encrypt([-0.25]), ckks.encrypt([0.75])]
    fn = ren.jit(_doubled)
    fn(cts[0])  # (captured)
    blob = pickle.dumps(Program(plans=[fn.plan_for(cts[0])]))
    codec.register(cts[0].params)
    ctx = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    items = [shm.receive(codec.encode(ct, "ct", writer).header()) for ct in cts]
    real = worker.borrowed_intact
    monkeypatch.setattr(worker, "borrowed_intact", lambda item: item is not items[1] and
                        real(item))
    with pytest.raises(SlotTakenError) as info:
        run_item([0] * 3, items, [0, 1, 2], context_key="ren-context-ahead3",
                 context_blob=ctx, program_key="ren-program-ahead3", program_blob=blob,
                 group=True, shm=(job, 0))
    assert info.value.ren_input == 1
    shm.release(items)
    del info
    gc.collect()
    assert _pool_slots_free(job) == []
