"""Same-host records through shared memory (`ren.distributed.shm`): a record's frames written
into a /dev/shm segment, the message carrying its name; the receiver maps it (the mapped words
become the Poly's storage) and verifies it as any record (a corrupted, truncated or missing
segment raises SerializationError); the switch (``REN_DISTRIBUTED_SHM``); and no segment left
behind after a job, a failure, a cancelled or dropped job, a killed worker, a client's exit or
a killed client.  The cluster tests lower the size threshold to 0 so that N = 64 records go
through segments.  Skipped without the `distributed` extra or /dev/shm."""

from __future__ import annotations

import gc
import mmap
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, result_holder, square, values  # noqa: E402

from ren import settings  # noqa: E402
from ren.ckks import Evaluator, dumps  # noqa: E402
from ren.distributed import DistributedError, TaskError, local_client, shm, shmfiles, submit  # noqa: E402
from ren.distributed import map as dmap  # noqa: E402
from ren.distributed.frames import register_dask  # noqa: E402
from ren.distributed.wire import Codec, Sealed, wire_bytes  # noqa: E402
from ren.distributed.worker import encode_result  # noqa: E402
from ren.errors import LevelError, SerializationError, SettingsError  # noqa: E402
from ren.ir import storage_buffer  # noqa: E402

pytestmark = pytest.mark.skipif(shm.SHM_DIR is None, reason="needs a writable /dev/shm")


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2) as c:
        yield c


@pytest.fixture
def small(monkeypatch):
    """Every record through a segment (N = 64 records are ~1 kB), the path on 'auto'."""
    monkeypatch.setenv(shm.MIN_ENV, "0")
    monkeypatch.setenv(shm.ENV, "auto")


def ours() -> list[str]:
    """This process's files in /dev/shm (its marker, jobs, segments)."""
    return sorted(n for n in os.listdir(shm.SHM_DIR) if n.startswith(shm.client_prefix()))


def leftovers() -> list[str]:
    """This process's files besides its marker and the pools' slots (reused across jobs, gone
    at exit): segments and job markers."""
    return [n for n in ours() if not n.endswith(".host") and "-pool-" not in n]


def taken_slots() -> list[str]:
    """Pool slots not free (every input's and result's slot is freed once read and decoded;
    a slot of an ended job is taken again by its writer)."""
    out = []
    for n in ours():
        if "-pool-" in n:
            with open(os.path.join(shm.SHM_DIR, n), "rb") as f:
                if f.read(8) != bytes(8):
                    out.append(n)
    return out


def dead_pools() -> list[str]:
    """Pool files of this client whose writer process is gone."""
    return [n for n in ours() if "-pool-" in n and
            not os.path.exists(f"/proc/{n.rsplit('-', 1)[-1].split('.')[0]}")]


def mapped(poly) -> bool:
    """Whether a Poly's storage is (a view of) a mapped segment."""
    obj = storage_buffer(poly.node).array()
    while obj is not None:
        if isinstance(obj, mmap.mmap):
            return True
        obj = obj.obj if isinstance(obj, memoryview) else getattr(obj, "base", None)
    return False


def sealed_segment(ckks, prefix: str):
    ct = ckks.encrypt([0.5, 0.125])
    codec = Codec()
    writer = shm.Segments(prefix, 0)
    rec = codec.encode(ct, "ct", writer)
    return ct, codec, writer, rec


