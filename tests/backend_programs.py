"""Programs run on two backends and compared word for word: the corpus, CKKS operations at small
N and the ckks_basics example.  Shared by the host-shim tests (tests/test_render_c.py) and the
GPU tests (tests/test_cuda.py).

Each runner builds its inputs itself (under the insecure seeded random stream, so RANDOM seeds
and therefore the words are reproducible) and returns the standard-form residues of every
output, so calling it once on NumPy and once inside `ren.backend.backend_override` compares the
two backends on the very same program.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ckks_helpers import make_params, random_slots

import ren
from ren.corpus import PROGRAMS, build
from ren.kernel import ScheduledKernel
from ren.runtime import record_units

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def row_step(x: ren.Poly, y: ren.Poly, step: int) -> ren.Poly:
    """One step of the kernel chains the plan-team and plan-tile tests build (NTT domain,
    tests/test_plan_team.py, tests/test_tiles.py): 0 a product and a sum, 1 an INTT/NTT round
    trip of a difference, 2 an automorphism times y, anything else x·x − y."""
    if step == 0:
        return x * y + x
    if step == 1:
        return (x - y * 3).intt().ntt()
    if step == 2:
        return x.automorph(5) * y
    return x * x - y


def corpus_program(name: str) -> Callable[[], list[np.ndarray]]:
    def run() -> list[np.ndarray]:
        outs = list(build(name))
        ren.realize(outs)
        return [o.numpy() for o in outs]

    return run


def ckks_ops(N: int = 64, depth: int = 3, seed: int = 11) -> list[np.ndarray]:
    """Keys, two encryptions, multiply + relinearize + rescale, rotate by 1 and -3, conjugate:
    every part of every result ciphertext."""
    from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator

    params = make_params(N=N, depth=depth, scale_bits=40, first_bits=55, insecure=True)
    rng = np.random.default_rng(seed)
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1, -3], conjugate=True))
        enc, encryptor = Encoder(params), Encryptor(params, kg.public_key())
        a = encryptor.encrypt(enc.encode(random_slots(params.slots, rng))).realize()
        b = encryptor.encrypt(enc.encode(random_slots(params.slots, rng))).realize()
    results = [ev.rescale(ev.multiply(a, b)), ev.rotate(a, 1), ev.rotate(b, -3), ev.conjugate(a)]
    words = []
    for ct in results:
        ct.realize()
        words += [p.numpy() for p in ct.parts]
    dec = Decryptor(params, kg.secret_key())
    words.append(np.asarray(enc.decode(dec.decrypt(results[0]))).view(np.uint64)[None, :])
    return words


def ckks_basics_example() -> list[np.ndarray]:
    """examples/ckks_basics.py --small with seeded randomness: its precision figures."""
    main = runpy.run_path(str(EXAMPLES / "ckks_basics.py"), run_name="example")["main"]
    with ren.random.seeded(2024):
        bits = main(["--small"])
    return [np.array([bits[k] for k in sorted(bits)], dtype=np.float64)]


#: every program of the differential tests: name -> runner
PROGRAMS_UNDER_TEST: dict[str, Callable[[], list[np.ndarray]]] = {
    **{f"corpus:{n}": corpus_program(n) for n in PROGRAMS},
    "ckks:ops": ckks_ops,
}


def run_recording(fn: Callable[[], list[np.ndarray]]) -> tuple[list[np.ndarray],
                                                                list[ScheduledKernel]]:
    """fn's results and every compute item it ran."""
    with record_units() as units:
        out = fn()
    return out, [u.item for u in units if u.kind == "compute"]


def same_words(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    return len(got) == len(want) and all(
        g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w)
        for g, w in zip(got, want))


def lower_plan(polys) -> tuple[list, object, list]:
    """Schedule, plan and lower realized-input Polys without running them (what the JIT does
    on a miss): (exec units, memory plan, output buffers)."""
    from ren.ir import storage_buffer
    from ren.memory import plan_memory
    from ren.runtime import make_exec_units
    from ren.schedule import ScheduleContext, as_sink, linearize, run_passes

    nodes = [p.node for p in polys]
    ctx = ScheduleContext(outputs=tuple(nodes))
    sink = run_passes(as_sink(*nodes), ctx=ctx).sink
    items = linearize(sink)
    outs = [storage_buffer(ctx.becomes_map[n]) for n in nodes]
    plan = plan_memory(items, outputs=set(outs))
    return make_exec_units(items), plan, outs
