"""CKKS bootstrapping (`ren.ckks.circuits.bootstrap`) at the small insecure preset: each stage
against its
plaintext counterpart (the raised plaintext's coefficients, the exact modular reduction, the
encoding), the whole bootstrapping and computing after it, twice in a row, the key set the
planner finds, bad inputs, and the JIT replay (bit-identical, no scheduling)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ren
from ren import realization
from ren.ckks import (
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
    MissingKeyError,
    OutOfLevelsError,
    ScaleMismatchError,
    plan_rotation_keys,
)
from ren.ckks.circuits.bootstrap import (
    Bootstrapper,
    bootstrap_params_small,
    bound_K,
    centred_lift,
    default_message_ratio_bits,
)
from ren.ckks.embedding import embed, embed_inverse
from ren.ckks.params import CKKSParams
from ren.ckks.special_fft import bit_reverse
from ren.errors import ParameterError, ShapeError

#: bits after one bootstrapping at the small preset (measured 28.4 with seed 4)
BITS = 25


@pytest.fixture(scope="module", autouse=True)
def _python_run_only(request):
    """A bootstrapping takes seconds of graph building: this module runs once, in the "python"
    run, and compares the compiled "cpu" device with it itself (bit-identical words)."""
    if request.config.getoption("--ren-backend") != "python":
        pytest.skip("covered by the python run's cross-device test")


@pytest.fixture(scope="module")
def stages(bs):
    """One bootstrapping, stage by stage, of a level-0 encryption (seeded)."""
    params, bt, _kg, ev, enc, encryptor, _dec = bs
    x = np.random.default_rng(3).uniform(-1, 1, params.slots)
    with ren.random.seeded(4):
        ct = encryptor.encrypt(enc.encode(x, level=0, scale=bt.input_scale))
    raised = bt.mod_raise(ct)
    first, second = bt.coeff_to_slot(ev, raised)
    mods = bt.eval_mod(ev, first), bt.eval_mod(ev, second)
    out = bt.slot_to_coeff(ev, *mods)
    return x, ct, raised, (first, second), mods, out


@pytest.fixture(scope="module")
def bs():
    params = bootstrap_params_small()
    bt = Bootstrapper(params)
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
        pk = kg.public_key()
    enc = Encoder(params)
    return params, bt, kg, ev, enc, Encryptor(params, pk), Decryptor(params, kg.secret_key())


def _bits(got, want) -> float:
    return -math.log2(float(np.max(np.abs(np.asarray(got) - np.asarray(want)))))


def test_preset_levels_and_bound(bs):
    params, bt, *_ = bs
    assert params.N == 256 and params.depth == 14 and params.hamming_weight == 16
    assert bt.levels_used == 2 + (5 + 3) + 2 == 12 and bt.output_level == 2
    assert bt.K == bound_K(params) == 10 and bt.double_angles == 3
    assert round(math.log2(bt.K0)) == 12 == bt.message_ratio_bits  # Q_0 / Δ_in
    assert bt.input_scale < params.scale(0) / 2**10  # far below: CoeffToSlot's precision


def test_the_small_preset_at_other_ring_degrees():
    from ren.ckks.circuits.bootstrap import SMALL_RING_DEGREES

    for N in SMALL_RING_DEGREES:
        p = bootstrap_params_small(N=N)
        assert (p.N, p.depth, p.hamming_weight, p.slots) == (N, 14, 16, N // 2)
        assert Bootstrapper(p).output_level == 2  # the same shape: 12 levels used
    for bad in (128, 8192, 1000, "256"):
        with pytest.raises(ParameterError, match="N must be one of"):
            bootstrap_params_small(N=bad)


def test_each_stage_against_its_plaintext_counterpart(bs, stages):
    params, bt, _kg, _ev, enc, _encryptor, dec = bs
    x, ct, raised, (first, second), (mod, _), out = stages
    assert raised.level == params.depth and raised.scale == ct.scale
    t = embed_inverse(enc.decode(dec.decrypt(raised)), params.N)  # m/Δ0 + K0·I, exactly
    m = embed_inverse(x.astype(complex), params.N)
    I = np.round((t - m) / bt.K0)
    assert 0 < np.max(np.abs(I)) <= bt.K  # the raise really added multiples of Q0
    assert first.level == second.level == params.depth - bt.cts_levels
    half, h = params.slots, bt.interval[1]
    assert np.max(np.abs(t)) <= h  # within EvalMod's range
    for got, want in ((first, t[:half]), (second, t[half:])):  # the coefficients, as slots
        assert _bits(enc.decode(dec.decrypt(got)), bit_reverse(want) / h) > 40
    assert mod.level == first.level - bt.evalmod_levels
    reduced = bt.plaintext_eval_mod()(bit_reverse(t[:half]))  # the exact reduction, slot units
    got = enc.decode(dec.decrypt(mod)).real * bt.K0 / (2 * np.pi)
    assert _bits(got, reduced) > BITS + 2
    assert _bits(reduced, bit_reverse(m[:half])) > 30  # and that reduction is the message
    assert out.level == bt.output_level and out.scale == params.scale(out.level)
    assert _bits(enc.decode(dec.decrypt(out)), x) > BITS
    # (that these stages are what bootstrap() runs: the JIT test replays bootstrap() on ct and
    # compares with `out`)


def test_slot_to_coeff_alone_against_the_encoding(bs):
    """SlotToCoeff of two ciphertexts of real slots v_lo, v_hi (bit-reversed halves) has the
    slots of the polynomial with coefficients (K_0/2π)·(v_lo, v_hi) in natural order: NumPy's
    FFT-based embedding of them."""
    params, bt, _kg, ev, enc, encryptor, dec = bs
    level = params.depth - bt.cts_levels - bt.evalmod_levels
    rng = np.random.default_rng(11)
    v = rng.uniform(-1, 1, (2, params.slots))
    with ren.random.seeded(12):
        cts = [encryptor.encrypt(enc.encode(vi, level)) for vi in v]
    out = bt.slot_to_coeff(ev, *cts)
    assert out.level == bt.output_level
    coeffs = np.concatenate([bit_reverse(v[0]), bit_reverse(v[1])]) * bt.K0 / (2 * np.pi)
    want = embed(coeffs, params.N)
    assert _bits(enc.decode(dec.decrypt(out)), want) > 40 - math.log2(np.max(np.abs(want)))


def test_the_cpu_device_gives_the_same_words(bs, stages):
    _params, _bt, *_ = bs
    _x, ct, *_, out = stages
    cpu = bootstrap_params_small("cpu")
    btc = Bootstrapper(cpu)
    with ren.random.seeded(1):  # the same keys as the fixture's, on "cpu"
        kg = KeyGenerator(cpu)
        ev = Evaluator(cpu, kg.relin_key(), btc.keys(kg))
        kg.public_key()
    from ren.ckks import Ciphertext

    moved = Ciphertext(tuple(p.to("cpu") for p in ct.parts), ct.scale, ct.level, cpu)
    got = btc.bootstrap(ev, moved)
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(got.parts, out.parts, strict=True))
    # jitted on "cpu": a constant's words are a "cpu" buffer that the device reduces itself
    # (TO_RNS), and the plan replays through the compiled graph runner
    fn = ren.jit(lambda c: btc.bootstrap(ev, c))
    fn(moved)
    template = fn.plans[0].template
    assert {b.device for b in template.roles} == {"cpu"}
    assert template.runner_kind == "cpu-compiled"
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(fn(moved).parts, out.parts, strict=True))


def test_compute_after_bootstrapping_and_bootstrap_again(bs, stages):
    params, bt, _kg, ev, enc, encryptor, dec = bs
    x, *_, bx = stages
    y = np.random.default_rng(5).uniform(-1, 1, params.slots)
    with ren.random.seeded(6):
        cy = bt.bootstrap(ev, encryptor.encrypt(enc.encode(y, level=1)))
    assert cy.level == bx.level == bt.output_level
    prod = ev.rescale(ev.multiply(bx, cy))  # two bootstrapped ciphertexts, a level used
    assert _bits(enc.decode(dec.decrypt(prod)), x * y) > BITS - 1
    again = bt.bootstrap(ev, prod)  # from level 1: brought to level 0 at Δ_in for free
    assert again.level == bt.output_level
    assert _bits(enc.decode(dec.decrypt(again)), x * y) > BITS - 2


def test_the_planner_finds_the_key_set(bs):
    params, bt, *_ = bs
    plan = plan_rotation_keys(lambda ev, ct: bt.bootstrap(ev, ct), params, 1)
    assert sorted(plan.steps) == bt.rotation_steps and plan.conjugate
    assert plan.count == len(bt.rotation_steps) + 1 and plan.nbytes > 0


def test_giant_steps_reuse_keys(bs):
    """The transforms' giant steps are Horner rotations (`giant_chains`): fewer Galois keys
    than one per distinct baby and giant step, and as many rotations (key switches) as that
    would make: one per baby step and one per giant step g ≥ 1 of every transform."""
    params, bt, *_ = bs
    one_each: set[int] = set()  # a key per baby step and per giant step g·n1
    rotations = 0
    for lt in bt.transforms:
        babies = {b for group in lt.plaintexts.values() for b in group if b}
        giants = {g for g in lt.plaintexts if g}
        one_each |= babies | {g * lt.baby_steps for g in giants}
        rotations += len(babies) + len(giants)
    plan = plan_rotation_keys(lambda ev, ct: bt.bootstrap(ev, ct), params, 1)
    assert sorted(plan.steps) == bt.rotation_steps
    assert len(bt.rotation_steps) < len(one_each), (len(bt.rotation_steps), len(one_each))
    assert sum(plan.uses.values()) == rotations  # full slots: no sub-sum


def test_bad_inputs(bs):
    params, bt, _kg, ev, enc, encryptor, _dec = bs
    with ren.random.seeded(7):
        ct = encryptor.encrypt(enc.encode([0.5], level=0, scale=bt.input_scale * 2))
    with pytest.raises(ScaleMismatchError, match="scale"):
        bt.bootstrap(ev, ct)
    with pytest.raises(OutOfLevelsError, match="level-0"):
        bt.mod_raise(encryptor.encrypt(enc.encode([0.5])))
    with pytest.raises(MissingKeyError, match=r"conjugation|rotation"):
        bt.bootstrap(Evaluator(params, ev.relin_key), encryptor.encrypt(enc.encode([0.5], 1)))
    with pytest.raises(ParameterError, match="Evaluator of the bootstrapper"):
        bt.bootstrap(None, ct)
    for bad in (0, 8, True, 1.5):  # 7 butterfly stages at 128 slots
        with pytest.raises(ParameterError, match="cts_levels must be an int in"):
            Bootstrapper(params, cts_levels=bad)
        with pytest.raises(ParameterError, match="stc_levels must be an int in"):
            Bootstrapper(params, stc_levels=bad)
    with pytest.raises(ParameterError, match="message_ratio_bits"):
        Bootstrapper(params, message_ratio_bits=60)  # no room left for the input scale
    with pytest.warns(InsecureParametersWarning):
        shallow = CKKSParams(N=256, depth=6, scale_bits=60, first_bits=62, insecure=True,
                             secret=("sparse", 16))
    with pytest.raises(OutOfLevelsError, match="uses 12 levels"):
        Bootstrapper(shallow)


def test_the_jit_replays_a_bootstrapping(bs, stages, monkeypatch):
    _params, bt, _kg, ev, enc, encryptor, _dec = bs
    _x, ct, *_, eager = stages
    fn = ren.jit(lambda c: bt.bootstrap(ev, c))
    with ren.random.seeded(9):
        other = encryptor.encrypt(enc.encode(np.random.default_rng(8).uniform(-1, 1, 8), 0,
                                             bt.input_scale))
    fn(other)  # capture, on another input
    schedules = []
    original = realization.run_passes
    monkeypatch.setattr(realization, "run_passes",
                        lambda *a, **k: schedules.append(1) or original(*a, **k))
    replayed = fn(ct)
    assert schedules == [] and fn.hits == 1  # no scheduling on replay
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(replayed.parts, eager.parts, strict=True))
    # a new wrapper (a new process's capture) loads the template from the plan cache
    again = ren.jit(lambda c: bt.bootstrap(ev, c))
    schedules.clear()  # (reading the values above realized their conversions)
    loaded = again(ct)
    assert schedules == [] and again.plans[0].compiled_by == "plan cache"
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(loaded.parts, eager.parts, strict=True))


def test_the_example_runs(capsys):
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "examples" / "ckks_bootstrap.py"
    res = runpy.run_path(str(example), run_name="example")["main"](["--small"])
    out = capsys.readouterr().out
    assert "level 2 regained" in out and "Galois key(s)" in out
    assert res["levels"] == 2 and res["after"] > BITS and res["again"] > BITS - 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2**200), min_size=8, max_size=8), st.sampled_from([1, 2, 3]))
def test_centred_lift_is_the_exact_centred_representative(values, limbs):
    """Against Python big integers: every coefficient c in [0, Q) of the small ring comes out as
    c or c − Q in [−⌊Q/2⌋, Q − ⌊Q/2⌋) in the large one (TO_RING alone may add multiples of Q)."""
    from ren.poly import Poly
    from ren.ring.ringspec import RingSpec

    big = RingSpec.generate(8, 6, bits=30)
    small = RingSpec(8, big.moduli[:limbs])
    Q = small.Q
    coeffs = [v % Q for v in values]
    got = centred_lift(Poly.from_coefficients(coeffs, small), big).coefficients()
    centred = [c if c < Q - Q // 2 else c - Q for c in coeffs]
    assert [g if g <= big.Q // 2 else g - big.Q for g in got] == centred


def test_centred_lift_edges_and_bad_rings():
    from ren.poly import Poly
    from ren.ring.ringspec import RingSpec

    big = RingSpec.generate(8, 4, bits=30)
    small = RingSpec(8, big.moduli[:2])
    Q = small.Q
    edges = [0, 1, Q - 1, Q // 2, Q // 2 + 1, Q // 2 - 1, 5, Q - 5]
    got = centred_lift(Poly.from_coefficients(edges, small), big).coefficients()
    assert [g if g <= big.Q // 2 else g - big.Q for g in got] == \
        [0, 1, -1, Q // 2, -(Q // 2), Q // 2 - 1, 5, -5]
    with pytest.raises(ParameterError, match="contain the source's moduli"):
        centred_lift(Poly.from_coefficients(edges, big), small)


def test_the_n16_preset_is_128_bit_and_leaves_ten_levels():
    from ren.ckks.circuits.bootstrap import bootstrap_params_n16

    params = bootstrap_params_n16()
    assert params.N == 2**16 and params.log2_QP <= 1772 and params.security_bits >= 128
    # a dense ternary secret (the HE standard's assumption): encapsulation bounds I by the
    # ephemeral secret's weight, 32
    assert params.hamming_weight is None and bound_K(params, 32) == 13
    assert default_message_ratio_bits(params.N) == 6 and default_message_ratio_bits(256) == 12
    assert [default_message_ratio_bits(1 << k) for k in range(8, 17)] == \
        [12, 12, 11, 11, 10, 9, 8, 7, 6]
    # the level count without preparing the transforms (that takes GBs): 3 + (5 + r) + 3
    double_angles = math.ceil(math.log2(2 * math.pi * (13 + 1) / 9))
    assert 3 + (5 + double_angles) + 3 == 15 and params.depth - 15 == 10
    # the sparse h = 192 choice: no encapsulation, one double angle more
    sparse = bootstrap_params_n16(secret=("sparse", 192))
    assert sparse.hamming_weight == 192 and bound_K(sparse) == 29
    assert math.ceil(math.log2(2 * math.pi * 30 / 9)) == double_angles + 1


def test_the_inspect_program_file_loads():
    """`ren-inspect report examples/inspect_bootstrap.py` reads this file (the report itself
    takes ~90 s and 80 MiB at the small preset: measured in the issue's note, not here)."""
    from pathlib import Path

    from ren.viz.programs import load_program

    path = Path(__file__).resolve().parent.parent / "examples" / "inspect_bootstrap.py"
    program = load_program(str(path))
    out = program.builder()
    assert out.level == 2 and not out.c0.is_realized
    assert len(program.outputs()) == 2  # the two parts, lazy


def test_every_kernel_of_a_bootstrapping_renders_for_cuda(bs):
    """The whole bootstrapping schedules and every compute kernel renders to CUDA C (compiled to
    a cubin by the cuda extra's NVRTC tests for the smaller programs; executed only on a GPU)."""
    from ren.backend.render_c import CUDA, render_program
    from ren.kernel import LIGHT_KINDS

    _params, bt, _kg, ev, enc, encryptor, _dec = bs
    with ren.random.seeded(21):
        ct = encryptor.encrypt(enc.encode([0.5, -0.25], level=1)).realize()
    out = bt.bootstrap(ev, ct)
    items = ren.schedule(*out.parts)
    kernels = [i for i in items if i.kind not in LIGHT_KINDS]
    assert len(kernels) > 1000
    sources = [render_program(k, CUDA) for k in kernels]
    assert all(p.launches for p in sources)


def test_fused_passes_give_a_bootstrapping_the_same_graph(bs):
    """Passes 6-12 as one walk (what a JIT capture runs) and one by one (what a trace shows):
    the same graph and counts for a whole bootstrapping (`tests/test_pass_fusion.py`)."""
    from test_pass_fusion import assert_fusion_changes_nothing

    _params, bt, _kg, ev, enc, encryptor, _dec = bs
    with ren.random.seeded(22):
        ct = encryptor.encrypt(enc.encode([0.5, -0.25], level=1)).realize()
    assert_fusion_changes_nothing(bt.bootstrap(ev, ct).parts, [(6, 12)])


# -- sparse slots (issue 41 §3) ----------------------------------------------------------------
def _sparse_run(params, n: int, x, seed: int):
    """(bootstrapper, decrypted slots, the lazy output's mod-down count, the EvalMod calls) for
    a message x."""
    from ren.ckks.operations import record_operations
    from ren.rlwe.cost import key_switch_counts

    bt = Bootstrapper(params, slots=n)
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
        enc = Encoder(params)
        pt = (enc.encode(x[:n], level=0, scale=bt.input_scale, slots=n)
              if np.array_equal(x, np.tile(x[:n], params.slots // n)) else
              enc.encode(x, level=0, scale=bt.input_scale))
        ct = Encryptor(params, kg.public_key()).encrypt(pt)
        ren.realize(list(ct.parts))  # (the encryption's own graph stays out of the count)
        with record_operations() as log:
            out = bt.bootstrap(ev, ct)
        evalmods = sum(op.name == "eval_mod" for op in log.operations)
        downs = key_switch_counts([p.node for p in out.parts], tuple(params.special_moduli))[0]
        got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(out))
    assert out.level == bt.output_level == 2
    return bt, got, downs, evalmods


@pytest.fixture(scope="module")
def sparse_runs():
    """Bootstrappings of 8 and 32 slots at N = 256 (128 slots): the 32-slot message replicated
    4 times, the 8-slot one not replicated at all (the sub-sum averages its 16 blocks)."""
    params = bootstrap_params_small()
    rng = np.random.default_rng(12)
    z32 = rng.uniform(-1, 1, 32)
    x8 = rng.uniform(-1, 1, params.slots)
    return params, {32: (np.tile(z32, 4), *_sparse_run(params, 32, np.tile(z32, 4), 13)),
                    8: (x8, *_sparse_run(params, 8, x8, 14))}


def test_sparse_slots_bootstrap_against_numpy(sparse_runs):
    params, runs = sparse_runs
    x, _bt, got, *_ = runs[32]
    assert _bits(got, x) > BITS  # measured 28.7 (28.3 at 128 slots)
    x, _bt, got, *_ = runs[8]
    want = np.tile(x.reshape(-1, 8).mean(axis=0), params.slots // 8)  # the blocks' average
    assert _bits(got, want) > BITS  # measured 28.9
    assert _bits(got, x) < 2  # (not the input itself: it was not replicated)


def test_fewer_slots_fewer_keys_and_key_switches(bs, sparse_runs):
    params, full, *_ = bs
    _, runs = sparse_runs
    bt8, bt32 = runs[8][1], runs[32][1]
    # the sub-sum: log2(128/n) rotations by n, 2n, ..., N/4
    assert bt8.coeff_to_slot_stage.sub_sum_steps == [8, 16, 32, 64]
    assert bt32.coeff_to_slot_stage.sub_sum_steps == [32, 64]
    assert full.coeff_to_slot_stage.sub_sum_steps == []
    keys = [len(bt.rotation_steps) for bt in (bt8, bt32, full)]
    assert keys[0] < keys[1] < keys[2], keys  # 10 < 12 < 17
    # n <= N/4: the real and imaginary parts packed into one ciphertext, one EvalMod
    assert bt8.coeff_to_slot_stage.packed and bt32.slot_to_coeff_stage.packed
    assert not full.coeff_to_slot_stage.packed
    assert runs[8][4] == runs[32][4] == 1
    # the transforms rotate within 2n slots (n: the packed ones' n×n parts; 2n: their widened
    # first/last matrix)
    assert all(s < 16 for s in set(bt8.rotation_steps) - {16, 32, 64})
    assert all(s < 64 for s in set(bt32.rotation_steps) - {64})
    # the mod-downs by P in the traced graphs (two per key switch, one per hoisted rotation
    # group's giant step ...): the full bootstrapping's, built lazily here
    with ren.random.seeded(15):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), full.keys(kg))
        ct = Encryptor(params, kg.public_key()).encrypt(
            Encoder(params).encode([0.5], level=0, scale=full.input_scale))
        ren.realize(list(ct.parts))
        out = full.bootstrap(ev, ct)
    from ren.rlwe.cost import key_switch_counts

    downs = key_switch_counts([p.node for p in out.parts], tuple(params.special_moduli))[0]
    assert runs[8][3] < runs[32][3] < downs, (runs[8][3], runs[32][3], downs)  # 64 < 76 < 118


def test_full_slots_unchanged_and_bad_slot_counts():
    params = bootstrap_params_small()
    full, same = Bootstrapper(params), Bootstrapper(params, slots=params.slots)
    assert same.rotation_steps == full.rotation_steps and same.slots == 128
    assert [lt.diagonals.keys() for lt in same.transforms] == \
        [lt.diagonals.keys() for lt in full.transforms]
    for bad in (0, 1, 3, 24, 256, "8", 8.0):
        with pytest.raises(ParameterError, match="slots"):
            Bootstrapper(params, slots=bad)
    with pytest.raises(ParameterError, match="cts_levels"):
        Bootstrapper(params, slots=2)  # one butterfly stage: cts_levels=1
    assert Bootstrapper(params, slots=2, cts_levels=1, stc_levels=1).levels_used == 10


def test_widened_and_combined_matrices_against_numpy():
    """The packed transforms' pieces in plaintext: widen(M) is diag(M, M) on 2n slots, and the
    packed SlotToCoeff's first matrix reads (v_lo | v_hi) as v_lo + i·v_hi, then applies M."""
    from ren.ckks.circuits.dft import _combine, _lower_rows, widen
    from ren.ckks.circuits.lintrans import diagonals_of
    from ren.ckks.special_fft import apply_diagonals, multiply_diagonals

    n = 8
    rng = np.random.default_rng(16)
    m = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    d = {k: v[:n] for k, v in diagonals_of(m, n).items()}
    x = rng.normal(size=2 * n) + 1j * rng.normal(size=2 * n)
    assert np.allclose(apply_diagonals(widen(d, n), x), np.kron(np.eye(2), m) @ x)
    lower = apply_diagonals(_lower_rows(widen(d, n), n), x)
    assert np.allclose(lower, np.r_[m @ x[:n], np.zeros(n)])
    packed = apply_diagonals(multiply_diagonals(widen(d, n), _combine(n), 2 * n), x)
    y = m @ (x[:n] + 1j * x[n:])
    assert np.allclose(packed, np.r_[y, y])


def test_the_encoder_packs_sparse_slots():
    """Encoder.encode(z, slots=n): z zero-padded to n and repeated N/(2n) times, a polynomial in
    X^(N/2n); decode(pt, slots=n) reads the n values back; the plaintext remembers the repeated
    vector, so auto mode re-encodes it right at another level."""
    params = bootstrap_params_small()
    enc = Encoder(params)
    z = np.random.default_rng(17).uniform(-1, 1, 6)
    pt = enc.encode(z, slots=8)
    coeffs = pt.poly.intt().coefficients()
    assert [i for i, c in enumerate(coeffs) if c] and all(i % 16 == 0 for i, c in
                                                          enumerate(coeffs) if c)
    want = np.tile(np.r_[z, 0, 0], 16)
    assert _bits(enc.decode(pt), want) > 40
    assert _bits(enc.decode(pt, slots=8), np.r_[z, 0, 0]) > 40
    assert len(enc.decode(pt, slots=8)) == 8
    with ren.random.seeded(18):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key())
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(want, level=3))
        total = ev.add(ct, pt)  # pt (top level) re-encoded at level 3 from its values
        got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(total), slots=8)
    assert _bits(got, 2 * np.r_[z, 0, 0]) > 30
    for bad in (0, 3, 256, "4", 2.0):
        with pytest.raises(ParameterError, match="slots"):
            enc.encode(z, slots=bad)
        with pytest.raises(ParameterError, match="slots"):
            enc.decode(pt, slots=bad)
    with pytest.raises(ShapeError, match="do not fit 4 slots"):
        enc.encode(z, slots=4)
