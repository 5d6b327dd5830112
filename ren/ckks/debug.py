"""Debugging a CKKS program from the program itself: where precision goes, and where levels go.

    report = precision(fn, x, y, evaluator=ev, secret_key=sk)   # fn(ev, ct_x, ct_y) runs once
    print(report)              # per operation: the user's line, level, log2 scale, bits, bits lost
    report.worst               # the operation that lost the most bits

    plan = budget(fn, params)  # traced, no kernel runs: level and scale of every intermediate
    print(plan)                # raises LevelBudgetError naming the line when levels run out

**The precision meter** calls ``fn(meter, *cts)`` once, where `meter` stands in for the
evaluator: each operation runs on the real evaluator and, beside it, on a *plaintext shadow*
(the same operation on NumPy complex vectors of the exact values).  Afterwards every
intermediate is decrypted with the secret key (a debug mode: never give a secret key to
production code) and compared with its shadow.  A row's *bits* are −log2 of its largest slot
error; *lost* is how many bits it has fewer than the least precise ciphertext it was computed
from, so the operation that added the most error stands out.  Inputs given as values are
encrypted with the secret key at the top level (their shadow is the values themselves); a
Ciphertext input's shadow is its own decryption.

**The budget** traces ``fn`` like the rotation-key planner (placeholder ciphertexts, nothing
realized) and records the level and scale after every operation and where rescales happen.
An operation that would need a level the program no longer has raises `LevelBudgetError` (an
`OutOfLevelsError`) before any kernel runs, naming the user's file and line and what to change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren.callsite import call_site, defined_at, located, short_where
from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.circuits.lintrans import LinearTransform, _check_diagonals, diagonals_of
from ren.ckks.encoder import Encoder, _as_slots
from ren.ckks.encrypt import Decryptor, Encryptor
from ren.ckks.errors import OutOfLevelsError
from ren.ckks.evaluator import Evaluator
from ren.ckks.keyplan import _NoRealize, _PlanningEvaluator, placeholder
from ren.ckks.params import CKKSParams, log2_exact
from ren.errors import LevelError, ParameterError, RenError, check_callable
from ren.realization import recording
from ren.rlwe.keys import SecretKey


class LevelBudgetError(OutOfLevelsError):
    """A traced CKKS program needs more levels (or scale room) than its parameters have."""


# -- the shadow of every traced operation ----------------------------------------------------------
def _lintrans_shadow(x: np.ndarray, transform: Any) -> np.ndarray:
    slots = len(x)
    if isinstance(transform, LinearTransform):
        diags = transform.diagonals
    elif isinstance(transform, Mapping):
        diags = _check_diagonals(transform, slots)
    else:
        diags = diagonals_of(transform, slots)
    return sum((d * np.roll(x, -i) for i, d in diags.items()), np.zeros(slots, complex))


def _poly_shadow(x: np.ndarray, coeffs: Sequence[complex], basis: str = "power",
                 interval: tuple[float, float] | None = None) -> np.ndarray:
    c = np.asarray(coeffs, dtype=complex)
    if basis == "power":
        return np.polynomial.polynomial.polyval(x, c)
    a, b = interval or (-1.0, 1.0)
    return np.polynomial.chebyshev.chebval((2 * x - a - b) / (b - a), c)


def _rotate_sum_shadow(x: np.ndarray, n: int | None = None) -> np.ndarray:
    n = len(x) if n is None else n
    return sum((np.roll(x, -i) for i in range(n)), np.zeros(len(x), complex))


#: operation -> its plaintext meaning, on the shadows of its arguments (V: a value)
SHADOWS: dict[str, Callable[..., Any]] = {
    "add": lambda V, a, b: V(a) + V(b),
    "sub": lambda V, a, b: V(a) - V(b),
    "add_plain": lambda V, a, b: V(a) + V(b),
    "sub_plain": lambda V, a, b: V(a) - V(b),
    "add_scalar": lambda V, a, c: V(a) + complex(c),
    "sub_scalar": lambda V, a, c: V(a) - complex(c),
    "negate": lambda V, a: -V(a),
    "multiply": lambda V, a, b, relinearize=True: V(a) * V(b),
    "square": lambda V, a, relinearize=True: V(a) * V(a),
    "multiply_plain": lambda V, a, b: V(a) * V(b),
    "multiply_scalar": lambda V, a, c, scale=None, target_scale=None: V(a) * complex(c),
    "multiply_int": lambda V, a, k: V(a) * int(k),
    "relinearize": lambda V, a: V(a),
    "rescale": lambda V, a: V(a),
    "drop_level": lambda V, a, level=None: V(a),
    "align": lambda V, a, level=None, scale=None: V(a),
    "adjust_scale": lambda V, a, target_scale: V(a),
    "rotate": lambda V, a, k: np.roll(V(a), -int(k)),
    "conjugate": lambda V, a: np.conj(V(a)),
    "rotate_sum": lambda V, a, n=None: _rotate_sum_shadow(V(a), n),
    "rotate_hoisted": lambda V, a, steps: {int(k): np.roll(V(a), -int(k)) for k in steps},
    "evaluate_polynomial": lambda V, a, *args, **kw: _poly_shadow(V(a), *args, **kw),
    "linear_transform": lambda V, a, t, hoisted=True: _lintrans_shadow(V(a), t),
}


@dataclass
class Step:
    """One traced operation: what it was, where the user called it, and what it gave."""

    index: int
    op: str
    where: str  # "file:line"
    code: str  # the line of the user's code
    level: int
    log2_scale: float
    rescaled: bool  # the level went down by a rescale (not by drop_level, a view)
    ciphertext: Ciphertext = field(repr=False)
    inputs: tuple[int, ...] = ()  # indices of the steps its ciphertext operands came from
    bits: float = math.nan
    lost: float = math.nan


class _Tracer:
    """Stands in for an Evaluator inside the traced function: every operation in `SHADOWS` is
    recorded (and shadowed when `shadows` is on); other attributes are the evaluator's."""

    def __init__(self, ev: Evaluator, shadows: bool, slots: int, encoder: Encoder | None):
        self._ev, self._shadows, self._slots, self._encoder = ev, shadows, slots, encoder
        self.steps: list[Step] = []
        self._origin: dict[int, int] = {}  # id(ct) -> step index
        self._shadow: dict[int, np.ndarray] = {}  # id(ct) -> exact values
        self.params = ev.params

    def _add(self, ct: Ciphertext, op: str, where: tuple[str, str], inputs: tuple[int, ...],
             shadow: np.ndarray | None, was_level: int | None) -> int:
        rescaled = was_level is not None and ct.level < was_level and op != "drop_level"
        step = Step(len(self.steps), op, where[0], where[1], ct.level, log2_exact(ct.scale),
                    rescaled, ct, inputs)
        self.steps.append(step)
        self._origin[id(ct)] = step.index
        if shadow is not None:
            self._shadow[id(ct)] = np.asarray(shadow, dtype=complex)
        return step.index

    def _value(self, v: Any) -> np.ndarray | complex:
        if isinstance(v, Ciphertext):
            if id(v) not in self._shadow:
                raise ParameterError("precision: a ciphertext that no traced operation made; the "
                                     "meter follows evaluator operations on its inputs only")
            return self._shadow[id(v)]
        if isinstance(v, Plaintext):
            assert self._encoder is not None
            return self._encoder.decode(v)
        if isinstance(v, int | float | complex | np.number):
            return complex(v)
        arr = np.asarray(v, dtype=complex).ravel()
        return np.pad(arr, (0, self._slots - len(arr))) if len(arr) < self._slots else arr

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ev, name)
        if name not in SHADOWS:
            return attr

        def traced(*args: Any, **kw: Any) -> Any:
            where = call_site(__file__)
            try:
                out = attr(*args, **kw)
            except LevelError as e:
                raise LevelBudgetError(
                    f"{where[0]}: `{where[1]}`: {e}; the program needs more levels than these "
                    f"parameters give (depth {self.params.depth}): use CKKSParams with a larger "
                    "depth, start from a higher level, or use fewer products on this path"
                ) from e
            except RenError as e:
                raise located(e, where) from e
            inputs = tuple(self._origin[id(a)] for a in (*args, *kw.values())
                           if isinstance(a, Ciphertext) and id(a) in self._origin)
            first = next((a for a in args if isinstance(a, Ciphertext)), None)
            was = first.level if first is not None else None
            shadow = SHADOWS[name](self._value, *args, **kw) if self._shadows else None
            if isinstance(out, dict):  # rotate_hoisted
                for k, ct in out.items():
                    self._add(ct, f"{name}[{k}]", where, inputs,
                              None if shadow is None else shadow[k], was)
            else:
                self._add(out, name, where, inputs, shadow, was)
            return out

        return traced


