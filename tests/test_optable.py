"""The op table (`ren.ops.OP_INFO`): it covers `Op` exactly, it is the only place that spells a
set of ops, and its facts agree with the graphs the passes build (dtype, arity, the pass that
lowers each op, the kernel bodies each op appears in)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from ren.corpus import PROGRAMS, build
from ren.interpret import _RING_MATH
from ren.kernel import COMPUTE, COPY, ELEMENTWISE, KINDS, VIEW
from ren.node import Node, toposort
from ren.ops import LOWERED_ALU, OP_INFO, RING_KERNEL_OF, Body, GroupOp, Op
from ren.ring import RingKernel
from ren.schedule import run_passes

ROOT = Path(__file__).resolve().parent.parent
TABLE_MODULE = ROOT / "ren" / "ops.py"

#: modules being rewritten by another change (the data model between scheduler and kernels):
#: they may still spell op sets and kind strings until that change lands; the counts are how
#: many they spell now


def test_every_op_has_a_row():
    assert set(OP_INFO) == set(Op)
    assert all(op.info is OP_INFO[op] for op in Op)


def test_rows_are_consistent():
    for op, info in OP_INFO.items():
        assert info.lowered_by is None or 1 <= info.lowered_by <= 12, op
        if info.alu is not None:
            assert info.alu in GroupOp.ALU, op  # the ALU form is itself an ALU op
        if info.needs_domain is not None or info.gives_domain is not None:
            assert info.dtype is not None, op
    # every ring kernel is what some op computes; every lowered ALU op is a residue op
    assert set(RING_KERNEL_OF.values()) == set(RingKernel)
    assert set(LOWERED_ALU) == GroupOp.ARITH
    assert set(LOWERED_ALU.values()) <= GroupOp.RESIDUE
    # storage and kernel-only ops never reach a kernel's elementwise fusion as values
    assert not (GroupOp.ELEMENTWISE & set(RING_KERNEL_OF))
    assert GroupOp.STORAGE < GroupOp.MEMORY
    assert GroupOp.SCHEDULED.isdisjoint(GroupOp.ELEMENTWISE)


def test_interpreter_computes_every_ring_kernel():
    assert set(_RING_MATH) | {RingKernel.RANDOM, RingKernel.TO_RNS} == set(RingKernel)


# -- nobody else spells a set of ops ------------------------------------------------------------
def _is_op(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        node.value.id == "Op"


def op_sets(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every set, frozenset, tuple or list literal naming two or more Ops."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.Tuple | ast.List) and \
                sum(map(_is_op, node.elts)) >= 2:
            found.append((node.lineno, ast.unparse(node)))
    return found


SOURCES = sorted(p for p in [*ROOT.glob("ren/**/*.py"), *ROOT.glob("cli/**/*.py")]
                 if p != TABLE_MODULE)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_op_sets_come_from_the_table(path: Path):
    rel = str(path.relative_to(ROOT))
    found = op_sets(path)
    assert not found, (
        f"{rel} spells op sets {found}: give the ops a fact in ren/ops.py's OP_INFO and derive "
        f"the set there (GroupOp)")


def test_the_scan_finds_op_sets(tmp_path: Path):
    src = tmp_path / "m.py"
    src.write_text("A = {Op.ADD, Op.SUB}\nB = frozenset((Op.NEG, Op.MUL))\n"
                   "ok = n.op in (Op.ADD, Op.SUB)\nD = {Op.ADD: 1, Op.SUB: 2}\nE = (Op.ADD, x)\n")
    assert [line for line, _ in op_sets(src)] == [1, 2, 3]


# -- kernel kinds are spelled by ren.kernel's names -------------------------------------------
_KIND_STRINGS = {*KINDS, COMPUTE}


def _strings(node: ast.AST) -> list[str]:
    elts = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def kind_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comparison of a ``.kind`` with a kind string, every item or unit
    built with one, and every dict keyed by one."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and \
                node.left.attr == "kind":
            hits = [s for c in node.comparators for s in _strings(c)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("ScheduledKernel", "ExecUnit", "Kernel") and node.args:
            hits = _strings(node.args[0])
        elif isinstance(node, ast.Dict):  # keyed by kinds only (not, say, buffer roles)
            hits = [s for k in node.keys if k is not None for s in _strings(k)]
            if not hits or not set(hits) <= _KIND_STRINGS:
                continue
        else:
            continue
        if _KIND_STRINGS & set(hits):
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


@pytest.mark.parametrize("path", [p for p in SOURCES if p.name != "kernel.py"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_kinds_are_named(path: Path):
    rel = str(path.relative_to(ROOT))
    found = kind_literals(path)
    assert not found, (
        f"{rel} spells kernel kinds as strings {found}: use ren.kernel's ELEMENTWISE, COPY, VIEW, "
        f"COMPUTE")


def test_the_scan_finds_kind_literals(tmp_path: Path):
    src = tmp_path / "m.py"
    src.write_text('a = item.kind == "elementwise"\nb = u.kind in ("copy", "view")\n'
                   'c = ExecUnit("compute", n)\nd = {"copy": 1}\ne = item.kind == ELEMENTWISE\n'
                   'f = role == "view"\n')
    assert [line for line, _ in kind_literals(src)] == [1, 2, 3, 4]
    assert (ELEMENTWISE, COPY, VIEW) == ("elementwise", "copy", "view")


# -- the table agrees with the graphs -----------------------------------------------------------
@cache
def stages(program: str) -> list[tuple[int, Node]]:
    trace = run_passes(*build(program), trace=True)
    return [(int(name[:2]), graph) for name, graph in trace.graphs]


def _bodies(graph: Node) -> list[tuple[str, list[Node]]]:
    return [(n.arg.kind, toposort(n.arg.ast)) for n in toposort(graph) if n.op is Op.KERNEL]


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_dtype_and_arity(program: str):
    for _, graph in stages(program):
        nodes = toposort(graph) + [b for _, body in _bodies(graph) for b in body]
        for n in nodes:
            info = n.op.info
            assert info.dtype is None or n.dtype is info.dtype, n.op
            assert info.arity is None or len(n.src) == info.arity, n.op


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_lowered_ops_are_gone(program: str):
    for number, graph in stages(program):
        left = {n.op for n in toposort(graph)}
        early = {op for op in left if (op.info.lowered_by or 99) <= number}
        assert not early, f"after pass {number}: {sorted(op.name for op in early)}"
    assert left <= GroupOp.SCHEDULED


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_kernel_bodies(program: str):
    body_of = {"elementwise": Body.ELEMENTWISE, "copy": Body.COPY}
    _, final = stages(program)[-1]
    for kind, body in _bodies(final):
        flag = body_of.get(kind, Body.RING)
        for b in body:
            assert flag in b.op.info.body, (kind, b.op)
            if flag is Body.ELEMENTWISE and b.op is not Op.STORE and b.op is not Op.SLOT:
                assert b.op in GroupOp.ELEMENTWISE, b.op