# -- segments, no cluster ----------------------------------------------------------------------
def test_a_segment_is_mapped_adopted_and_unlinked_by_its_receiver(ckks):
    prefix = shm.client_prefix() + "-unit"
    ct, codec, writer, rec = sealed_segment(ckks, prefix)
    assert isinstance(rec, shm.Shared) and len(writer.names) == 1
    path = os.path.join(shm.SHM_DIR, writer.names[0])
    assert os.path.exists(path) and wire_bytes(rec) == wire_bytes(Codec().encode(ct, "ct"))
    with open(path, "rb") as f:  # the frames at aligned offsets, as stored
        raw = f.read()
    plain = Codec().encode(ct, "ct")
    for off, size, frame in zip(rec.offsets, rec.sizes, plain.frames):
        assert off % shm.ALIGN == 0 and raw[off:off + size] == bytes(frame)
    # through Dask's own family: a header, no frame; the receiver maps the segment
    protocol = pytest.importorskip("distributed.protocol")
    assert register_dask()
    header, frames = protocol.serialize(rec, serializers=("dask",))
    assert sum(memoryview(f).nbytes for f in frames) < 1000
    back = protocol.deserialize(header, frames)
    assert isinstance(back, Sealed) and not os.path.exists(path)  # unlinked once mapped
    out = codec.decode(back)
    assert dumps(out) == dumps(ct) and all(mapped(p) for p in out.parts)  # no copy
    assert np.allclose(ckks.decrypt(ckks.ev.add(out, out))[:2], [1.0, 0.25], atol=1e-6)
    # read twice (its name is gone): an error, not a hang
    with pytest.raises(SerializationError, match="is gone"):
        protocol.deserialize(header, frames)
    # small records stay in the message
    assert isinstance(Codec().encode(ct, "ct", shm.Segments(prefix)), Sealed)
    assert shm.end_job(prefix) == 0  # nothing left: the receiver took the one segment
    assert not [n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)]


def test_a_corrupted_truncated_or_missing_segment_raises(ckks):
    prefix = shm.client_prefix() + "-bad"
    _, codec, writer, rec = sealed_segment(ckks, prefix)
    path = os.path.join(shm.SHM_DIR, writer.names[0])
    with open(path, "r+b") as f:  # one flipped bit in the last frame's last word
        f.seek(rec.offsets[-1] + rec.sizes[-1] - 1)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 1]))
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(rec)
    assert not os.path.exists(path)  # the receiver unlinked it before it failed
    _, _, writer, rec = sealed_segment(ckks, prefix)
    os.truncate(os.path.join(shm.SHM_DIR, writer.names[0]), rec.offsets[-1] + 8)
    with pytest.raises(SerializationError, match="cut short"):
        codec.decode(rec)
    _, _, writer, rec = sealed_segment(ckks, prefix)
    writer.discard()
    with pytest.raises(SerializationError, match="is gone"):
        codec.decode(rec)
    # headers that name no Ren segment, or give bad offsets
    good = rec.header()
    for bad in ({**good, "shm": "../../etc/passwd"}, {**good, "offsets": [0, -64]},
                {**good, "sizes": ["8"]}, {**good, "shm": 7}, "nonsense"):
        with pytest.raises(SerializationError):
            shm.receive(bad)
    # a record whose frames were swapped in the segment: its checksum names it
    _, _, writer, rec = sealed_segment(ckks, prefix)
    rec.offsets.reverse()
    with pytest.raises(SerializationError):
        codec.decode(rec)
    shm.end_job(prefix)


def test_the_switch_and_the_threshold(monkeypatch):
    monkeypatch.delenv(shm.ENV, raising=False)
    assert shm.mode() == "auto"  # the default: where client and workers share /dev/shm
    for value, want in (("", "auto"), ("auto", "auto"), ("ON", "on"), ("1", "on"),
                        ("off", "off"), ("0", "off")):
        monkeypatch.setenv(shm.ENV, value)
        assert shm.mode() == want
    monkeypatch.setenv(shm.ENV, "sometimes")
    with pytest.raises(SettingsError, match=r"REN_DISTRIBUTED_SHM='sometimes'.*auto\|on\|off"):
        shm.mode()
    monkeypatch.setenv(shm.ENV, "off")
    assert shm.start_job(object(), ["tcp://nowhere"]) is None  # no probe, no marker
    monkeypatch.setenv(shm.MIN_ENV, "1000")
    assert shm.min_bytes() == 1000
    monkeypatch.delenv(shm.MIN_ENV)
    assert shm.min_bytes() == shm.MIN_BYTES == 64 * 1024
    for bad, why in (("lots", "not an integer"), ("-1", "outside the allowed range")):
        monkeypatch.setenv(shm.MIN_ENV, bad)
        with pytest.raises(SettingsError, match=why):
            shm.min_bytes()


