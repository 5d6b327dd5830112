"""ren.distributed.recycle: the client's receive buffers come back only when nothing reads
them, are bounded, and a result read out of a worker's pool slot reuses them (no page faults)
with the same words."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

pytest.importorskip("distributed", reason="ren.distributed needs dask[distributed]")

from ckks_helpers import context

from ren.ckks import dumps
from ren.distributed import recycle, shm
from ren.distributed.frames import frame_words
from ren.distributed.wire import Codec
from ren.ring import RingSpec


@pytest.fixture(autouse=True)
def fresh():
    gc.collect()  # (a buffer an earlier test left in a cycle comes back now, not mid-test)
    recycle.clear()
    yield
    recycle.clear()


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_a_dropped_buffer_is_handed_out_again():
    buf = recycle.take(4096)
    assert buf.nbytes == 4096 and buf.flags.writeable
    where = address(buf)
    del buf
    gc.collect()
    assert recycle.held() == 4096
    again = recycle.take(4096)
    assert address(again) == where and recycle.held() == 0
    assert address(recycle.take(8192)) != where  # another size: a new one


@pytest.mark.parametrize("keep", ["words", "view"])
def test_a_buffer_still_viewed_is_not_handed_out(keep):
    """The words a decoded Poly keeps (frame_words' view of a memoryview of the buffer), or a
    NumPy view of it, hold it: the buffer must not come back while they live (else the next
    result overwrites a live ciphertext)."""
    ring = RingSpec.generate(64, 2)
    buf = recycle.take(4 * 2 * 64)
    buf.view("<u4")[:] = 5
    where = address(buf)
    held = frame_words(buf, ring, "test") if keep == "words" else buf[16:32].view("<u4")
    del buf
    gc.collect()
    assert recycle.held() == 0
    other = recycle.take(4 * 2 * 64)
    assert address(other) != where
    other[:] = 0
    assert int(held.max()) == 5 == int(held.min())
    del held
    gc.collect()
    assert recycle.held() == 4 * 2 * 64  # now it is back


def test_at_most_keep_bytes_are_kept(monkeypatch):
    monkeypatch.setattr(recycle, "KEEP_BYTES", 10_000)
    bufs = [recycle.take(4096) for _ in range(4)]
    del bufs
    gc.collect()
    assert recycle.held() == 8192


@pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")
def test_a_result_from_a_workers_slot_reuses_a_buffer_with_the_same_words():
    ckks = context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))
    job = shm.client_prefix() + "-recycle"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    try:
        codec = Codec()
        writer = shm.Segments(job, 0, pooled=True)
        cts = [ckks.encrypt([0.5, 0.125 * i]) for i in range(2)]
        got, reused = [], recycle.counts["reused"]
        for ct in cts:
            rec = codec.encode(ct, "ct", writer)
            # a worker's slot (another pid in its name): read out, kept until released
            name = rec.name.rsplit("-", 1)[0] + "-1.0"
            os.link(os.path.join(shm.SHM_DIR, rec.name), os.path.join(shm.SHM_DIR, name))
            try:
                back = shm.receive({**rec.header(), "shm": name})
                got.append(dumps(codec.decode(back)))
                shm.release([back])
            finally:
                os.unlink(os.path.join(shm.SHM_DIR, name))
            del back
            gc.collect()
        assert got == [dumps(ct) for ct in cts]
        assert recycle.counts["reused"] > reused  # the second result: the first one's buffers
    finally:
        shm.end_job(job)


@pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")
def test_a_client_reads_results_through_a_mapping_it_keeps_while_the_slot_lives():
    """The client copies a result out of a mapping of the worker's slot that it keeps: the same
    words, read twice through one mapping, the slot freed through it; another file under the
    slot's name is read, not the old mapping; a file cut short is a SerializationError; a
    job's end drops the mappings of slots that are gone, not of live ones.  (The worker's slots
    are copies of this process's pool slots under a worker's names: no pool slot is left taken
    or cut short.)"""
    import shutil

    from ren.distributed import shmslots
    from ren.errors import SerializationError

    ckks = context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))
    client = shm.client_prefix()
    job = client + "-mapped"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    path, short = (os.path.join(shm.SHM_DIR, f"{client}-pool-1.{k}") for k in (0, 1))
    name = os.path.basename(path)
    codec = Codec()
    writer = shm.Segments(job, 0, pooled=True)
    cts = [ckks.encrypt([0.5, 0.125 * i]) for i in range(2)]
    recs = [codec.encode(ct, "ct", writer) for ct in cts]

    def as_worker(rec, to):  # a copy of the slot under a worker's name (a file of its own)
        shutil.copyfile(os.path.join(shm.SHM_DIR, rec.name), to + ".tmp")
        os.replace(to + ".tmp", to)
        return {**rec.header(), "shm": os.path.basename(to)}

    try:
        header = as_worker(recs[0], path)
        first = shm.receive(header)
        mapped = shmslots._results[name]
        again = shm.receive(header)  # (Dask may fetch a result twice): the same mapping
        assert shmslots._results[name] is mapped
        assert dumps(codec.decode(first)) == dumps(codec.decode(again)) == dumps(cts[0])
        shm.release([first])  # through the mapping
        with open(path, "rb") as f:
            assert f.read(8) == bytes(8)
        # another file under the name: read from it, not from the old mapping
        back = shm.receive(as_worker(recs[1], path))
        assert dumps(codec.decode(back)) == dumps(cts[1])
        assert shmslots._results[name] is not mapped
        # cut short under the mapping: refused, never read past the end
        header = as_worker(recs[1], short)
        shm.receive(header)  # (mapped)
        os.truncate(short, recs[1].offsets[-1] + 8)
        with pytest.raises(SerializationError, match="cut short"):
            shm.receive(header)
    finally:
        if os.path.exists(short):
            os.unlink(short)
        for rec in recs:  # this process's own slots: read by their names, freed
            shm.receive(rec.header())
        shm.end_job(job)
    # the job's end drops the mapping of a slot that is gone, keeps a live one for later jobs
    assert name in shmslots._results and os.path.basename(short) not in shmslots._results
    os.unlink(path)
    shm.end_job(job)
    assert not [n for n in shmslots._results if n.startswith(client + "-")]


@pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")
def test_a_finalizer_that_drops_the_mappings_mid_read_does_not_deadlock(monkeypatch):
    """A garbage collection during a mapped read may run a job's finalizer on the same thread
    (`shm.end_job` -> `unmap_results`, which takes the module's lock): the read still finishes,
    with the right words."""
    import shutil
    import threading

    from ren.distributed import shmslots

    ckks = context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))
    client = shm.client_prefix()
    job = client + "-reentrant"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    path = os.path.join(shm.SHM_DIR, f"{client}-pool-2.0")
    codec = Codec()
    ct = ckks.encrypt([0.25])
    rec = codec.encode(ct, "ct", shm.Segments(job, 0, pooled=True))
    shutil.copyfile(os.path.join(shm.SHM_DIR, rec.name), path)
    take = recycle.take

    def collecting(size):  # (as if a collection ran a finalizer here)
        shmslots.unmap_results(everything=True)
        return take(size)

    monkeypatch.setattr(shmslots.recycle, "take", collecting)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(dumps(codec.decode(shm.receive(
        {**rec.header(), "shm": os.path.basename(path)})))), daemon=True)
    try:
        reader.start()
        reader.join(30)
        assert not reader.is_alive() and got == [dumps(ct)]
    finally:
        monkeypatch.undo()
        os.unlink(path)
        shm.receive(rec.header())  # (this process's own slot: read by its name, freed)
        if not reader.is_alive():  # (a reader stuck holding the lock would block the end too)
            shm.end_job(job)
