"""ren.distributed: a jitted CKKS multiply + relinearize + rescale over a batch on a LocalCluster.

At N = 2^14 (the 128-bit preset "N14", the "python" device; ``--device cpu`` for the compiled
one, whose replay is ~20x faster, so the distributed path's own cost shows) the script:

* captures the jitted function on the client and times it locally, replay by replay
  (`local`: the operation itself, no distribution);
* for 1 and then 2 local worker processes (one thread each): starts the cluster, warms it up
  with one job over the whole batch (each worker loads the keys and compiles the plan once,
  and every process faults in the memory a batch's inputs and results take: a first job paid
  ~500 page faults per ciphertext on the client, ~60 % more client CPU, where later ones pay
  ~2; that time and those bytes are reported apart, as a one-off per worker), then times
  `ren.distributed.map` over the batch:
  wall time, throughput, and per ciphertext the worker's replay (`run`), its decode + encode,
  and the whole distributed path.

With ``--rounds R`` it runs R such jobs per worker count, the counts taking turns, and reports
the median of the rounds (a shared machine's load varies from one job to the next).

Per job it also prints CPU seconds per ciphertext, which a shared machine's load does not
inflate as it does wall time: the client process's (every thread: encoding, decoding, Dask's
in-process scheduler and comms), the workers' (every thread, `client.run`) and, of those, the
replay's own (the task thread's CPU, `run_cpu` in the job's timings) and the rest; and the
wire bytes per ciphertext each way.  The "CPU accounting" line sums the distributed path's own
CPU (client + workers outside the replay) against the replay's.

It prints the speedup of 2 workers over 1 (goal >= 1.8× on a 2-core machine) and the
per-ciphertext overhead of the distributed path with one worker: (wall per ciphertext − the
worker's replay per ciphertext) / the replay (goal <= 10 %): serialization on both sides,
transfers and scheduling, as far as they are not hidden behind the replay.  The client's own
encode/decode per ciphertext is timed too (they run beside the workers, on another core).
Last, the machine's own ceiling: two plain processes (no Dask) replaying side by side, against
one alone; on a VM whose two cores share caches and memory bandwidth this is below 2x.  Then
the same with a third process doing the client's memory work for every replay (an input
copied into a slot and checksummed, a result copied out, checksummed and range-checked: what
`ren.distributed`'s client cannot avoid, without its Python or Dask): the most 2 workers / 1
can reach while the client shares the two cores (stop 58: 1.34-1.57x, median 1.54x, against
1.61-2.03x without it; the client's part alone 0.5-0.8 ms of CPU per N = 2^14 ciphertext).

Before the jobs it prints the wire's own speed on one core (`wire_report`): encode and decode
GB/s of an input and of a result ciphertext through `ren.distributed.wire` and Dask's
serialization (goal >= 2 GB/s each way; the records' checksum is XXH3-128 where xxhash is
installed), the on-disk container for comparison, and SHA-256, BLAKE2b, BLAKE3 and XXH3-128
over the same bytes.

The batch cycles through `--distinct` fresh encryptions (encrypting 64 at N = 2^14 takes a
while and is not what is measured).  The machine is often shared: run it on a quiet one.

**Bootstrapping on a cluster** (``--bootstrap``, issue 42 §3): `map` of a jitted bootstrapping
over a batch (``--batch``, default 8 here), the keys (relinearization, Galois and, for a dense
secret, the encapsulation keys) broadcast once per worker: for 1 and 2 workers, the throughput
in bootstrappings per second, each worker's replay, the keys' and plan's bytes sent by the
warm-up job and by the timed job (none: they stay on the workers), and the precision of every
result against its plaintext.  ``--preset small`` (N = 2^8, insecure: seconds) or
``--preset n16`` (N = 2^16, 128-bit: each worker process and the client hold the keys and the
plan, so it needs about three times what ``bench_bootstrap.py --preset n16`` needs; run it
where memory allows).  ``--lean`` runs it in the lean mode of ``bench_bootstrap.py --lean``
(lean keys: each uniform half a seed, regenerated in the key switches; the diagonals as
integer coefficients), about 6 GiB a process at n16, so a client and two workers fit in 24 GiB.

The data path (``--shm off|auto|on``, else ``REN_DISTRIBUTED_SHM``; `ren.distributed.shm`) is
printed first: records in Dask's messages, or through same-host /dev/shm segments.

**Memory.**  The workers have no Dask memory limit unless ``--memory-limit 8GiB`` (say) sets
one, and the bench prints the limit the workers report.  Dask's own default (the machine's
memory split evenly over the workers, the worker restarted by its nanny at 95 % of its share)
lost a worker of the two-worker n16 bootstrapping mid-batch ("lost dependencies", no OOM kill
in the kernel's log): each worker holds the keys, the plan, its arena and Dask's copy of what
was broadcast.  ``--preset n16`` checks its memory estimate against what is available first.

Run:  python benchmarks/bench_distributed.py [--log-n 14] [--batch 64] [--workers 1 2]
                                             [--device python|cpu] [--rounds 3] [--shm auto]
      python benchmarks/bench_distributed.py --bootstrap [--preset small|n16] [--batch 8]
                                             [--lean] [--log-n 13..15 with n16: its shape at
                                             a smaller ring, INSECURE, in less memory]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import logging
import multiprocessing
import os
import queue
import resource
import statistics
import time
import warnings
from typing import Any

import numpy as np

import ren
from ren.backend.malloc import tune_allocator
from ren.ckks import (
    CKKSParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
    dumps,
    loads,
)
from ren.ckks.circuits import Bootstrapper, bootstrap_params_n16, bootstrap_params_small
from ren.ckks.serialize import serialized_size
from ren.distributed import local_client, shm, submit
from ren.distributed.batch import size
from ren.distributed.cluster import dask_distributed
from ren.distributed.frames import CHECKSUM
from ren.distributed.wire import Codec


@ren.jit
def square(ct, keys):
    """multiply + relinearize + rescale (keys: the relinearization key)."""
    ev = Evaluator(ct.params, relin_key=keys)
    return ev.rescale(ev.multiply(ct, ct))


def make_params(log_n: int, device: str = "python") -> CKKSParams:
    if log_n == 14:
        return CKKSParams.preset("N14", device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=1 << log_n, depth=7, scale_bits=40, first_bits=58, device=device,
                          special_primes=3, insecure=True)


def _replay_in_a_process(log_n: int, device: str, repeat: int, barrier: Any, out: Any,
                         done: Any = None) -> None:
    """One plain process (no Dask): make keys, capture, wait for the others, time replays.
    Its allocator is tuned as a worker's is (`tune_allocator`): untuned, a replay here took
    2.7x a worker's, and the ceiling measured page faults rather than the cores."""
    tune_allocator()
    params = make_params(log_n, device)
    keygen = KeyGenerator(params)
    rlk = keygen.relin_key()
    ct = Encryptor(params, keygen.public_key()).encrypt(Encoder(params).encode(np.zeros(4)))
    square(ct, keys=rlk)
    barrier.wait()
    t0 = time.perf_counter()
    for _ in range(repeat):
        square(ct, keys=rlk)
        if done is not None:
            with done.get_lock():
                done.value += 1
    out.put((time.perf_counter() - t0) / repeat)