class _SameHost:
    """A stand-in Dask client whose workers are this process (`client.run` runs here)."""

    def __init__(self) -> None:
        self.probes = 0

    def run(self, fn, *args, workers):
        self.probes += 1
        return {w: fn(*args) for w in workers}


def test_the_switch_is_read_each_time_a_job_starts(monkeypatch):
    """A client changes ``REN_DISTRIBUTED_SHM`` (or overrides it in a block) between jobs: each
    job takes the value of its start (``ren.settings`` reads this switch each time)."""
    client, workers = _SameHost(), ["tcp://here:1"]
    monkeypatch.setenv(shm.ENV, "auto")
    first = shm.start_job(client, workers)
    assert first is not None and os.path.exists(os.path.join(shm.SHM_DIR, first + ".job"))
    monkeypatch.setenv(shm.ENV, "off")
    assert shm.start_job(client, workers) is None
    with settings.override(REN_DISTRIBUTED_SHM="on"):  # the environment says off
        second = shm.start_job(client, workers)
    assert second is not None and second != first
    assert shm.start_job(client, workers) is None  # the block ended: off again
    monkeypatch.setenv(shm.ENV, "1")
    third = shm.start_job(client, workers)
    assert third is not None and client.probes <= 1  # the probe is asked once per address
    monkeypatch.setenv(shm.MIN_ENV, "12345")
    assert shm.min_bytes() == 12345
    with settings.override(REN_DISTRIBUTED_SHM_MIN_BYTES=7):
        assert shm.min_bytes() == 7
    for job in (first, second, third):
        shm.end_job(job)
        assert not shm.job_alive(job)


def test_a_worker_writes_no_segment_for_a_job_that_ended(ckks, monkeypatch):
    """The worker's side of the lifetimes: segments only while the job's marker exists, checked
    after they are made (a job that ends meanwhile gets frames, and no file stays)."""
    prefix = shm.client_prefix() + "-w"
    open(os.path.join(shm.SHM_DIR, prefix + ".job"), "wb").close()
    assert shm.job_alive(prefix)
    codec, ct = Codec(), ckks.encrypt([0.25])
    first = encode_result(codec, ct, (prefix, 0))
    assert isinstance(first, shm.Shared)
    shm.end_job(prefix)
    assert not shm.job_alive(prefix)
    assert isinstance(encode_result(codec, ct, (prefix, 0)), Sealed)
    # the marker removed while the segments were being written: unlinked again, frames sent
    open(os.path.join(shm.SHM_DIR, prefix + ".job"), "wb").close()
    seal = shm.Segments.seal

    def racing(self, rec):
        out = seal(self, rec)
        os.unlink(os.path.join(shm.SHM_DIR, prefix + ".job"))
        return out

    monkeypatch.setattr(shm.Segments, "seal", racing)
    assert isinstance(encode_result(codec, ct, (prefix, 0)), Sealed)
    assert not [n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)]
    # the slot it had filled is free again; the first one waits for a reader or its job's end
    assert taken_slots() == [first.name]
    shm.free_slot(first.name, first.gen)


_CHILD = textwrap.dedent("""
    import os, sys, time
    from ren.distributed import shm
    from ren.distributed.frames import Sealed
    prefix = shm.client_prefix()
    shm.Segments(prefix + "-0", 0).seal(Sealed("poly", b"{}", (bytearray(4096),)))
    print(prefix, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(60)
""")