@dataclass
class Report:
    """The steps of a traced program (see the module docstring); `str()` gives a table."""

    steps: list[Step]
    params: CKKSParams
    measured: bool  # bits were measured (precision) or not (budget)

    @property
    def worst(self) -> Step | None:
        """The step that lost the most bits (precision reports)."""
        cands = [s for s in self.steps if not math.isnan(s.lost)]
        return max(cands, key=lambda s: s.lost) if cands else None

    @property
    def levels_used(self) -> int:
        return max((self.params.depth - s.level for s in self.steps), default=0)

    def table(self) -> str:
        head = f"{'#':>3} {'op':<22} {'level':>5} {'log2 scale':>10}"
        if self.measured:
            head += f" {'bits':>6} {'lost':>6}"
        lines = [head + "  where"]
        for s in self.steps:
            row = f"{s.index:>3} {s.op:<22} {s.level:>5} {s.log2_scale:>10.2f}"
            if self.measured:
                lost = "" if math.isnan(s.lost) else f"{s.lost:.1f}"
                row += f" {s.bits:>6.1f} {lost:>6}"
            mark = " (rescaled)" if s.rescaled else ""
            lines.append(f"{row}  {short_where(s.where)}: {s.code}{mark}")
        return "\n".join(lines)

    def summary(self) -> str:
        out = [f"{len(self.steps)} step(s), {self.levels_used} of {self.params.depth} level(s) "
               "used"]
        w = self.worst
        if self.measured and w is not None:
            out.append(f"largest loss: step {w.index} ({w.op}) lost {w.lost:.1f} bits at "
                       f"{short_where(w.where)}: {w.code}")
        return "; ".join(out)

    def __str__(self) -> str:
        return self.table() + "\n" + self.summary()


