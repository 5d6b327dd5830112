"""Data that stays on the cluster (`ren.distributed.remote`, `storage`) on a Dask LocalCluster of
2 worker processes: futures in and out of `map` (each result bit-identical to replaying the
same jit function locally), maps chained on the workers with the bytes through this process
counted at the socket, `save`/`load` by the workers (the files are `ren.ckks.dumps` bytes),
keys and plans sent once per worker across maps, and a bootstrapping batch at the small preset
with a worker killed mid-batch.  Skipped without the `distributed` extra."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, result_holder, square, values  # noqa: E402

import ren  # noqa: E402
from ren.ckks import Evaluator, dumps, loads  # noqa: E402
from ren.distributed import (  # noqa: E402
    Batch,
    DistributedError,
    TaskError,
    load,
    local_client,
    save,
    scatter,
    submit,
)
from ren.distributed import map as dmap  # noqa: E402
from ren.distributed.remote import forget_shared  # noqa: E402
from ren.distributed.worker import stats  # noqa: E402
from ren.errors import ParameterError  # noqa: E402

try:  # (helper "circuits" moves the bootstrapping under ren.ckks.circuits; ren.ckks exports it)
    from ren.ckks import Bootstrapper, bootstrap_params_small  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - until ren.ckks re-exports them
    try:
        from ren.ckks.circuits.bootstrap import (  # type: ignore[no-redef]
            Bootstrapper,
            bootstrap_params_small,
        )
    except ImportError:
        from ren.ckks.bootstrap import Bootstrapper, bootstrap_params_small  # type: ignore


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


@pytest.fixture(scope="module")
def wide():
    """Ciphertexts of ~100 kB, so that data dominates the task messages in byte counts."""
    return context(N=4096, depth=2, scale_bits=30, first_bits=40, steps=(1,),
                   powers_of_two=False)


@ren.jit
def rotate_add(ct, keys):
    ev = Evaluator(ct.params, rotation_keys=keys)
    return ev.add(ev.rotate(ct, 1), ct)


def same(outs, wants) -> bool:
    return len(outs) == len(wants) and all(dumps(a) == dumps(b) for a, b in zip(outs, wants))


# -- futures in and out -------------------------------------------------------------------------
def test_futures_in_and_out(client, ckks):
    cts = batch(ckks, 6)
    rlk = ckks.ev.relin_key
    want = [square(ct, keys=rlk) for ct in cts]
    on_cluster = scatter(cts, client=client)  # values in, futures out
    assert isinstance(on_cluster, Batch) and len(on_cluster) == 6
    assert len(on_cluster.standins) == 1 and on_cluster.which == [0] * 6  # one spec
    assert same(dmap(square, on_cluster, keys=rlk, client=client), want)  # futures in
    kept = dmap(square, cts, keys=rlk, client=client, keep=True)  # futures out
    assert isinstance(kept, Batch) and all(isinstance(f, distributed.Future) for f in kept)
    assert {f.status for f in kept} == {"finished"}
    assert same(kept.gather(), want) and kept.received_bytes > 0
    assert same(kept.gather(), want)  # the items stay until released
    assert same(kept[2:4].gather(), want[2:4])
    # bare Dask futures of wire trees: the params come with the keys; the plan is captured on
    # each worker (no stand-in on the client), with the same bits
    assert same(dmap(square, list(on_cluster.futures), keys=rlk, client=client), want)
    kept.release()
    assert len(kept) == 0
    with pytest.raises(ParameterError, match="mixes Dask futures"):
        dmap(square, [on_cluster.futures[0], cts[1]], keys=rlk, client=client)
    with pytest.raises(ParameterError, match="Dask futures"):
        Batch(client, [cts[0]])
    with pytest.raises(ParameterError, match="map: keep"):
        dmap(square, cts, keys=rlk, client=client, keep="yes")
    job = submit(square, cts[:2], keys=rlk, client=client)
    job.result(timeout=60)
    with pytest.raises(DistributedError, match="persist\\(\\) after result"):
        job.persist()


def test_a_task_that_raises_on_a_batch_names_its_index(client, ckks):
    cts = [ckks.encrypt(values(i, 32), level) for i, level in enumerate([3, 0, 3])]
    b = scatter(cts, client=client)
    assert len(b.standins) == 2 and b.which == [0, 1, 0]
    with pytest.raises(ren.errors.RenError, match="level 0"):  # a jitted one: captured here
        dmap(square, b, keys=ckks.ev.relin_key, client=client, keep=True)

    def square_eagerly(ct, keys):  # a plain function runs on the workers
        ev = Evaluator(ct.params, relin_key=keys)
        return ev.rescale(ev.multiply(ct, ct))

    with pytest.raises(TaskError) as info:
        dmap(square_eagerly, b, keys=ckks.ev.relin_key, client=client, keep=True)
    assert info.value.index == 1  # no level left to rescale


# -- chained maps: no round trip through the client ------------------------------------------
@pytest.fixture
def socket_bytes(monkeypatch):
    """Bytes this process writes to and reads from TCP sockets (the client's traffic, and the
    in-process scheduler's), counted in Dask's TCP comm; records in the messages (not through
    shared memory, `ren.distributed.shm`), whose bytes these tests count."""
    from distributed.comm import tcp

    monkeypatch.setenv("REN_DISTRIBUTED_SHM", "off")

    count = {"sent": 0, "received": 0}
    write, read_rw = tcp.TCP.write, tcp.read_bytes_rw

    async def counted_write(self, *args, **kwargs):
        n = await write(self, *args, **kwargs)
        count["sent"] += n
        return n

    async def counted_read(stream, n):
        count["received"] += n
        return await read_rw(stream, n)

    monkeypatch.setattr(tcp.TCP, "write", counted_write)
    monkeypatch.setattr(tcp, "read_bytes_rw", counted_read)
    return count


def test_chained_maps_stay_on_the_workers(client, wide, socket_bytes):
    n = 6
    cts = batch(wide, n)
    rlk, gk = wide.ev.relin_key, wide.ev.rotation_keys
    size = len(dumps(cts[0]))  # ~130 kB
    want = [rotate_add(square(ct, keys=rlk), keys=gk) for ct in cts]

    def moved() -> int:
        return socket_bytes["sent"] + socket_bytes["received"]

    on_cluster = scatter(cts, client=client)
    assert moved() >= n * size  # the inputs went out once

    def chain() -> tuple[Batch, int, int]:
        before = moved()
        first = submit(square, on_cluster, keys=rlk, client=client, keep=True)
        mid = first.persist(timeout=60)
        second = submit(rotate_add, mid, keys=gk, client=client, keep=True)
        out = second.persist(timeout=60)
        assert first.input_bytes == second.input_bytes == 0
        assert first.result_bytes == second.result_bytes == 0
        return out, moved() - before, first.shared_sent_bytes + second.shared_sent_bytes

    _, warm, shared = chain()  # the first chain sends the keys and the plans
    assert shared > 0 and warm > len(dumps(rlk, compact=True))
    out, chained, shared = chain()
    # the second sends none of them, and no ciphertext: task messages only (the data would be
    # 4 * 6 * size through this process, out and back, twice)
    assert shared == 0 and chained < n * size / 4, (chained, n * size)
    after_chain = moved()
    got = out.gather()
    assert moved() - after_chain >= sum(len(dumps(g)) for g in got)  # now it came
    assert same(got, want)
    for i, g in enumerate(got):  # and it is what NumPy says
        x = values(i, wide.params.slots) ** 2
        assert np.max(np.abs(wide.decrypt(g).real - (np.roll(x, -1) + x))) < 2**-10
    # the same pipeline with values in and out moves every ciphertext through this process
    before = moved()
    squares = dmap(square, cts, keys=rlk, client=client)
    direct = moved() - before
    assert direct >= 0.9 * (n * size + sum(len(dumps(s)) for s in squares))
    print(f"chained: {chained} B moved (first chain {warm} B); one map of values in and out: "
          f"{direct} B; inputs {n} x {size} B")


# -- save / load by the workers ------------------------------------------------------------------
def test_save_and_load_on_the_workers(client, ckks, tmp_path):
    cts = batch(ckks, 5)
    rlk = ckks.ev.relin_key
    want = [square(ct, keys=rlk) for ct in cts]
    kept = dmap(square, cts, keys=rlk, client=client, keep=True)
    paths = save(kept, tmp_path / "run", prefix="sq", client=client)
    assert [os.path.basename(p) for p in paths] == [f"sq-{i:06d}.ren" for i in range(5)]
    for p, w in zip(paths, want):  # Ren's versioned format: what ren.ckks.dumps writes
        data = Path(p).read_bytes()
        assert data == dumps(w)
        assert dumps(loads(data, ckks.params)) == data
    assert not [f for f in os.listdir(tmp_path / "run") if ".tmp-" in f]
    # read back by the workers, with a stand-in (captured here) or without (on the workers)
    again = load(paths, ckks.params, like=want[0], client=client)
    assert isinstance(again, Batch) and len(again.standins) == 1
    twice = [square(w, keys=rlk) for w in want]
    assert same(dmap(square, again, keys=rlk, client=client), twice)
    bare = load(paths, ckks.params, client=client)
    assert bare.standins is None
    assert same(dmap(square, bare, keys=rlk, client=client), twice)
    assert same(bare.gather(), want)
    # a missing file: TaskError with its index; bad arguments: ParameterError before anything
    with pytest.raises(TaskError) as info:
        load([paths[0], tmp_path / "nope.ren"], ckks.params, client=client)
    assert info.value.index == 1 and isinstance(info.value.original, ParameterError)
    assert isinstance(info.value.original.__cause__, FileNotFoundError)
    with pytest.raises(TaskError, match="cannot write"):  # a file where the directory goes
        save(kept, paths[0], client=client)
    with pytest.raises(ParameterError, match="Batch"):
        save(cts, tmp_path, client=client)
    with pytest.raises(ParameterError, match="directory must be a path"):
        save(kept, 3, client=client)
    with pytest.raises(ParameterError, match="prefix"):
        save(kept, tmp_path, prefix="a/b", client=client)
    with pytest.raises(ParameterError, match="CKKSParams"):
        load(paths, "N14", client=client)
    with pytest.raises(ParameterError, match="list of file paths"):
        load(paths[0], ckks.params, client=client)


# -- keys and plans once per worker ----------------------------------------------------------
def test_keys_and_plans_are_sent_once_per_worker_across_maps(client, ckks):
    forget_shared(client)  # as a new client would be
    cts = batch(ckks, 4)
    rlk = ckks.ev.relin_key
    before = client.run(stats)
    first = submit(square, cts, keys=rlk, client=client)
    first.result(timeout=60)
    workers = len(client.scheduler_info()["workers"])
    assert first.shared_sent_bytes == (first.context_bytes + first.program_bytes) * workers
    second = submit(square, cts[::-1], keys=rlk, client=client)
    assert same(second.result(timeout=60), [square(ct, keys=rlk) for ct in cts[::-1]])
    assert second.shared_sent_bytes == 0 and "sent now: 0 B" in second.describe()
    assert second._sender.shared == first._sender.shared  # the same futures, not copies
    after = client.run(stats)
    for w in after:  # each worker decoded the keys at most once for both jobs
        assert after[w].get("context", 0) - before[w].get("context", 0) <= 1
    # other keys are other bytes: sent again
    third = submit(square, cts, keys=ckks.keygen.relin_key(), client=client)
    third.result(timeout=60)
    assert third.shared_sent_bytes == third.context_bytes * workers



def test_the_client_makes_no_copy_of_the_keys(client, ckks, monkeypatch):
    """The keys' bytes are pickled neither for the context's name nor for its broadcast: the
    context goes as an object whose records' frames Dask sends out of band (the keys' storage
    itself).  Each pickle was one more copy of every key in the client, two per job, even
    for a job whose keys the workers held already (the n16 client peaked at 18.4 GiB)."""
    import ren.distributed.shipping as shipping

    pickled: list[tuple[str, int]] = []
    real = shipping.guarded_dumps

    def spy(obj, where):
        out = real(obj, where)
        pickled.append((where, len(out)))
        return out

    monkeypatch.setattr(shipping, "guarded_dumps", spy)
    forget_shared(client)
    cts, rlk = batch(ckks, 2), ckks.keygen.relin_key()
    for _ in range(2):  # the broadcast job, then one whose keys are on the workers
        job = submit(square, cts, keys=rlk, client=client)
        assert same(job.result(timeout=60), [square(ct, keys=rlk) for ct in cts])
    assert job.keys_bytes > 4000 and job.shared_sent_bytes == 0
    biggest = max(n for where, n in pickled if "program" not in where)
    assert biggest < job.keys_bytes // 4, pickled  # (the parameters: ~0.4 kB)


# -- bootstrapping on the cluster, a worker killed mid-batch ---------------------------------------
@pytest.fixture(scope="module")
def boot():
    params = bootstrap_params_small()
    bt = Bootstrapper(params)
    with ren.random.seeded(1):
        kg = ren.ckks.KeyGenerator(params)
        keys = (kg.relin_key(), bt.keys(kg))
        pk = kg.public_key()
    enc = ren.ckks.Encoder(params)
    encryptor = ren.ckks.Encryptor(params, pk)
    decryptor = ren.ckks.Decryptor(params, kg.secret_key())

    @ren.jit
    def bootstrap(ct, keys):
        return bt.bootstrap(Evaluator(ct.params, keys[0], keys[1]), ct)

    return params, bt, keys, enc, encryptor, decryptor, bootstrap


def test_a_bootstrapping_batch_survives_a_killed_worker(boot):
    params, bt, keys, enc, encryptor, decryptor, bootstrap = boot
    xs = [np.random.default_rng(20 + i).uniform(-1, 1, params.slots) for i in range(4)]
    with ren.random.seeded(5):
        cts = [encryptor.encrypt(enc.encode(x, 0, bt.input_scale)) for x in xs]
    with local_client(workers=2) as c:
        pids = c.run(os.getpid)
        job = submit(bootstrap, cts, keys=keys, client=c)
        # the keys (compact form) and the plan once per worker
        assert job.shared_sent_bytes == (job.context_bytes + job.program_bytes) * 2
        full = sum(len(dumps(k)) for k in keys)  # each uniform half as its seed on the wire
        assert 0.4 * full < job.keys_bytes < 0.6 * full, (job.keys_bytes, full)
        victim = result_holder(c, job, 60, poll=0.01)
        os.kill(pids[victim], signal.SIGKILL)  # a result held there, tasks still to run
        outs = job.result(timeout=120)
        computed = [e[0] for e in c.cluster.scheduler.transition_log if e[2] == "memory"]
    assert len(outs) == 4
    assert len(computed) > len(set(computed)) or job.resends >= 1  # something ran again
    for i, (x, out) in enumerate(zip(xs, outs)):  # every result once, in its place
        assert out.level == bt.output_level
        err = np.max(np.abs(enc.decode(decryptor.decrypt(out)).real - x))
        assert err < 2**-20, f"input {i}: {err}"
    assert dumps(outs[0]) == dumps(bootstrap(cts[0], keys=keys))  # the local replay's bits


def test_tasks_of_several_inputs_survive_a_killed_worker(ckks, monkeypatch):
    """A batch sent as tasks of 2 inputs (`inputs_per_task`), a worker killed once results have
    arrived: every result exactly once, in its place, with the local replay's bits."""
    import ren.distributed.batch as batch_module

    monkeypatch.setattr(batch_module, "inputs_per_task", lambda n, workers: 2)
    cts, rlk = batch(ckks, 120), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        pids = c.run(os.getpid)
        job = submit(square, cts, keys=rlk, client=c)
        assert job._groups is not None and len(job.futures) == 60
        victim = result_holder(c, job, 60)
        os.kill(pids[victim], signal.SIGKILL)
        outs = job.result(timeout=120)
        computed = [e[0] for e in c.cluster.scheduler.transition_log if e[2] == "memory"]
    # something ran again, or (through shared memory) the victim's groups had posted their
    # results, which outlive it (`ren.distributed.posts`)
    assert len(computed) > len(set(computed)) or job.resends >= 1 or job._sender.post_names
    assert [dumps(o) for o in outs] == want
