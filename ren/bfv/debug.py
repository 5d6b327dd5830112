"""The noise-budget meter: a BFV (or BGV) program run beside its exact plaintext result.

    report = budget_meter(fn, [1, 2, 3], [4, 5, 6], evaluator=ev, secret_key=sk)
    print(report)          # per operation: the user's line, parts, noise budget, bits used, wrong
    report.worst           # the operation that consumed the most budget
    report.failures        # operations whose decryption differs from the exact result
    report.check()         # WrongResultError naming the first wrong line, if any

The meter calls ``fn(meter, *cts)`` once, where `meter` stands in for the evaluator (as
`ren.ckks.debug.precision` does for CKKS): every operation runs on the real evaluator and, beside
it, on an *exact shadow*, the same operation on the plaintext values as Python integers mod t
(slot-wise for batch encoding, negacyclic polynomial arithmetic for ``encoding="coeffs"``).
Then every intermediate is decrypted with the secret key (a debug mode: never give a secret key
to production code) and compared with its shadow, and its **noise budget** (SEAL's invariant
noise budget, `Decryptor.noise_budget`, in bits) is measured.

Arithmetic mod t is exact, so there is no "precision loss": a slot that differs from the shadow
is a **failure** (the noise grew past Δ/2 and decryption wrapped), counted per row as *wrong*.
A row's *used* is how many bits of budget it has fewer than the ciphertext operand with the
least budget, so the operation that consumed the most stands out (`Report.worst`).  A budget of
0 predicts a failure; the wrong slots are the proof of it.

Inputs are slot values (encrypted here with the secret key; their shadow is the values mod t),
Plaintexts (encrypted) or Ciphertexts (their shadow is their own decryption).  Operations the
meter does not know (not in `SHADOWS`) run unmetered; a ciphertext they return has no shadow,
and using it in a metered operation is a ParameterError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren.bfv.encoder import COLUMN_GENERATOR, Encoder, Plaintext
from ren.bfv.errors import WrongResultError
from ren.bfv.evaluator import Ciphertext, Decryptor, Encryptor, Evaluator
from ren.callsite import call_site, defined_at, located, short_where
from ren.errors import ParameterError, RenError, check_callable, check_instance, is_int
from ren.rlwe.keys import SecretKey

ENCODINGS = ("batch", "coeffs")


# -- the exact shadow ------------------------------------------------------------------------------
class _Plain:
    """Exact plaintext arithmetic mod t on object arrays of Python ints."""

    def __init__(self, N: int, t: int, encoding: str) -> None:
        self.N, self.t, self.batch = N, t, encoding == "batch"

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.batch:
            return (a * b) % self.t
        N, out = self.N, np.zeros(self.N, dtype=object)
        for i, ai in enumerate(a.tolist()):  # schoolbook negacyclic product
            if ai:
                out[i:] += ai * b[:N - i]
                out[:i] -= ai * b[N - i:]
        return out % self.t

    def galois(self, a: np.ndarray, g: int) -> np.ndarray:
        """The automorphism X -> X^g (g odd mod 2N) on the values."""
        N = self.N
        if self.batch:
            half = N // 2
            rows = a.reshape(2, half)
            if g == 2 * N - 1:
                return rows[::-1].reshape(-1).copy()
            k = next(k for k in range(half) if pow(COLUMN_GENERATOR, k, 2 * N) == g)
            return np.roll(rows, -k, axis=1).reshape(-1)
        out = np.zeros(N, dtype=object)
        for i, v in enumerate(a.tolist()):
            j = i * g % (2 * N)
            if j < N:
                out[j] = v
            else:
                out[j - N] = -v
        return out % self.t


def _column(N: int, k: int) -> int:
    return pow(COLUMN_GENERATOR, int(k) % (N // 2), 2 * N)


#: operation -> its exact meaning on the shadows (V: a shadow or value, P: the _Plain arithmetic)
SHADOWS: dict[str, Callable[..., np.ndarray]] = {
    "add": lambda V, P, a, b: (V(a) + V(b)) % P.t,
    "sub": lambda V, P, a, b: (V(a) - V(b)) % P.t,
    "negate": lambda V, P, a: (-V(a)) % P.t,
    "add_plain": lambda V, P, a, pt: (V(a) + V(pt)) % P.t,
    "sub_plain": lambda V, P, a, pt: (V(a) - V(pt)) % P.t,
    "multiply_plain": lambda V, P, a, pt: P.mul(V(a), V(pt)),
    "multiply_scalar": lambda V, P, a, k: (V(a) * (int(k) % P.t)) % P.t,
    "multiply": lambda V, P, a, b, relin=True: P.mul(V(a), V(b)),
    "multiply_no_relin": lambda V, P, a, b: P.mul(V(a), V(b)),
    "square": lambda V, P, a, relin=True: P.mul(V(a), V(a)),
    "relinearize": lambda V, P, a: V(a),
    "rotate_columns": lambda V, P, a, k: P.galois(V(a), _column(P.N, k)),
    "rotate_rows": lambda V, P, a: P.galois(V(a), 2 * P.N - 1),
    # BGV's level management (`ren.bfv.bgv`) does not change the plaintext
    "mod_switch": lambda V, P, a, *args, **kw: V(a),
    "mod_switch_to": lambda V, P, a, *args, **kw: V(a),
    "switch_to": lambda V, P, a, *args, **kw: V(a),
    "match_factor": lambda V, P, a, *args, **kw: V(a),
}


@dataclass
class Step:
    """One metered operation: what it was, where the user called it, and what it gave."""

    index: int
    op: str
    where: str  # "file:line"
    code: str  # the line of the user's code
    ciphertext: Any = field(repr=False)
    expected: np.ndarray = field(repr=False)  # the exact values mod t
    inputs: tuple[int, ...] = ()  # indices of the steps its ciphertext operands came from
    budget: int = -1  # noise budget in bits after the operation
    used: int | None = None  # bits of budget this operation consumed (None for inputs)
    wrong: int = 0  # slots (or coefficients) that differ from the exact result
    first_wrong: tuple[int, ...] = ()  # up to 8 of them

    @property
    def size(self) -> int:
        return int(self.ciphertext.size)

    @property
    def level(self) -> int | None:
        """The BGV level (None for BFV, which has one)."""
        level = getattr(self.ciphertext, "level", None)
        return None if level is None else int(level)


class _Meter:
    """Stands in for the evaluator inside the metered function (see the module docstring)."""

    def __init__(self, ev: Any, plain: _Plain, decode: Callable[[Plaintext], np.ndarray],
                 ciphertext_type: type) -> None:
        self._ev, self._plain, self._decode, self._ct_type = ev, plain, decode, ciphertext_type
        self.steps: list[Step] = []
        self._origin: dict[int, int] = {}  # id(ct) -> step index
        self.params = ev.params

    def _add(self, ct: Any, op: str, where: tuple[str, str], inputs: tuple[int, ...],
             expected: np.ndarray) -> None:
        step = Step(len(self.steps), op, where[0], where[1], ct, expected, inputs)
        self.steps.append(step)
        self._origin[id(ct)] = step.index

    def _value(self, v: Any) -> np.ndarray:
        if isinstance(v, self._ct_type):
            if id(v) not in self._origin:
                raise ParameterError("budget_meter: a ciphertext that no metered operation made; "
                                     "the meter follows evaluator operations on its inputs only")
            return self.steps[self._origin[id(v)]].expected
        if isinstance(v, Plaintext):
            return np.array([int(x) for x in self._decode(v).tolist()], dtype=object)
        raise ParameterError(f"budget_meter: cannot shadow a {type(v).__name__} operand")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ev, name)
        if name not in SHADOWS:
            return attr

        def metered(*args: Any, **kw: Any) -> Any:
            where = call_site(__file__)
            try:
                out = attr(*args, **kw)
                expected = SHADOWS[name](self._value, self._plain, *args, **kw)
            except RenError as e:
                raise located(e, where) from e
            inputs = tuple(self._origin[id(a)] for a in (*args, *kw.values())
                           if isinstance(a, self._ct_type) and id(a) in self._origin)
            self._add(out, name, where, inputs, expected)
            return out

        return metered


@dataclass
class Report:
    """The metered steps of a program (see the module docstring); `str()` gives a table."""

    steps: list[Step]
    params: Any
    encoding: str

    @property
    def failures(self) -> list[Step]:
        """The steps whose decryption differs from the exact result, in program order."""
        return [s for s in self.steps if s.wrong]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def worst(self) -> Step | None:
        """The operation that consumed the most noise budget (the first of equals)."""
        cands = [s for s in self.steps if s.used is not None]
        return max(cands, key=lambda s: s.used or 0) if cands else None

    @property
    def final_budget(self) -> int:
        return self.steps[-1].budget if self.steps else 0

    def table(self) -> str:
        levels = any(s.level is not None for s in self.steps)
        lvl = f" {'level':>5}" if levels else ""
        lines = [f"{'#':>3} {'op':<18} {'parts':>5}{lvl} {'budget':>6} {'used':>5} "
                 f"{'wrong':>6}  where"]
        for s in self.steps:
            used = "" if s.used is None else str(s.used)
            wrong = f"{s.wrong} FAIL" if s.wrong else "0"
            lvl = f" {s.level:>5}" if levels else ""
            lines.append(f"{s.index:>3} {s.op:<18} {s.size:>5}{lvl} {s.budget:>6} {used:>5} "
                         f"{wrong:>6}  {short_where(s.where)}: {s.code}")
        return "\n".join(lines)

    def summary(self) -> str:
        unit = "slot" if self.encoding == "batch" else "coefficient"
        out = [f"{len(self.steps)} step(s), noise budget left {self.final_budget} bits"]
        w = self.worst
        if w is not None:
            out.append(f"most budget used: step {w.index} ({w.op}) used {w.used} bits at "
                       f"{short_where(w.where)}: {w.code}")
        if self.failures:
            f = self.failures[0]
            out.append(f"FAILED: step {f.index} ({f.op}) at {short_where(f.where)}: {f.code} "
                       f"decrypts {f.wrong} {unit}(s) wrong (first: {list(f.first_wrong)}) "
                       f"with {f.budget} bits of budget left: the noise ran out; use "
                       "parameters with more budget (a larger chain Q, a smaller t) or fewer "
                       "multiplications on this path")
        else:
            out.append(f"every {unit} exact")
        return "; ".join(out)

    def check(self) -> Report:
        """The report itself if every step decrypted exactly; else WrongResultError naming the
        first wrong step's line."""
        if self.failures:
            raise WrongResultError(f"budget_meter: {self.summary()}")
        return self

    def __str__(self) -> str:
        return self.table() + "\n" + self.summary()