def test_a_clients_files_go_at_exit_and_a_killed_clients_are_reaped(monkeypatch):
    out = subprocess.run([sys.executable, "-c", _CHILD, "exit"], capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()[0]
    assert not [n for n in os.listdir(shm.SHM_DIR) if n.startswith(out)]  # atexit
    child = subprocess.Popen([sys.executable, "-c", _CHILD, "hang"], stdout=subprocess.PIPE,
                             text=True)
    prefix = child.stdout.readline().split()[0]
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    child.stdout.close()
    left = [n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)]
    assert len(left) == 2  # its marker and a segment: no atexit after SIGKILL
    assert shm.reap() >= 2  # at once: its pid is gone and nobody holds its marker's lock
    assert not [n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)]
    assert shm.client_prefix() + ".host" in os.listdir(shm.SHM_DIR)  # a live one's stay


def test_reap_keeps_the_files_of_an_owner_that_holds_its_lock():
    """A client holds a lock on its marker and a writer on each pool slot it made while it
    lives (whatever its pid namespace); `reap` removes a file only when its owner's pid is not
    in /proc and nobody holds the owner's lock, and then at once."""
    import fcntl

    mine = shm.client_prefix()
    assert shm.lock_held(os.path.join(shm.SHM_DIR, mine + ".host")) is True
    job = mine + "-79"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    shm.Segments(job, 0, pooled=True).seal(Sealed("poly", b"{}", (bytearray(4096),)))
    slots = [n for n in os.listdir(shm.SHM_DIR) if n.startswith(mine + "-pool-")]
    assert slots and all(shm.lock_held(os.path.join(shm.SHM_DIR, n)) for n in slots)
    shm.end_job(job)
    dead = next(p for p in range(4_000_000, 3_000_000, -1) if not os.path.exists(f"/proc/{p}"))
    prefix = f"ren-{dead}-{'ab' * 6}"  # a client of a pid this /proc does not show
    names = [prefix + ".host", f"{prefix}-3-{dead}.0", f"{prefix}-pool-{dead}.0"]
    fds = []
    for n in names:
        fds.append(os.open(os.path.join(shm.SHM_DIR, n), os.O_RDWR | os.O_CREAT, 0o600))
    try:
        for fd in (fds[0], fds[2]):  # the marker's owner and the slot's writer live
            fcntl.flock(fd, fcntl.LOCK_SH)
        assert shm.owner(names[1]) == (prefix + ".host", dead)
        assert shm.owner(names[2]) == (names[2], dead)
        shm.reap()
        assert sorted(n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)) == \
            sorted(names)
        os.close(fds.pop(2))  # the slot's writer is gone: its slot goes, the client's stay
        shm.reap()
        assert sorted(n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)) == \
            sorted(names[:2])
    finally:
        for fd in fds:
            os.close(fd)
    assert shm.reap() >= 2  # the client is gone too (and any other dead process's files)
    assert not [n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix)]
    assert mine + ".host" in os.listdir(shm.SHM_DIR)


@pytest.fixture
def own_pool(monkeypatch):
    """A pool of the test's own for its writers (the process's pool holds other tests' slots,
    and a take starts looking after the slot taken last); its files unlinked after."""
    from ren.distributed import shmrecords, shmslots

    pool = shmslots.Pool(shm.client_prefix() + "-own")
    monkeypatch.setattr(shmrecords, "pool_for", lambda client: pool)
    yield pool
    for slot in pool.slots:
        os.unlink(os.path.join(shm.SHM_DIR, slot.name))