def _client_copies(sizes: tuple[int, int, int], barrier: Any, done: Any, stop: Any,
                   out: Any) -> None:
    """The client's memory work per ciphertext, once per replay the plain processes finish
    (`ceiling` with `copies`): an input's words copied into one of 64 slot-sized buffers and
    checksummed, a result's copied out of one of 64 and checksummed and range-checked (the
    maximum of each row), as `ren.distributed` does on the client with XXH3 (SHA-256 without
    xxhash); no Python objects, no Dask.  Puts its CPU seconds per ciphertext and how many it
    did."""
    import hashlib as hl

    try:
        import xxhash

        digest: Any = lambda a: xxhash.xxh3_128(a).digest()  # noqa: E731
    except ImportError:
        digest = lambda a: hl.sha256(a).digest()  # noqa: E731
    in_words, out_words, n = sizes[0] // 8, sizes[1] // 8, sizes[2]
    rng = np.random.default_rng(0)
    sources = [rng.integers(0, 1 << 60, in_words, dtype=np.uint64) for _ in range(8)]
    slots = [np.ones(in_words, np.uint64) for _ in range(64)]
    posted = [rng.integers(0, 1 << 60, (out_words // n, n), dtype=np.uint64) for _ in range(64)]
    taken = [np.ones((out_words // n, n), np.uint64) for _ in range(8)]
    barrier.wait()
    k, c0 = 0, time.process_time()
    while k < done.value or not stop.is_set():  # (every replay's share, the last ones too)
        if k >= done.value:
            time.sleep(0.0002)
            continue
        np.copyto(slots[k % 64], sources[k % 8])
        digest(slots[k % 64])
        np.copyto(taken[k % 8], posted[k * 7 % 64])
        digest(taken[k % 8])
        taken[k % 8].max(axis=1)
        k += 1
    out.put(((time.process_time() - c0) / max(1, k), k))


#: seconds the ceiling waits for its plain processes (key generation and a capture each)
CEILING_TIMEOUT = 600


def ceiling(log_n: int, device: str, processes: int, repeat: int,
            copies: tuple[int, int, int] | None = None) -> float:
    """Seconds per replay when `processes` plain processes replay at once: what the machine
    gives to any way of running them side by side (cores, caches, memory bandwidth).  With
    `copies` (an input's and a result's wire bytes, the ring degree) a third process does the
    client's memory work for each replay done (`_client_copies`); its CPU seconds per
    ciphertext and the ciphertexts it did are then in `ceiling.client_cpu` and
    `ceiling.client_done`."""
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(processes + (copies is not None)), ctx.Queue()
    done, stop, client_out = ctx.Value("l", 0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_replay_in_a_process, args=(log_n, device, repeat, barrier, out,
                                                            done))
             for _ in range(processes)]
    if copies is not None:
        procs.append(ctx.Process(target=_client_copies, args=(copies, barrier, done, stop,
                                                              client_out)))
    for p in procs:
        p.start()
    try:  # a process that died (it could not import this file, say) never answers
        times = [out.get(timeout=CEILING_TIMEOUT) for _ in range(processes)]
    except queue.Empty:
        for p in procs:
            p.kill()
        raise RuntimeError(f"ceiling: {processes} plain replay process(es) gave no time within "
                           f"{CEILING_TIMEOUT} s (see their output above)") from None
    stop.set()
    if copies is not None:
        got = client_out.get(timeout=CEILING_TIMEOUT)
        ceiling.client_cpu, ceiling.client_done = got  # type: ignore[attr-defined]
    for p in procs:
        p.join()
    return statistics.mean(times)


def cluster_options(limit: str) -> dict[str, Any]:
    """`local_client`'s options for ``--memory-limit`` `limit`: ``none`` (no Dask memory
    limit: `ren.distributed.cluster.LOCAL_MEMORY_LIMIT`) or a size Dask parses (``8GiB``)."""
    return {"memory_limit": 0 if limit.lower() in ("none", "0") else limit}


def worker_memory_limit(dask_worker: Any = None) -> int | None:
    """The memory limit Dask enforces on this worker, in bytes (None: none; run on each worker
    by ``client.run``, which passes `dask_worker`)."""
    manager = getattr(dask_worker, "memory_manager", None)
    return getattr(manager, "memory_limit", None)


def memory_line(client: Any) -> str:
    """What Dask's memory limit per worker is, as the workers report it."""
    limits = sorted(set(client.run(worker_memory_limit).values()), key=lambda v: v or 0)
    said = ", ".join("none" if v is None else f"{v / 2**30:.1f} GiB" for v in limits)
    return (f"Dask memory limit per worker: {said}" + (
        " (only the machine's own limits apply; --memory-limit 8GiB sets one: past 95 % of it "
        "Dask's nanny restarts the worker, which a job sees as lost dependencies)"
        if limits == [None] else " (--memory-limit; past 95 % of it Dask's nanny restarts the "
        "worker, which a job sees as lost dependencies)"))


def _process_cpu() -> float:
    """This process's CPU seconds, all threads (run on each worker by `client.run`)."""
    return time.process_time()


def _time_job(w: int, batch: list, rlk: Any, label: str, options: dict[str, Any],
              say_memory: bool = False) -> dict[str, float]:
    """One timed job on a fresh `w`-worker LocalCluster (after a warm-up job); prints the job's
    figures and returns them: ``wall`` (s), ``run`` (the workers' median replay per ciphertext,
    wall s) and, per ciphertext, CPU seconds that a loaded machine does not inflate: ``client``
    (the client process, every thread: encoding, decoding, Dask's scheduler and comms),
    ``worker`` (the worker processes, every thread), ``replay`` (the replays' own, on the task
    threads), ``outside`` (the workers' CPU outside the replay: decode, encode, Dask), and the
    wire bytes ``sent`` and ``received`` by the client."""
    with local_client(workers=w, silence_logs=logging.CRITICAL, **options) as client:
        if say_memory:
            print(memory_line(client))
        t0 = time.perf_counter()
        submit(square, batch, keys=rlk, client=client).result()  # the one-offs (module doc)
        warm_s = time.perf_counter() - t0
        before = client.run(_process_cpu)
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0, cpu0 = time.perf_counter(), time.process_time()
        job = submit(square, batch, keys=rlk, client=client)
        job.result()
        wall, client_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
        after = client.run(_process_cpu)
    n = len(batch)
    run = statistics.median(t["run"] for t in job.timings)
    wire = statistics.median(t["decode"] + t["encode"] for t in job.timings)
    worker_cpu = sum(after[a] - before[a] for a in after if a in before) / n
    replay_cpu = sum(t["run_cpu"] for t in job.timings) / n
    figures = {"wall": wall, "run": run, "client": client_cpu / n, "worker": worker_cpu,
               "replay": replay_cpu, "outside": worker_cpu - replay_cpu,
               "sent": job.input_bytes / n, "received": job.result_bytes / n,
               "faults": faults / n}
    print(f"{w} worker(s){label}: {wall:.2f} s for {n}, {n / wall:.2f} ciphertexts/s, "
          f"{wall / n * 1e3:.1f} ms each; per ciphertext on a worker: replay {run * 1e3:.1f} ms, "
          f"decode+encode {wire * 1e3:.1f} ms; warm-up (keys {size(job.keys_bytes)} and plan "
          f"{size(job.program_bytes)} to each worker, {n} inputs) {warm_s:.2f} s")
    print(f"  CPU per ciphertext: client process {client_cpu / n * 1e3:.2f} ms (encoding, "
          f"decoding, Dask's scheduler and comms); workers {worker_cpu * 1e3:.2f} ms, of which "
          f"the replay {replay_cpu * 1e3:.2f} ms and outside it "
          f"{figures['outside'] * 1e3:.2f} ms; client page faults {faults / n:.0f}; wire "
          f"bytes per ciphertext: sent "
          f"{size(int(figures['sent']))}, received {size(int(figures['received']))}")
    return figures


def _median_seconds(fn: Any, repeat: int = 30) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def wire_speed(obj: Any, params: CKKSParams) -> tuple[float, float, int]:
    """(encode s, decode s, bytes) of one object through the wire on this one core: encode is
    `Codec.encode` and Dask's serialization into (header, frames), decode the way back from
    frames as a transport hands them over (fresh buffers) to a realized ciphertext."""
    from distributed.protocol import deserialize, serialize

    codec = Codec({params.fingerprint: params})

    def encode() -> tuple[Any, list]:
        return serialize(codec.encode(obj, "x"), serializers=("dask", "pickle"))

    header, frames = encode()
    received = [bytearray(f) for f in frames]  # what the socket wrote into

    def decode() -> None:
        codec.decode(deserialize(header, received)).realize()

    nbytes = sum(memoryview(f).nbytes for f in frames)
    return _median_seconds(encode), _median_seconds(decode), nbytes


def wire_report(ct: Any, result: Any, params: CKKSParams) -> None:
    """Prints the wire's encode/decode GB/s for an input and a result (goal >= 2 GB/s each way
    on one core), the same through the on-disk container (`ren.ckks.dumps`/`loads`, SHA-256),
    and the checksums' own speed over the ciphertext's bytes."""
    for what, obj in (("input", ct), ("result", result)):
        enc, dec, nbytes = wire_speed(obj, params)
        article = "an" if what == "input" else "a"
        print(f"wire, one core, {article} {what} ciphertext ({size(nbytes)}): encode "
              f"{enc * 1e3:.2f} ms = {nbytes / enc / 1e9:.2f} GB/s, decode {dec * 1e3:.2f} ms = "
              f"{nbytes / dec / 1e9:.2f} GB/s (goal >= 2 GB/s each way; checksum {CHECKSUM})")
    blob = dumps(ct, form="montgomery")
    enc = _median_seconds(lambda: dumps(ct, form="montgomery"))
    dec = _median_seconds(lambda: loads(blob, params).parts[0].realize())
    print(f"  the on-disk container (ren.ckks.dumps/loads, SHA-256; the wire before issue 42): "
          f"encode {len(blob) / enc / 1e9:.2f} GB/s, decode {len(blob) / dec / 1e9:.2f} GB/s")
    data = memoryview(blob)
    hashes = {"sha256": lambda: hashlib.sha256(data).digest(),
              "blake2b": lambda: hashlib.blake2b(data).digest()}
    for name, module, call in (("blake3", "blake3", "blake3"), ("xxh3_128", "xxhash",
                                                                  "xxh3_128")):
        try:
            fn = getattr(importlib.import_module(module), call)
        except ImportError:
            continue
        hashes[name] = lambda fn=fn: fn(data).digest()
    print("  checksums over its bytes, one core: " + ", ".join(
        f"{name} {len(blob) / _median_seconds(h) / 1e9:.2f} GB/s" for name, h in hashes.items())
        + " (BLAKE3 and SHA-256 are cryptographic, xxh3 is not)")


def bootstrapping(bt: Bootstrapper) -> Any:
    """The jitted bootstrapping of `bt`; keys = (relinearization key, Galois keys[, the
    encapsulation keys of a dense secret]): public keys only, sent once per worker."""

    @ren.jit
    def bootstrap(ct: Any, keys: Any) -> Any:
        ev = Evaluator(ct.params, keys[0], keys[1])
        return bt.bootstrap(ev, ct, keys[2] if len(keys) > 2 else None)

    return bootstrap


def _bits(err: float) -> float:
    return -float(np.log2(max(err, 2.0**-60)))


#: the factor over the keys' and diagonals' bytes that a process holding a bootstrapping needs
#: (working memory, the wire's copies); bench_bootstrap.py measured ~14 GiB at n16 for ~12 GiB
MEMORY_FACTOR = 1.5


LEAN_NOTE = " (lean keys, coefficient-form diagonals)"


def memory_needed(params: CKKSParams, processes: int, lean: bool = False
                  ) -> tuple[float, float]:
    """(GiB that `processes` processes holding a bootstrapping's keys and plan need, GiB
    available now): each one holds the keys in full and the plan's diagonals, or with `lean`
    the lean keys (b halves and seeds) and the diagonals as integer coefficients
    (`bench_bootstrap.estimate_memory`, from the parameters alone)."""
    from bench_bootstrap import estimate_memory

    est = estimate_memory(params, 3, 3)
    if lean:
        held = sum(est["key_bytes_lean"].values()) + est["diagonal_bytes_coeff"]
    else:
        held = sum(est["key_bytes"].values()) + est["diagonal_bytes"]
    one = held * MEMORY_FACTOR / 2**30
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        avail = int(info["MemAvailable"].split()[0]) / 2**20
    except (OSError, KeyError, ValueError):  # not Linux: trust the caller
        avail = float("inf")
    return one * processes, avail


def task_placement(records: list[dict[str, Any]]) -> str:
    """Per worker, the Ren tasks a Dask task stream saw run there, their compute seconds (a
    batch's tasks should share the workers out evenly) and the seconds their worker spent
    fetching what they needed from another worker before they ran (an input, or keys and plan
    a worker no longer held: Dask's memory manager dropped them between jobs before
    `local_client` turned its ReduceReplicas policy off)."""
    busy: dict[str, list[float]] = {}
    fetch: dict[str, float] = {}
    for r in records:
        if "ren-map" in str(r.get("key", "")):
            where = str(r.get("worker", "?"))
            steps = r.get("startstops", ())
            busy.setdefault(where, []).append(sum(s["stop"] - s["start"] for s in steps
                                                  if s.get("action") == "compute"))
            fetch[where] = fetch.get(where, 0.0) + sum(
                s["stop"] - s["start"] for s in steps if s.get("action") == "transfer")
    return "; ".join(f"{addr.rsplit(':', 1)[-1]}: {len(t)} task(s), {sum(t):.1f} s computing, "
                     f"{fetch[addr]:.1f} s fetching from other workers"
                     for addr, t in sorted(busy.items())) or "none seen"


def n16_at(log_n: int, device: str) -> CKKSParams:
    """The n16 preset's shape at N = 2^log_n (``--preset n16 --log-n``, as bench_bootstrap.py's
    `n16_shaped`: the same depth, scale, primes and secret, so the same graph and keys' layout,
    each kernel over fewer coefficients; INSECURE below 2^16, for measuring in less memory)."""
    from bench_bootstrap import n16_shaped

    return n16_shaped(bootstrap_params_n16("python"), log_n, device)


def bootstrap_main(args: argparse.Namespace) -> None:
    """`--bootstrap` (module doc): a batch of bootstrappings on 1 and 2 local workers."""
    t0 = time.perf_counter()
    # the lean mode (bench_bootstrap.py --lean): seeded key halves, diagonals as coefficients
    diagonals = "coeff" if args.lean else "rns"
    if args.preset == "n16" and args.log_n is not None and args.log_n < 16:
        params = n16_at(args.log_n, args.device)
        bt = Bootstrapper(params, cts_levels=3, stc_levels=3, diagonals=diagonals)
    elif args.preset == "n16":
        params = bootstrap_params_n16(args.device)
        need, avail = memory_needed(params, max(args.workers) + 1, args.lean)  # and the client
        print(f"n16: the client and {max(args.workers)} worker(s) need about {need:.0f} GiB; "
              f"{avail:.0f} GiB available")
        if need > avail and not args.force:
            raise SystemExit(f"bench_distributed --bootstrap --preset n16: about {need:.0f} GiB "
                             f"needed, {avail:.0f} GiB available; run it on a larger machine "
                             "(or --force)")
        bt = Bootstrapper(params, cts_levels=3, stc_levels=3, diagonals=diagonals)
    else:
        params = bootstrap_params_small(args.device)
        bt = Bootstrapper(params, diagonals=diagonals)
    with ren.random.seeded(1):  # reproducible (insecure) keys: a benchmark
        kg = KeyGenerator(params, lean=args.lean)
        keys: tuple = (kg.relin_key(), bt.keys(kg))
        if bt.encapsulation is not None:
            keys += (bt.encapsulation_keys(kg),)
        pk = kg.public_key()
    decryptor = Decryptor(params, kg.secret_key())
    enc, encryptor = Encoder(params), Encryptor(params, pk)
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, params.slots) for _ in range(min(args.distinct, args.batch))]
    fresh = [encryptor.encrypt(enc.encode(x, 0, bt.input_scale)) for x in xs]
    for ct in fresh:
        ct.parts[0].realize(*ct.parts[1:])
    batch = [fresh[i % len(fresh)] for i in range(args.batch)]
    full = sum(serialized_size(k) for k in keys)  # (dumps would build 6.4 GB at n16)
    print(f"bootstrapping, preset {args.preset}" + (" at a smaller ring (INSECURE)" if args.preset
                                                     == "n16" and params.N < 1 << 16 else "")
          + f": N = 2^{params.N.bit_length() - 1}, "
          f"{params.slots} slots, batch {args.batch} ({len(fresh)} distinct), keys "
          f"({len(keys[1])} Galois keys{', encapsulation keys' * (len(keys) > 2)}) "
          f"{size(full)} in Ren's full format{LEAN_NOTE * args.lean}; set up in "
          f"{time.perf_counter() - t0:.1f} s")

    bootstrap = bootstrapping(bt)
    t0 = time.perf_counter()
    bootstrap(fresh[0], keys=keys)
    capture = time.perf_counter() - t0
    local = []
    for i in range(args.local_repeat):
        t0 = time.perf_counter()
        bootstrap(fresh[i % len(fresh)], keys=keys)
        local.append(time.perf_counter() - t0)
    op = statistics.median(local)
    print(f"local: capture {capture:.2f} s, replay {op:.3f} s per bootstrapping (median of "
          f"{len(local)}), {1 / op:.2f} per second")

    walls: dict[int, float] = {}
    for w in args.workers:
        with local_client(workers=w, silence_logs=logging.CRITICAL,
                          **cluster_options(args.memory_limit)) as client:
            if w == args.workers[0]:
                print(memory_line(client))
            t0 = time.perf_counter()
            warm = submit(bootstrap, batch[:w], keys=keys, client=client)
            warm.result()
            warm_s = time.perf_counter() - t0
            t0, cpu0 = time.perf_counter(), time.process_time()
            with dask_distributed().get_task_stream(client) as stream:
                job = submit(bootstrap, batch, keys=keys, client=client)
                outs = job.result()
            wall, client_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        walls[w] = wall
        print(f"{w} worker(s), where the timed job's tasks ran: {task_placement(stream.data)}")
        run = statistics.median(t["run"] for t in job.timings)
        errs = [np.max(np.abs(enc.decode(decryptor.decrypt(o)).real - xs[i % len(xs)]))
                for i, o in enumerate(outs)]
        n = len(batch)
        print(f"{w} worker(s): {n / wall:.2f} bootstrappings/s ({wall:.2f} s for {n}); per "
              f"bootstrapping on a worker: replay {run:.3f} s; keys {size(warm.keys_bytes)} "
              f"(compact) and plan {size(warm.program_bytes)} broadcast once per worker: the "
              f"warm-up job ({w} inputs, {warm_s:.1f} s) sent {size(warm.shared_sent_bytes)} "
              f"of keys, parameters and plan, the timed job {size(job.shared_sent_bytes)}; "
              f"client CPU {client_cpu:.2f} s; precision {_bits(max(errs)):.1f} bits "
              f"(worst of {n}, level {outs[0].level})")
    if 1 in walls and 2 in walls:
        print(f"bootstrapping throughput 2 workers / 1: {walls[1] / walls[2]:.2f}x")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log-n", type=int, default=None,
                    help="the ring: N = 2^LOG_N (default 14); with --bootstrap --preset n16, "
                         "13..15 runs the n16 shape at a smaller ring (INSECURE, for "
                         "measuring in less memory; bench_bootstrap.py --log-n)")
    ap.add_argument("--device", default="python", choices=("python", "cpu"),
                    help="where the workers replay (cpu: the compiled device, ~20x faster, so "
                         "the distributed path's own cost shows)")
    ap.add_argument("--batch", type=int, default=None,
                    help="ciphertexts per job (default 64; 8 with --bootstrap)")
    ap.add_argument("--distinct", type=int, default=8, help="fresh encryptions the batch cycles")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shm", choices=("off", "auto", "on"), default=None,
                    help="the data path (sets REN_DISTRIBUTED_SHM; ren.distributed.shm): auto "
                         "(the default: same-host shared-memory files where every worker sees "
                         "them), on (files required) or off (frames in Dask's messages)")
    ap.add_argument("--local-repeat", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1,
                    help="jobs per worker count, the counts taking turns; the speedup is the "
                         "median of the rounds' (a shared machine's load varies)")
    ap.add_argument("--bootstrap", action="store_true",
                    help="a batch of jitted bootstrappings instead (module doc)")
    ap.add_argument("--preset", default="small", choices=("small", "n16"),
                    help="--bootstrap's parameters: small (N=2^8, insecure) or n16 (N=2^16)")
    ap.add_argument("--lean", action="store_true",
                    help="--bootstrap in the lean mode: lean keys and coefficient-form diagonals "
                         "(bench_bootstrap.py --lean; ~6 GiB a process at n16)")
    ap.add_argument("--memory-limit", default="none",
                    help="Dask's memory limit per worker: none (the default, as "
                         "ren.distributed.local_client sets it: only the machine's own limits "
                         "apply) or a size such as 8GiB (past 95 %% of it Dask's nanny restarts "
                         "the worker, and the job sees lost dependencies)")
    ap.add_argument("--force", action="store_true",
                    help="--preset n16 even where the memory estimate says it will not fit")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.batch is None:
        args.batch = 8 if args.bootstrap else 64
    if args.batch < 1:
        ap.error(f"--batch must be at least 1, got {args.batch}")
    if args.bootstrap:
        if args.log_n is not None and not (args.preset == "n16" and 13 <= args.log_n <= 16):
            ap.error(f"--bootstrap takes --log-n 13..16 with --preset n16 only, got --log-n "
                     f"{args.log_n} with --preset {args.preset}")
        bootstrap_main(args)
        return
    if args.log_n is None:
        args.log_n = 14

    params = make_params(args.log_n, args.device)
    keygen = KeyGenerator(params)
    pk, rlk = keygen.public_key(), keygen.relin_key()
    encoder, encryptor = Encoder(params), Encryptor(params, pk)
    rng = np.random.default_rng(0)
    fresh = [encryptor.encrypt(encoder.encode(rng.uniform(-1, 1, params.slots)))
             for _ in range(args.distinct)]
    for ct in fresh:
        ct.parts[0].realize(*ct.parts[1:])
    batch = [fresh[i % len(fresh)] for i in range(args.batch)]
    if args.shm is not None:
        os.environ[shm.ENV] = args.shm
    print(f"data path: {shm.ENV}={shm.mode()} (" + (
        "records' frames in Dask's messages" if shm.mode() == "off" else
        "records of 64 kB or more through /dev/shm segments where the workers see it") + ")")
    print(f"N = 2^{args.log_n}, depth {params.depth}, batch {args.batch} "
          f"({len(fresh)} distinct), relinearization key {size(rlk.nbytes)} "
          f"({size(len(dumps(rlk, compact=True)))} in the compact wire form)")

    square(fresh[0], keys=rlk)  # capture
    local = []
    for i in range(args.local_repeat):
        t0 = time.perf_counter()
        out = square(fresh[i % len(fresh)], keys=rlk)
        local.append(time.perf_counter() - t0)
    op = statistics.median(local)
    print(f"local replay: {op * 1e3:.1f} ms per ciphertext (median of {len(local)})")
    wire_report(fresh[0], out, params)

    # per worker count, one job's figures (`_time_job`) per round; the counts take turns
    # within a round, so a burst of load elsewhere hits them alike
    results: dict[int, list[dict[str, float]]] = {w: [] for w in args.workers}
    for r in range(args.rounds):
        for w in args.workers:
            results[w].append(_time_job(w, batch, rlk, f" (round {r + 1})" * (args.rounds > 1),
                                        cluster_options(args.memory_limit), r == 0 and
                                        w == args.workers[0]))
    for w, jobs in results.items():
        med = {k: statistics.median(j[k] for j in jobs) for k in jobs[0]}
        fixed = med["client"] + med["outside"]
        print(f"CPU accounting, {w} worker(s) (median of {len(jobs)} job(s); robust on a shared "
              f"machine): the distributed path's own CPU per ciphertext {fixed * 1e3:.2f} ms "
              f"(client {med['client'] * 1e3:.2f} + workers outside the replay "
              f"{med['outside'] * 1e3:.2f}) = {fixed / med['replay'] * 100:.1f} % of the replay's "
              f"CPU ({med['replay'] * 1e3:.2f} ms)")
    if 1 in results:
        pers = [j["wall"] / len(batch) for j in results[1]]
        over = statistics.median((per - j["run"]) / j["run"] for per, j in zip(pers, results[1]))
        per, run1 = statistics.median(pers), statistics.median(j["run"] for j in results[1])
        print(f"overhead of the distributed path (1 worker): {over * 100:.1f} % of the replay "
              f"({per * 1e3:.1f} vs {run1 * 1e3:.1f} ms per ciphertext; goal <= 10 %); against "
              f"the local replay: {(per - op) / op * 100:.1f} %")
    if 1 in results and 2 in results:
        ups = [one["wall"] / two["wall"] for one, two in zip(results[1], results[2])]
        spread = f" (median of {len(ups)} rounds: {', '.join(f'{u:.2f}' for u in ups)})" \
            if len(ups) > 1 else ""
        print(f"speedup 2 workers / 1: {statistics.median(ups):.2f}x{spread} (goal >= 1.8x on "
              "a 2-core machine)")
        one, two = ceiling(args.log_n, args.device, 1, 6), ceiling(args.log_n, args.device, 2, 6)
        print(f"the machine's ceiling, plain processes without Dask: one replays in "
              f"{one * 1e3:.1f} ms, two side by side in {two * 1e3:.1f} ms each: "
              f"{2 * one / two:.2f}x")
        # the same beside the client's memory work alone (copies, checksums, range checks; no
        # Python objects, no Dask): what 2 workers / 1 can reach with the client on these cores
        sizes = (int(results[1][0]["sent"]), int(results[1][0]["received"]), params.N)
        one = ceiling(args.log_n, args.device, 1, 60, sizes)
        cost = ceiling.client_cpu  # type: ignore[attr-defined]
        two = ceiling(args.log_n, args.device, 2, 60, sizes)
        cost2 = ceiling.client_cpu  # type: ignore[attr-defined]
        print(f"  beside the client's memory work ({cost * 1e3:.2f}/{cost2 * 1e3:.2f} ms CPU per "
              f"ciphertext): one replays in {one * 1e3:.1f} ms, two in {two * 1e3:.1f} ms each: "
              f"{2 * one / two:.2f}x")


if __name__ == "__main__":
    main()
