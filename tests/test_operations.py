"""ren.ckks.operations: which CKKS call built each node, and the level/scale of its results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ren.ckks import CKKSParams, Encoder, Encryptor, Evaluator, KeyGenerator
from ren.ckks.debug import SHADOWS
from ren.ckks.errors import OutOfLevelsError
from ren.ckks.operations import OPERATIONS, record_operations
from ren.ckks.params import log2_exact
from ren.node import toposort
from ren.random import seeded


@pytest.fixture(scope="module")
def ckks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = CKKSParams(N=64, depth=3, scale_bits=30, first_bits=40, insecure=True)
    with seeded(7):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1]))
        enc = Encryptor(params, kg.public_key())
        x = enc.encrypt(Encoder(params).encode(np.linspace(-1, 1, params.slots))).realize()
    return ev, x


def test_one_list_of_operations():
    """The meter shadows exactly the recorded operations (one list, two users)."""
    assert set(OPERATIONS) == set(SHADOWS)


def test_nested_calls_and_their_results(ckks):
    ev, x = ckks
    with record_operations() as log:
        y = ev.rescale(ev.multiply(x, x))
        z = ev.rotate(y, 1)
    top = [op for op in log.operations if op.depth == 0]
    assert [op.name for op in top] == ["multiply", "rescale", "rotate"]
    mul = top[0]
    inner = [op.name for op in log.operations if op.parent == mul.index]
    assert "relinearize" in inner  # multiply relinearizes inside itself
    assert all(log.operations[op.parent].depth == op.depth - 1
               for op in log.operations if op.parent is not None)
    for op, ct in ((top[1], y), (top[2], z)):
        (res,) = op.results
        assert res.nodes == tuple(p.node for p in ct.parts)
        assert res.level == ct.level and res.log2_scale == log2_exact(ct.scale)
    assert len(log.operations) == len({op.index for op in log.operations})
    assert all(op.where.endswith(".py:" + op.where.rsplit(":", 1)[1]) for op in top)
    assert top[0].where.startswith(__file__)


def test_innermost_operation_owns_a_node(ckks):
    ev, x = ckks
    with record_operations() as log:
        y = ev.multiply(x, x)
    groups = log.node_groups()
    nodes = toposort(y.c0.node)
    outside = {n for p in x.parts for n in toposort(p.node)}  # the input: built before
    assert outside and {n for n in nodes if n not in groups} == outside & set(nodes)
    relin = next(op for op in log.operations if op.name == "relinearize")
    owned = {n for n, g in groups.items() if g == relin.index}
    # the key switch's mod-up and mod-down are relinearize's, the tensor product is not
    assert {n.op.name for n in owned} >= {"INTT", "NTT", "TO_RING", "RESCALE"}
    mul = next(op for op in log.operations if op.name == "multiply")
    assert any(groups.get(n) == mul.index and n.op.name == "MUL" for n in nodes)
    # a ciphertext part is attributed to the outermost call that returned it
    parts = log.ciphertext_nodes()
    assert parts[y.c0.node][0] == mul.index and parts[y.c1.node][1] == 1
    assert mul.label == f"multiply #{mul.index}"
    returned = {n for op in log.operations for r in op.results for n in r.nodes}
    assert set(parts) == returned
    for op in log.operations:  # what an operation returns, it (or a call inside it) built
        for n in (n for r in op.results for n in r.nodes if n in groups):
            assert op.index <= groups[n] <= op.last, (op.label, n)
    assert any(op.name == "drop_level" and op.results for op in log.operations)


def test_plaintext_arguments_and_several_results(ckks):
    """A plaintext argument stops the walk (its encoding is not the product's), and a call
    returning a dict (rotate_hoisted) or a tuple records each ciphertext."""
    ev, x = ckks
    pt = Encoder(ev.params).encode(np.ones(ev.params.slots) * 0.5, x.level)
    with record_operations() as log:
        y = ev.multiply_plain(x, pt)
        rots = ev.rotate_hoisted(x, [0, 1])
    mp = log.operations[0]
    assert mp.name == "multiply_plain" and pt.poly.node in mp.inputs
    assert log.node_groups().get(pt.poly.node) is None
    assert mp.results[0].nodes == tuple(p.node for p in y.parts)
    hoisted = next(op for op in log.operations if op.name == "rotate_hoisted")
    assert [r.nodes for r in hoisted.results] == [tuple(p.node for p in rots[k].parts)
                                                  for k in (0, 1)]


def test_recording_is_transparent(ckks):
    """Recording changes nothing: the same (hash-consed) nodes, and nothing recorded outside the
    block; an operation that raises leaves the log balanced."""
    ev, x = ckks
    plain = ev.rescale(ev.multiply(x, x))
    with record_operations() as log:
        recorded = ev.rescale(ev.multiply(x, x))
        with pytest.raises(OutOfLevelsError):
            ev.rescale(ev.drop_level(x, 0))
        after = ev.negate(x)
    assert recorded.c0.node is plain.c0.node and recorded.c1.node is plain.c1.node
    failed = next(op for op in log.operations if op.name == "rescale" and not op.results)
    assert failed.done >= 0
    assert log.operations[-1].name == "negate" and log.operations[-1].depth == 0
    assert after.level == x.level
    n = len(log.operations)
    ev.negate(x)
    assert len(log.operations) == n


def test_bootstrapping_stages_are_groups():
    from ren.ckks.circuits.bootstrap import Bootstrapper, bootstrap_params_small
    from ren.ckks.keyplan import _NoRealize, _PlanningEvaluator, placeholder
    from ren.realization import recording

    params = bootstrap_params_small()
    bt = Bootstrapper(params)
    with recording(_NoRealize()), record_operations() as log:  # traced: no kernel runs
        bt.bootstrap(_PlanningEvaluator(params), placeholder(params, 1))
    names = [op.name for op in log.operations]
    assert names[0] == "bootstrap" and log.operations[0].depth == 0
    for stage in ("mod_raise", "coeff_to_slot", "eval_mod", "slot_to_coeff"):
        ops = [op for op in log.operations if op.name == stage]
        assert ops and all(op.parent == 0 for op in ops)
    assert names.count("eval_mod") == 2
    cts = next(op for op in log.operations if op.name == "coeff_to_slot")
    assert len(cts.results) == 2  # a tuple of two ciphertexts
    lts = [op for op in log.operations if op.name == "linear_transform"]
    assert len(lts) == bt.cts_levels + bt.stc_levels
    assert log.operations[0].results[0].level == bt.output_level
