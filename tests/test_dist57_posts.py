"""A posted group's results come back from `ren.distributed.posts.take` unread (`Deferred`,
stop 57): nothing is copied out of a slot until `ren.distributed.shm.received` reads it, just
before its decode; then the same words as sent, and a corrupted or cut-short record is refused
with SerializationError as before."""

from __future__ import annotations

import os

import pytest
from ckks_helpers import context
from distributed_helpers import shm_job

from ren.ckks import dumps
from ren.distributed import posts, shm, shmslots
from ren.distributed.frames import Sealed
from ren.distributed.wire import Codec
from ren.errors import SerializationError

pytestmark = pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=2, scale_bits=30, first_bits=40)


@pytest.fixture
def job():
    with shm_job("-d57post") as name:
        yield name


def _posted(ckks, job, name, values):
    """`values` encoded into pool slots of `job`, posted as a group's results and taken."""
    codec = Codec()
    writer = shm.Segments(job, 0, pooled=True)
    cts = [ckks.encrypt(v) for v in values]
    sent = [codec.encode(ct, "ct", writer) for ct in cts]
    assert all(isinstance(s, shm.Shared) for s in sent)
    assert posts.post(name, [(s, {"run": 0.5}) for s in sent], job)
    found, value = posts.take(name)
    assert found
    return codec, cts, sent, value


def test_taken_results_are_read_only_when_received(ckks, job, monkeypatch):
    reads: list[str] = []
    real = shmslots.read_slot
    monkeypatch.setattr(shmslots, "read_slot", lambda name, *a, **k: reads.append(name) or
                        real(name, *a, **k))
    import ren.distributed.shmrecords as records

    monkeypatch.setattr(records, "read_slot", shmslots.read_slot)
    values = [[0.5, -0.25], [0.125]]
    codec, cts, sent, value = _posted(ckks, job, f"{job}-post-0-0", values)
    assert reads == []  # nothing copied out by the take
    assert all(isinstance(w, shm.Deferred) and t == {"run": 0.5} for w, t in value)
    got = []
    for k, (w, _) in enumerate(value):
        rec = shm.received(w)
        assert isinstance(rec, Sealed) and reads == [s.name for s in sent[:k + 1]]
        got.append(codec.decode(rec))  # verified, range-checked
    assert [dumps(g) for g in got] == [dumps(ct) for ct in cts]  # bit for bit
    assert shm.received([{"a": (1, "x")}]) == [{"a": (1, "x")}]  # no record: as it was


def test_a_corrupted_or_cut_short_posted_result_is_refused(ckks, job):
    codec, _, sent, value = _posted(ckks, job, f"{job}-post-1-0", [[0.5], [0.25]])
    flipped = sent[0]
    with open(os.path.join(shm.SHM_DIR, flipped.name), "r+b") as f:
        f.seek(flipped.offsets[-1] + 9)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 2]))
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(shm.received(value[0][0]))
    cut = value[1][0]
    cut.head = {**cut.head, "sizes": [*cut.head["sizes"][:-1], cut.head["sizes"][-1] - 4]}
    with pytest.raises(SerializationError, match=r"checksum|cut short|bytes"):
        codec.decode(shm.received(cut))
