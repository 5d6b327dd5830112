"""A replay that writes its outputs into storage its caller gives (`ren.replay.outputs_into`),
and the worker that hands it the pages of the shared-memory slot its result goes out in
(`ren.distributed.shm.SlotPages`): the same words as a replay into fresh buffers, a replay
outside the block unchanged, the result sent without a copy into the slot, and the slot freed
by its reader (claimed) or when its pages' last view goes (not claimed)."""

from __future__ import annotations

import gc
import os
import pickle

import numpy as np
import pytest
from ckks_helpers import context
from distributed_helpers import shm_job

import ren
from ren.backend.numpy_backend import host_empty
from ren.ckks import Evaluator, dumps
from ren.distributed import shm, shmslots
from ren.distributed.wire import Codec
from ren.ir import storage_buffer
from ren.replay import outputs_into
from ren.rlwe import KeyGenerator

pytestmark = pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=2, scale_bits=30, first_bits=40)


def _doubled(ct):
    return Evaluator(ct.params).add(ct, ct)


def _storage(ct) -> list[np.ndarray]:
    return [storage_buffer(p.node).array() for p in ct.parts]


def _garbage(shapes):
    """Host arrays full of a pattern no result has (every word must be written over)."""
    out = []
    for s in shapes:
        a = host_empty(s)
        a.fill(0xFFFFFFFF)
        out.append(a)
    return out


def test_a_replay_writes_into_the_given_storage_once_and_otherwise_as_before(ckks):
    fn = ren.jit(_doubled)
    ct = ckks.encrypt([0.5, -0.25])
    fn(ct)  # capture
    want = fn(ct)  # a replay into fresh buffers
    given: list[list[np.ndarray]] = []

    def provide(shapes):
        given.append(_garbage(shapes))
        return given[-1]

    with outputs_into(provide):
        got = fn(ct)
        again = fn(ct)  # one run per block: this one allocates as before
    assert len(given) == 1 and [a.shape for a in given[0]] == [s.shape for s in _storage(want)]
    assert all(np.shares_memory(s, a) for s, a in zip(_storage(got), given[0], strict=True))
    assert not any(np.shares_memory(s, a) for s in _storage(again) for a in given[0])
    assert dumps(got) == dumps(want) == dumps(again)  # the same words, scale and level
    assert all((a == s).all() for a, s in zip(given[0], _storage(want), strict=True))
    with outputs_into(lambda shapes: None):  # a provider that gives nothing: fresh buffers
        plain = fn(ct)
    assert dumps(plain) == dumps(want)
    after = fn(ct)  # outside the block
    assert not any(np.shares_memory(s, a) for s in _storage(after) for a in given[0])


@pytest.fixture
def job():
    with shm_job("-outputs") as name:
        yield name


def _state(name: str) -> int:
    with open(os.path.join(shm.SHM_DIR, name), "rb") as f:
        return int.from_bytes(f.read(8), "little")


def test_a_workers_result_goes_out_in_the_slot_the_replay_wrote(ckks, job, monkeypatch):
    pytest.importorskip("dask", reason="a worker's task registers its timings with Dask")
    from ren.distributed.worker import Program, run_item

    fn = ren.jit(_doubled)
    ct = ckks.encrypt([0.5, 0.125])
    want = dumps(fn(ct))
    plan = fn.plan_for(ct)
    codec = Codec()
    item = codec.encode(ct, "ct")
    copies: list[int] = []
    fill = shmslots._Slot.fill
    monkeypatch.setattr(shmslots._Slot, "fill",
                        lambda self, *a: copies.append(1) or fill(self, *a))
    context = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    wire, timings = run_item(0, item, 0, context_key="ren-context-out1", context_blob=context,
                             program_key="ren-program-out1",
                             program_blob=pickle.dumps(Program(plans=[plan])), shm=(job, 0))
    assert isinstance(wire, shm.Shared) and "-pool-" in wire.name and copies == []
    assert _state(wire.name) == wire.gen  # taken until its reader frees it
    header, name, gen = wire.header(), wire.name, wire.gen
    del wire, timings
    gc.collect()  # every view of the pages gone on the worker's side: still taken (claimed)
    assert _state(name) == gen
    assert dumps(codec.decode(shm.receive(header))) == want
    assert _state(name) == 0  # (read here by its writer's process: freed by the read)
    # without the job's marker the result travels in frames, and the replay allocates
    wire, _ = run_item(0, item, 1, context_key="ren-context-out1", context_blob=context,
                       program_key="ren-program-out1",
                       program_blob=pickle.dumps(Program(plans=[plan])), shm=(job + "x", 0))
    assert not isinstance(wire, shm.Shared) and dumps(codec.decode(wire)) == want
    assert copies == []


def test_slot_pages_no_record_claims_are_freed_when_their_last_view_goes(job):
    pages = shm.SlotPages(job, 0)
    arrays = pages([(2, 64), (3, 64)])
    assert arrays is not None and [a.shape for a in arrays] == [(2, 64), (3, 64)]
    assert pages([(2, 64)]) is None  # one slot per provider
    name, gen = pages.slot.name, pages.gen
    assert _state(name) == gen
    assert all(a.ctypes.data % 64 == 0 for a in arrays)  # what the kernels' storage needs
    assert pages.claim([memoryview(arrays[0]).cast("B")[:-4]]) is None  # not a region given
    kept = [arrays[1]]
    del arrays
    gc.collect()
    assert _state(name) == gen  # a view is left
    del kept
    gc.collect()
    assert _state(name) == 0
    assert shm.SlotPages(job, 1 << 20)([(2, 64)]) is None  # under the job's smallest record


@pytest.mark.parametrize("device", ["python", "cpu"])
def test_a_multiply_relinearize_rescale_into_garbage_storage_gives_the_same_words(device):
    # the benchmark's operation on each device: every word of the given (garbage-filled)
    # storage is written, and the result decrypts as the fresh replay's does
    import warnings

    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, InsecureParametersWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = CKKSParams(N=1 << 10, depth=2, scale_bits=30, first_bits=40, device=device,
                            special_primes=1, insecure=True)
    with ren.random.seeded(3):
        kg = KeyGenerator(params)
        rlk = kg.relin_key()
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode([0.5, -0.75]))

    @ren.jit
    def square(x, keys):
        ev = Evaluator(x.params, relin_key=keys)
        return ev.rescale(ev.multiply(x, x))

    square(ct, keys=rlk)
    want = square(ct, keys=rlk)
    given: list[np.ndarray] = []

    def provide(shapes):
        given.extend(_garbage(shapes))
        return given

    with outputs_into(provide):
        got = square(ct, keys=rlk)
    assert len(given) == 2 and all(np.shares_memory(s, a) for s, a in
                                   zip(_storage(got), given, strict=True))
    assert dumps(got) == dumps(want)
    values = enc.decode(Decryptor(params, kg.secret_key()).decrypt(got))[:2]
    assert np.allclose(values, [0.25, 0.5625], atol=1e-3)
