"""The circuits (`ren.ckks.circuits`, issue 41 §4) use only the Evaluator's public API and the
dependency is one-way; the Bootstrapper is composed of parameter objects a researcher can swap
(another EvalMod approximation in a few lines, bootstrapping correctly at the small preset)."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import ren
from ren.ckks import Ciphertext, Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator, Plaintext
from ren.ckks.circuits import (
    Bootstrapper,
    CoeffToSlotParams,
    EvalModParams,
    SlotToCoeffParams,
    bootstrap_params_small,
    chebyshev_coefficients,
    evaluate_polynomial,
    linear_transform,
)
from ren.ckks.evaluator import PROGRAMS, register_program
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError

ROOT = Path(__file__).resolve().parent.parent
CIRCUITS = ROOT / "ren" / "ckks" / "circuits"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_in(trees: list[ast.AST]) -> set[str]:
    """Private names the circuits define themselves: functions, classes, class attributes and
    ``self._x`` attributes (a module's own helpers may use each other's)."""
    out: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id == "self"):
                out.add(node.attr)
    return {n for n in out if _private(n)}


#: classes whose private members the circuits must not touch, whatever the circuits define
OUTSIDE = (Evaluator, Ciphertext, Plaintext, CKKSParams, Encoder)


def private_uses(sources: dict[str, str]) -> list[str]:
    """'file:line: what' for every private member the circuits use of something that is not
    theirs: ``x._name`` on anything but ``self``/``cls`` where ``_name`` is a private member of
    the evaluator and its objects (`OUTSIDE`) or is not defined in the circuits at all, and
    ``from module import _name`` from a module outside the circuits."""
    trees = {name: ast.parse(text, name) for name, text in sources.items()}
    own = _defined_in(list(trees.values()))
    outside = {n for cls in OUTSIDE for n in dir(cls) if _private(n)}
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in ("self", "cls") \
                        and node.attr not in outside:
                    continue
                if node.attr in own and node.attr not in outside:
                    continue
                found.append(f"{name}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith(
                    "ren.ckks.circuits"):
                found += [f"{name}:{node.lineno}: import {a.name}" for a in node.names
                          if _private(a.name)]
    return found


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(CIRCUITS.glob("*.py"))}


def test_the_circuits_use_only_public_evaluator_members():
    assert len(_sources()) >= 6  # polyeval, lintrans, bootstrap, dft, evalmod, inputs, ...
    assert private_uses(_sources()) == []


@pytest.mark.parametrize("code,bad", [
    ("ct = ev._meet(ct, ct, 'add')", True),      # a private evaluator member
    ("x = evaluator._reach(ct, 0, s)", True),
    ("ok = ev._is_product(ct)", True),
    ("y = ct._hidden", True),                    # not defined in the circuits at all
    ("from ren.ckks.encoder import _as_slots", True),
    ("class A:\n    def f(self):\n        return self._reach(1, 0, 1)", True),  # an inherited one
    ("def _own(): pass\ny = _own()", False),
    ("class A:\n    def f(self):\n        self._x = 1\n        return self._x", False),
    ("class A:\n    def _g(self): pass\ndef f(a): return a._g()", False),  # the circuits' own
    ("y = ev.check_ciphertext(ct)", False),
])
def test_the_scan_finds_private_uses(code, bad):
    """The scan itself: a private evaluator member is found (also through self), the circuits'
    own private helpers are not."""
    assert bool(private_uses({"x.py": code})) is bad


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append(node.module or "")
            out += [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_the_evaluator_does_not_import_the_circuits():
    names = _imports(ROOT / "ren" / "ckks" / "evaluator.py")
    assert names and not [n for n in names if "circuits" in n or n.endswith(
        ("polyeval", "lintrans", "bootstrap"))]
    # and the old modules are gone (no shims)
    for old in ("polyeval", "lintrans", "bootstrap"):
        assert not (ROOT / "ren" / "ckks" / f"{old}.py").exists()


def test_the_evaluator_methods_are_the_circuits_functions():
    from ren.ckks import evaluator

    assert evaluator._programs == {"evaluate_polynomial": evaluate_polynomial,
                                   "linear_transform": linear_transform}
    assert set(PROGRAMS) == set(evaluator._programs)
    with pytest.raises(ParameterError, match="name"):
        register_program("bootstrap", evaluate_polynomial)
    with pytest.raises(ParameterError, match="fn"):
        register_program("linear_transform", 3)


# -- the parameter objects ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    params = bootstrap_params_small()
    return params, Bootstrapper(params)


def test_the_shortcuts_make_the_parameter_objects(small):
    params, bt = small
    assert bt.eval_mod_params == EvalModParams()
    assert (bt.cts_params, bt.stc_params) == (CoeffToSlotParams(2), SlotToCoeffParams(2))
    other = Bootstrapper(params, cts=CoeffToSlotParams(3), stc=SlotToCoeffParams(1),
                         eval_mod=EvalModParams(degree=63, double_angles=2))
    assert (other.cts_levels, other.stc_levels, other.degree, other.double_angles) == (3, 1, 63, 2)
    assert other.levels_used == 3 + (6 + 2) + 1
    assert len(other.coeff_to_slot_stage.transforms_for(other.input_scale)) == 3
    assert len(other.slot_to_coeff_stage.transforms) == 1
    with pytest.raises(ParameterError, match="not both"):
        Bootstrapper(params, cts_levels=3, cts=CoeffToSlotParams(3))
    with pytest.raises(ParameterError, match="not both"):
        Bootstrapper(params, degree=15, eval_mod=EvalModParams())
    with pytest.raises(ParameterError, match="eval_mod"):
        Bootstrapper(params, eval_mod=31)
    with pytest.raises(ParameterError, match="cts_levels"):
        Bootstrapper(params, cts=CoeffToSlotParams(0))


@dataclass(frozen=True)
class PlainSine(EvalModParams):
    """Another EvalMod in a few lines: the sine itself, fitted at a higher degree, and no
    double angles (7 levels instead of 5 + 3 at the small preset)."""

    def fit(self, K, K0, double_angles, levels_left):
        return chebyshev_coefficients(lambda u: np.sin(2 * np.pi * (K + 1) * u), self.degree)


def _bootstrap_bits(params, bt, seed: int) -> tuple[float, Ciphertext]:
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
        enc, pk = Encoder(params), kg.public_key()
        x = np.random.default_rng(seed).uniform(-1, 1, params.slots)
        ct = Encryptor(params, pk).encrypt(enc.encode(x, level=0, scale=bt.input_scale))
        out = bt.bootstrap(ev, ct)
    got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(out))
    return -math.log2(float(np.max(np.abs(got - x)))), out


def test_another_eval_mod_plugs_in_and_bootstraps(small):
    params, default = small
    bt = Bootstrapper(params, eval_mod=PlainSine(degree=127, double_angles=0))
    assert bt.double_angles == 0 and bt.evalmod_levels == 7 < default.evalmod_levels == 8
    assert bt.output_level == default.output_level + 1
    bits, out = _bootstrap_bits(params, bt, 11)
    assert out.level == bt.output_level
    assert bits > 20, bits  # measured ~27; a wrong fit (e.g. cos for sin) gives < 1


def test_a_plugged_eval_mod_must_say_its_levels(small):
    params, _ = small

    @dataclass(frozen=True)
    class Liar(EvalModParams):
        def levels(self, K):
            return 3

    with pytest.raises(ParameterError, match="levels"):
        Bootstrapper(params, eval_mod=Liar())


def test_the_public_checks_the_circuits_use(small):
    from ren.ckks import ParamsMismatchError

    params, _bt = small
    other = bootstrap_params_small(N=512)
    with ren.random.seeded(19):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key())
        ct = Encryptor(params, kg.public_key()).encrypt(Encoder(params).encode([0.5], level=3))
        okg = KeyGenerator(other)
        foreign = Encryptor(other, okg.public_key()).encrypt(Encoder(other).encode([0.5]))
    assert ev.check_ciphertext(ct) is ct
    with pytest.raises(ParameterError, match="my_op: the input"):
        ev.check_ciphertext("ct", "input", "my_op")
    with pytest.raises(ParamsMismatchError, match="my_op: the input"):
        ev.check_ciphertext(foreign, "input", "my_op")
    with pytest.raises(ParameterError, match="strings"):
        ev.check_ciphertext(ct, op=np.zeros(2))
    product = ev.multiply(ct, ct)
    assert ev.is_unrescaled_product(product) and not ev.is_unrescaled_product(ct)
    assert not ev.is_unrescaled_product(ev.rescale(product))