def test_pool_slots_are_reused_checked_and_freed(ckks, own_pool):
    """A pooled writer copies records into slots it keeps mapped; the reader copies them out
    and frees an input's slot at once, a result's (written by a worker) once decoded
    (`release`); a slot written over, corrupted or cut short raises SerializationError."""
    job = shm.client_prefix() + "-77"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    ct = ckks.encrypt([0.5, 0.125])
    codec = Codec()
    writer = shm.Segments(job, 0, pooled=True)
    first = codec.encode(ct, "ct", writer)
    assert isinstance(first, shm.Shared) and first.gen > 0 and "-pool-" in first.name
    back = shm.receive(first.header())  # written by this (the client's) process: freed now
    assert dumps(codec.decode(back)) == dumps(ct) and back.origin is None
    with pytest.raises(SerializationError, match="another record"):  # read twice
        shm.receive(first.header())
    second = codec.encode(ct, "ct", writer)
    assert second.name == first.name and second.gen != first.gen  # the same slot, reused
    path = os.path.join(shm.SHM_DIR, second.name)
    with open(path, "r+b") as f:  # a flipped bit in the last frame
        f.seek(second.offsets[-1] + second.sizes[-1] - 1)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 4]))
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(shm.receive(second.header()))
    taken = codec.encode(ct, "ct", writer)
    other = codec.encode(ct, "ct", writer)  # the first slot is taken: a second one
    assert taken.name != other.name
    stale = shm.Shared(taken.record, taken.name, taken.offsets, taken.sizes, taken.gen + 99)
    with pytest.raises(SerializationError, match="another record"):
        shm.receive(stale.header())
    # a worker's slot (another writer pid in its name): kept until the decoded tree is released
    worker_name = taken.name.rsplit("-", 1)[0] + "-1.0"
    os.link(path, os.path.join(shm.SHM_DIR, worker_name))
    got = shm.receive({**taken.header(), "shm": worker_name})
    assert got.origin == (worker_name, taken.gen)
    assert dumps(codec.decode(got)) == dumps(ct)
    assert shm.receive({**taken.header(), "shm": worker_name}).origin  # fetched again: fine
    shm.release([got])
    with pytest.raises(SerializationError, match="another record"):
        shm.receive({**taken.header(), "shm": worker_name})
    os.unlink(os.path.join(shm.SHM_DIR, worker_name))
    os.truncate(os.path.join(shm.SHM_DIR, other.name), 100)
    with pytest.raises(SerializationError, match="cut short"):
        shm.receive(other.header())
    # the writer drops a slot cut short (or unlinked) by someone else instead of writing past
    # its end (SIGBUS)
    names = {codec.encode(ct, "ct", writer).name for _ in range(3)}
    assert other.name not in names and not os.path.exists(path.replace(taken.name, other.name))
    # a slot taken by a job that ended is taken again; pool files of a dead pid are removed
    assert shm.end_job(job) == 0
    assert shm.remove_dead_pools(shm.client_prefix()) == 0  # (every writer here is alive)


def test_a_dead_workers_pool_stays_while_another_job_of_the_client_runs():
    """A running job may take a post (`ren.distributed.posts`) that names slots in a killed
    worker's pool: another job's end must not unlink that pool; the last job's end does."""
    client = shm.client_prefix()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that is gone
    pool = os.path.join(shm.SHM_DIR, f"{client}-pool-{dead.pid}.0")
    jobs = [f"{client}-{n}" for n in (990001, 990002)]
    try:
        for job in jobs:
            with open(shmfiles.job_marker(job), "wb"):
                pass
        with open(pool, "wb") as f:
            f.write(b"words of a posted result")
        assert shm.jobs_running(client)
        shm.end_job(jobs[0])
        assert os.path.exists(pool)  # the second job may still read it
        shm.end_job(jobs[1])
        assert not os.path.exists(pool) and not shm.jobs_running(client)
    finally:
        for path in [pool, *(shmfiles.job_marker(j) for j in jobs)]:
            if os.path.exists(path):
                os.unlink(path)


# -- on a LocalCluster -------------------------------------------------------------------------
def ended_slots() -> set[str]:
    """Slots of this process's pools still taken for a job that ended (a reader that never
    came: a cancelled or failed task's input; taken again by a later take that reaches it)."""
    from ren.distributed import shmslots
    from ren.distributed.shmfiles import job_alive

    taken = set(taken_slots())
    ended = {s.name for p in list(shmslots._pools.values()) for s in p.slots
             if s.name in taken and not job_alive(s.job)}
    assert ended == taken, taken - ended  # (between jobs: none taken for a live one)
    return ended


