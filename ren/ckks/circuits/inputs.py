"""What every circuit does to its input first: `ready`.

An auto-mode `Evaluator` rescales an unrescaled product and relinearizes a three-part
ciphertext when the next operation needs it; the circuits (polynomials, transforms,
bootstrapping) place their own rescales on an explicit view of the evaluator, so they prepare
their input the same way first, with the evaluator's public API only.
"""

from __future__ import annotations

from ren.ckks.ciphertext import Ciphertext
from ren.ckks.evaluator import Evaluator


def ready(ev: Evaluator, ct: Ciphertext, always: bool = False) -> Ciphertext:
    """`ct` relinearized (if it has three parts) and rescaled while it is an unrescaled
    product (`Evaluator.is_unrescaled_product`), when `ev` is in auto mode or `always`;
    otherwise `ct` as it is (an explicit evaluator leaves that to its caller)."""
    if not (ev.auto or always):
        return ct
    if ct.size == 3:
        ct = ev.relinearize(ct)
    while ev.is_unrescaled_product(ct):
        ct = ev.rescale(ct)
    return ct


__all__ = ["ready"]
