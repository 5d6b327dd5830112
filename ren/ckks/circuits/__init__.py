"""The circuits built on the CKKS `Evaluator` (Lattigo's ``circuits/``): polynomial evaluation,
linear transforms and bootstrapping.

    from ren.ckks.circuits import Bootstrapper, evaluate_polynomial, LinearTransform
    y = evaluate_polynomial(ev, ct, coeffs, basis="chebyshev")    # = ev.evaluate_polynomial(...)
    y = linear_transform(ev, ct, LinearTransform(params, M))      # = ev.linear_transform(...)
    bt = Bootstrapper(params, eval_mod=EvalModParams(degree=63), cts=CoeffToSlotParams(3))

Modules: `polyeval` (baby-step giant-step polynomials), `lintrans` (the diagonal method,
hoisted and double-hoisted), `dft` (CoeffToSlot/SlotToCoeff), `evalmod` (the modular
reduction), `bootstrap` (the Bootstrapper and its presets), `metabts` (Meta-BTS: the
bootstrapping error bootstrapped once more, ~twice the bits for a level), `inputs` (what each
circuit does to its input first).

**One way.**  The circuits use only the evaluator's public API (`Evaluator.check_ciphertext`,
`Evaluator.is_unrescaled_product`, `Evaluator.align`, `Evaluator.explicit` and the operations;
tests/test_ckks_circuits_api.py holds them to it), and `ren.ckks.evaluator` never imports this
package: the evaluator's `evaluate_polynomial` and `linear_transform` methods are this
package's functions, registered with `ren.ckks.evaluator.register_program` when it is imported.
"""

from ren.ckks.circuits.bootstrap import (
    SMALL_RING_DEGREES,
    Bootstrapper,
    bootstrap_params_n16,
    bootstrap_params_small,
    bound_K,
    centred_lift,
    default_message_ratio_bits,
)
from ren.ckks.circuits.dft import CoeffToSlot, CoeffToSlotParams, SlotToCoeff, SlotToCoeffParams
from ren.ckks.circuits.evalmod import EvalMod, EvalModParams
from ren.ckks.circuits.lintrans import LinearTransform, apply_transforms, linear_transform
from ren.ckks.circuits.metabts import MetaBootstrapper, default_error_bits
from ren.ckks.circuits.polyeval import (
    chebyshev_coefficients,
    evaluate_polynomial,
    polynomial_plan,
)
from ren.ckks.circuits.presets import PRESETS, bootstrap_shape, preset_bootstrapper
from ren.ckks.evaluator import register_program

register_program("evaluate_polynomial", evaluate_polynomial)
register_program("linear_transform", linear_transform)

__all__ = [
    "PRESETS",
    "SMALL_RING_DEGREES",
    "Bootstrapper",
    "CoeffToSlot",
    "CoeffToSlotParams",
    "EvalMod",
    "EvalModParams",
    "LinearTransform",
    "MetaBootstrapper",
    "SlotToCoeff",
    "SlotToCoeffParams",
    "apply_transforms",
    "bootstrap_params_n16",
    "bootstrap_params_small",
    "bootstrap_shape",
    "bound_K",
    "centred_lift",
    "chebyshev_coefficients",
    "default_error_bits",
    "default_message_ratio_bits",
    "evaluate_polynomial",
    "linear_transform",
    "polynomial_plan",
    "preset_bootstrapper",
]