def test_map_through_segments_gives_the_same_bits_and_leaves_nothing(client, ckks, small):
    cts, rlk = batch(ckks, 12), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    # earlier tests' ended jobs may leave slots taken where this job's takes do not look
    before = ended_slots()
    job = submit(square, cts, keys=rlk, client=client)
    assert job._sender is not None and job._sender.shm is not None
    outs = job.result(timeout=60)
    assert [dumps(o) for o in outs] == want
    # results came back through the workers' pool slots (copied out: no mapping to adopt)
    writers = {int(n.rsplit("-", 1)[-1].split(".")[0]) for n in ours() if "-pool-" in n}
    assert set(client.run(os.getpid).values()) & writers
    assert len(job._sender.segments.slots) >= 12  # the inputs went through pool slots
    assert leftovers() == [] and set(taken_slots()) <= before  # every slot read and freed
    # 'off': the frames in the messages, the same bits
    os.environ[shm.ENV] = "off"
    job = submit(square, cts, keys=rlk, client=client)
    outs = job.result(timeout=60)
    assert job._sender.shm is None and not any(mapped(o.parts[0]) for o in outs)
    assert [dumps(o) for o in outs] == want
    with settings.override(REN_DISTRIBUTED_SHM="auto"):  # for this thread's next job only
        job = submit(square, cts, keys=rlk, client=client)
    assert job._sender.shm is not None and [dumps(o) for o in job.result(timeout=60)] == want
    os.environ[shm.ENV] = "on"  # every worker sees it: 'on' works too
    assert [dumps(o) for o in dmap(square, cts, keys=rlk, client=client)] == want
    assert leftovers() == []


def test_chained_keep_maps_and_a_failure_leave_nothing(client, ckks, small):
    cts, rlk = batch(ckks, 6), ckks.ev.relin_key
    mid = dmap(square, cts, keys=rlk, client=client, keep=True)  # inputs through segments
    out = dmap(square, mid, keys=rlk, client=client)  # results through segments
    assert [dumps(o) for o in out] == [dumps(square(square(c, keys=rlk), keys=rlk))
                                       for c in cts]
    assert [dumps(o) for o in mid.gather()] == [dumps(square(c, keys=rlk)) for c in cts]
    assert leftovers() == []
    ev = ckks.ev

    def square_eagerly(ct):
        return ev.rescale(ev.multiply(ct, ct))

    failing = batch(ckks, 12)
    failing[5] = ckks.encrypt(values(5, ckks.params.slots), level=0)  # no level left
    with pytest.raises(TaskError) as err:
        dmap(square_eagerly, failing, client=client)
    assert err.value.index == 5 and isinstance(err.value.__cause__, LevelError)
    time.sleep(0.5)  # the tasks still running when the job failed finish and are dropped
    assert leftovers() == []
    job = submit(square, cts, keys=rlk, client=client)
    job.cancel()
    with pytest.raises(DistributedError, match="cancelled"):
        job.result(timeout=60)
    assert leftovers() == []
    job = submit(square, cts, keys=rlk, client=client)  # dropped without result()
    deadline = time.monotonic() + 60
    while not all(f is not None and f.done() for f in job.futures):
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.05)
    assert leftovers()  # its results wait on the workers, in segments
    del job
    gc.collect()
    assert leftovers() == []  # the job's finalizer unlinked them


