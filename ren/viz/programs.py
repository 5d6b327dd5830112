"""Programs to inspect: the built-in examples and Python files.

A PROGRAM is a built-in example name (the scheduler corpus of `ren.corpus`, the CKKS examples
and the BFV/BGV examples below; ``ren-inspect examples`` lists them) or the path of a Python file
that defines either

    def program():            what to inspect: a Poly, a CKKS Ciphertext or Plaintext, or a
                              list / tuple / dict / dataclass tree of them, lazy (not realized)

or

    def function(*args):      the computation (a plain function, or one wrapped by ren.jit)
    def example_inputs():     a tuple of positional arguments for it

Both may be defined: the graph commands inspect ``program()`` and ``jit`` captures
``function(*example_inputs())``; with only the pair, the graph is ``function(*example_inputs())``
built lazily.  The module docstring's first line is the program's description.

Everything is built with Ren's *seeded* random stream (`ren.random.seeded`), so two runs show
the same graphs, buffers and seeds: reproducible and therefore insecure, like the tiny CKKS
parameters ``small``.  Inspection only.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ren import bfv as ren_bfv
from ren import corpus
from ren import random as ren_random
from ren.bfv.debug import Report as BudgetReport
from ren.bfv.debug import budget_meter
from ren.ckks import (
    CKKSParams,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
)
from ren.ckks.params import PRESETS
from ren.errors import InspectError, RenError
from ren.poly import Poly
from ren.tree import leaves
from ren.viz.templating import first_sentence

#: CKKS parameter sets for the built-in CKKS examples: ``small`` is tiny and insecure (fast,
#: for tests and a first look), the others are `CKKSParams.preset` names.
CKKS_PARAMS = ("small", *PRESETS)
DEFAULT_CKKS_PARAMS = "small"


@dataclass
class Program:
    """Something to inspect: how to build its lazy outputs, and optionally a function with
    example inputs for JIT capture."""

    name: str
    description: str
    origin: str  # "corpus", "ckks" or the file's path
    builder: Callable[[], Any]
    function: Callable[..., Any] | None = None
    example_inputs: Callable[[], tuple] | None = None
    seed: str = ""
    notes: dict[str, str] = field(default_factory=dict)  # e.g. {"CKKS parameters": "..."}
    ckks: CKKSProgram | None = None  # a CKKS example's fn(ev, *cts), for the precision meter
    bfv: CKKSProgram | None = None  # a BFV/BGV example's fn(ev, *cts), for the budget meter

    def outputs(self) -> tuple[Poly, ...]:
        """A fresh build of the program's lazy outputs, flattened to Polys."""
        return _result_polys(f"{self.name}: the program", self._call("building", self.builder))

    def call(self) -> tuple[Callable[..., Any], tuple] | None:
        """(function, example inputs) for JIT capture, or None if the program has none.  The
        function is guarded: what it raises (besides a RenError) or an exit is an InspectError,
        and so is a result without a Poly in it."""
        if self.function is None or self.example_inputs is None:
            return None
        args = self._call("building the example inputs of", self.example_inputs)
        if not isinstance(args, tuple):
            args = (args,)
        return _guarded(self.name, self.function), args

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            with ren_random.seeded(self.seed or f"inspect:{self.name}"):
                return fn()
        except RenError as e:
            raise InspectError(f"{what} {self.name} failed: {type(e).__name__}: {e}") from e
        except (Exception, SystemExit) as e:  # a user's program may raise (or exit) anything
            raise InspectError(f"{what} {self.name} {_raised(e)}") from e


def _raised(e: BaseException) -> str:
    """What a user's code did, in words: "raised KeyError: 'x'", or "exited (SystemExit(0))"
    for ``sys.exit``."""
    if isinstance(e, SystemExit):
        return (f"exited (SystemExit({e.code!r})); a program must return what to inspect, not "
                "exit")
    return f"raised {type(e).__name__}: {e}"


def _result_polys(what: str, tree: Any) -> tuple[Poly, ...]:
    """The Polys of `tree`, the result of `what` (e.g. "prog: the program"); InspectError when
    it has none, contains itself or is nested too deeply to walk."""
    try:
        polys = tuple(poly_leaves(tree))
    except RecursionError:
        raise InspectError(f"{what} returned a {type(tree).__name__} that cannot be walked: "
                           f"{_shape_problem(tree)}; return Polys or CKKS ciphertexts in a tree "
                           "of lists, tuples, dicts or dataclasses without cycles, at most a few "
                           "hundred levels deep") from None
    if not polys:
        raise InspectError(f"{what} returned {type(tree).__name__} with no Poly in it; return "
                           "Polys or CKKS ciphertexts/plaintexts (possibly in a tuple, list, dict "
                           "or dataclass)")
    return polys


