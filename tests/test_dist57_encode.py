"""A worker's results encoded without the walk that realizes pending Polys (stop 57:
`Codec.encode(realized=True)` from `ren.distributed.worker._Encode`, and `SlotPages.claim`
with the slot's address kept): the same records, word for word and checksum for checksum, as
the local replay's result encoded the ordinary way; a result whose slot is corrupted or whose
frame is cut short is still refused on the client with SerializationError."""

from __future__ import annotations

import os
import pickle

import pytest

pytest.importorskip("distributed", reason="ren.distributed needs dask[distributed]")

from ckks_helpers import context
from distributed_helpers import shm_job

import ren
from ren.ckks import Evaluator, dumps
from ren.distributed import shm, wire
from ren.distributed.frames import stored_words
from ren.distributed.wire import Codec
from ren.distributed.worker import Program, encode_result, run_item
from ren.errors import RealizeError, SerializationError
from ren.poly import Poly

pytestmark = pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40)


@pytest.fixture
def job():
    with shm_job("-d57enc") as name:
        yield name


def _product(ct):
    """A plain multiply and a rescale (a result one level down: other moduli than the
    input's, so a record of the input's shape would not pass for it)."""
    ev = Evaluator(ct.params)
    return ev.rescale(ev.add(ev.multiply_scalar(ct, 0.75), ev.multiply_scalar(ct, 0.5)))


def _group(ckks, job, cts, key, walks=None):
    fn = ren.jit(_product)
    fn(cts[0])  # capture
    want = [fn(ct) for ct in cts]  # the local replays
    codec = Codec()
    codec.register(cts[0].params)
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    items = [shm.receive(codec.encode(ct, "ct", writer).header()) for ct in cts]
    ctx = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    if walks is not None:
        walks.clear()  # (the inputs' encodes above walked theirs)
    out = run_item([0] * len(items), items, list(range(len(items))),
                   context_key=f"ren-context-{key}", context_blob=ctx,
                   program_key=f"ren-program-{key}",
                   program_blob=pickle.dumps(Program(plans=[fn.plan_for(cts[0])])),
                   group=True, shm=(job, 0))
    return codec, want, out


def test_results_in_slots_are_the_local_replays_records_and_skip_the_walk(ckks, job,
                                                                          monkeypatch):
    walks: list[int] = []
    real = wire.flatten
    monkeypatch.setattr(wire, "flatten", lambda *a, **k: walks.append(1) or real(*a, **k))
    cts = [ckks.encrypt([0.5, -0.25]), ckks.encrypt([0.125]), ckks.encrypt([-0.75, 0.5])]
    codec, want, out = _group(ckks, job, cts, "d57a", walks)
    assert walks == []  # the worker's encodes did not walk the (realized) results again
    assert all(isinstance(w, shm.Shared) for w, _ in out)  # written by the replay, in place
    plain = [codec.encode(ct, "want") for ct in want]  # the ordinary encode: walks
    assert len(walks) == len(want)
    for (w, _), p, ct in zip(out, plain, want, strict=True):
        # the same record: kind, metadata and checksum (over the same frames' bytes)
        assert (w.record.kind, w.record.meta, w.record.checksum) == (p.kind, p.meta, p.checksum)
        got = codec.decode(shm.receive(w.header()))  # verified, range-checked
        assert dumps(got) == dumps(ct)  # bit for bit, scale and level
        assert all((stored_words(a) == stored_words(b)).all()
                   for a, b in zip(got.parts, ct.parts, strict=True))


def test_a_corrupted_or_cut_short_result_is_refused_on_the_client(ckks, job):
    cts = [ckks.encrypt([0.5]), ckks.encrypt([0.25])]
    codec, _, out = _group(ckks, job, cts, "d57b")
    (flipped, _), (cut, _) = out
    with open(os.path.join(shm.SHM_DIR, flipped.name), "r+b") as f:
        f.seek(flipped.offsets[0] + 17)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 1]))
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(shm.receive(flipped.header()))
    head = cut.header()
    head["sizes"] = [*head["sizes"][:-1], head["sizes"][-1] - 4]  # the last frame cut short
    with pytest.raises(SerializationError, match=r"checksum|cut short|bytes"):
        codec.decode(shm.receive(head))


def test_realized_encode_refuses_a_poly_that_is_not_realized(ckks):
    codec = Codec()
    ct = ckks.encrypt([0.5])
    lazy: Poly = ct.parts[0] + ct.parts[0]  # a graph, not realized yet
    with pytest.raises(RealizeError):
        encode_result(codec, lazy, None, realized=True)
    got = codec.decode(encode_result(codec, lazy, None))  # the ordinary walk realizes it
    ref = ct.parts[0] + ct.parts[0]
    ref.realize()
    assert (stored_words(got) == stored_words(ref)).all()