def test_a_killed_worker_leaves_every_result_once_and_no_segment(ckks, small):
    import ren.distributed.batch as batch_module

    cts, rlk = batch(ckks, 40), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        pids = c.run(os.getpid)
        job = submit(square, cts, keys=rlk, client=c)
        assert job._sender is not None and job._sender.shm is not None
        victim = result_holder(c, job, 60)
        os.kill(pids[victim], signal.SIGKILL)  # holding results (segments) and inputs
        outs = job.result(timeout=120)
        assert [dumps(o) for o in outs] == want
        assert leftovers() == [] and dead_pools() == []  # the victim's slots went too
        assert batch_module.MAX_RESENDS >= 1
    assert leftovers() == []


# -- a group's inputs read in place ------------------------------------------------------------
def test_a_borrowed_slot_is_read_in_place_and_freed_by_its_task(ckks, own_pool):
    """A group's input slot (``borrow``) is read in place on its worker (the decoded Poly's
    storage is the slot's mapping: no copy), stays taken while the task runs, and is freed by
    the task (`release`); a slot taken back meanwhile fails the task's generation check, and a
    stale header raises."""
    job = shm.client_prefix() + "-78"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    ct, codec = ckks.encrypt([0.5, -0.25]), Codec()
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    sent = codec.encode(ct, "ct", writer)
    assert isinstance(sent, shm.Shared) and sent.header()["borrow"] is True
    got = shm.receive(sent.header())
    assert got.origin == (sent.name, sent.gen)
    back = codec.decode(got)
    assert dumps(back) == dumps(ct) and mapped(back.parts[0])  # in place, not copied
    assert sent.name in taken_slots() and shm.borrowed_intact(got)  # taken until released
    shm.release([got])
    assert sent.name not in taken_slots() and got.origin is None
    with pytest.raises(SerializationError, match="another record"):
        shm.receive(sent.header())  # its generation is gone
    # a borrowed record dropped without a release (its task ran elsewhere, on a copy): its
    # slot is freed when the last view of its pages goes
    dropped = codec.encode(ct, "ct", writer)
    held = codec.decode(shm.receive(dropped.header()))
    assert dropped.name in taken_slots()
    del held
    gc.collect()
    assert dropped.name not in taken_slots()
    # a slot the writer takes back while the task runs (its job ended): the check fails
    again = codec.encode(ct, "ct", writer)
    assert again.name == sent.name  # (the one slot, reused)
    held = shm.receive(again.header())
    os.unlink(os.path.join(shm.SHM_DIR, job + ".job"))  # the job ended: the slot is taken
    back = writer.pool.take(job + "0", 64)  # back by the writer's next job and written over
    assert back is not None and back.name == again.name
    assert not shm.borrowed_intact([held])
    shm.free_slot(again.name, again.gen)  # (a stale release frees nothing)
    assert again.name in taken_slots()
    shm.free_slot(back.name, int.from_bytes(back.mm[:8], "little"))
    shm.end_job(job)


