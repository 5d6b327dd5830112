"""Galois keys of a bootstrapping's transforms: CoeffToSlot split "first" merges the butterfly
stages SlotToCoeff merges (`ren.ckks.circuits.dft.SPLITS`), so the two share rotations and keys,
and ``key_cost`` with the Horner giant steps' keys counted (`baby_steps_for(giant_keys=
"horner")`) trades giant steps for keys.  n16's ``levels`` preset: 59 -> 18 Galois keys (lean:
6.26 -> 2.05 GiB), from the parameters alone (`dft.transform_plans`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ren
from ren.ckks.circuits import Bootstrapper, bootstrap_params_small
from ren.ckks.circuits.bootstrap import bootstrap_params_n16
from ren.ckks.circuits.bsgs import baby_steps_for
from ren.ckks.circuits.dft import (
    CoeffToSlotParams,
    SlotToCoeffParams,
    group_indices,
    rotation_keys,
    stage_groups,
    stage_sizes,
    transform_plans,
)
from ren.ckks.circuits.presets import bootstrap_shape
from ren.ckks.special_fft import apply_diagonals, merge_stages, special_fft_stages
from ren.errors import ParameterError


def test_stage_sizes_split_the_stages_evenly_either_way():
    assert stage_sizes(15, 2) == [7, 8] and stage_sizes(15, 2, "first") == [8, 7]
    assert stage_sizes(13, 3) == [4, 4, 5] and stage_sizes(13, 3, "first") == [5, 4, 4]
    assert stage_sizes(12, 3, "first") == [4, 4, 4]
    with pytest.raises(ParameterError, match="split"):
        stage_sizes(15, 2, "middle")


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("slots, levels", [(8, 2), (32, 2), (32, 3), (128, 2), (128, 4)])
def test_stage_groups_merge_the_same_transform_and_positions(slots, levels, inverse):
    """"last" is `merge_stages`' split; "first" merges other groups of the same stages, so the
    product is the same transform; `group_indices` (positions alone) are the groups' keys."""
    stages = special_fft_stages(slots, inverse=inverse)
    last, first = (stage_groups(slots, levels, inverse, s) for s in ("last", "first"))
    for got, want in zip(last, merge_stages(stages, levels), strict=True):
        assert got.keys() == want.keys()
        assert all(np.array_equal(got[k], want[k]) for k in got)
    x = np.random.default_rng(slots).normal(size=slots) + 1j
    a, b = x, x
    for g in last:
        a = apply_diagonals(g, a)
    for g in first:
        b = apply_diagonals(g, b)
    np.testing.assert_allclose(a, b, atol=1e-9 * np.max(np.abs(a)))
    for split, groups in (("last", last), ("first", first)):
        assert group_indices(slots, levels, inverse, split) == [sorted(g) for g in groups]


def test_coeff_to_slot_split_first_has_slot_to_coeffs_positions():
    """With as many levels, CoeffToSlot "first" and SlotToCoeff "last" transforms have the same
    diagonal positions (in reverse order); "last" on both does not (7 stages at N = 256)."""
    cts = group_indices(128, 2, True, "first")
    assert cts[::-1] == group_indices(128, 2, False, "last")
    assert group_indices(128, 2, True, "last")[::-1] != group_indices(128, 2, False, "last")


def test_baby_steps_for_can_count_the_horner_keys():
    dense = list(range(-127, 128))
    dense = sorted(i % 8192 for i in dense)
    assert baby_steps_for(dense, 8192, 1, 2, 4) == baby_steps_for(dense, 8192, 1, 2, 4,
                                                                  giant_keys="steps")
    # a giant step costs time, not a key, once the Horner chains are counted
    assert baby_steps_for(dense, 8192, 1, 2, 4, giant_keys="horner") < baby_steps_for(
        dense, 8192, 1, 2, 4)
    assert baby_steps_for(dense, 8192, 1, 2, 0, giant_keys="horner") == baby_steps_for(
        dense, 8192, 1, 2, 0)  # no key cost: the same plan
    with pytest.raises(ParameterError, match="giant_keys"):
        baby_steps_for(dense, 8192, giant_keys="chains")


@pytest.mark.parametrize("N", [256, 1024])
@pytest.mark.parametrize("split, key_cost", [("last", None), ("first", None), ("first", 4.0),
                                             ("last", 16.0)])