def precision(fn: Callable[..., Any], *inputs: Any, evaluator: Evaluator,
              secret_key: SecretKey) -> Report:
    """Run ``fn(meter, *cts)`` once with a plaintext shadow and measure every intermediate (see
    the module docstring).  `inputs` are slot values (encrypted here with the secret key at the
    top level) or Ciphertexts."""
    if not isinstance(evaluator, Evaluator):
        raise ParameterError(f"precision: evaluator must be an Evaluator, got "
                             f"{type(evaluator).__name__}")
    if not isinstance(secret_key, SecretKey):
        raise ParameterError(f"precision: secret_key must be a SecretKey, got "
                             f"{type(secret_key).__name__}")
    check_callable(fn, "precision: fn", hint="a function fn(ev, ct, ...) of an evaluator and "
                   "ciphertexts")
    params = evaluator.params
    enc = Encoder(params)
    dec = Decryptor(params, secret_key)
    tracer = _Tracer(evaluator, True, params.slots, enc)
    where = defined_at(fn) or call_site(__file__)  # the inputs enter the program where fn begins
    cts = []
    for i, x in enumerate(inputs):
        if isinstance(x, Ciphertext):
            ct, shadow = x, enc.decode(dec.decrypt(x))
        else:
            if isinstance(x, Plaintext):
                x = enc.decode(x)
            try:  # slot values: one number for every slot, or up to N/2 of them
                shadow = _as_slots(x, params.slots)
            except RenError as e:
                raise type(e)(f"precision: input {i} must be a Ciphertext or slot values (a "
                              f"number or up to {params.slots} numbers): {e}") from None
            ct = Encryptor(params, secret_key).encrypt(enc.encode(shadow))
        tracer._add(ct, "input", where, (), shadow, None)
        cts.append(ct)
    fn(tracer, *cts)
    steps = tracer.steps
    for s in steps:
        got = enc.decode(dec.decrypt(s.ciphertext))
        err = float(np.max(np.abs(got - tracer._shadow[id(s.ciphertext)])))
        s.bits = math.inf if err == 0 else -math.log2(err)
    for s in steps:
        if s.inputs:
            s.lost = min(steps[i].bits for i in s.inputs) - s.bits
    return Report(steps, params, True)


def budget(fn: Callable[..., Any], params: CKKSParams, *inputs: Ciphertext | int | None
           ) -> Report:
    """Trace ``fn(ev, *cts)`` without running a kernel: the level and scale of every
    intermediate.  Each of `inputs` is a Ciphertext, a level (a placeholder there) or None (the
    top level); with no inputs, one placeholder.  Raises LevelBudgetError naming the line of the
    first operation the parameters cannot carry."""
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"budget: params must be CKKSParams, got {type(params).__name__}")
    check_callable(fn, "budget: fn", hint="a function fn(ev, ct, ...) of an evaluator and "
                   "ciphertexts")
    tracer = _Tracer(_PlanningEvaluator(params), False, params.slots, None)
    where = defined_at(fn) or call_site(__file__)
    cts = [x if isinstance(x, Ciphertext) else placeholder(params, x) for x in (inputs or (None,))]
    for ct in cts:
        tracer._add(ct, "input", where, (), None, None)
    with recording(_NoRealize()):
        fn(tracer, *cts)
    return Report(tracer.steps, params, False)


__all__ = ["SHADOWS", "LevelBudgetError", "Report", "Step", "budget", "precision"]
