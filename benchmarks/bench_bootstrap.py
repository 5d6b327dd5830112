"""CKKS bootstrapping: Ren's time (first captured call, JIT replay), precision, levels regained,
key generation time, memory per part (the keys in memory and serialized, full and compact; the
linear transforms' plaintext diagonals; the JIT plan's arena against its peak-live bytes), graph
size and peak RSS, side by side with DESILO's CPU bootstrapping in the same run.

Each library runs in a subprocess of its own, one after the other, so that peak RSS is its own
and neither's memory (a N = 2^16 key set is GBs) counts against the other.

Presets: ``small`` (`bootstrap_params_small`: N = 256, INSECURE, seconds; ``--log-n 10..12``
for the same shape at N = 2^10..2^12) and ``n16``
(`bootstrap_params_n16`: N = 2^16, 2^15 slots, 128-bit by the HE-standard table with a dense
ternary secret, bootstrapped through sparse-secret encapsulation; ``--secret sparse`` for the
sparse h = 192 secret instead; minutes and ~11 GiB for Ren's keys and transforms, ~5 GiB with
``--lean``; ``--log-n 13..15`` for the n16 shape at a smaller ring: the same parameters
and graph, INSECURE, a quarter of the memory at 2^14).  DESILO runs with each of its two
bootstrapping keys (``--desilo-keys medium,small``, each in its own process): the medium key
(~17 GB at N = 2^16) and the small one (~6 GB, slower).  It only runs its own full-slot
parameters (N = 2^16), so it is skipped at ``small`` and below N = 2^16.

The first call: ``--first-call schedule`` (default) turns the plan cache off in Ren's process
(REN_PLAN_CACHE=0), so it traces, schedules, plans, lowers and runs; ``--first-call plan-cache``
runs Ren's process twice and reports the second, whose capture loads the template the first one
stored (`ren.plan_cache`: what a user's second session of the same program gets), then both
first calls against their replays, in wall and in CPU seconds (issue 41 §3: <= 1.5x
scheduled, <= 1.2x from the plan cache).  Compiled
kernels come from the compile cache either way (an empty one adds the compiler's time).

``--threads 1,2`` runs Ren once per REN_CPU_THREADS value (the compiled "cpu" device's OpenMP
threads) and prints each replay time and its speed-up over the first count; DESILO runs on one.

``--dry-run`` runs nothing: it prints the runs it would make and the memory the keys and the
diagonals take, computed from the parameters alone (`estimate_memory`: the Galois keys the
transforms' baby-step giant-step plans need, the digits and limbs of each key) -- seconds even at
``--preset n16``, whose real run needs ~14 GiB.

``--shape balanced|levels|precision`` picks the named bootstrapping shape
(`ren.ckks.circuits.presets`); ``--slots 8,32,full`` runs Ren once per slot count (sparse
slots: a replicated message, `Bootstrapper(slots=n)`) and prints a line per count: precision,
levels left, replay and first-call time, Galois keys.

``--lean`` is the lean mode (issue 41 §3: peak RSS): lean keys (`KeyGenerator(params,
lean=True)`: the switching keys' uniform halves kept as seeds and regenerated inside each key
switch) and, where `Bootstrapper` takes it, ``diagonals="coeff"`` (the transforms' diagonals
kept as integer coefficients and expanded where used); the same results word for word, less
memory, some time.  Its report gives the memory per part (keys resident against stored,
diagonals, arena) and its dry run estimates them.  `ren.jit` captures the lean keys' rows
unrealized (public samples, `RandomSpec.public`): every replay regenerates them where they are
used, in arena buffers the memory plan frees after use.

Run:  python benchmarks/bench_bootstrap.py [--preset small|n16] [--device cpu] [--reps 2]
                                            [--peers desilo|none] [--eager] [--threads 1,2]
                                            [--first-call schedule|plan-cache] [--log-n 8..16]
                                            [--secret preset|dense|sparse] [--dry-run]
                                            [--shape balanced|levels|precision]
                                            [--slots 8,32,full] [--lean]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import inspect
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # the benchmarks' helpers, and this checkout's Ren first

from ckks_common import bits  # noqa: E402

#: bytes of one stored word (Ren keeps residues as 32-bit words: `ren.rlwe.keys`)
WORD = 4


def _module(*names: str) -> ModuleType:
    """The first of `names` that imports (the circuits move from ren.ckks to ren.ckks.circuits:
    issue 41 §4)."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"none of {names} imports")


def shape_of(params: Any, shape: str, slots: int | None = None) -> dict:
    """The Bootstrapper keyword arguments of a named shape (`ren.ckks.circuits.presets`:
    balanced, levels, precision) for `slots` slots; before the presets, the benchmarks' own
    (2 + 2 transform levels up to N = 2^12, 3 + 3 above) for balanced."""
    try:
        presets = importlib.import_module("ren.ckks.circuits.presets")
    except ImportError:
        if shape != "balanced":
            raise
        levels = 2 if params.N <= 1 << 12 else 3
        return dict(cts_levels=levels, stc_levels=levels)
    return presets.bootstrap_shape(params, shape, slots)


