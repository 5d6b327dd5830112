"""The rotation-key planner: which Galois keys a CKKS function needs, found by tracing it.

    plan = plan_rotation_keys(fn, params)        # fn(ev, ct, ...) is traced, not run
    plan.steps, plan.conjugate                   # the left-rotation steps it uses (mod N/2)
    plan.count, plan.nbytes                      # keys to generate and their serialized bytes
    keys = plan.generate(keygen)                 # exactly those keys (GaloisKeys)
    plan.power_of_two()                          # fewer keys where powers of two compose them
    print(plan.summary())

`fn` is called once with a planning evaluator and placeholder ciphertexts (zeros, at the top
level unless given): every rotation and conjugation is recorded instead of key-switched, and a
relinearization keeps the ciphertext's shape without a key.  Nothing is realized: a function
that reads a value (decrypts, realizes) raises `KeyPlanError`, because planning must not run
kernels.  Scale and level checks still run, so a function that would fail for its parameters
fails here too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ren.ckks.ciphertext import Ciphertext
from ren.ckks.errors import KeyPlanError
from ren.ckks.evaluator import Evaluator
from ren.ckks.params import CKKSParams
from ren.ckks.serialize import serialized_size
from ren.errors import (
    ParameterError,
    check_bool,
    check_callable,
    check_instance,
    check_int_range,
    check_sequence,
)
from ren.poly import Poly
from ren.realization import Recorder, recording
from ren.ring import conjugation_element, galois_element
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKey, GaloisKeys


@dataclass(frozen=True)
class PowerOfTwoPlan:
    """Keys for the powers of two that compose the planned steps (each step k becomes
    popcount(k) rotations), and what that costs in extra key switches."""

    steps: tuple[int, ...]
    nbytes: int
    extra_key_switches: int  # over all the rotations the function makes


@dataclass(frozen=True)
class KeyPlan:
    """The Galois keys a traced function uses (see the module docstring)."""

    params: CKKSParams
    steps: tuple[int, ...]  # left-rotation steps in [1, N/2), in first-use order
    conjugate: bool
    uses: dict[int, int] = field(default_factory=dict)  # step -> rotations made with it

    def __post_init__(self) -> None:  # (a plan may be written by hand, then generate()d)
        check_instance(self.params, CKKSParams, "KeyPlan: params")
        half = self.params.slots
        steps = tuple(check_int_range(k, f"KeyPlan: steps[{i}]", 1, half - 1, hint=(
            "left-rotation steps reduced mod N/2, without 0")) for i, k in enumerate(
            check_sequence(self.steps, "KeyPlan: steps")))
        object.__setattr__(self, "steps", steps)  # (frozen: the checked tuple of ints)
        check_bool(self.conjugate, "KeyPlan: conjugate")
        check_instance(self.uses, dict, "KeyPlan: uses", hint="step -> rotations made with it")
        for k, n in self.uses.items():
            check_int_range(k, "KeyPlan: a step of uses", 1, half - 1)
            check_int_range(n, f"KeyPlan: uses[{k}]", 0)

    @property
    def galois_elements(self) -> list[int]:
        N = self.params.N
        out = [galois_element(N, k) for k in self.steps]
        return out + [conjugation_element(N)] if self.conjugate else out

    @property
    def count(self) -> int:
        """How many Galois keys to generate."""
        return len(self.galois_elements)

    @property
    def nbytes(self) -> int:
        """The serialized bytes of those keys (`ren.ckks.serialize.dumps` of each)."""
        return sum(_key_bytes(self.params, g) for g in self.galois_elements)

    def generate(self, keygen: KeyGenerator, progress: bool = False) -> GaloisKeys:
        """Exactly the keys of this plan."""
        check_instance(keygen, KeyGenerator, "KeyPlan.generate: keygen",
                       hint="a KeyGenerator of the plan's parameters")
        if keygen.params != self.params:
            raise ParameterError("KeyPlan.generate: the key generator has other parameters than "
                                 "the plan")
        return keygen.rotation_keys(list(self.steps), conjugate=self.conjugate,
                                    progress=progress)

    def power_of_two(self) -> PowerOfTwoPlan:
        """The alternative: keys for the powers of two that make up every step."""
        bits = sorted({1 << i for k in self.steps for i in range(k.bit_length()) if k >> i & 1})
        extra = sum(n * (bin(k).count("1") - 1) for k, n in self.uses.items())
        elements = [galois_element(self.params.N, k) for k in bits]
        if self.conjugate:
            elements.append(conjugation_element(self.params.N))
        return PowerOfTwoPlan(tuple(bits), sum(_key_bytes(self.params, g) for g in elements),
                              extra)

    def summary(self) -> str:
        """A few lines: the keys, their bytes, and the power-of-two suggestion if it helps."""
        mib = self.nbytes / 2**20
        lines = [f"{self.count} Galois key(s), {self.nbytes} bytes ({mib:.1f} MiB) at N="
                 f"{self.params.N}: steps {list(self.steps)}"
                 + (" and conjugation" if self.conjugate else "")]
        alt = self.power_of_two()
        if len(alt.steps) < len(self.steps):
            lines.append(f"suggestion: the powers of two {list(alt.steps)} compose every step: "
                         f"{len(alt.steps) + self.conjugate} key(s), {alt.nbytes} bytes, for "
                         f"{alt.extra_key_switches} extra key switch(es) in this function")
        return "\n".join(lines)


def _key_bytes(params: CKKSParams, g: int) -> int:
    """The serialized size of a Galois key for `g`, from a placeholder of the same shape."""
    zero = Poly.const(0, params.key_ring, "NTT", device=params.device)
    rows = (zero,) * len(params.digits)
    return serialized_size(GaloisKey(rows, rows, params, galois=g))


class _PlanningEvaluator(Evaluator):
    """An Evaluator that records automorphisms instead of key-switching them."""

    def __init__(self, params: CKKSParams):
        super().__init__(params)
        N = params.N
        self._step_of = {galois_element(N, k): k for k in range(1, N // 2)}
        self.steps: Counter[int] = Counter()
        # a mutable record, so that the explicit view (`explicit()` copies the attributes) that
        # the algorithms built on the evaluator use records into the same place
        self._conjugated = [False]

    @property
    def conjugated(self) -> bool:
        return self._conjugated[0]

    def _automorph(self, ct: Ciphertext, g: int, what: str, sigma) -> Ciphertext:
        self._need_size2(ct, "rotate/conjugate")
        if g == conjugation_element(self.params.N):
            self._conjugated[0] = True
        else:
            self.steps[self._step_of[g]] += 1
        return Ciphertext(tuple(sigma(p) for p in ct.parts), ct.scale, ct.level, self.params)

    def _hoisted(self, ct: Ciphertext, gs: list[int], whats: list[str],
                 sigmas: list) -> list[Ciphertext]:
        self._need_size2(ct, "rotate_hoisted")
        for g in gs:
            self.steps[self._step_of[g]] += 1
        return [Ciphertext(tuple(sigma(p) for p in ct.parts), ct.scale, ct.level, self.params)
                for sigma in sigmas]

    def relinearize(self, ct: Ciphertext) -> Ciphertext:
        ct = self.check_ciphertext(ct, op="relinearize")
        return ct if ct.size == 2 else Ciphertext(ct.parts[:2], ct.scale, ct.level, self.params)


class _NoRealize(Recorder):
    def on_realize(self, nodes: Sequence[Any]) -> None:
        raise KeyPlanError("plan_rotation_keys: the function read a value (decrypt, realize, "
                           "coefficients); the planner traces without running kernels — plan "
                           "the part that only computes")

    def on_random(self, kind: str) -> None:
        return None  # fresh randomness (encryption) is lazy: fine


def placeholder(params: CKKSParams, level: int | None = None) -> Ciphertext:
    """A zero ciphertext at `level` (default: the top) and its default scale, for tracing."""
    level = params.depth if level is None else params.check_level(level)
    zero = Poly.const(0, params.ring(level), "NTT", device=params.device)
    return Ciphertext((zero, zero), params.scale(level), level, params)


def plan_rotation_keys(fn: Callable[..., Any], params: CKKSParams,
                       *inputs: Ciphertext | int | None) -> KeyPlan:
    """Trace ``fn(ev, *cts)`` and return the keys it needs.  Each of `inputs` is a Ciphertext
    (used as is), a level (a placeholder there) or None (a placeholder at the top level); with
    no `inputs`, `fn` gets one placeholder."""
    if not isinstance(params, CKKSParams):
        raise KeyPlanError(f"plan_rotation_keys: params must be CKKSParams, got "
                           f"{type(params).__name__}")
    check_callable(fn, "plan_rotation_keys: fn", KeyPlanError,
                   hint="a function fn(ev, ct, ...) of an evaluator and ciphertexts")
    cts = [x if isinstance(x, Ciphertext) else placeholder(params, x) for x in (inputs or (None,))]
    ev = _PlanningEvaluator(params)
    with recording(_NoRealize()):
        fn(ev, *cts)
    steps = tuple(ev.steps)  # first-use order
    return KeyPlan(params, steps, ev.conjugated, dict(ev.steps))


__all__ = ["KeyPlan", "KeyPlanError", "PowerOfTwoPlan", "placeholder", "plan_rotation_keys"]
