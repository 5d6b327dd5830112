"""ren.plan_cache: a capture of a graph compiled before loads its template instead of
scheduling — in this process (a new ren.jit wrapper) and in another one — and runs exactly what
a fresh schedule runs, on the new capture's own constants.  A bad entry is a warning and a fresh
schedule, never a wrong answer; no leaf's data is written."""

from __future__ import annotations

import collections
import copy
import dataclasses
import enum
import hashlib
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import negacyclic_mul
from hypothesis import given, settings
from hypothesis import strategies as st

import ren
from ren import plan_cache, realization
from ren import settings as ren_settings
from ren.ops import Op
from ren.plan_cache import LOADED, SCHEDULED, PlanCacheWarning
from ren.replay import structure_key

ROOT = Path(__file__).resolve().parent.parent
RING = ren.RingSpec.generate(16, 3)


def poly(seed: int) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, RING.N) for q in RING.moduli])
    return ren.Poly.from_residues(res, RING, "COEFF", "python").realize()


def program(c: ren.Poly):
    """x·c + x + 3, closing over the constant polynomial c (baked into the plan)."""
    def f(x):
        return (x * c).intt() + x + 3
    return f


def reference(x: ren.Poly, c: ren.Poly) -> np.ndarray:
    """x·c + x + 3 per limb with Python integers (schoolbook negacyclic product)."""
    rows = []
    for i, q in enumerate(RING.moduli):
        xs, cs = [int(v) for v in x.numpy()[i]], [int(v) for v in c.numpy()[i]]
        prod = negacyclic_mul(xs, cs, q)
        const = [3] + [0] * (RING.N - 1)
        rows.append([(p + a + k) % q for p, a, k in zip(prod, xs, const)])
    return np.array(rows, dtype=np.uint32)


def entries() -> list[Path]:
    return sorted(plan_cache.plans_dir().glob("*.plan"))


def test_a_second_capture_loads_the_plan_and_matches(monkeypatch):
    c, x = poly(1), poly(2)
    before = dataclasses.replace(plan_cache.stats)
    first = ren.jit(program(c))
    want = first(x)
    assert first.plans[0].compiled_by == SCHEDULED and len(entries()) == 1
    assert (plan_cache.stats.misses, plan_cache.stats.stores) == (before.misses + 1,
                                                                  before.stores + 1)
    assert np.array_equal(want.numpy(), reference(x, c))
    hits = plan_cache.stats.hits
    second = ren.jit(program(c))  # a new wrapper: no plan in memory
    monkeypatch.setattr(realization, "run_passes", lambda *a, **k: pytest.fail("scheduled"))
    got = second(x)
    assert second.plans[0].compiled_by == LOADED and plan_cache.stats.hits == hits + 1
    assert np.array_equal(got.numpy(), want.numpy())
    y = poly(3)
    assert np.array_equal(second(y).numpy(), reference(y, c))  # and it replays


def test_a_loaded_plan_runs_the_new_captures_constants(monkeypatch):
    """The key material a function closes over is a slot of the entry, not part of it: the
    same program over another constant loads the entry and computes with that constant."""
    c1, c2, x = poly(10), poly(11), poly(12)
    ren.jit(program(c1))(x)
    monkeypatch.setattr(realization, "run_passes", lambda *a, **k: pytest.fail("scheduled"))
    f2 = ren.jit(program(c2))
    got = f2(x)
    assert f2.plans[0].compiled_by == LOADED
    assert np.array_equal(got.numpy(), reference(x, c2))


def test_no_leaf_data_is_written():
    c = poly(20)
    ren.jit(program(c))(poly(21))
    (entry,) = entries()
    blob = entry.read_bytes()
    for row in c.numpy():  # neither the constant's residues nor its storage words
        assert row.tobytes()[:32] not in blob
    from ren.ir import storage_buffer
    assert storage_buffer(c.node).array().tobytes()[:32] not in blob


def test_another_graph_misses():
    c, x = poly(30), poly(31)
    ren.jit(program(c))(x)
    f = ren.jit(lambda x: (x * c).intt() + x + 4)  # another constant term: another graph
    want = reference(x, c).astype(np.int64)
    want[:, 0] = (want[:, 0] + 1) % np.array(RING.moduli)  # the constant term
    assert np.array_equal(f(x).numpy(), want.astype(np.uint32))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