def circuits() -> tuple[ModuleType, ModuleType]:
    """Ren's bootstrapping and linear-transform modules, wherever they live now."""
    return (_module("ren.ckks.circuits.bootstrap", "ren.ckks.bootstrap"),
            _module("ren.ckks.circuits.lintrans", "ren.ckks.lintrans"))


def coeff_diagonals() -> bool:
    """Whether `Bootstrapper` takes ``diagonals="coeff"`` (integer-coefficient diagonals)."""
    return "diagonals" in inspect.signature(circuits()[0].Bootstrapper).parameters


def make_params(preset: str, device: str, log_n: int, secret: str, shape: str = "balanced",
                slots: int | None = None) -> tuple[Any, dict]:
    """(CKKSParams, the Bootstrapper's keyword arguments) of a preset, secret choice, named
    shape (`shape_of`) and slot count (None: N/2).  `log_n` is the small preset's; for n16,
    13..15 is its shape at a smaller ring (`n16_shaped`), any other value N = 2^16."""
    boot, _ = circuits()
    sparse = ("sparse", 192) if preset == "n16" else ("sparse", 16)
    chosen = {"preset": {}, "dense": {"secret": "ternary"}, "sparse": {"secret": sparse}}[secret]
    if preset == "n16" and 13 <= log_n < 16:  # the n16 shape at a smaller ring (INSECURE)
        params = n16_shaped(boot.bootstrap_params_n16("python", **chosen), log_n, device)
    elif preset == "n16":
        params = boot.bootstrap_params_n16(device, **chosen)
    else:
        params = boot.bootstrap_params_small(device, N=1 << log_n, **chosen)
    kwargs = shape_of(params, shape, slots)
    return params, {**kwargs, **({"slots": slots} if slots else {})}


def n16_shaped(params: Any, log_n: int, device: str) -> Any:
    """`params` (the n16 preset's) at N = 2^log_n: the same depth, scale, primes and secret,
    so the same bootstrapping graph (the same kernels, each over fewer coefficients).  INSECURE
    below N = 2^16 (the modulus is the n16 one): for measuring the n16 shape in less memory."""
    from ren.ckks import CKKSParams, InsecureParametersWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=1 << log_n, depth=params.depth, scale_bits=params.scale_bits,
                          first_bits=params.first_bits,
                          special_primes=len(params.special_moduli),
                          secret=params.secret if params.hamming_weight is None
                          else (params.secret, params.hamming_weight),
                          insecure=True, device=device)


def _switching_key_bytes(params: Any, compact: bool = False) -> int:
    """The words of one switching key of `params` (2·dnum polynomials on Q·P), in bytes; half
    of them when the uniform halves are seeds."""
    polys = len(params.digits) * (1 if compact else 2)
    return polys * params.key_ring.limbs * params.N * WORD