def _children(x: Any) -> list[Any]:
    """The values `poly_leaves` walks into (none for a Poly or a leaf)."""
    if isinstance(x, Poly):
        return []
    if isinstance(x, list | tuple):
        return list(x)
    if isinstance(x, dict):
        return list(x.values())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [getattr(x, f.name) for f in dataclasses.fields(x)]
    return []


def _shape_problem(tree: Any) -> str:
    """Why walking `tree` recursed too deeply: a container that contains itself (a cycle), or
    how many containers deep it is (walked without recursion, each container once)."""
    on_path, done = {id(tree)}, set()
    stack = [(tree, iter(_children(tree)))]
    deepest = 1
    while stack:
        node, rest = stack[-1]
        child = next(rest, _END)
        if child is _END:
            stack.pop()
            on_path.discard(id(node))
            done.add(id(node))
            continue
        if id(child) in on_path:
            return f"a {type(child).__name__} in it contains itself (a cycle)"
        inner = _children(child)
        if inner and id(child) not in done:
            on_path.add(id(child))
            stack.append((child, iter(inner)))
            deepest = max(deepest, len(stack))
    return (f"it is nested {deepest} containers deep, more than Python's recursion limit "
            f"({sys.getrecursionlimit()}) allows")


_END = object()


def _guarded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a plain function, or one wrapped by ren.jit: then the wrapper keeps its
    `plans`) calling which turns what the user's code raises (a RenError aside) or an exit
    into an InspectError, as a result without a Poly in it."""

    @functools.wraps(getattr(function, "__wrapped__", function))
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = function(*args, **kwargs)
        except RenError:
            raise
        except (Exception, SystemExit) as e:
            raise InspectError(f"{name}: function {_raised(e)}") from e
        _result_polys(f"{name}: function", result)
        return result

    if hasattr(function, "plans"):  # already jitted: ren.viz.jitplan reads its plans
        guarded.plans = lambda: function.plans  # type: ignore[attr-defined]
    return guarded


def poly_leaves(tree: Any) -> Iterator[Poly]:
    """The Polys of a tree of lists, tuples, dicts and dataclasses (other leaves are skipped)."""
    return leaves(tree, Poly)


# -- the corpus ------------------------------------------------------------------------------------
def as_program(obj: Any, name: str = "program") -> Program:
    """`obj` if it is a Program, else a Program of a Poly (or a CKKS ciphertext, or a list,
    tuple, dict or dataclass tree of them) built in Python: its lazy graph as it is now."""
    if isinstance(obj, Program):
        return obj
    try:
        _result_polys("the object", obj)
    except InspectError as e:
        raise InspectError(f"expected a ren.viz Program, a Poly or a tree of Polys / CKKS "
                           f"objects, got {type(obj).__name__} ({e})") from None
    return Program(name, "a lazy graph built in Python", "python", lambda: obj)


def _corpus_program(name: str) -> Program:
    fn = corpus.PROGRAMS[name]
    doc = first_sentence(fn.__doc__ or name)
    # corpus.build seeds the stream exactly as the golden snapshots do
    return Program(name, doc, "corpus", lambda: corpus.build(name), seed=f"corpus:{name}")


# -- CKKS examples ---------------------------------------------------------------------------------
def ckks_params(name: str) -> CKKSParams:
    """The CKKS parameters called `name` (one of `CKKS_PARAMS`)."""
    if name == "small":
        with warnings.catch_warnings():  # tiny on purpose: inspection, not security
            warnings.simplefilter("ignore", InsecureParametersWarning)
            return CKKSParams(N=256, depth=3, scale_bits=40, first_bits=55, insecure=True)
    if name not in PRESETS:
        raise InspectError(f"unknown CKKS parameters {name!r}; choose one of "
                           + ", ".join(CKKS_PARAMS))
    return CKKSParams.preset(name)


@dataclass
class CKKSProgram:
    """A CKKS example as ``fn(ev, *cts)`` with its evaluator and key generator: what
    `ren.ckks.debug.precision` needs (the secret key: inspection only)."""

    fn: Callable[..., Any]
    evaluator: Any  # a CKKS Evaluator (or a BFV/BGV one in `Program.bfv`)
    keygen: Any  # its KeyGenerator (ren.ckks's, or ren.rlwe's for BFV/BGV)
    values: tuple[list[Any], ...]  # the example inputs' slot values, before encryption


@dataclass
class CKKSContext:
    """Keys, encoder, evaluator and two fresh realized ciphertexts for one parameter set."""

    params: CKKSParams
    keygen: KeyGenerator
    encoder: Encoder
    encryptor: Encryptor
    evaluator: Evaluator
    galois: dict[tuple, Any] = field(default_factory=dict)

    def with_rotations(self, steps: tuple[int, ...], conjugate: bool = False) -> Evaluator:
        """An evaluator that also has the Galois keys for `steps` (generated once)."""
        key = (steps, conjugate)
        if key not in self.galois:
            with ren_random.seeded(f"ckks-galois:{self.params.N}:{key}"):
                self.galois[key] = self.keygen.rotation_keys(list(steps), conjugate=conjugate)
        return Evaluator(self.params, relin_key=self.evaluator.relin_key,
                         rotation_keys=self.galois[key])

    def encrypt(self, values: list[float]) -> Any:
        ct = self.encryptor.encrypt(self.encoder.encode(values))
        return ct.realize()  # inputs are realized: the graph shows the computation only


@cache
def ckks_context(params_name: str) -> CKKSContext:
    params = ckks_params(params_name)
    with ren_random.seeded(f"ckks-context:{params_name}"):
        kg = KeyGenerator(params)
        pk, rlk = kg.public_key(), kg.relin_key()
    enc = Encoder(params)
    return CKKSContext(params, kg, enc, Encryptor(params, pk), Evaluator(params, relin_key=rlk))


C1, C3 = 0.197, -0.004  # sigmoid(t) ≈ 0.5 + C1·t + C3·t³ on [-8, 8]
LOGREG_FEATURES = 4


def _ckks_multiply(c: CKKSContext):
    def fn(ev, x, y):
        return ev.rescale(ev.multiply(x, y))

    return fn, c.evaluator, ([0.5, -0.25, 1.0], [0.75, 0.5, -1.0])


def _ckks_rotate(c: CKKSContext):
    def fn(ev, x):
        return ev.rotate(x, 1), ev.conjugate(x)

    return fn, c.with_rotations((1,), conjugate=True), ([0.5, -0.25, 1.0, 0.125],)


def _ckks_logreg(c: CKKSContext):
    d = LOGREG_FEATURES
    slots = c.params.slots
    w = [0.5, -0.25, 0.75, -1.0] * (slots // d)

    def infer(ev, x):
        z = ev.rescale(ev.multiply(x, w))  # every slot x_i·w_i
        t = ev.add_scalar(ev.rotate_sum(z, d), 0.1)  # slot k·d: <w, x_k> + b
        t2 = ev.rescale(ev.square(t))
        c3t = ev.rescale(ev.multiply_scalar(t, C3, target_scale=t2.scale))
        t3 = ev.rescale(ev.multiply(t2, c3t))  # C3·t³
        lin = ev.rescale(ev.multiply_scalar(t, C1, target_scale=t3.scale))
        return ev.add_scalar(ev.add(t3, ev.drop_level(lin, t3.level)), 0.5)

    return (infer, c.with_rotations(tuple(1 << i for i in range(d.bit_length() - 1))),
            ([0.25, -0.5, 0.125, 1.0] * (slots // d),))


CKKS_EXAMPLES: dict[str, tuple[str, Callable[[CKKSContext], tuple]]] = {
    "ckks_multiply": ("x·y of two ciphertexts: tensor product, relinearize (hybrid key switching: "
                      "mod-up, key inner product, mod-down), rescale", _ckks_multiply),
    "ckks_rotate": ("rotate a ciphertext one slot left and conjugate it: automorphisms, then key "
                    "switching with Galois keys", _ckks_rotate),
    "ckks_logreg": (f"one logistic-regression inference: x·w, rotate_sum over {LOGREG_FEATURES} "
                    "features, + b, degree-3 sigmoid polynomial", _ckks_logreg),
}


def _ckks_program(name: str, params_name: str) -> Program:
    description, make = CKKS_EXAMPLES[name]
    context = ckks_context(params_name)
    fn, ev, values = make(context)

    def function(*cts: Any) -> Any:
        return fn(ev, *cts)

    def inputs() -> tuple:
        return tuple(context.encrypt(v) for v in values)

    return Program(name, description, "ckks", lambda: function(*inputs()), function, inputs,
                   seed=f"ckks:{name}:{params_name}",
                   notes={"CKKS parameters": f"{params_name}: {context.params!r}"},
                   ckks=CKKSProgram(fn, ev, context.keygen, values))


# -- BFV and BGV examples --------------------------------------------------------------------------
def bfv_params(name: str, bgv: bool = False) -> Any:
    """The BFV (or BGV) parameters for the name given as ``--ckks-params``: ``small`` is tiny
    and insecure (N = 256, t = 7681), N13/N14/N15 are the `BFVParams.preset` (`BGVParams`)
    names."""
    cls: Any = ren_bfv.BFVParams
    if bgv:
        from ren.bfv.bgv_params import BGVParams

        cls = BGVParams
    if name == "small":
        with warnings.catch_warnings():  # tiny on purpose: inspection, not security
            warnings.simplefilter("ignore", InsecureParametersWarning)
            if bgv:
                return cls.generate(256, 7681, 2, insecure=True)
            return cls.generate(256, 7681, 3, 1, insecure=True)
    if name not in ren_bfv.PRESETS:
        raise InspectError(f"the BFV/BGV examples have no parameters {name!r}; choose small or "
                           + ", ".join(ren_bfv.PRESETS))
    return cls.preset(name)


def _bgv_module() -> Any:
    """`ren.bfv.bgv`, or None in a build without BGV (then there is no bgv_multiply)."""
    try:
        from ren.bfv import bgv
    except ImportError:  # pragma: no cover
        return None
    return bgv


@cache
def _integer_context(params_name: str, bgv: bool) -> tuple[Any, Any, Any, Any, Any]:
    """(params, key generator, encoder, encryptor, evaluator) of the BFV or BGV examples."""
    from ren.rlwe import KeyGenerator as RLWEKeyGenerator

    params = bfv_params(params_name, bgv)
    with ren_random.seeded(f"{'bgv' if bgv else 'bfv'}-context:{params_name}"):
        kg = RLWEKeyGenerator(params)
        pk, rlk = kg.public_key(), kg.relin_key()
    if bgv:
        m = _bgv_module()
        return params, kg, ren_bfv.Encoder(params), m.BGVEncryptor(params, pk), \
            m.BGVEvaluator(params, rlk)
    return (params, kg, ren_bfv.Encoder(params), ren_bfv.Encryptor(params, pk),
            ren_bfv.Evaluator(params, rlk))


def _integer_multiply(ev: Any, x: Any, y: Any) -> Any:
    return ev.multiply(x, y)


#: name -> (description, BGV or not)
BFV_EXAMPLES: dict[str, tuple[str, bool]] = {
    "bfv_multiply": ("x·y of two BFV ciphertexts, scale-invariant in RNS: basis extension from Q "
                     "to B|m_sk|Q, tensor, ×t and exact rescale by Q, exact conversion back to "
                     "Q, relinearize", False),
    "bgv_multiply": ("x·y of two BGV ciphertexts: tensor on Q_l, relinearize (key switching of "
                     "t⁻¹·c2, times t), modulus switch to level l−1 with the t-correction",
                     True),
}


def _bfv_examples() -> dict[str, tuple[str, bool]]:
    """The BFV/BGV examples this build has (bgv_multiply needs ren.bfv.bgv)."""
    return {k: v for k, v in BFV_EXAMPLES.items() if not v[1] or _bgv_module() is not None}


def _bfv_program(name: str, params_name: str) -> Program:
    description, bgv = BFV_EXAMPLES[name]
    params, kg, enc, encryptor, ev = _integer_context(params_name, bgv)
    half = params.N // 2
    values = ([3, -1, 7, 100] + [0] * (half - 4) + [5, 6], [2, 4, -6, 1000] + [0] * (half - 4)
              + [-7, 8])

    def function(*cts: Any) -> Any:
        return _integer_multiply(ev, *cts)

    def inputs() -> tuple:
        return tuple(encryptor.encrypt(enc.encode(v)).realize() for v in values)

    label = "BGV parameters" if bgv else "BFV parameters"
    return Program(name, description, "bgv" if bgv else "bfv", lambda: function(*inputs()),
                   function, inputs, seed=f"{name}:{params_name}",
                   notes={label: f"{params_name}: {params!r}"},
                   bfv=CKKSProgram(_integer_multiply, ev, kg, values))


def budget_of(prog: Program) -> BudgetReport:
    """The noise-budget meter (`ren.bfv.debug.budget_meter`) of a BFV/BGV example on its
    example values (encrypted with the secret key, seeded); InspectError for other programs."""
    if prog.bfv is None:
        raise InspectError(f"{prog.name}: the noise-budget meter needs a BFV/BGV program (the "
                           "built-in bfv_*/bgv_* examples); from Python, call "
                           "ren.bfv.debug.budget_meter on your function")
    c = prog.bfv
    with ren_random.seeded(prog.seed or f"inspect:{prog.name}"):
        return budget_meter(c.fn, *c.values, evaluator=c.evaluator,
                            secret_key=c.keygen.secret_key())


# -- the registry and files ------------------------------------------------------------------------
def examples() -> dict[str, tuple[str, str]]:
    """Built-in example name -> (origin, one-line description), corpus first."""
    out = {}
    for name, fn in corpus.PROGRAMS.items():
        out[name] = ("corpus", first_sentence(fn.__doc__ or name))
    for name, (description, _) in CKKS_EXAMPLES.items():
        out[name] = ("ckks", description)
    for name, (description, bgv) in _bfv_examples().items():
        out[name] = ("bgv" if bgv else "bfv", description)
    return out


def _built_in(make: Callable[[str, str], Program], name: str, params: str, what: str
              ) -> Program:
    """``make(name, params)``, a built-in example under the named parameters; a RenError it
    raises becomes an InspectError naming the example and `what` the parameters are."""
    try:
        return make(name, params)
    except InspectError:
        raise
    except RenError as e:
        raise InspectError(f"{name} with {what} {params!r}: {e}") from e


def load_program(spec: str | Path, ckks: str = DEFAULT_CKKS_PARAMS) -> Program:
    """The program named `spec`: a built-in example or a Python file (see the module doc).
    `ckks` chooses the parameters of the built-in CKKS examples."""
    text = str(spec)
    if text in corpus.PROGRAMS:
        return _corpus_program(text)
    if text in CKKS_EXAMPLES:
        return _built_in(_ckks_program, text, ckks, "CKKS parameters")
    if text in _bfv_examples():
        return _built_in(_bfv_program, text, ckks, "parameters")
    path = Path(text)
    if text.strip() and (path.suffix == ".py" or path.exists() or "/" in text):
        return load_file(path)
    close = difflib.get_close_matches(text, list(examples()), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise InspectError(f"unknown program {text!r}{hint}: give a built-in example name "
                       "(`ren-inspect examples` lists them) or the path of a Python file")


def load_file(path: Path) -> Program:
    """A program from a Python file following the convention of the module doc."""
    if path.is_dir():
        raise InspectError(f"{path} is a directory, not a program file; give the path of a "
                           "Python file that defines program()")
    if not path.is_file():
        raise InspectError(f"no such program file: {path}")
    name = path.stem
    module_name = f"_ren_inspect_{name}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InspectError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
    try:
        with ren_random.seeded(f"file:{name}"):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the user's module may raise (or exit) while it loads
        raise InspectError(f"loading {path} {_raised(e)}") from e
    finally:
        sys.path.remove(str(path.resolve().parent))
    doc = (module.__doc__ or "").strip()
    description = first_sentence(doc) if doc else f"program file {path}"
    program = getattr(module, "program", None)
    function = getattr(module, "function", None)
    inputs = getattr(module, "example_inputs", None)
    for label, obj in (("program", program), ("function", function),
                       ("example_inputs", inputs)):
        if obj is not None and not callable(obj):
            raise InspectError(f"{path}: {label} must be a function, got {type(obj).__name__}")
    if (function is None) != (inputs is None):
        missing = "example_inputs()" if inputs is None else "function"
        raise InspectError(f"{path} defines {'function' if inputs is None else 'example_inputs'}"
                           f" but not {missing}; define both (or a program() function)")
    if program is None and function is None:
        raise InspectError(f"{path} defines neither program() nor function + example_inputs(); "
                           "a program file must define one of them (see `ren-inspect examples "
                           "--help`)")
    if program is None:
        assert function is not None and inputs is not None  # both or neither: checked above
        raw = getattr(function, "__wrapped__", function)  # the plain function of a jitted one

        def program() -> Any:
            return raw(*_as_tuple(inputs()))

    return Program(name, description, str(path), program, function, inputs, seed=f"file:{name}")


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else (x,)


__all__ = ["BFV_EXAMPLES", "CKKS_EXAMPLES", "CKKS_PARAMS", "DEFAULT_CKKS_PARAMS", "Program",
           "bfv_params", "budget_of", "ckks_context", "ckks_params", "examples", "load_file",
           "load_program", "poly_leaves"]