def test_another_version_of_ren_misses(monkeypatch):
    c, x = poly(40), poly(41)
    ren.jit(program(c))(x)
    monkeypatch.setattr(plan_cache, "_source_fingerprint", "0" * 64)
    f = ren.jit(program(c))
    f(x)
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


@pytest.mark.parametrize("switch", ["REN_NO_MEMPLAN", "REN_NO_ELISION"])
def test_schedule_switches_are_part_of_the_key(switch):
    c, x = poly(42), poly(43)
    ren.jit(program(c))(x)
    with ren_settings.override(**{switch: 1}):
        f = ren.jit(program(c))
        assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


@pytest.mark.parametrize("knob, value", [("REGENERATE_AFTER", 7), ("REGENERATE_DEPTH", 0),
                                         ("REGENERATE_COPIES", False),
                                         ("REGENERATE_COPIES", True)])
def test_the_linearize_constants_are_part_of_the_key(monkeypatch, knob, value):
    """A plan linearized under other REGENERATE_* values (memory for time) never loads."""
    import importlib

    c, x = poly(42), poly(43)
    ren.jit(program(c))(x)
    monkeypatch.setattr(importlib.import_module("ren.schedule"), knob, value)
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


@pytest.mark.parametrize("knob, value", [("LOOK_THROUGH", False), ("SPLIT_DEPTH", 3),
                                         ("MAX_TERMS", 1), ("ZERO_ROWS", "broadcast"),
                                         ("RESCALE_KERNEL_FROM", 2)])
def test_the_elision_knobs_are_part_of_the_key(monkeypatch, knob, value):
    """A plan whose roundings pass 4 fused under other `ren.passes.elision` knobs never loads."""
    from ren.passes import elision

    c, x = poly(42), poly(43)
    ren.jit(program(c))(x)
    monkeypatch.setattr(elision, knob, value)
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


def test_the_materialize_knob_is_part_of_the_key(monkeypatch):
    """A plan whose mod-down RESCALEs pass 5 fed another way (the CONCAT stored) never loads."""
    from ren.passes import p05_materialize

    c, x = poly(42), poly(43)
    ren.jit(program(c))(x)
    monkeypatch.setattr(p05_materialize, "ZERO_ROWS_INPUT", False)
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


def test_the_zero_rows_capability_of_the_graphs_devices_is_part_of_the_key(monkeypatch):
    """A plan scheduled where the graph's device runs a RESCALE's rows of 0 without their
    buffer (`Device.rescale_zero_rows`: e.g. "python" under backend_override by the cpu
    backend) never loads where it reads every row, and back; the capability of a device the
    graph does not use changes nothing."""
    from ren.backend.cpu import CpuDevice
    from ren.backend.numpy_backend import NumpyDevice

    c, x = poly(42), poly(43)
    ren.jit(program(c))(x)
    monkeypatch.setattr(CpuDevice, "rescale_zero_rows", False)  # not a device of the graph
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == LOADED and len(entries()) == 1
    monkeypatch.setattr(NumpyDevice, "rescale_zero_rows", True)
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2


@pytest.mark.parametrize("spec", ["default,-simplify_domains",
                                  "default,+pipeline_user_passes:canonical_mul@after=simplify"])
def test_the_pipeline_is_part_of_the_key(spec):
    """A plan scheduled under one pipeline never loads under another (ren.passes.Pipeline.key:
    pass names and each user pass's code digest)."""
    c, x = poly(44), poly(45)
    ren.jit(program(c))(x)
    f = ren.jit(program(c), pipeline=spec)
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == SCHEDULED and len(entries()) == 2
    again = ren.jit(program(c), pipeline=spec)
    again(x)
    assert again.plans[0].compiled_by == LOADED and len(entries()) == 2


def _slots(blob: bytes, change) -> bytes:
    state = pickle.loads(blob)
    for s in state["slots"]:
        change(s)
    return pickle.dumps(state)


def _other_shape(s):
    s.shape = (s.shape[0] + 1, s.shape[1])


def _other_device(s):
    s.device = "cpu"


def _allocated(s):
    s.attach(np.zeros(s.shape, dtype=np.uint32))