def _scheme(evaluator: Any) -> tuple[Any, Any, Any, Any]:
    """(Evaluator, Ciphertext, Encryptor, Decryptor) classes of the evaluator's scheme."""
    if isinstance(evaluator, Evaluator):
        return Evaluator, Ciphertext, Encryptor, Decryptor
    bgv = _bgv()
    if bgv is not None and isinstance(evaluator, bgv.BGVEvaluator):
        return bgv.BGVEvaluator, bgv.BGVCiphertext, bgv.BGVEncryptor, bgv.BGVDecryptor
    raise ParameterError(f"budget_meter: evaluator must be a ren.bfv Evaluator or a "
                         f"BGVEvaluator, got {type(evaluator).__name__}")


def _bgv() -> Any:
    """The BGV module (`ren.bfv.bgv`, beside BFV: it shares the plaintexts and the encoder)."""
    try:
        from ren.bfv import bgv
    except ImportError:  # pragma: no cover - a build without BGV
        return None
    return bgv


def budget_meter(fn: Callable[..., Any], *inputs: Any, evaluator: Any, secret_key: SecretKey,
                 encoding: str = "batch") -> Report:
    """Run ``fn(meter, *cts)`` once beside its exact plaintext result and measure the noise
    budget of every intermediate (see the module docstring).  `inputs`: slot values (or
    coefficients with ``encoding="coeffs"``; ints of any sign, reduced mod t), Plaintexts or
    Ciphertexts."""
    _, ct_type, enc_type, dec_type = _scheme(evaluator)
    check_instance(secret_key, SecretKey, "budget_meter: secret_key")
    check_callable(fn, "budget_meter: fn", hint="a function fn(ev, ct, ...) of an evaluator and "
                   "ciphertexts")
    if not isinstance(encoding, str) or encoding not in ENCODINGS:
        raise ParameterError(f"budget_meter: encoding must be one of {ENCODINGS}, got "
                             f"{encoding!r}"[:200])
    params = evaluator.params
    enc = Encoder(params)
    dec = dec_type(params, secret_key)
    encryptor = enc_type(params, secret_key)
    batch = encoding == "batch"
    encode = enc.encode if batch else enc.encode_coeffs
    decode = enc.decode if batch else enc.decode_coeffs
    meter = _Meter(evaluator, _Plain(params.N, params.t, encoding), decode, ct_type)
    where = defined_at(fn) or call_site(__file__)  # the inputs enter the program where fn begins
    cts = []
    for i, x in enumerate(inputs):
        if isinstance(x, ct_type):
            ct = x
        else:
            if not isinstance(x, Plaintext):
                if is_int(x):
                    x = [x] * (params.N if batch else 1)
                try:
                    x = encode(x)
                except RenError as e:
                    raise type(e)(f"budget_meter: input {i} must be a Ciphertext, a Plaintext or "
                                  f"up to {params.N} ints: {e}") from None
            ct = encryptor.encrypt(x)
        pt = dec.decrypt(ct) if isinstance(x, ct_type) else x  # values: exact by construction
        shadow = np.array([int(v) for v in decode(pt).tolist()], dtype=object)
        meter._add(ct, "input", where, (), shadow)
        cts.append(ct)
    fn(meter, *cts)
    steps = meter.steps
    for s in steps:
        got = decode(dec.decrypt(s.ciphertext)).astype(object)
        bad = np.nonzero(got != s.expected)[0]
        s.wrong, s.first_wrong = int(bad.size), tuple(int(j) for j in bad[:8])
        s.budget = int(dec.noise_budget(s.ciphertext))
    for s in steps:
        if s.inputs:
            s.used = min(steps[i].budget for i in s.inputs) - s.budget
    return Report(steps, params, encoding)


__all__ = ["ENCODINGS", "SHADOWS", "Report", "Step", "budget_meter"]
