"""Packed groups carried in their tasks (`ren.distributed.worker.Packed`): on the path of shared
memory a group's wire trees (slot names) travel pickled in its task, with no scattered input.
Dask then runs such a task again by itself when its worker dies; a run that finds its input
slots freed by the first run raises SlotTakenError, and the client sends the group again."""

from __future__ import annotations

import os

import pytest

distributed = pytest.importorskip(
    "distributed", reason="ren.distributed needs the distributed extra (Dask)")

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, square  # noqa: E402

import ren.distributed.batch as batch_module  # noqa: E402
import ren.distributed.grouping as grouping  # noqa: E402
from ren.ckks import dumps  # noqa: E402
from ren.distributed import (  # noqa: E402
    DistributedError,
    TaskError,
    local_client,
    posts,
    shm,
    shmslots,
    submit,
)
from ren.distributed.errors import SlotTakenError  # noqa: E402
from ren.distributed.worker import Packed, run_item  # noqa: E402


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


@pytest.fixture
def slots(monkeypatch):
    """Every record through a pool slot (N = 64 records are ~1 kB), groups of 4."""
    monkeypatch.setenv(shm.MIN_ENV, "0")
    monkeypatch.setenv(shm.ENV, "on")
    monkeypatch.setattr(batch_module, "inputs_per_task", lambda n, workers: 4)


def _taken_once(flag: str | None) -> None:
    """On a worker: the first run of the group holding input 0 finds its slots freed (as a
    second run of its task does after the first run, whose result was lost with its worker,
    freed them): unpacked, its slots freed, unpacked again (which raises SlotTakenError);
    every run with no `flag`."""
    import ren.distributed.worker as w
    from ren.distributed.shmslots import release

    real = w.Packed.unpack

    def unpack(self, index):
        if index[0] == 0 and (flag is None or not os.path.exists(flag)):
            if flag is not None:
                open(flag, "w").close()
            release(real(self, index))
        return real(self, index)

    w.Packed.unpack = unpack


def test_a_second_run_of_a_packed_task_finds_its_slots_taken(ckks, slots, monkeypatch):
    """A group's task run again once its job has its results (its input slots freed): the
    unpacking raises SlotTakenError, never words of another record."""
    sent: list[Packed] = []

    def packed(blob, post=""):
        sent.append(Packed(blob, post))
        return sent[-1]

    monkeypatch.setattr(grouping, "Packed", packed)
    cts, rlk = batch(ckks, 8), ckks.ev.relin_key
    with local_client(workers=1) as c:
        job = submit(square, cts, keys=rlk, client=c)
        assert [dumps(o) for o in job.result(timeout=60)] == \
            [dumps(square(ct, keys=rlk)) for ct in cts]
        assert len(sent) == 2 and all(f is None for f in job._inputs)
        s = job._sender
        again = c.submit(run_item, s.which[0], sent[0], s.indices[0], pure=False,
                         context_key=s.context_key, context_blob=s.shared[s.context_key],
                         program_key=s.program_key, program_blob=s.shared[s.program_key],
                         group=True, shm=s.shm)
        with pytest.raises(SlotTakenError, match="holds another record"):
            again.result(timeout=60)


def test_a_group_whose_slots_were_taken_is_sent_again(ckks, slots, tmp_path):
    """The client sends a group again (encoded anew, one resend) when its task raises
    SlotTakenError: every result once, with the local bits; past MAX_RESENDS it is a
    TaskError naming the group."""
    cts, rlk = batch(ckks, 8), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        c.run(_taken_once, str(tmp_path / "flag"))
        job = submit(square, cts, keys=rlk, client=c)
        outs = job.result(timeout=60)
        assert [dumps(o) for o in outs] == want and job.resends == 1
        assert os.path.exists(tmp_path / "flag")


def test_resends_of_a_taken_group_stop(ckks, slots, monkeypatch):
    """With no resend left, SlotTakenError ends the job as a TaskError naming the inputs."""
    monkeypatch.setattr(batch_module, "MAX_RESENDS", 0)
    cts, rlk = batch(ckks, 8), ckks.ev.relin_key
    with local_client(workers=1) as c:
        c.run(_taken_once, None)
        job = submit(square, cts, keys=rlk, client=c)
        with pytest.raises(TaskError, match="inputs 0-3") as e:
            job.result(timeout=60)
        assert isinstance(e.value.original, SlotTakenError)


def test_a_group_posts_its_results_and_the_client_takes_them(ckks, slots, monkeypatch):
    """Each packed group's task returns only `posts.POSTED`; the client takes the results from
    the post's file (none fetched through Dask: `Client.gather` is never called), with the
    local bits, and no post is left once the job returns."""
    cts, rlk = batch(ckks, 12), ckks.ev.relin_key
    with local_client(workers=2) as c:
        gathered: list[object] = []
        gather = c.gather
        monkeypatch.setattr(c, "gather",
                            lambda fs, **kw: (gathered.append(fs), gather(fs, **kw))[1])
        job = submit(square, cts, keys=rlk, client=c)
        outs = job.result(timeout=60)
        names = dict(job._sender.post_names)
        assert [dumps(o) for o in outs] == [dumps(square(ct, keys=rlk)) for ct in cts]
        assert not gathered and len(names) == len(job._groups) == 3
        assert not [n for n in os.listdir(shm.SHM_DIR) if "-post-" in n]
        again = submit(square, cts, keys=rlk, client=c)
        values = [f.result() for f in again.futures]  # before result() releases them
        assert values == [posts.POSTED] * 3
        again.result(timeout=60)


def test_post_and_take(tmp_path):
    """A post is there once written while its job lives, taken once; none after its job ended
    or over MAX_POST_BYTES; a file of another kind under a post's name is refused."""
    prefix = shm.client_prefix() + "-posttest"
    marker = os.path.join(shm.SHM_DIR, prefix + ".job")
    open(marker, "wb").close()
    try:
        name = posts.name_of(prefix, 3, 1)
        assert name.endswith("-post-3-1")
        assert posts.post(name, [("a", {"b": 1})], prefix)
        assert posts.take(name) == (True, [("a", {"b": 1})])
        assert posts.take(name) == (False, None)
        assert not posts.post(name, b"x" * (posts.MAX_POST_BYTES + 1), prefix)
        os.mkdir(os.path.join(shm.SHM_DIR, name))
        try:
            with pytest.raises(DistributedError, match="not a file"):
                posts.take(name)
        finally:
            os.rmdir(os.path.join(shm.SHM_DIR, name))
    finally:
        os.unlink(marker)
    assert not posts.post(name, 1, prefix)  # its job ended
    assert posts.take(name) == (False, None)


def test_results_are_read_through_mappings_dropped_when_the_cluster_closes(ckks, slots):
    """The client reads the results out of mappings of the worker's slots, which it keeps for
    later jobs; they go when `local_client`'s cluster closes (its workers' files are gone)."""
    cts, rlk = batch(ckks, 8), ckks.ev.relin_key
    with local_client(workers=1) as c:
        outs = submit(square, cts, keys=rlk, client=c).result(timeout=60)
        assert [dumps(o) for o in outs] == [dumps(square(ct, keys=rlk)) for ct in cts]
        assert [n for n in shmslots._results if n.startswith(shm.client_prefix())]
    assert not shmslots._results