DAMAGE = {  # name: (what is written over the entry, the warning's reason)
    "garbage": (lambda b: b"\x80\x05not a pickle at all", "does not unpickle"),
    "truncated": (lambda b: b[: len(b) // 2], "does not unpickle"),
    "empty": (lambda b: b"", "does not unpickle"),
    "other format": (lambda b: pickle.dumps({"format": -1}), "not a plan cache entry"),
    "a list": (lambda b: pickle.dumps([1, 2]), "not a plan cache entry"),
    "no slots": (lambda b: pickle.dumps({**pickle.loads(b), "slots": []}), "do not match"),
    "other shapes": (lambda b: _slots(b, _other_shape), "do not match"),
    "other device": (lambda b: _slots(b, _other_device), "do not match"),
    "data in a slot": (lambda b: _slots(b, _allocated), "do not match"),
    "items that do not lower": (lambda b: pickle.dumps({**pickle.loads(b), "items": [1]}),
                                "do not lower"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_bad_entry_is_a_warning_and_a_fresh_schedule(damage):
    c, x = poly(50), poly(51)
    ren.jit(program(c))(x)
    (entry,) = entries()
    write, reason = DAMAGE[damage]
    bad = write(entry.read_bytes())
    entry.write_bytes(bad)
    f = ren.jit(program(c))
    with pytest.warns(PlanCacheWarning, match=f"unusable: .*{reason}"):
        got = f(x)
    assert f.plans[0].compiled_by == SCHEDULED
    assert np.array_equal(got.numpy(), reference(x, c))
    assert entry.read_bytes() != bad  # removed, then stored again by the fresh schedule
    g = ren.jit(program(c))
    g(x)
    assert g.plans[0].compiled_by == LOADED


def test_disabled_and_checking_modes_always_schedule():
    c, x = poly(60), poly(61)
    with ren_settings.override(REN_PLAN_CACHE=0):
        ren.jit(program(c))(x)
        assert entries() == []
    ren.jit(program(c))(x)
    assert len(entries()) == 1
    for mode in ({"REN_PLAN_CACHE": 0}, {"REN_CHECK": 1}, {"REN_DEBUG": 3}):
        with ren_settings.override(**mode), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = ren.jit(program(c))
            f(x)
        assert f.plans[0].compiled_by == SCHEDULED, mode


def test_a_missing_folder_is_created(monkeypatch, tmp_path):
    monkeypatch.setattr(plan_cache, "folder", tmp_path / "a" / "b" / "plans")
    c, x = poly(72), poly(73)
    ren.jit(program(c))(x)
    f = ren.jit(program(c))
    assert np.array_equal(f(x).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == LOADED


def test_a_graph_without_a_key_is_never_stored(monkeypatch):
    monkeypatch.setattr(plan_cache, "entry_key", lambda key: None)
    c, x = poly(74), poly(75)
    for _ in range(2):
        f = ren.jit(program(c))
        assert np.array_equal(f(x).numpy(), reference(x, c))
        assert f.plans[0].compiled_by == SCHEDULED
    assert entries() == []


@pytest.mark.parametrize("mode", ["stored", "loaded", "off"])
def test_outputs_alias_no_input_or_constant_on_every_path(mode):
    """An output that is an input or a constant gets its own buffer (a copy item), whether the
    template was scheduled, loaded or compiled with the cache off."""
    c, x = poly(76), poly(77)
    from ren.ir import storage_buffer

    def make():
        return ren.jit(lambda x: (x, c, (x * c).intt()))
    with ren_settings.override(REN_PLAN_CACHE=0 if mode == "off" else 1):
        if mode == "loaded":
            make()(x)
        f = make()
        same, const, _ = f(x)
    assert f.plans[0].compiled_by == (LOADED if mode == "loaded" else SCHEDULED)
    assert np.array_equal(same.numpy(), x.numpy()) and np.array_equal(const.numpy(), c.numpy())
    for out in (same, const):
        assert not np.shares_memory(storage_buffer(out.node).array(),
                                    storage_buffer(x.node).array())
        assert not np.shares_memory(storage_buffer(out.node).array(),
                                    storage_buffer(c.node).array())


def test_the_source_fingerprint_covers_every_source_file(tmp_path):
    assert re.fullmatch("[0-9a-f]{64}", plan_cache.source_fingerprint())
    assert plan_cache.source_fingerprint() == plan_cache.tree_fingerprint(
        Path(plan_cache.__file__).resolve().parent)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "b.c").write_text("int b;\n")
    first = plan_cache.tree_fingerprint(tmp_path)
    (tmp_path / "notes.txt").write_text("not a source")
    assert plan_cache.tree_fingerprint(tmp_path) == first
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert plan_cache.tree_fingerprint(tmp_path) != first
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "b.c").rename(tmp_path / "c.c")  # a renamed file is another tree
    assert plan_cache.tree_fingerprint(tmp_path) != first


def test_unwritable_folder_warns_and_still_computes(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(plan_cache, "folder", blocker / "plans")  # under a file: no mkdir
    c, x = poly(70), poly(71)
    f = ren.jit(program(c))
    with pytest.warns(PlanCacheWarning, match="cannot write"):
        got = f(x)
    assert np.array_equal(got.numpy(), reference(x, c))


def test_a_failed_write_leaves_no_temporary_file(monkeypatch):
    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(plan_cache.os, "replace", full_disk)
    c, x = poly(78), poly(79)
    with pytest.warns(PlanCacheWarning, match="No space left"):
        got = ren.jit(program(c))(x)
    assert np.array_equal(got.numpy(), reference(x, c))
    assert list(plan_cache.plans_dir().iterdir()) == []


def test_the_folder_keeps_the_newest_entries(monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_ENTRIES", 2)
    x = poly(80)
    names = []
    for k in range(4):
        before = set(entries())
        ren.jit(lambda x, k=k: x + k + 5)(x)
        (new,) = set(entries()) - before
        os.utime(new, (1e9 + k, 1e9 + k))  # distinct ages, oldest first
        names.append(new)
    assert entries() == sorted(names[2:]) or set(entries()) == set(names[-2:])
    assert plan_cache.clear() == 2 and entries() == []


def test_an_input_the_function_ignores_keeps_its_slot(monkeypatch):
    c, x, unused = poly(90), poly(91), poly(92)
    ren.jit(lambda x, u: program(c)(x))(x, unused)
    monkeypatch.setattr(realization, "run_passes", lambda *a, **k: pytest.fail("scheduled"))
    f = ren.jit(lambda x, u: program(c)(x))
    assert np.array_equal(f(x, unused).numpy(), reference(x, c))
    assert f.plans[0].compiled_by == LOADED and len(f.plans[0].template.params) == 2
    y = poly(93)
    assert np.array_equal(f(y, unused).numpy(), reference(y, c))


CROSS = """
import numpy as np, ren
ring = ren.RingSpec.generate(16, 3)
rng = np.random.default_rng(5)
def poly():
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, "COEFF", "python").realize()
c = poly()  # new each process: the same residues (seeded), other buffers
f = ren.jit(lambda x, y: ((x * c).intt() + y, y))
out, y = f(poly(), poly())
print(f.plans[0].compiled_by, out.numpy().sum())
"""


def test_another_process_loads_the_plan(tmp_path):
    """Two processes (with different string hash seeds) running the same program: the second
    loads the first one's entry, and both compute the same result."""
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "REN_CACHE_DIR": str(tmp_path),
               "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-c", CROSS], capture_output=True, cwd=ROOT,
                             env=env, timeout=300, text=True)
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout.split())
    assert outs[0][0] == "schedule" and outs[1][:2] == ["plan", "cache"]
    assert outs[0][1] == outs[1][2]


# -- the key's canonical form ---------------------------------------------------------------------
_atoms = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                   st.floats(allow_nan=False), st.text(max_size=4),
                   st.sampled_from(list(ren.Domain)), st.sampled_from([RING, RING.sub(0, 2)]))
_values = st.recursive(_atoms, lambda inner: st.one_of(st.tuples(inner, inner),
                                                       st.lists(inner, max_size=3),
                                                       st.frozensets(st.integers(0, 9))),
                       max_leaves=8)


@given(_values, _values)
@settings(max_examples=200)
def test_canonical_forms_are_equal_only_for_equal_values(a, b):
    form_a, form_b = repr(plan_cache.canonical(a)), repr(plan_cache.canonical(b))
    assert form_a == repr(plan_cache.canonical(copy.deepcopy(a)))  # no identity in it
    assert form_a == repr(plan_cache.canonical(a, {}))  # the memo shares forms, same result
    shared = {}
    assert repr(plan_cache.canonical((a, b), shared)) == repr(plan_cache.canonical((a, b)))
    if form_a == form_b:  # the same file name: the values must be the same (and typed alike)
        assert a == b and type(a) is type(b)


class _Int(int):
    pass


_Pair = collections.namedtuple("_Pair", "a b")


class _A(enum.Enum):
    X = 1


class _B(enum.Enum):
    X = 1


DISTINCT = [  # pairs of unequal values of each kind the canonical form knows
    (ren.Domain.COEFF, ren.Domain.NTT), (_A.X, _B.X), (_A.X, 1), (int, float),
    (np.arange(4, dtype=np.uint32), np.arange(1, 5, dtype=np.uint32)),
    (np.arange(4, dtype=np.uint32), np.arange(4, dtype=np.uint64)),
    (np.arange(4, dtype=np.uint32), np.arange(4, dtype=np.uint32).reshape(2, 2)),
    (np.uint32(1), np.int64(1)), (np.uint32(1), 1), (np.uint32(1), np.uint32(2)),
    ({1: 2}, {1: 3}), ({1: 2}, {2: 2}), ({1: 2}, [(1, 2)]), ((1, 2), [1, 2]),
    (frozenset({1, 2}), frozenset({1, 3})), (RING, RING.sub(0, 2)),
    (RING, ren.RingSpec.generate(32, 3)), (1, True), (1, 1.0), ("1", 1), (None, 0),
    (_Int(3), 3), (_Int(3), _Int(4)), (_Pair(1, 2), (1, 2)), (_Pair(1, 2), _Pair(1, 3)),
]


@pytest.mark.parametrize("a, b", DISTINCT, ids=lambda v: type(v).__name__)
def test_canonical_forms_of_unequal_values_differ(a, b):
    assert repr(plan_cache.canonical(a)) != repr(plan_cache.canonical(b))
    assert repr(plan_cache.canonical(a)) == repr(plan_cache.canonical(copy.deepcopy(a)))
    assert hashlib.sha256(repr(plan_cache.canonical(a)).encode()).hexdigest()  # a str


def test_unknown_argument_types_are_not_cached():
    class Opaque:
        pass
    with pytest.raises(plan_cache._NoCanonicalForm):
        plan_cache.canonical((1, Opaque()))
    assert plan_cache.entry_key(((Op.CONST, Opaque()),)) is None


_nodes = st.lists(st.tuples(st.sampled_from([Op.ADD, Op.MUL, Op.CONST]),
                            st.sampled_from(list(ren.ops.DType)),
                            _values, st.lists(st.integers(0, 5), max_size=2)),
                  min_size=1, max_size=5)


def _structure(nodes: list) -> tuple:
    """A key of `ren.replay.structure_key`'s shape: (op, dtype, (type, argument), sources)
    per node, then the roots."""
    return (*((op, dt, (type(v), v), tuple(src)) for op, dt, v, src in nodes), (0,))


@given(_nodes, _nodes)
@settings(max_examples=200)
def test_structure_texts_are_equal_only_for_equal_keys(a, b):
    ka, kb = _structure(a), _structure(b)
    text_a = plan_cache.structure_text(ka)
    assert text_a == plan_cache.structure_text(copy.deepcopy(ka))  # no identity in it
    if text_a == plan_cache.structure_text(kb):  # the same entry: the same graph
        assert ka == kb and [type(v) for *_, v, _ in a] == [type(v) for *_, v, _ in b]


def test_a_structure_text_spells_each_argument_once():
    x = poly(1)
    f = program(poly(2))
    key = structure_key([f(x).node])[0]
    text = plan_cache.structure_text(key)
    full = repr(plan_cache.canonical(key))
    spelled = repr(plan_cache.canonical(RING))
    assert full.count(spelled) > 1 and text.count(spelled) == 1  # then back references
    def other_ring(node: tuple) -> tuple:
        op, dt, (kind, arg), src = node
        return op, dt, (kind, (RING.sub(0, 2), *arg[1:])), src

    rings = [i for i, n in enumerate(key[:-1]) if type(n[2]) is tuple and len(n[2]) == 2
             and type(n[2][1]) is tuple and n[2][1][:1] == (RING,)]
    assert len(rings) > 1
    everywhere = [other_ring(n) if i in rings else n for i, n in enumerate(key[:-1])]
    assert plan_cache.structure_text((*everywhere, key[-1])) != text
    # a later use of another ring is spelled out, not a back reference to the first one
    mixed = [other_ring(n) if i == rings[-1] else n for i, n in enumerate(key[:-1])]
    assert plan_cache.structure_text((*mixed, key[-1])) != text
    assert plan_cache.entry_key(key) != plan_cache.entry_key((*mixed, key[-1]))
    assert plan_cache.entry_key(key) == plan_cache.entry_key(copy.deepcopy(key))