def test_the_plans_from_parameters_are_the_bootstrappers(N, split, key_cost):
    """`transform_plans` (no encoding) against the transforms a Bootstrapper prepares: levels,
    diagonal positions, baby steps, and the rotation keys."""
    params = bootstrap_params_small("python", N=N)
    bt = Bootstrapper(params, cts_levels=2, stc_levels=2, cts_split=split, key_cost=key_cost)
    plans = transform_plans(params, bt.cts_params, bt.stc_params, bt.evalmod_levels)
    assert [(t.level, sorted(t.diagonals), t.baby_steps) for t in bt.transforms] == plans
    assert rotation_keys(plans, params.slots) == {s % params.slots for s in bt.rotation_steps}


def test_sharing_and_key_cost_cut_the_keys_at_n256():
    params = bootstrap_params_small("python")
    keys = {}
    for split, kc in (("last", None), ("first", None), ("first", 4.0)):
        keys[split, kc] = len(Bootstrapper(params, cts_levels=2, stc_levels=2, cts_split=split,
                                           key_cost=kc).rotation_steps)
    assert keys["first", None] < keys["last", None] and keys["first", 4.0] < keys["first", None]
    with pytest.raises(ParameterError, match="split"):
        Bootstrapper(params, cts_split="both")
    with pytest.raises(ParameterError, match="key_cost"):
        Bootstrapper(params, key_cost=-1)
    with pytest.raises(ParameterError, match="not both"):
        Bootstrapper(params, cts=CoeffToSlotParams(2), cts_split="first")


def test_the_n16_levels_preset_keeps_twelve_levels_with_fewer_keys_than_balanced():
    """Issue 41: >= 12 levels left at N = 2^16 in <= 6 GiB.  From the parameters alone: the
    levels preset's transforms need 17 rotation keys (+ conjugation) where the old split needed
    58 and balanced needs 26; the lean keys (b rows: dnum x key limbs x N words each, plus
    relinearization and the two encapsulation keys) are then about 2 GiB."""
    params = bootstrap_params_n16("python")
    shape = bootstrap_shape(params, "levels")
    assert shape["cts_split"] == "first" and shape["key_cost"] > 1
    evalmod = 9  # degree 31 (5) + 4 double angles for K of the encapsulated secret
    cts = CoeffToSlotParams(shape["cts_levels"], split="first", key_cost=shape["key_cost"])
    stc = SlotToCoeffParams(shape["stc_levels"], key_cost=shape["key_cost"])
    assert params.depth - cts.levels - evalmod - stc.levels >= 12
    count = {name: len(rotation_keys(transform_plans(params, c, s, evalmod), params.slots))
             for name, c, s in (("levels", cts, stc), ("old", CoeffToSlotParams(2),
                                                      SlotToCoeffParams(2)),
                                ("balanced", CoeffToSlotParams(3), SlotToCoeffParams(3)))}
    assert count == {"levels": 17, "old": 58, "balanced": 26}
    row = len(params.digits) * params.key_ring.limbs * params.N * 4  # one lean key's b rows
    assert (count["levels"] + 1 + 1) * row + row < 2.1 * 2**30  # + conj, relin, encapsulation


def test_a_bootstrapping_with_shared_keys_keeps_its_precision():
    """N = 256, 2 + 2 levels: CoeffToSlot split "first" and key_cost 4 against the default
    shape, the same input and keys' seed: about the same bits (measured 28.57 against 28.47)."""
    from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator

    params = bootstrap_params_small("cpu")
    x = np.random.default_rng(7).uniform(-1, 1, params.slots)
    bits = {}
    for split, kc in (("last", None), ("first", 4.0)):
        bt = Bootstrapper(params, cts_levels=2, stc_levels=2, cts_split=split, key_cost=kc)
        with ren.random.seeded(3):
            kg = KeyGenerator(params)
            ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
            enc = Encoder(params)
            ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(x, level=1))
        out = bt.bootstrap(ev, ct)
        got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(out)).real
        bits[split] = -math.log2(float(np.max(np.abs(got - x))))
        assert out.level == params.depth - bt.levels_used
    assert bits["first"] > 24 and abs(bits["first"] - bits["last"]) < 1.5, bits