def test_a_grouped_job_reads_its_inputs_in_place_and_frees_every_slot(client, ckks, small,
                                                                       monkeypatch):
    """Packed groups through shared memory: the inputs' slots are borrowed (read in place on
    the workers) and every one is freed by its task; the same bits as a local run."""
    from ren.distributed import batch as batch_module

    monkeypatch.setattr(batch_module, "inputs_per_task", lambda n, w: 4)
    cts, rlk = batch(ckks, 12), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    job = submit(square, cts, keys=rlk, client=client)
    assert job._groups is not None and job._sender.segments.borrow
    assert [dumps(o) for o in job.result(timeout=60)] == want
    used = {s.name for s in job._sender.segments.slots}
    assert len(job._sender.segments.slots) == 12 and all("-pool-" in n for n in used)
    # the input slots are freed by their tasks (not at receipt), the results' once read
    # (a group that work stealing ran on the other worker, on a copy, is freed when the first
    # worker drops the input: the client released it, the worker hears of it a moment later)
    deadline = time.monotonic() + 10
    while used & set(taken_slots()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers() == [] and not used & set(taken_slots())


def _doubled(ct):
    return Evaluator(ct.params).add(ct, ct)


def test_a_group_task_frees_its_borrowed_inputs_when_it_returns(ckks):
    """`run_item` of a group frees each borrowed input's slot once it has encoded the result,
    while the scattered records are still alive (not only when they are dropped)."""
    import pickle

    from ren.distributed.worker import Program, run_item

    job = shm.client_prefix() + "-80"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    codec, cts = Codec(), [ckks.encrypt([0.5]), ckks.encrypt([-0.25])]
    writer = shm.Segments(job, 0, pooled=True, borrow=True)
    items = [shm.receive(codec.encode(ct, "ct", writer).header()) for ct in cts]
    slots = [i.origin for i in items]

    def held() -> list[bool]:  # each input's slot still holds its record's generation
        out = []
        for name, gen in slots:
            with open(os.path.join(shm.SHM_DIR, name), "rb") as f:
                out.append(int.from_bytes(f.read(8), "little") == gen)
        return out

    assert held() == [True, True]
    context = {"params": list(codec.params.values()), "keys": None, "has_keys": False}
    out = run_item([None, None], items, [0, 1], context_key="ren-context-t80",
                   context_blob=context, program_key="ren-program-t80",
                   program_blob=pickle.dumps(Program(function=_doubled)), group=True,
                   shm=(job, 0))
    assert held() == [False, False]  # freed by the task, while `items` still holds them
    assert [dumps(codec.decode(w)) for w, _ in out] == [dumps(_doubled(ct)) for ct in cts]
    shm.release([w for w, _ in out])
    # a result in frames (no job marker; small records) that is the input itself: its frames
    # are views of the slot's pages, so the slot is freed only when they go
    items = [shm.receive(codec.encode(cts[0], "ct", writer).header())]
    slots = [items[0].origin]
    out = run_item([None], items, [0], context_key="ren-context-t80", context_blob=context,
                   program_key="ren-program-t81",
                   program_blob=pickle.dumps(Program(function=_same)), group=True)
    assert isinstance(out[0][0], Sealed) and held() == [True]
    assert dumps(codec.decode(out[0][0])) == dumps(cts[0])
    del items, out
    gc.collect()
    assert held() == [False]
    shm.end_job(job)


def _same(ct):
    return ct


def test_a_full_dev_shm_sends_the_record_in_the_message(ckks, monkeypatch):
    """No room in /dev/shm (a container's 64 MB, say): a pool slot's pages are taken with
    posix_fallocate, so the lack is an OSError there and not a SIGBUS on a later write; the
    record then travels in Dask's message, bit for bit, and no file is left behind."""
    import errno

    from ren.distributed import shmrecords, shmslots

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    job = shm.client_prefix() + "-78"
    open(os.path.join(shm.SHM_DIR, job + ".job"), "wb").close()
    before = set(os.listdir(shm.SHM_DIR))
    ct = ckks.encrypt([0.5, 0.125])
    plain = Codec().encode(ct, "ct")
    monkeypatch.setattr(shmrecords, "pool_for", lambda c: shmslots.Pool(c + "-full"))  # no slot yet
    monkeypatch.setattr(shmslots.os, "posix_fallocate", full)
    monkeypatch.setattr(shmslots.os, "pwrite", full)
    for pooled in (True, False):
        writer = shm.Segments(job, 0, pooled=pooled)
        rec = Codec().encode(ct, "ct", writer)
        assert not isinstance(rec, shm.Shared)
        assert [bytes(f) for f in rec.frames] == [bytes(f) for f in plain.frames]
    assert set(os.listdir(shm.SHM_DIR)) == before  # no slot, no segment
    monkeypatch.setattr(shmslots.os, "pwrite", lambda *a: (_ for _ in ()).throw(
        OSError(errno.EIO, "I/O error")))
    with pytest.raises(OSError, match="I/O error"):  # any other failure is not hidden
        Codec().encode(ct, "ct", shm.Segments(job, 0))
    os.remove(os.path.join(shm.SHM_DIR, job + ".job"))
