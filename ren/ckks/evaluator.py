"""The CKKS `Evaluator`: homomorphic arithmetic on Ciphertexts, as lazy Poly graphs.

Scales are exact Fractions: a product's scale is the product of the scales, a rescale divides by
the product of the dropped primes.  Two modes (``Evaluator(..., mode=)``):

* ``"auto"`` (the default) brings operands together by itself, exactly, as OpenFHE's
  FLEXIBLEAUTO does.  A ciphertext that is an unrescaled product (its scale more than half a
  scale step above its level's default scale) is rescaled before it is multiplied again or added
  to something; a size-3 ciphertext is relinearized before a product or a rotation.  Operands at
  different levels meet at the lower level with the lower one's scale: the higher one is dropped
  to one level above and reaches that scale exactly with an integer product and a rescale, which
  costs no level of the result.  Only two ciphertexts at the same level with different scales
  cost a level (both move to the next level's default scale).  So ``ev.add(ct1, ct2)`` and
  ``ev.multiply(ev.multiply(a, b), c)`` just work; products are rescaled when next needed.
  A Plaintext meets a ciphertext the same way, and more cheaply: a plaintext at a lower level
  is met by the ciphertext (free, as above); one at the ciphertext's level or above follows the
  ciphertext.  It is re-encoded from the values it was encoded from (`Plaintext.values`), at
  any level and scale, exactly and for free; when only its words are known (decrypted,
  deserialized, inside `ren.jit`), it is dropped to the ciphertext's level (a view), reaches a
  lower level's scale by an integer product and a rescale of its words, or an integer multiple
  of its scale by an integer product; only words at the ciphertext's own level with a scale no
  integer reaches cost a level (both move to the next level's default scale), as two
  ciphertexts would.  Additions need the one scale; a product only the one level, and takes
  the scale too when the levels differ (so its rescale lands on the next default scale).
  `align` brings a ciphertext to a requested level and scale by the same free moves.
* ``"explicit"``: nothing happens by itself.  Operands at different levels are aligned by
  dropping the higher one (a view); additions need equal scales (`adjust_scale` or
  ``multiply_scalar(..., target_scale=)`` make them equal), and rescaling is the caller's.
  For people who study the choices, and for the algorithms built on the Evaluator
  (polynomials, linear transforms), which place every rescale themselves.

Every result's scale must fit its level (`CKKSParams.check_scale`: at least 1, and a message of
magnitude 1, times the operation's own constant, below Q_level/2): an operation that would break
this raises `ScaleOutOfBoundsError` naming itself and the fix, instead of returning a ciphertext
that decrypts to garbage.

Relinearization, rotations and conjugation are the RLWE layer's key switching
(`ren.rlwe.relinearize`, `ren.rlwe.automorphism`); this module owns levels and scales, and its
mixin `ren.ckks.alignment.LevelsAndScales` the moves that bring operands to one level and scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from numbers import Number
from typing import Any

import numpy as np

from ren.ckks.alignment import LevelsAndScales, prod
from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.encoder import Encoder
from ren.ckks.errors import (
    MissingKeyError,
    OutOfLevelsError,
    ParamsMismatchError,
)
from ren.ckks.operations import OPERATIONS, operation
from ren.ckks.params import (
    CKKSParams,
    log2_exact,
    normalize_scale,
    rescaled,
)
from ren.ckks.programs import PROGRAMS, REGISTERED, register_program, registered_program
from ren.errors import (
    ParameterError,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_int_range,
    check_number,
    check_sequence,
    is_int,
)
from ren.poly import Poly
from ren.ring import conjugation_element, galois_element
from ren.rlwe.automorphism import automorphism, hoisted_automorphisms
from ren.rlwe.keys import GaloisKeys, RelinKey
from ren.rlwe.keyswitch import relinearize

Operand = Ciphertext | Plaintext | int | float | complex | np.ndarray | list


class Evaluator(LevelsAndScales):
    """Homomorphic operations.  Every method returns a new (lazy) Ciphertext.

    ``mode="auto"`` (default) meets operands at a common level and exact scale and rescales or
    relinearizes when needed; ``mode="explicit"`` leaves all of it to the caller (see the module
    docstring); `explicit()` gives the explicit view of an evaluator, with the same keys.

    ====================  ==========================================================================
    add, sub              ct ± ct / Plaintext / number / vector (vectors are encoded at ct's scale)
    negate                −ct
    add_plain, sub_plain  ct ± Plaintext (same scale)
    add_scalar,           ct ± c for a real or complex number c (encoded exactly at ct's scale)
    sub_scalar
    multiply              ct·ct (relinearized unless relinearize=False), ct·Plaintext, ct·int,
                          ct·number, ct·vector; the scale multiplies, call `rescale` after
    square                ct·ct with one fewer product
    multiply_plain        ct·Plaintext
    multiply_scalar       ct·c, c encoded at the level's scale (or `scale=`, or chosen so that the
                          next rescale lands exactly on `target_scale=`)
    multiply_int          ct·k for an integer k: the scale and level do not change
    relinearize           a size-3 ciphertext back to size 2 (needs the relinearization key)
    rescale               divide by the level's primes: level − 1, scale / their product (exact)
    drop_level            move to a lower level without changing the scale (a view)
    align                 move to a lower level and exactly a given scale at no cost to the
                          result's level (a view, or an integer product and a rescale)
    adjust_scale          rescale to exactly a requested scale (uses one level)
    rotate                slots rotated left by k (negative: right); needs the key for k mod N/2
    conjugate             complex conjugate of every slot (needs the conjugation key)
    rotate_sum            every slot holds the sum of n consecutive slots (n = N/2: the total);
                          needs the keys for 1, 2, 4, …, n/2
    rotate_hoisted        several rotations of one ciphertext sharing one key-switching
                          decomposition (a dict step -> Ciphertext)
    evaluate_polynomial   p(ct) in the power or Chebyshev basis, at the optimal depth
    linear_transform      M·ct for a matrix or its diagonals (baby-step giant-step, hoisted)
    ====================  ==========================================================================

    For the algorithms built on it (`ren.ckks.circuits`: polynomials, linear transforms,
    bootstrapping), which use only this public API: `check_ciphertext` (an argument checked as
    the operations check theirs), `is_unrescaled_product` (what auto mode rescales first),
    `align` (a ciphertext brought to a level and an exact scale for free), `explicit`.
    `evaluate_polynomial` and `linear_transform` are those circuits' own functions
    (`register_program`): this module does not import them.
    """

    def __init__(self, params: CKKSParams, relin_key: RelinKey | None = None,
                 rotation_keys: GaloisKeys | None = None, mode: str = "auto") -> None:
        check_instance(params, CKKSParams, "Evaluator: params",
                       hint="make them with ren.ckks.CKKSParams(...) or CKKSParams.preset(...)")
        self.params = params
        self.mode = check_choice(mode, "Evaluator: mode", MODES)
        for key, kind, name, make in (
                (relin_key, RelinKey, "relin_key", "relin_key()"),
                (rotation_keys, GaloisKeys, "rotation_keys", "rotation_keys([...])")):
            if key is None:
                continue
            check_instance(key, kind, f"Evaluator: {name}",
                           hint=f"make it with KeyGenerator(params).{make}")
            if key.params != params:
                raise ParamsMismatchError(f"Evaluator: {name} was made under other CKKSParams")
        self.relin_key = relin_key
        self.rotation_keys = rotation_keys
        self.encoder = Encoder(params)

    @property
    def auto(self) -> bool:
        return self.mode == "auto"

    def explicit(self) -> Evaluator:
        """This evaluator in explicit mode (the same keys): what the algorithms built on it use,
        since they place every rescale and scale themselves."""
        if not self.auto:
            return self
        return _explicit_view(self)

    # -- checks and alignment -------------------------------------------------------------------
    def check_ciphertext(self, ct: Any, what: str = "ciphertext", op: str = "") -> Ciphertext:
        """`ct` if it is a Ciphertext of these parameters, else a RenError (ParameterError for
        another type, ParamsMismatchError for other parameters) naming `op` (the caller) and
        `what` (the argument).  What the evaluator's operations check their ciphertexts with,
        offered to the algorithms built on it (`ren.ckks.circuits`)."""
        if type(what) is not str or type(op) is not str:
            raise ParameterError(f"check_ciphertext: what and op name the argument and the "
                                 f"caller (strings), got {type(what).__name__} and "
                                 f"{type(op).__name__}")
        where = f"{op}: the {what}" if op else f"the {what}"
        if not isinstance(ct, Ciphertext):
            check_instance(ct, Ciphertext, where, hint=(
                "put the ciphertext first: ev.add(ct, pt), ev.multiply(ct, pt)"
                if isinstance(ct, Plaintext) else "encrypt values with an Encryptor first"))
        if ct.params != self.params:
            raise ParamsMismatchError(f"{where} was made under other CKKSParams than the "
                                      "evaluator's; use objects from one parameter set")
        return ct

    def _pt(self, pt: Any, op: str = "") -> Plaintext:
        where = f"{op}: the plaintext" if op else "the plaintext"
        check_instance(pt, Plaintext, where,
                       hint="encode values with the evaluator's encoder (ev.encoder.encode)")
        if pt.params != self.params:
            raise ParamsMismatchError(f"{where} was made under other CKKSParams than the "
                                      "evaluator's; encode with an Encoder of these parameters")
        return pt

    # -- the automatic mode ----------------------------------------------------------------------
    def is_unrescaled_product(self, ct: Ciphertext) -> bool:
        """Whether `ct` is an unrescaled product: its scale more than half a scale step above
        its level's default (what auto mode rescales before the next product or sum, and what
        code that places its own rescales, such as bootstrapping, rescales first)."""
        ct = self.check_ciphertext(ct, op="is_unrescaled_product")
        p = self.params
        return ct.level > 0 and ct.scale > p.scale(ct.level) * _half_step(p.scale_bits)

    # -- addition ---------------------------------------------------------------------------------
    def add(self, a: Ciphertext, b: Operand) -> Ciphertext:
        """a + b for a Ciphertext, Plaintext, number or vector b."""
        return self._addsub(a, b, +1)

    def sub(self, a: Ciphertext, b: Operand) -> Ciphertext:
        """a − b for a Ciphertext, Plaintext, number or vector b."""
        return self._addsub(a, b, -1)

    def _addsub(self, a, b, sign: int) -> Ciphertext:
        op = "add" if sign > 0 else "sub"
        a = self.check_ciphertext(a, "first operand", op)
        _check_operand(b, op)
        if isinstance(b, Ciphertext):
            b = self.check_ciphertext(b, "second operand", op)
            if self.auto and (a.level, a.scale) != (b.level, b.scale):
                # (equal ones add as they are: a sum of products needs one rescale, later)
                a, b = self._meet(self._ready(a), self._ready(b), op)
            a, b = self._align(a, b)
            self._same_scale(a, b, op)
            n = max(a.size, b.size)
            parts = []
            for i in range(n):
                if i < a.size and i < b.size:
                    parts.append(a.parts[i] + b.parts[i] if sign > 0 else a.parts[i] - b.parts[i])
                else:
                    parts.append(a.parts[i] if i < a.size else
                                 (b.parts[i] if sign > 0 else -b.parts[i]))
            return Ciphertext(tuple(parts), a.scale, a.level, self.params)
        if isinstance(b, Plaintext):
            return self._add_plain(a, b, sign)
        if isinstance(b, Number):
            return self._add_scalar(a, _number(b, op) * sign)
        return self._add_plain(a, self._encode_like(a, b), sign)

    def add_plain(self, ct: Ciphertext, pt: Plaintext) -> Ciphertext:
        """ct + pt (auto mode meets levels and scales; explicit mode needs equal scales)."""
        return self._add_plain(self.check_ciphertext(ct, op="add_plain"), pt, +1)

    def sub_plain(self, ct: Ciphertext, pt: Plaintext) -> Ciphertext:
        """ct − pt (auto mode meets levels and scales; explicit mode needs equal scales)."""
        return self._add_plain(self.check_ciphertext(ct, op="sub_plain"), pt, -1)

    def _add_plain(self, ct: Ciphertext, pt, sign: int) -> Ciphertext:
        op = "add_plain" if sign > 0 else "sub_plain"
        pt = self._pt(pt, op)
        if self.auto and (ct.level, ct.scale) != (pt.level, pt.scale):
            # (equal ones add as they are, an unrescaled product too)
            ct, pt = self._meet_plain(self._ready(ct), pt, op)
        ct, pt = self._align(ct, pt)
        self._same_scale(ct, pt, op)
        c0 = ct.c0 + pt.poly if sign > 0 else ct.c0 - pt.poly
        return Ciphertext((c0, *ct.parts[1:]), ct.scale, ct.level, self.params)

    def add_scalar(self, ct: Ciphertext, c: complex) -> Ciphertext:
        """ct + c in every slot (c encoded at ct's scale, exactly rounded)."""
        return self._add_scalar(self.check_ciphertext(ct, op="add_scalar"),
                                _number(c, "add_scalar"))

    def sub_scalar(self, ct: Ciphertext, c: complex) -> Ciphertext:
        """ct − c in every slot (c encoded at ct's scale, exactly rounded)."""
        return self._add_scalar(self.check_ciphertext(ct, op="sub_scalar"),
                                -_number(c, "sub_scalar"))

    def _add_scalar(self, ct: Ciphertext, c: complex) -> Ciphertext:
        if c.imag != 0:  # a complex constant is re + im·X^(N/2): encode it as a vector
            return self._add_plain(ct, self._encode_like(ct, c), +1)
        self.params.check_scale(ct.scale, ct.level, "add_scalar", message=1 + abs(c), fix=(
            "the constant does not fit at this scale and level; add it at a higher level or a "
            "smaller scale, or scale it down first"))
        k = round(Fraction(c.real) * ct.scale)
        if k == 0:
            return ct
        return Ciphertext((ct.c0 + k, *ct.parts[1:]), ct.scale, ct.level, self.params)

    def negate(self, ct: Ciphertext) -> Ciphertext:
        """−ct."""
        ct = self.check_ciphertext(ct, op="negate")
        return Ciphertext(tuple(-c for c in ct.parts), ct.scale, ct.level, self.params)

    # -- multiplication ---------------------------------------------------------------------------
    def multiply(self, a: Ciphertext, b: Operand, relinearize: bool = True) -> Ciphertext:
        """a·b for a Ciphertext (relinearized unless `relinearize` is False), Plaintext, int,
        number or vector b.  Not rescaled: call `rescale` after.

        An int and a float differ on purpose: ``multiply(ct, 2)`` is exact (`multiply_int`: the
        scale and the level stay, no rescale needed), while ``multiply(ct, 2.0)`` encodes 2.0 at
        the level's scale (`multiply_scalar`: the scale is multiplied by it, and a `rescale`
        afterwards costs a level).  Pass an int whenever the factor is one."""
        a = self.check_ciphertext(a, "first operand", "multiply")
        relinearize = check_bool(relinearize, "multiply: relinearize")
        _check_operand(b, "multiply")
        if isinstance(b, Ciphertext):
            b = self.check_ciphertext(b, "second operand", "multiply")
            return self._mul_ct(a, b, relinearize)
        if isinstance(b, Plaintext):
            return self.multiply_plain(a, b)
        if is_int(b):
            return self.multiply_int(a, check_int(b, "multiply: the factor"))
        if isinstance(b, Number):
            return self.multiply_scalar(a, b)
        a = self._ready(a)  # (the vector is encoded where the product happens)
        return self.multiply_plain(a, self._encode_like(a, b, self.params.scale(a.level)))

    def square(self, ct: Ciphertext, relinearize: bool = True) -> Ciphertext:
        """ct·ct with one fewer product (relinearized unless `relinearize` is False)."""
        ct = self.check_ciphertext(ct, op="square")
        relinearize = check_bool(relinearize, "square: relinearize")
        ct = self._ready(ct, True)
        self._need_size2(ct, "square")
        c0, c1 = ct.parts
        d = (c0 * c0, (c0 * c1) * 2, c1 * c1)
        return self._finish_product(d, ct.scale * ct.scale, ct.level, relinearize, "square")

    def _mul_ct(self, a: Ciphertext, b: Ciphertext, relinearize: bool) -> Ciphertext:
        if self.auto:  # both rescaled and on one level and scale (free when levels differ)
            a, b = self._ready(a, True), self._ready(b, True)
            a, b = self._meet(a, b, "multiply", scales=a.level != b.level)
        a, b = self._align(a, b)
        self._need_size2(a, "multiply")
        self._need_size2(b, "multiply")
        (a0, a1), (b0, b1) = a.parts, b.parts
        d = (a0 * b0, a0 * b1 + a1 * b0, a1 * b1)
        return self._finish_product(d, a.scale * b.scale, a.level, relinearize, "multiply")

    @staticmethod
    def _need_size2(ct: Ciphertext, op: str) -> None:
        if ct.size != 2:
            raise ParameterError(f"{op}: the ciphertext has {ct.size} parts; relinearize it first")

    def _product_scale(self, scale: Fraction, level: int, op: str,
                       message: float | Fraction = 1) -> Fraction:
        """The normalized scale of a product at `level`, checked (ScaleOutOfBoundsError)."""
        def fix() -> str:
            out = (f"rescale the operands before multiplying (each rescale divides the scale by "
                   f"about 2^{self.params.scale_bits}), multiply at a higher level, or use "
                   "parameters with more depth or a larger first_bits")
            if message != 1:
                out = "use a smaller constant (or a smaller encoding scale, scale=), or " + out
            return out
        return self.params.check_scale(normalize_scale(scale), level, op, message, fix=fix)

    def _finish_product(self, d, scale, level: int, relinearize: bool, op: str) -> Ciphertext:
        ct = Ciphertext(tuple(d), self._product_scale(scale, level, op), level, self.params)
        return self.relinearize(ct) if relinearize else ct

    def relinearize(self, ct: Ciphertext) -> Ciphertext:
        """(d0, d1, d2) -> (d0, d1) + keyswitch(d2 from s² to s)."""
        ct = self.check_ciphertext(ct, op="relinearize")
        if ct.size == 2:
            return ct
        if self.relin_key is None:
            raise MissingKeyError("relinearize: the evaluator has no relinearization key; pass "
                                  "relin_key=keygen.relin_key() to Evaluator (or multiply with "
                                  "relinearize=False)")
        return Ciphertext(relinearize(ct.parts, self.relin_key, ct.level), ct.scale, ct.level,
                          self.params)

    def multiply_plain(self, ct: Ciphertext, pt: Plaintext) -> Ciphertext:
        """ct·pt; the scale becomes ct.scale·pt.scale.  In auto mode operands at different levels
        meet as two ciphertexts would (one level, and the lower one's scale)."""
        ct = self._ready(self.check_ciphertext(ct, op="multiply_plain"))
        pt = self._pt(pt, "multiply_plain")
        if self.auto and ct.level != pt.level:
            ct, pt = self._meet_plain(ct, pt, "multiply_plain")
        ct, pt = self._align(ct, pt)
        scale = self._product_scale(ct.scale * pt.scale, ct.level, "multiply_plain")
        return Ciphertext(tuple(c * pt.poly for c in ct.parts), scale, ct.level, self.params)

    def multiply_int(self, ct: Ciphertext, k: int) -> Ciphertext:
        """ct·k for an integer k; scale and level unchanged."""
        ct = self.check_ciphertext(ct, op="multiply_int")
        k = check_int(k, "multiply_int: k", hint="for a fractional factor use multiply_scalar")
        self._product_scale(ct.scale, ct.level, "multiply_int", message=abs(k))
        if k == 0:  # the zero ciphertext (a constant, so no x·0 graph is built) on ct's device
            zero = Poly.const(0, self.params.ring(ct.level), "NTT", device=ct.c0.device)
            return Ciphertext((zero, zero), ct.scale, ct.level, self.params)
        if k == 1:
            return ct
        return Ciphertext(tuple(c * k for c in ct.parts), ct.scale, ct.level, self.params)

    def multiply_scalar(self, ct: Ciphertext, c: complex, scale: Fraction | float | None = None,
                        *, target_scale: Fraction | float | None = None) -> Ciphertext:
        """ct·c with c encoded at `scale` (default: the level's scale): the result's scale is
        ct.scale·scale.  With `target_scale`, the encoding scale is target·P_l/ct.scale, so the
        next `rescale` gives exactly `target_scale` (c is rounded to an integer multiple of
        1/scale, a relative error below 1/(2·|c|·scale))."""
        ct = self._ready(self.check_ciphertext(ct, op="multiply_scalar"))
        c = _number(c, "multiply_scalar")
        p = self.params
        if target_scale is not None:
            if scale is not None:
                raise ParameterError("multiply_scalar: give scale or target_scale, not both")
            target = self._scale_arg(target_scale, "multiply_scalar: target_scale")
            if ct.level == 0:
                raise OutOfLevelsError("multiply_scalar(target_scale=): a level-0 ciphertext "
                                       "cannot be rescaled afterwards")
            enc_scale = normalize_scale(target * prod(p.rescale_moduli(ct.level)) / ct.scale)
            p.check_scale(enc_scale, ct.level, "multiply_scalar(target_scale=)", fix_small=lambda: (
                f"reaching 2^{log2_exact(target):.2f} after the next rescale needs an encoding "
                f"scale of 2^{log2_exact(enc_scale):.2f}: the ciphertext's scale 2^"
                f"{ct.log2_scale:.2f} is more than one level's primes above the target; "
                "rescale first, or choose a larger target"))
        elif scale is not None:
            enc_scale = p.check_scale(self._scale_arg(scale, "multiply_scalar: scale"), ct.level,
                                      "multiply_scalar: the encoding scale")
        else:
            enc_scale = p.scale(ct.level)
        out_scale = self._product_scale(ct.scale * enc_scale, ct.level, "multiply_scalar",
                                        message=abs(c))
        if c.imag != 0:
            return self.multiply_plain(ct, self.encoder.encode(
                np.full(p.slots, c), ct.level, enc_scale))
        k = round(Fraction(c.real) * enc_scale)
        out = self.multiply_int(ct, k)
        return Ciphertext(out.parts, out_scale, ct.level, p)

    def _encode_like(self, ct: Ciphertext, values, scale=None) -> Plaintext:
        return self.encoder.encode(values, ct.level, ct.scale if scale is None else scale)

    # -- levels -----------------------------------------------------------------------------------
    def rescale(self, ct: Ciphertext) -> Ciphertext:
        """Divide by the level's primes (exact rounding): one level down, scale / their product."""
        ct = self.check_ciphertext(ct, op="rescale")
        if ct.level == 0:
            raise OutOfLevelsError("rescale: the ciphertext is at level 0 (no primes left to "
                                   "divide by); use larger parameters (more depth) or bootstrap")
        moduli = self.params.rescale_moduli(ct.level)
        scale = self.params.check_scale(
            rescaled(ct.scale, moduli), ct.level - 1, "rescale", fix_small=lambda: (
                f"rescale only after a multiplication: it divides the scale 2^"
                f"{ct.log2_scale:.2f} by the level's primes (2^"
                f"{log2_exact(Fraction(prod(moduli))):.2f})"))
        return Ciphertext(tuple(c.rescale(moduli) for c in ct.parts), scale, ct.level - 1,
                          self.params)

    def adjust_scale(self, ct: Ciphertext, target_scale: Fraction | float) -> Ciphertext:
        """ct with exactly `target_scale`, one level lower (multiply by an integer close to
        target·P_l/scale, then rescale)."""
        ct = self.check_ciphertext(ct, op="adjust_scale")
        target = self._scale_arg(target_scale, "adjust_scale: target_scale")
        if ct.level == 0:
            raise OutOfLevelsError("adjust_scale: the ciphertext is at level 0, and adjusting "
                                   "the scale spends a level; adjust it before it reaches level "
                                   "0, or use parameters with more depth")
        self.params.check_scale(target, ct.level - 1, "adjust_scale", fix=lambda: (
            f"the target must fit level {ct.level - 1}, where the result lands; choose a smaller "
            "target scale or adjust at a higher level"))
        return self.rescale(self.multiply_scalar(ct, 1.0, target_scale=target))

    # -- automorphisms ----------------------------------------------------------------------------
    def rotate(self, ct: Ciphertext, k: int) -> Ciphertext:
        """Slots rotated left by k (right for negative k): slot j gets slot j + k."""
        ct = self.check_ciphertext(ct, op="rotate")
        k = check_int(k, "rotate: k", hint="a rotation step (negative: to the right)")
        if k % self.params.slots == 0:
            return ct
        g = galois_element(self.params.N, k)
        return self._automorph(ct, g, f"rotation step {k} (Galois element {g})",
                               lambda p: p.rotate(k))

    def conjugate(self, ct: Ciphertext) -> Ciphertext:
        """The complex conjugate of every slot."""
        ct = self.check_ciphertext(ct, op="conjugate")
        g = conjugation_element(self.params.N)
        return self._automorph(ct, g, "conjugation (pass conjugate=True to rotation_keys)",
                               lambda p: p.conjugate())

    def rotate_hoisted(self, ct: Ciphertext, steps: Sequence[int]) -> dict[int, Ciphertext]:
        """ct rotated left by each of `steps`, the rotations sharing one decomposition of ct
        (`ren.rlwe.hoisted_automorphisms`): one INTT, basis conversion and NTT per digit in all
        instead of per rotation.  Returns {step: Ciphertext}; a step ≡ 0 (mod N/2) is ct."""
        ct = self.check_ciphertext(ct, op="rotate_hoisted")
        items = check_sequence(steps, "rotate_hoisted: steps",
                               hint="a list of rotation steps, e.g. [1, 2, 4]")
        out: dict[int, Ciphertext] = {}
        todo: dict[int, int] = {}  # step -> Galois element
        for i, k in enumerate(items):
            k = check_int(k, f"rotate_hoisted: steps[{i}]", hint="steps must be ints")
            if k % self.params.slots == 0:
                out[k] = ct
            else:
                todo[k] = galois_element(self.params.N, k)
        if todo:
            sigmas = [lambda p, k=k: p.rotate(k) for k in todo]
            whats = [f"rotation step {k} (Galois element {g})" for k, g in todo.items()]
            rotated = self._hoisted(ct, list(todo.values()), whats, sigmas)
            out.update(zip(todo, rotated, strict=True))
        return out

    def _hoisted(self, ct: Ciphertext, gs: list[int], whats: list[str],
                 sigmas: list) -> list[Ciphertext]:
        if self.auto and ct.size == 3:
            ct = self.relinearize(ct)
        self._need_size2(ct, "rotate_hoisted")
        keys = [self._galois_key(g, what) for g, what in zip(gs, whats, strict=True)]
        return [Ciphertext(parts, ct.scale, ct.level, self.params)
                for parts in hoisted_automorphisms(ct.parts, keys, ct.level, sigmas)]

    def _galois_key(self, g: int, what: str):
        if self.rotation_keys is None:
            raise MissingKeyError(f"no key for {what}: the evaluator has no rotation keys; pass "
                                  "rotation_keys=keygen.rotation_keys([...]) to Evaluator")
        return self.rotation_keys.for_galois(g, what)

    def _automorph(self, ct: Ciphertext, g: int, what: str, sigma) -> Ciphertext:
        if self.auto and ct.size == 3:
            ct = self.relinearize(ct)
        self._need_size2(ct, "rotate/conjugate")
        key = self._galois_key(g, what)
        return Ciphertext(automorphism(ct.parts, key, ct.level, sigma), ct.scale, ct.level,
                          self.params)

    # -- programs (ren.ckks.circuits) ------------------------------------------------------------
    def evaluate_polynomial(self, ct: Ciphertext, coeffs: Sequence[complex],
                            basis: str = "power",
                            interval: tuple[float, float] | None = None) -> Ciphertext:
        """p(ct) for p = Σ coeffs[i]·x^i (``basis="power"``) or Σ coeffs[i]·T_i(x)
        (``basis="chebyshev"``, x mapped from `interval` onto [-1, 1] first, one more level).
        Consumes exactly ⌈log2(degree+1)⌉ levels; the result has its level's default scale
        (`ren.ckks.circuits.polyeval.evaluate_polynomial`, which also fits Chebyshev
        coefficients to a function).  In auto mode an unrescaled product is rescaled first."""
        return registered_program("evaluate_polynomial")(self, ct, coeffs, basis, interval)

    def linear_transform(self, ct: Ciphertext, transform: Any,
                         hoisted: bool | str = True) -> Ciphertext:
        """M·ct for a `ren.ckks.LinearTransform` (prepared once, reused), a square matrix whose
        size divides N/2, or a dict {i: diagonal i}; uses one level, and the rotation keys of
        the transform's `rotation_steps` (baby-step giant-step; `hoisted`: True applies the
        transform's `hoisting`, "double" shares one decomposition among the baby steps and
        divides by P once per giant step, "single" shares the decomposition only, False or
        "none" hoists nothing: `LinearTransform.apply`).  The result has its level's default
        scale (`ren.ckks.circuits.lintrans.linear_transform`)."""
        return registered_program("linear_transform")(self, ct, transform, hoisted)

    def rotate_sum(self, ct: Ciphertext, n: int | None = None) -> Ciphertext:
        """Every slot j gets the sum of slots j … j+n−1 (cyclically); n = N/2 (default) puts the
        total of all slots in every slot.  n must be a power of two; uses log2(n) rotations."""
        ct = self.check_ciphertext(ct, op="rotate_sum")
        slots = self.params.slots
        hint = f"n must be a power of two in [1, {slots}] (N/2)"
        n = slots if n is None else check_int_range(n, "rotate_sum: n", 1, slots, hint=hint)
        if n & (n - 1):
            raise ParameterError(f"rotate_sum: {hint}, got {n}")
        step = 1
        while step < n:
            ct = self.add(ct, self.rotate(ct, step))
            step *= 2
        return ct


MODES = ("auto", "explicit")

#: the old private name of `ren.ckks.programs.REGISTERED` (tests/test_ckks_circuits_api reads it)
_programs = REGISTERED

# every public operation is recorded while `ren.ckks.operations.record_operations` is on (what
# ren-inspect groups a graph by); one list of them, in ren.ckks.operations
for _name in OPERATIONS:
    setattr(Evaluator, _name, operation(getattr(Evaluator, _name)))


def _explicit_view(ev: Evaluator) -> Evaluator:
    view = object.__new__(type(ev))
    view.__dict__.update(ev.__dict__)
    view.mode = "explicit"
    return view


def _half_step(scale_bits: int) -> Fraction:
    return Fraction(2) ** ((scale_bits + 1) // 2)


def _number(c: Any, op: str) -> complex:
    return check_number(c, f"{op}: the constant",
                        hint="a number for every slot; pass a vector or a Plaintext otherwise")


def _check_operand(b: Any, op: str) -> None:
    """The second operand of add/sub/multiply is one of the kinds they take."""
    check_instance(b, (Ciphertext, Plaintext, Number, np.ndarray, list, tuple),
                   f"{op}: the second operand", hint=(
                       "a Ciphertext, a Plaintext, a number (every slot) or a vector of numbers "
                       "(list, tuple or 1-D array, slot by slot)"))


__all__ = ["MODES", "PROGRAMS", "Evaluator", "register_program"]
