"""Node's two constructors: the compiled one (`ren._node`, ren/_node.c, built by the install) and
the Python reference (`ren.node._py_new`) share one table, so each must find what the other
made, and both must refuse the same bad input.  The hash-consing tests of test_ir.py and the
table tests of test_threads.py run again with the Python one in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ren.node as node_mod
from ren.node import Node, _py_new
from ren.ops import DType, Op

ROOT = Path(__file__).resolve().parents[1]
compiled = pytest.mark.skipif(not node_mod.C_CONSTRUCTOR,
                              reason="ren._node is not built (no C compiler at install)")

args = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=3),
    lambda inner: st.tuples(inner, inner) | st.tuples(inner),
    max_leaves=4)


@compiled
@given(op=st.sampled_from([Op.CONST, Op.ICONST, Op.TABLE]),
       dtype=st.sampled_from([DType.U32, DType.INDEX]), arg=args,
       python_first=st.booleans())
def test_each_constructor_finds_what_the_other_made(op, dtype, arg, python_first):
    if python_first:
        leaf = _py_new(Node, op, dtype, (), arg)
        assert Node(op, dtype, (), arg) is leaf
    else:
        leaf = Node(op, dtype, (), arg)
        assert _py_new(Node, op, dtype, (), arg) is leaf
    assert (leaf.op, leaf.dtype, leaf.src, leaf.arg, leaf._spec) == (op, dtype, (), arg, None)
    assert type(leaf.arg) is type(arg)
    user = Node(Op.NEG, dtype, [leaf], arg)  # a list of sources becomes the tuple
    assert user.src == (leaf,) and type(user.src) is tuple
    assert _py_new(Node, Op.NEG, dtype, (leaf,), arg) is user


@compiled
def test_the_compiled_constructor_takes_keywords_and_defaults():
    a = Node(Op.ICONST, DType.INDEX, (), 7)
    n = Node(Op.NEG, DType.INDEX, (a,))
    assert Node(op=Op.NEG, dtype=DType.INDEX, src=(a,), arg=None) is n
    assert Node(Op.NEG, DType.INDEX, src=iter([a])) is n
    bare = Node(Op.SINK)
    assert (bare.dtype, bare.src, bare.arg) == (DType.U32, (), None)
    assert bare is _py_new(Node, Op.SINK)


@compiled
@pytest.mark.parametrize("bad", [
    lambda make: make(Node),  # no op
    lambda make: make(Node, Op.NEG, DType.U32, 5),  # sources not iterable
    lambda make: make(Node, Op.CONST, DType.U32, (), [1, 2]),  # an unhashable arg
])
def test_both_constructors_refuse_the_same_input(bad):
    for make in (lambda cls, *a, **k: cls(*a, **k), _py_new):
        with pytest.raises(TypeError):
            bad(make)


@compiled
def test_the_compiled_constructor_is_what_node_runs_and_its_entries_leave():
    import gc

    assert Node.__new__ is node_mod._node.NodeBase.__new__  # (not a Python __new__)
    gc.collect()
    before = len(node_mod._refs)
    keep = [Node(Op.CONST, DType.U32, (), ("compiled-leaf", i)) for i in range(100)]
    assert len(node_mod._refs) == before + 100
    del keep
    assert len(node_mod._refs) == before  # the compiled weak-reference callback dropped them


def test_a_stale_build_is_not_used(monkeypatch):
    """A build whose recorded source digest is not ren/_node.c's is refused, with a warning."""
    if node_mod._node is None:
        pytest.skip("ren._node is not built")
    monkeypatch.setattr(node_mod._node, "SOURCE", "0" * 64)
    with pytest.warns(RuntimeWarning, match="changed since ren._node was built"):
        assert node_mod._compiled() is None
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert node_mod._compiled() is node_mod._node


def test_the_node_tests_pass_with_the_python_constructor():
    env = {**os.environ, "REN_PY_NODES": "1"}
    check = subprocess.run([sys.executable, "-c", "import ren.node as n; "
                            "print(n.C_CONSTRUCTOR, n.Node.__new__ is n._py_new)"],
                           env=env, capture_output=True, text=True, cwd=ROOT)
    assert check.stdout.split() == ["False", "True"], check.stderr
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_ir.py", "tests/test_threads.py", "-k",
                          "HashConsing or Immutability or node or dead"],
                         env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
