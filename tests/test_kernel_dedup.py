"""The "cpu" device compiles each elementwise kernel SHAPE once (issue 41: a cold first call of
a bootstrapping was mostly compiling ~330 kernels that differed only in constants).

In the loop dialect every value that depends on the limb alone — the moduli with their
Montgomery constants, per-limb constants, limb offsets and limb maps, the row classes and the
limb count — is read from a table passed at run time (`ren.backend.elementwise_c._emit_row`),
so kernels of one step at other levels and over other primes render to one source, one name
and one compiled function, each call bringing its own tables.  Checked here: the sharing
itself, the words (against the ``"python"`` device and Python big integers, hypothesis over
rings, slices and moduli sizes), and that a second shape-equal kernel runs no compiler.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import ren
from ren import settings
from ren.backend import backend_override, c_host, cpu
from ren.backend.c_host import find_cc
from ren.backend.render_c import C, render_program
from ren.ring import RingSpec
from ren.schedule import schedule

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

N = 64


def _items(outs):
    return [i for i in schedule([o.node for o in outs]) if i.kind == "elementwise"]


def _inner_product(polys, lo: int, hi: int, ring: RingSpec):
    """sum_i x_i * y_i over limbs lo..hi-1 of `ring` (three products under one modulus: the
    fused 64-bit product sum of key switching)."""
    sub = RingSpec(ring.N, ring.moduli[lo:hi])
    xs = [p.to_ring(sub) for p in polys]
    return xs[0] * xs[1] + xs[2] * xs[3] + xs[4] * xs[5]


def _reference(polys, lo: int, hi: int, ring: RingSpec) -> np.ndarray:
    """The inner product's words from Python big integers, limb by limb."""
    words = [np.asarray(p.to("python").numpy(), dtype=object) for p in polys]
    out = np.zeros((hi - lo, ring.N), dtype=np.int64)
    for r, q in enumerate(ring.moduli[lo:hi]):
        row = lo + r
        for j in range(ring.N):
            out[r, j] = sum(int(words[2 * k][row, j]) * int(words[2 * k + 1][row, j])
                            for k in range(3)) % q
    return out


def test_kernels_differing_in_moduli_offsets_and_limb_count_share_one_function():
    """The same inner product over limbs 1..2, 2..4 and 3..5 of one ring (other primes, another
    limb offset, another limb count) is one source and one name; each program carries its own
    moduli and offsets, and every one gives Python's words."""
    ring = RingSpec.generate(N, 6, bits=30)
    with ren.random.seeded(5):
        polys = [ren.Poly.uniform(ring, domain="ntt", device="cpu") for _ in range(6)]
    programs, names = [], set()
    for lo, hi in [(1, 3), (2, 5), (3, 6)]:
        x = _inner_product(polys, lo, hi, ring)
        (item,) = _items([x])
        p = render_program(item, C)
        programs.append(p)
        names.add(p.kernels[0].name)
        assert np.array_equal(x.numpy().astype(np.int64), _reference(polys, lo, hi, ring))
    assert len(names) == 1
    source = programs[0].kernels[0].source
    assert all(str(q) not in source for q in ring.moduli)  # the moduli are parameters
    primes = set(ring.moduli)
    moduli = [sorted(int(v) for t in p.tables.values() for v in t.tolist() if v in primes)
              for p in programs]
    assert moduli == [sorted(ring.moduli[lo:hi]) for lo, hi in [(1, 3), (2, 5), (3, 6)]]


def test_a_shape_compiles_once(tmp_path):
    """With a cold cache, the first ring's kernel runs the compiler; the same step on another
    ring (other primes, more limbs) compiles nothing, and both give the python device's words."""
    dev = cpu.CpuDevice("cpu:dedup")
    runs = []
    with settings.override(REN_CACHE_DIR=str(tmp_path)), backend_override("cpu", lambda _: dev):
        for limbs, bits in [(5, 30), (7, 29)]:
            ring = RingSpec.generate(N, limbs, bits=bits)
            words = {}
            for device in ("python", "cpu"):
                with ren.random.seeded(limbs):
                    a, b, c = (ren.Poly.uniform(ring, domain="ntt", device=device)
                               for _ in range(3))
                before = c_host.compiler_invocations
                words[device] = (a * b + c * 3).numpy()
                if device == "cpu":
                    runs.append(c_host.compiler_invocations - before)
            assert np.array_equal(words["cpu"], words["python"])
    assert runs[0] >= 1 and runs[1] == 0


_MIXED = st.sampled_from([(30,), (29,), (31,), (29, 31), (31, 29, 30)])


@hsettings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=_MIXED, limbs=st.integers(2, 7), data=st.data())
def test_words_match_the_python_device_over_rings_and_slices(sizes, limbs, data):
    """Random rings (moduli of mixed sizes give row classes of their own product-sum plans),
    random limb slices and a few kernel shapes: the "cpu" device's words are the "python"
    device's."""
    moduli: list[int] = []
    for k in range(limbs):
        bits = sizes[k % len(sizes)]
        moduli += [q for q in RingSpec.generate(N, limbs, bits=bits).moduli if q not in moduli][:1]
    ring = RingSpec(N, tuple(moduli))
    lo = data.draw(st.integers(0, limbs - 1), label="lo")
    hi = data.draw(st.integers(lo + 1, limbs), label="hi")
    shape = data.draw(st.integers(0, 2), label="shape")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    outs = {}
    for device in ("python", "cpu"):
        with ren.random.seeded(seed):
            polys = [ren.Poly.uniform(ring, domain="ntt", device=device) for _ in range(6)]
        sub = RingSpec(N, ring.moduli[lo:hi])
        xs = [p.to_ring(sub) for p in polys]
        if shape == 0:
            x = xs[0] * xs[1] + xs[2] * xs[3] + xs[4] * xs[5] - xs[0]
        elif shape == 1:
            x = (xs[0] + 7) * xs[1] - xs[2] * 5
        else:
            x = xs[0].automorph(5) * xs[1] + xs[2]
        outs[device] = x.numpy()
    assert np.array_equal(outs["cpu"], outs["python"])


def test_units_compile_each_shared_kernel_once_and_balance_by_source(monkeypatch):
    """`cpu._split`: programs that share a kernel (many items, one shape) put it into one unit
    only, and units are balanced by the length of their kernels' sources, not their count."""
    from ren.backend.render_c import CKernel, Program

    def program(i: int, name: str, size: int) -> Program:
        return Program(f"p{i}", (CKernel(name, "x" * size, ()),), ())

    sizes = {"ren_ew_big": 9000, **{f"ren_ew_s{k}": 1000 for k in range(9)}}
    programs = [program(i, name, sizes[name]) for i, name in
                enumerate(["ren_ew_big", *sizes, "ren_ew_big", "ren_ew_s0", "ren_ew_s3"])]
    fresh = {p.kernels[0].name: p.kernels[0] for p in programs}
    monkeypatch.setattr(cpu, "KERNELS_PER_UNIT", 2)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda _: {0, 1})
    units = cpu._split(programs, fresh)
    names = [p.kernels[0].name for u in units for p in u]
    assert len(units) == 2 and sorted(names) == sorted(fresh)  # each kernel in one unit
    loads = sorted(sum(sizes[p.kernels[0].name] for p in u) for u in units)
    assert loads == [9000, 9000]  # the big kernel alone against the nine small ones