def estimate_memory(params: Any, cts_levels: int = 2, stc_levels: int = 2,
                    degree: int = 31, message_ratio_bits: int | None = None,
                    cts_split: str = "last", key_cost: float | None = None) -> dict:
    """Memory of a bootstrapping's keys and plaintext diagonals from the parameters alone, without
    encoding anything: the CoeffToSlot/SlotToCoeff factors (`special_fft`), each one's baby-step
    count as `LinearTransform` plans it (`baby_steps_for` with its level's `rotation_costs`), the
    Galois keys of their baby steps and Horner giant steps (`giant_chains`, `horner_steps`) and
    conjugation, a relinearization key, the encapsulation keys of a dense secret; the diagonals
    at their transform's level, on Q for single hoisting (the default) or on Q·P for double.
    tests/test_bench_bootstrap.py holds it to the measured figures at the small presets.
    Full slots only (a sparse bootstrapping's packed transforms are not mirrored);
    message_ratio_bits changes no memory.  cts_split and key_cost as `Bootstrapper`'s (the
    ``levels`` preset's shared keys): the transforms' plans then come from
    `ren.ckks.circuits.dft.transform_plans`, which knows them."""
    boot, lt = circuits()
    from ren.ckks.encapsulation import DEFAULT_WEIGHT, Encapsulation
    from ren.ckks.special_fft import merge_stages, special_fft_stages

    slots, top = params.slots, params.depth
    weight = DEFAULT_WEIGHT if params.hamming_weight is None else 0
    K = boot.bound_K(params, weight)
    evalmod = math.ceil(math.log2(degree + 1)) + max(0, math.ceil(math.log2(2 * math.pi * (K + 1)
                                                                             / 9)))
    try:
        dft = importlib.import_module("ren.ckks.circuits.dft")
        plans = dft.transform_plans(
            params, dft.CoeffToSlotParams(cts_levels, split=cts_split, key_cost=key_cost),
            dft.SlotToCoeffParams(stc_levels, key_cost=key_cost), evalmod)
    except (ImportError, AttributeError):  # (an older Ren: the transforms' default plans)
        cts = merge_stages(special_fft_stages(slots, inverse=True), cts_levels)
        stc = merge_stages(special_fft_stages(slots), stc_levels)
        stc_top = top - cts_levels - evalmod
        plans = []
        for level, d in [(top - g, d) for g, d in enumerate(cts)] + [
                (stc_top - g, d) for g, d in enumerate(stc)]:
            baby, giant = lt.rotation_costs(params, level, lt.DEFAULT_HOISTING)
            plans.append((level, sorted(d),
                          lt.baby_steps_for(sorted(d), slots, baby, giant, lt.KEY_COST * baby)))
    steps: set[int] = set()
    diagonals = diagonal_bytes = 0
    for level, indices, n1 in plans:
        steps |= {i % n1 for i in indices}
        for chain in lt.giant_chains({i // n1 for i in indices}, n1, slots):
            steps |= {s % slots for s in lt.horner_steps(chain, n1)}
        diagonals += len(indices)
        ring = params.ring_qp(level) if lt.DEFAULT_HOISTING == "double" else params.ring(level)
        diagonal_bytes += len(indices) * ring.limbs * params.N * WORD
    galois = len(steps - {0}) + 1  # and conjugation
    full = {"galois": galois * _switching_key_bytes(params), "relin": _switching_key_bytes(params)}
    compact = {"galois": galois * _switching_key_bytes(params, True),
               "relin": _switching_key_bytes(params, True)}
    seeds = {"galois": galois * len(params.digits), "relin": len(params.digits)}
    if weight:
        small = Encapsulation(params, weight).small
        full["encapsulation"] = _switching_key_bytes(params) + _switching_key_bytes(small)
        compact["encapsulation"] = (_switching_key_bytes(params, True)
                                    + _switching_key_bytes(small, True))
        seeds["encapsulation"] = len(params.digits) + len(small.digits)
    # a lean key holds its b rows and a 32-byte seed per a row (`SwitchingKey.nbytes`)
    lean = {k: compact[k] + 32 * seeds[k] for k in compact}
    return {"galois_keys": galois, "key_bytes": full, "key_bytes_compact": compact,
            "levels": {"CoeffToSlot": cts_levels, "EvalMod": evalmod, "SlotToCoeff": stc_levels,
                       "depth": top},
            "key_bytes_lean": lean, "diagonals": diagonals, "diagonal_bytes": diagonal_bytes,
            "diagonal_bytes_coeff": diagonals * params.N * 8,  # int64 coefficients
            "dnum": len(params.digits), "key_limbs": params.key_ring.limbs, "N": params.N}


def _cpu_s() -> float:
    """CPU seconds of this process so far (user and system, every thread)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _bits(got: np.ndarray, want: np.ndarray) -> float:
    return bits(float(np.max(np.abs(np.asarray(got) - np.asarray(want)))))


def run_ren(preset: str, device: str, reps: int, eager: bool = False, log_n: int = 8,
            secret: str = "preset", shape_name: str = "balanced", slots: int | None = None,
            meta: bool = False, lean: bool = False, keep_level: bool = False) -> dict:
    import ren
    from ren.backend import c_host
    from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
    from ren.ckks.serialize import serialized_size
    from ren.kernel import COMPUTE
    from ren.node import toposort

    params, shape = make_params(preset, device, log_n, secret, shape_name, slots)
    n = slots or params.slots

    # wrapped before the keys are made, as a program wraps its function where it defines it:
    # a second process (plan cache) then faults the arena its last capture needed in while the
    # keys are made, on the idle core (`ren.arena_ahead.fault_early`), not in the first call's
    # ~0.3 s of trace and lookup.  The bodies read bt, ev, ek and mb when called.
    if meta:  # Meta-BTS: the first result's error bootstrapped once more (one level more)
        def boot(c):
            return mb.bootstrap(ev, c, ek)
    else:
        def boot(c):
            return bt.bootstrap(ev, c, ek)

    fn = boot if eager else ren.jit(boot)  # eager: "again" replays realization's template
    out: dict = {"library": "ren", "params": repr(params), "shape_name": shape_name,
                 "lean": lean}
    if lean and coeff_diagonals():
        shape = {**shape, "diagonals": "coeff"}
    out["diagonal_form"] = shape.get("diagonals", "rns")
    t0 = time.perf_counter()
    bt = circuits()[0].Bootstrapper(params, **shape)
    out["prepare_s"] = time.perf_counter() - t0
    transforms = bt.transforms
    out["diagonals"] = sum(len(t.diagonals) for t in transforms)
    out["diagonal_bytes"] = sum(t.nbytes for t in transforms)
    t0 = time.perf_counter()
    with ren.random.seeded(1):  # reproducible (insecure) keys: a benchmark
        kg = KeyGenerator(params, lean=lean)
        keys = bt.keys(kg)
        # a dense secret: the two keys of sparse-secret encapsulation
        ek = bt.encapsulation_keys(kg) if bt.encapsulation is not None else None
        ev = Evaluator(params, kg.relin_key(), keys)
        encryptor = Encryptor(params, kg.public_key())
    out["keygen_s"] = time.perf_counter() - t0
    out["key_bytes"] = keys.nbytes + ev.relin_key.nbytes + (ek.nbytes if ek else 0)
    out["key_bytes_full"] = (keys.full_nbytes + ev.relin_key.full_nbytes
                             + (ek.full_nbytes if ek else 0))
    parts = {"galois": keys, "relin": ev.relin_key, **({"encapsulation": ek} if ek else {})}
    out["key_parts"] = {name: [serialized_size(k), serialized_size(k, compact=True)]
                        for name, k in parts.items()}
    out["galois_keys"] = len(keys)
    out["encapsulation"] = bt.ephemeral_weight
    enc, dec = Encoder(params), Decryptor(params, kg.secret_key())
    rng = np.random.default_rng(2)
    drawn = iter(range(1 << 62))

    def fresh() -> tuple:
        x = rng.uniform(-1, 1, n)
        # the last level a computation uses; n < N/2 slots replicated (a sparse packing);
        # reproducible encryptions, so that runs (stored and lean keys) decrypt to the same
        with ren.random.seeded(f"bench_bootstrap encryption {next(drawn)}"):
            ct = encryptor.encrypt(enc.encode(x, level=1, slots=slots))
        ren.realize(list(ct.parts))
        return x, ct

    if meta:
        from ren.ckks.circuits import MetaBootstrapper

        mb = MetaBootstrapper(bt, keep_level=keep_level)
    x, ct = fresh()
    compiles = c_host.compiler_invocations
    cc0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not eager:  # the arena bytes faulted in since `fn` was made (a plan-cache hint)
        from ren.arena_ahead import early_arenas

        out["early_arena_bytes"] = sum(early_arenas(fn._owner).values())
    cpu0, sys0 = _cpu_s(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
    flt0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    res = fn(ct)
    ren.realize(list(res.parts))
    out["first_s"] = time.perf_counter() - t0
    # this process's CPU seconds (every thread; not the compiler's): steadier than wall time
    # on a loaded machine, and a first call's lowering overlaps its run on a second core
    out["first_cpu_s"] = _cpu_s() - cpu0
    # ... and the system's share: mostly the new arena's page faults, whose price depends on
    # the machine's memory, not on Ren (a VM that hands freed pages back to its host: ~5 ms a
    # 2 MiB page never touched, or freed more than ~2 s before, against ~0.1 ms a page freed
    # just now; an N = 2^16 bootstrapping's 0.87 GiB arena: ~2.2 s of CPU, ~1 s of it on the
    # run's own thread)
    out["first_sys_s"] = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
    out["first_minflt"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt0
    # kernels missing from the compile cache are compiled inside the first call: say so, with
    # the compiler processes' CPU seconds (they run side by side, one per core)
    cc1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["first_compiles"] = c_host.compiler_invocations - compiles
    out["first_compile_cpu_s"] = cc1.ru_utime + cc1.ru_stime - cc0.ru_utime - cc0.ru_stime
    out["mode"] = "eager (template cache)" if eager else "ren.jit (capture, replay)"
    if not eager:
        plan = fn.plans[0]
        out["compiled_by"] = plan.compiled_by
        out["units"] = len(plan.units)
        out["kernels"] = sum(1 for u in plan.units if u.kind == COMPUTE)
        out["arena_bytes"] = plan.memory.arena_bytes if plan.memory is not None else 0
        out["peak_live_bytes"] = plan.memory.peak_live_bytes if plan.memory is not None else 0
        # the graph the first call scheduled: the same bootstrapping built lazily (untimed;
        # nothing runs until a value is needed), counted node by node
        lazy = boot(fresh()[1])
        out["graph_nodes"] = len(toposort(*(p.node for p in lazy.parts)))
        del lazy
    bits = [_bits(enc.decode(dec.decrypt(res), slots=slots), x)]
    replays, replay_cpu = [], []
    for _ in range(reps):
        x, ct = fresh()
        cpu0 = _cpu_s()
        t0 = time.perf_counter()
        res = fn(ct)
        ren.realize(list(res.parts))
        replays.append(time.perf_counter() - t0)
        replay_cpu.append(_cpu_s() - cpu0)
        bits.append(_bits(enc.decode(dec.decrypt(res), slots=slots), x))
    out.update(replay_s=statistics.median(replays), replay_cpu_s=statistics.median(replay_cpu),
               bits_min=min(bits), bits_max=max(bits),
               levels_used=mb.levels_used if meta else bt.levels_used, levels_left=res.level,
               depth=params.depth, shape=("Meta-BTS (2 bootstrappings) of " if meta else "")
               + f"CoeffToSlot {bt.cts_levels}, EvalMod {bt.evalmod_levels} (degree "
                     f"{bt.degree}, {bt.double_angles} double angles, K = {bt.K}), SlotToCoeff "
                     f"{bt.stc_levels}", slots=n, rss_gib=_rss_gib())
    return out


def _mib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _memory_lines(r: dict) -> list[str]:
    """Ren's memory per part: keys (in memory; serialized full and compact, per kind),
    diagonals, arena."""
    lines = []
    if "key_parts" in r:
        full = sum(f for f, _ in r["key_parts"].values())
        compact = sum(c for _, c in r["key_parts"].values())
        each = ", ".join(f"{k} {_mib(f)} / {_mib(c)}" for k, (f, c) in r["key_parts"].items())
        lines.append(f"  memory: keys serialized {_mib(full)} full, {_mib(compact)} compact "
                     f"({compact / max(full, 1):.3f}x) -- {each}")
    if "diagonal_bytes" in r:
        lines.append(f"  memory: {r['diagonals']} plaintext diagonals (at their level) "
                     f"{_mib(r['diagonal_bytes'])}; keys in memory {_mib(r['key_bytes'])}"
                     + (f"; arena {_mib(r['arena_bytes'])}" if "arena_bytes" in r else ""))
    if r.get("lean"):
        arena = r.get("arena_bytes")
        total = r["key_bytes"] + r["diagonal_bytes"] + (arena or 0)
        lines.append(f"  memory (lean mode): keys resident {_mib(r['key_bytes'])} of "
                     f"{_mib(r.get('key_bytes_full', r['key_bytes']))} stored; diagonals "
                     f"({r.get('diagonal_form', 'rns')}) {_mib(r['diagonal_bytes'])}; arena "
                     + (f"{_mib(arena)}; together {_mib(total)}" if arena is not None else
                        f"(eager: in the peak RSS); keys and diagonals {_mib(total)}"))
    return lines


def _slot_lines(rows: list[dict]) -> list[str]:
    """One line per slot count (Ren, the first thread count): precision, levels left, replay
    and first call, Galois keys."""
    seen: dict[int, dict] = {}
    for r in rows:
        if r["library"] == "ren" and "skipped" not in r and r["slots"] not in seen:
            seen[r["slots"]] = r
    if len(seen) < 2:
        return []
    lines = ["ren by slot count: slots | bits | levels left | replay s | first call s | "
             "Galois keys"]
    for n, r in sorted(seen.items()):
        lines.append(f"  {n:>6} | {r['bits_min']:.1f}..{r['bits_max']:.1f} | "
                     f"{r['levels_left']} | {r['replay_s']:.3g} | {r['first_s']:.3g} | "
                     f"{r['galois_keys']}")
    return lines


def _cpu_ratio(r: dict) -> str:
    """The first call's CPU seconds against a replay's (the process's, compiler excluded),
    with the first call's system seconds (its page faults, mostly)."""
    if not r.get("first_cpu_s") or not r.get("replay_cpu_s"):
        return ""
    system = f", {r['first_sys_s']:.2f} s of it system" if "first_sys_s" in r else ""
    return (f" (CPU {r['first_cpu_s']:.2f} s{system} against {r['replay_cpu_s']:.2f} s: "
            f"{r['first_cpu_s'] / r['replay_cpu_s']:.2f}x)")


def _plan_cache_lines(fill: dict, second: dict) -> list[str]:
    """The two processes of ``--first-call plan-cache``: the first schedules (and stores its
    plan), the second loads it; each first call against its own replay (issue 41 §3: <= 1.5x
    and <= 1.2x)."""
    if "first_s" not in fill or "first_s" not in second:
        return []
    lines = []
    for name, r in (("first process (scheduled, plan stored)", fill),
                    ("second process (plan cache)", second)):
        lines.append(f"  {name}: first call {r['first_s']:.2f} s, replay {r['replay_s']:.2f} s: "
                     f"{r['first_s'] / max(r['replay_s'], 1e-9):.2f}x{_cpu_ratio(r)}"
                     + (f", {r['first_compiles']} compiler run(s) inside it"
                        if r.get("first_compiles") else ""))
    if second.get("early_arena_bytes"):
        lines.append(f"  (the second process faulted {_mib(second['early_arena_bytes'])} of arena "
                     "in while it made its keys: its function's arena hint)")
    if second.get("compiled_by") != "plan cache":  # (e.g. Ren's sources changed in between)
        lines.append("  (the second process did not load the plan: it missed the plan cache, so "
                     "its figure is a scheduled first call; run again on an unchanged checkout)")
    return ["ren first call, process by process:", *lines]


def _thread_lines(rows: list[dict]) -> list[str]:
    """The replay time per Ren thread count and the speed-up over the first count's."""
    ren_rows = [r for r in rows if r["library"] == "ren" and "skipped" not in r]
    ren_rows = [r for r in ren_rows if r["slots"] == ren_rows[0]["slots"]] if ren_rows else []
    if len(ren_rows) < 2:
        return []
    base = ren_rows[0]
    each = "; ".join(f"{r.get('threads', 1)}: {r['replay_s']:.3g} s "
                     f"({base['replay_s'] / r['replay_s']:.2f}x)" for r in ren_rows)
    return [f"ren replay by thread count (speed-up over {base.get('threads', 1)}): {each}"]


def dry_run(preset: str, log_n: int, secret: str, threads: list[int], shape: str = "balanced",
            slots: list[int | None] | None = None, meta: bool = False,
            keep_level: bool = False) -> dict:
    """What a run would do, and the keys' and diagonals' memory from the parameters (nothing
    is encoded, generated or bootstrapped; full slots: `estimate_memory`)."""
    params, kwargs = make_params(preset, "python", log_n, secret, shape)
    est = estimate_memory(params, **kwargs)
    print(f"dry run: shape {shape} ({', '.join(f'{k} {v}' for k, v in kwargs.items())}); slot "
          f"counts {[n or params.slots for n in (slots or [None])]} (memory below: full slots)")
    full, compact = sum(est["key_bytes"].values()), sum(est["key_bytes_compact"].values())
    print(f"dry run: preset {preset}, N = {params.N}, {params.slots} slots, depth "
          f"{params.depth}, key ring {est['key_limbs']} limbs, dnum {est['dnum']}; Ren on "
          f"threads {threads}")
    print(f"  keys: {est['galois_keys']} Galois keys (conjugation included) + relinearization"
          + (" + encapsulation" if "encapsulation" in est["key_bytes"] else "")
          + f": {_mib(full)} full, {_mib(compact)} with seeded uniform halves -- "
          + ", ".join(f"{k} {_mib(v)}" for k, v in est["key_bytes"].items()))
    print(f"  diagonals: {est['diagonals']} at their levels: {_mib(est['diagonal_bytes'])}")
    lv = est["levels"]
    used = lv["CoeffToSlot"] + lv["EvalMod"] + lv["SlotToCoeff"]
    spent = 1 if meta and not keep_level else 0  # Meta-BTS's correction (none with keep_level)
    print(f"  levels: CoeffToSlot {lv['CoeffToSlot']} + EvalMod {lv['EvalMod']} + SlotToCoeff "
          f"{lv['SlotToCoeff']} = {used} of {lv['depth']}"
          + (f", Meta-BTS {spent}" if meta else "")
          + f": {lv['depth'] - used - spent} left for the user's circuit")
    lean_keys = sum(est["key_bytes_lean"].values())
    coeff = coeff_diagonals()
    diagonals = est["diagonal_bytes_coeff"] if coeff else est["diagonal_bytes"]
    rows = est["dnum"] * est["key_limbs"] * est["N"] * WORD
    form = "integer coefficients" if coeff else "RNS: this Bootstrapper has no coeff form"
    print(f"  lean mode (--lean): keys resident {_mib(lean_keys)} (b halves and seeds), "
          f"diagonals {_mib(diagonals)} ({form}): {_mib(lean_keys + diagonals)} before the "
          f"arena, which adds a key's regenerated a rows ({_mib(rows)}) while it switches")
    return est


#: DESILO's bootstrapping keys: ``create_bootstrap_key(sk, size="medium")`` (fast, ~17 GB at
#: N = 2^16) and ``create_small_bootstrap_key`` (rotations by key-switching chains: ~6 GB, slower)
DESILO_KEYS = ("medium", "small")


def run_desilo(reps: int, key: str = "medium") -> dict:
    """DESILO's CPU bootstrapping on one thread with its `key` (one of `DESILO_KEYS`)."""
    name = f"desilo ({key} key)"
    try:
        import desilofhe
    except ImportError:
        return {"library": name, "skipped": "desilofhe is not installed (pip install -e "
                                            "\".[bench]\")"}
    t0 = time.perf_counter()
    engine = desilofhe.Engine(mode="cpu", bootstrap=True, thread_count=1)
    sk = engine.create_secret_key()
    pk = engine.create_public_key(sk)
    relin = engine.create_relinearization_key(sk)
    conj = engine.create_conjugation_key(sk)
    if key == "small":
        roll, small_key = engine.create_roll_key(sk), engine.create_small_bootstrap_key(sk)

        def boot(ct: Any) -> Any:
            return engine.bootstrap(ct, relin, conj, roll, small_key)
    else:
        boot_key = engine.create_bootstrap_key(sk, size=key)

        def boot(ct: Any) -> Any:
            return engine.bootstrap(ct, relin, conj, boot_key)
    keygen = time.perf_counter() - t0
    rng = np.random.default_rng(2)
    times, bits, level = [], [], None
    for _ in range(reps + 1):
        x = rng.uniform(-1, 1, engine.slot_count)
        ct = engine.encrypt(x, pk, level=0)
        t0 = time.perf_counter()
        res = boot(ct)
        times.append(time.perf_counter() - t0)
        level = res.level
        bits.append(_bits(engine.decrypt(res, sk), x))
    try:
        version = importlib.metadata.version("desilofhe")
    except importlib.metadata.PackageNotFoundError:
        version = getattr(desilofhe, "__version__", "?")
    return {"library": name, "version": f"desilofhe {version}",
            "keygen_s": keygen, "first_s": times[0], "replay_s": statistics.median(times[1:]),
            "bits_min": min(bits), "bits_max": max(bits), "levels_left": level,
            "slots": engine.slot_count, "N": engine.slot_count * 2, "rss_gib": _rss_gib()}


def _in_subprocess(args: list[str], threads: int = 1, plan_cache: bool = False) -> dict:
    """One library's figures, measured in a fresh interpreter (its own peak RSS), with Ren's
    cpu device on `threads` OpenMP threads and its plan cache on or off."""
    env = {**os.environ, "REN_CPU_THREADS": str(threads), "REN_PLAN_CACHE": str(int(plan_cache))}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          check=False, env=env)
    if done.returncode != 0:
        return {"library": args[1], "skipped": f"failed: {done.stderr.strip()[-400:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _report(rows: list[dict]) -> None:
    ren_row = next((r for r in rows if r["library"] == "ren" and r.get("threads", 1) == 1), None)
    for r in rows:
        if "skipped" in r:
            print(f"{r['library']}: skipped ({r['skipped']})")
            continue
        threads = f" ({r['threads']} threads)" if r.get("threads", 1) != 1 else ""
        print(f"{r['library']}{threads}: {r.get('params', r.get('version', ''))}")
        print(f"  {r['slots']} slots; precision {r['bits_min']:.1f}..{r['bits_max']:.1f} bits "
              f"(inputs uniform in [-1, 1]); {r['levels_left']} levels left after bootstrapping")
        if r["library"] == "ren":
            print(f"  {r['shape']}: {r['levels_used']} of {r['depth']} levels")
            encapsulated = (f" + 2 encapsulation keys (ephemeral secret of weight "
                            f"{r['encapsulation']})") if r.get("encapsulation") else ""
            print(f"  keys: {r['galois_keys']} Galois keys + relinearization{encapsulated}, "
                  f"{_mib(r['key_bytes'])}; prepare {r['prepare_s']:.1f} s, keygen "
                  f"{r['keygen_s']:.1f} s")
            for line in _memory_lines(r):
                print(line)
            print(f"  mode: {r['mode']}")
            if "units" in r:
                traced = (f" from a traced graph of {r['graph_nodes']:,} nodes"
                          if "graph_nodes" in r else "")
                print(f"  JIT plan: {r['units']} exec units ({r['kernels']} kernels){traced}; "
                      f"arena {r['arena_bytes'] / 2**20:.0f} MiB against "
                      f"{r['peak_live_bytes'] / 2**20:.0f} MiB peak-live "
                      f"({r['arena_bytes'] / max(r['peak_live_bytes'], 1):.3f}x)")
        else:
            print(f"  keygen (incl. the bootstrap key) {r['keygen_s']:.1f} s")
        how = {"schedule": " (scheduled)", "plan cache": " (template from the plan cache)"}
        cpu_s = (f" using {r['first_compile_cpu_s']:.1f} s of compiler CPU"
                 if r.get("first_compile_cpu_s") else "")
        compiled = (f", {r['first_compiles']} compiler run(s) inside it (kernels not in the "
                    f"compile cache){cpu_s}") if r.get("first_compiles") else ""
        print(f"  first call {r['first_s']:.1f} s{how.get(r.get('compiled_by', ''), '')}"
              f"{compiled}; "
              f"again {r['replay_s']:.2f} s (median), "
              f"{r['first_s'] / max(r['replay_s'], 1e-9):.1f}x{_cpu_ratio(r)}; peak RSS "
              f"{r['rss_gib']:.1f} GiB")
    for line in _thread_lines(rows) + _slot_lines(rows):
        print(line)
    peers = [r for r in rows if r["library"].startswith("desilo") and "skipped" not in r]
    for peer in peers if ren_row and "skipped" not in ren_row else []:
        print(f"ren/{peer['library']}, bootstrapping again (one thread): "
              f"{ren_row['replay_s'] / peer['replay_s']:.2f}x the time, "
              f"{ren_row['bits_min'] - peer['bits_min']:+.1f} bits, "
              f"{ren_row['levels_left'] - peer['levels_left']:+d} levels, "
              f"{ren_row['rss_gib'] / peer['rss_gib']:.2f}x the peak RSS")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small", choices=("small", "n16"))
    ap.add_argument("--device", default="cpu", choices=("python", "cpu"))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--peers", default="desilo", choices=("desilo", "none"))
    ap.add_argument("--threads", default="1",
                    help="comma-separated REN_CPU_THREADS values for Ren (e.g. 1,2): one run "
                         "each; the peers run on one thread")
    ap.add_argument("--eager", action="store_true",
                    help="no ren.jit: bootstrap eagerly twice (the second call finds the "
                         "realization's template; less memory than a capture at n16)")
    ap.add_argument("--log-n", type=int, default=None, choices=range(8, 17), metavar="8..16",
                    help="log2 N: the small preset's 8..12 (default 8: N = 256; the issue's "
                         "small range is 10..12), or n16's 13..16 (default 16; below, the n16 "
                         "shape at a smaller ring, INSECURE: the same graph in less memory)")
    ap.add_argument("--first-call", default="schedule", choices=("schedule", "plan-cache"),
                    help="schedule: Ren's first call schedules (plan cache off); plan-cache: "
                         "run Ren twice, report the second, which loads the first's template")
    ap.add_argument("--secret", default="preset", choices=("preset", "dense", "sparse"),
                    help="Ren's secret: the preset's (n16: dense, bootstrapped through "
                         "sparse-secret encapsulation; small: sparse h = 16), dense ternary, "
                         "or sparse (h = 192 at n16, 16 at small)")
    ap.add_argument("--dry-run", action="store_true",
                    help="run nothing: print the runs and the keys' and diagonals' memory "
                         "computed from the parameters (seconds, even at n16)")
    ap.add_argument("--shape", default="balanced", choices=("balanced", "levels", "precision"),
                    help="the bootstrapping's named shape (ren.ckks.circuits.presets): "
                         "transform levels and K_0 traded between precision and levels left")
    ap.add_argument("--slots", default="full",
                    help="comma-separated slot counts, powers of two or 'full' (e.g. "
                         "8,32,full): one Ren run each (sparse: a message replicated "
                         "N/(2n) times), a line per count with its precision and time")
    ap.add_argument("--meta", action="store_true",
                    help="Ren runs Meta-BTS (ren.ckks.circuits.MetaBootstrapper: the error of "
                         "the first bootstrapping bootstrapped once more): about twice the "
                         "precision for about twice the time and one level")
    ap.add_argument("--keep-level", action="store_true",
                    help="with --meta: spend no level on the second bootstrapping (its 2^-k stays "
                         "in the scale label: MetaBootstrapper(keep_level=True))")
    ap.add_argument("--lean", action="store_true",
                    help="the lean mode: lean keys (uniform halves regenerated from their "
                         "seeds in each key switch) and integer-coefficient diagonals where "
                         "the Bootstrapper has them; less memory, some time")
    ap.add_argument("--desilo-keys", default=",".join(DESILO_KEYS),
                    help="DESILO's bootstrapping keys to run, comma-separated (default "
                         "medium,small: each in its own process)")
    ap.add_argument("--only", choices=("ren", "desilo"), help=argparse.SUPPRESS)  # subprocesses
    args = ap.parse_args(argv)
    if args.keep_level and not args.meta:
        ap.error("--keep-level is for --meta (Meta-BTS's second bootstrapping)")
    sizes = {"small": range(8, 13), "n16": range(13, 17)}[args.preset]
    if args.log_n is None:
        args.log_n = sizes.stop - 1 if args.preset == "n16" else sizes.start
    elif args.log_n not in sizes:
        ap.error(f"--log-n {args.log_n}: --preset {args.preset} takes {sizes.start}.."
                 f"{sizes.stop - 1}")
    desilo_keys = [k.strip() for k in args.desilo_keys.split(",") if k.strip()]
    if not desilo_keys or any(k not in DESILO_KEYS for k in desilo_keys):
        ap.error(f"--desilo-keys: give some of {','.join(DESILO_KEYS)}, got {args.desilo_keys!r}")
    if args.only == "desilo" and len(desilo_keys) != 1:
        ap.error("--only desilo runs one key")
    try:
        slot_counts = [None if v.strip() == "full" else int(v) for v in args.slots.split(",")]
        if any(n is not None and (n < 1 or n & (n - 1)) for n in slot_counts):
            raise ValueError
    except ValueError:
        ap.error(f"--slots: give powers of two or 'full', such as 8,32,full, got {args.slots!r}")
    if args.only == "ren":
        print(json.dumps(run_ren(args.preset, args.device, args.reps, args.eager, args.log_n,
                                 args.secret, args.shape, slot_counts[0], args.meta,
                                 args.lean, args.keep_level)))
        return 0
    if args.only == "desilo":
        print(json.dumps(run_desilo(args.reps, args.desilo_keys)))
        return 0
    try:
        counts = [int(t) for t in args.threads.split(",")]
        if not counts or min(counts) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--threads: give positive integers such as 1,2, got {args.threads!r}")
    print(f"bootstrapping, preset {args.preset}, Ren device {args.device}, threads {counts} "
          f"(Ren at {ROOT})")
    if args.dry_run:
        dry_run(args.preset, args.log_n, args.secret, counts, args.shape, slot_counts,
                args.meta, args.keep_level)
        return 0
    common = ["--preset", args.preset, "--device", args.device, "--reps", str(args.reps),
              "--log-n", str(args.log_n), "--secret", args.secret, "--shape", args.shape]
    rows = []
    cached = args.first_call == "plan-cache"
    ren_args = ["--only", "ren", *common, *(["--eager"] if args.eager else []),
                *(["--meta"] if args.meta else []), *(["--lean"] if args.lean else []),
                *(["--keep-level"] if args.keep_level else [])]
    fill: dict = {}
    if cached:  # fill the plan cache (reported beside the second process's)
        print("filling the plan cache (one Ren run first) ...", flush=True)
        fill = _in_subprocess(ren_args, counts[0], plan_cache=True)
        if "first_s" in fill:
            print(f"  that run's first call: {fill['first_s']:.1f} s "
                  f"({fill.get('compiled_by', '?')}, the template stored)")
    for n in slot_counts:
        slot_args = ["--slots", "full" if n is None else str(n)]
        for t in counts:
            rows.append({**_in_subprocess([*ren_args, *slot_args], t, plan_cache=cached),
                         "threads": t})
    if args.peers == "desilo" and (args.preset != "n16" or args.log_n != 16):
        rows.append({"library": "desilo", "skipped": "DESILO bootstraps at N = 2^16 only: use "
                                                     "--preset n16 (without --log-n)"})
    elif args.peers == "desilo":
        rows += [_in_subprocess(["--only", "desilo", *common, "--desilo-keys", key])
                 for key in desilo_keys]
    _report(rows)
    if cached and rows:
        for line in _plan_cache_lines(fill, rows[0]):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
