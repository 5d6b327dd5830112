"""Linear transforms whose plaintext diagonals are stored as integer coefficients
(``LinearTransform(diagonals="coeff")``, `Bootstrapper(diagonals="coeff")`) and expanded in the
graph at every application: the stored words are the encoder's coefficients (checked against
NumPy's embedding and Python integers), their expansion the residues c mod q_i, and every
application gives the words of the "rns" form, single and double hoisted, eager and jitted, on
the "python" and "cpu" devices; a jitted plan holds the words, not the limbs.  The transform keeps
nothing else of its diagonals (no complex values): `diagonals` and `matrix` are decoded from the
words at each read, within N/(2·Δ_pt) of the given ones."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest
from ckks_helpers import make_params

import ren
from ren.ckks import Encoder, Encryptor, Evaluator, KeyGenerator, LinearTransform
from ren.ckks.circuits import (
    Bootstrapper,
    CoeffToSlotParams,
    bootstrap_params_small,
    preset_bootstrapper,
)
from ren.ckks.circuits.lintrans import diagonals_of
from ren.ckks.embedding import embed
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError
from ren.ops import Op
from ren.realization import is_realized
from ren.replay import CONST
from ren.ring.rns import unpack_words

N = 256  # 128 slots
MATRIX = 16  # a 16×16 matrix: 16 diagonals, baby steps 1..3, giant steps 1..3


class Ctx:
    """Parameters, keys and one encrypted vector on one device."""

    def __init__(self, device: str) -> None:
        self.params = make_params(N=N, depth=3, scale_bits=40, first_bits=55, insecure=True,
                                  device=device)
        with ren.random.seeded(7):
            kg = KeyGenerator(self.params)
            self.ev = Evaluator(self.params, kg.relin_key(),
                                kg.rotation_keys([1, 2, 3, 4, 8, 12], conjugate=False))
            enc = Encoder(self.params)
            x = np.random.default_rng(1).uniform(-1, 1, self.params.slots)
            self.cts = [Encryptor(self.params, kg.public_key()).encrypt(enc.encode(v))
                        for v in (x, x[::-1] / 2)]
        ren.realize([p for ct in self.cts for p in ct.parts])


@pytest.fixture(scope="module", params=["python", "cpu"])
def c(request):
    return Ctx(request.param)


def matrix() -> np.ndarray:
    rng = np.random.default_rng(6)
    return rng.uniform(-1, 1, (MATRIX, MATRIX)) + 1j * rng.uniform(-1, 1, (MATRIX, MATRIX))


def words(ct) -> list[np.ndarray]:
    return [p.numpy() for p in ct.parts]


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(words(a), words(b), strict=True))


@pytest.mark.parametrize("hoisting", ["single", "double"])
def test_the_coefficients_give_the_words_of_the_rns_form(c, hoisting):
    """Every way to apply the transform (its own hoisting, single, double: a single-hoisted
    transform then expands its diagonals on Q·P, none) gives the rns form's words."""
    rns = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting)
    coeff = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting,
                            diagonals="coeff")
    assert coeff.diagonal_form == "coeff" and rns.diagonal_form == "rns"
    assert coeff.rotation_steps == rns.rotation_steps
    assert (coeff.decompositions, coeff.mod_downs) == (rns.decompositions, rns.mod_downs)
    for mode in (True, "single", "double", False):
        assert same(c.ev.linear_transform(c.cts[0], coeff, mode),
                    c.ev.linear_transform(c.cts[0], rns, mode)), mode


@pytest.mark.parametrize("hoisting", ["single", "double"])
def test_a_jitted_application_holds_the_words_and_replays_the_expansion(c, hoisting):
    rns = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting)
    coeff = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting,
                            diagonals="coeff")
    fn = ren.jit(lambda ct: c.ev.linear_transform(ct, coeff))
    fn(c.cts[0])
    replayed = fn(c.cts[1])  # another input: the replay expands the diagonals again
    assert same(replayed, c.ev.linear_transform(c.cts[1], rns))
    # the plan's constants include the stored words (its own Buffer objects over their
    # arrays); apart from them it holds what the rns form's plan holds less the diagonals' limbs
    consts = [b for b, role in fn.plans[0].template.roles.items() if role == CONST]
    stored = [w.arg.array() for group in coeff.coefficient_words.values()
              for w in group.values()]
    assert len(stored) == MATRIX
    assert all(any(np.shares_memory(a, b.array()) for b in consts) for a in stored)

    def const_bytes(plan) -> int:
        return sum(b.nbytes for b, role in plan.template.roles.items() if role == CONST)

    fr = ren.jit(lambda ct: c.ev.linear_transform(ct, rns))
    fr(c.cts[0])
    assert const_bytes(fr.plans[0]) - const_bytes(fn.plans[0]) == rns.nbytes - coeff.nbytes

@pytest.mark.parametrize("hoisting", ["single", "double"])
def test_an_eager_application_keeps_no_expanded_limbs(c, hoisting):
    """After an application, no live polynomial holds a diagonal's limbs: every read of
    `plaintexts` is a fresh lazy plaintext, and the realization pointed none kept at them."""
    lt = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting,
                         diagonals="coeff")
    assert lt.plaintexts[1][1] is not lt.plaintexts[1][1]
    rings = {c.params.ring(lt.level), c.params.ring_qp(lt.level)}

    def held() -> set[int]:
        gc.collect()
        return {id(p) for p in list(ren.poly._live) if is_realized(p.node) and p.ring in rings}

    before = held()
    out = c.ev.linear_transform(c.cts[0], lt)
    ren.realize(list(out.parts))
    assert held() <= before
    assert all(not is_realized(pt.poly.node) for group in lt.plaintexts.values()
               for pt in group.values())


def test_the_stored_words_are_the_encoders_coefficients():
    """The words unpack to round(Δ_pt·m) of each pre-rotated diagonal (m: NumPy's embedding
    checked by re-embedding), 8 bytes each; a read expands them to c mod q_i for every limb
    (Python integers), in a fresh lazy plaintext that nothing keeps."""
    p = make_params(N=N, depth=3, scale_bits=40, first_bits=55, insecure=True)
    lt = LinearTransform(p, matrix(), baby_steps=4, diagonals="coeff")
    given = diagonals_of(matrix(), p.slots)
    assert lt.diagonal_polys == [] and not lt.extended
    assert lt.nbytes == MATRIX * N * 8
    moduli = p.ring(lt.level).moduli
    for g, group in lt.coefficient_words.items():
        for b, node in group.items():
            assert node.op is Op.BUFFER and node.arg.shape == (N, 2)
            coeffs = unpack_words(node.arg.array())
            pre = np.roll(given[g * lt.baby_steps + b], g * lt.baby_steps)
            got = embed(np.array(coeffs, dtype=float), N) / float(lt.plaintext_scale)
            assert np.max(np.abs(got - pre)) < 1e-9  # the coefficients encode the diagonal
            assert max(abs(x) for x in coeffs) < 1 << 62
            pt = lt.plaintexts[g][b]
            assert not is_realized(pt.poly.node)  # lazy: TO_RNS, NTT
            assert pt.scale == lt.plaintext_scale and pt.level == lt.level
            residues = pt.poly.intt().numpy()
            want = np.array([[x % q for x in coeffs] for q in moduli], dtype=np.uint64)
            assert np.array_equal(residues.astype(np.uint64), want)
            del pt
    gc.collect()
    again = lt.plaintexts[0][0]
    assert not is_realized(again.poly.node)  # the realized expansion was not kept


def reachable_arrays(root) -> list[np.ndarray]:
    """The NumPy arrays (each base buffer once) reachable from `root`, not through the parameters
    (shared by everything made with them), modules, classes or functions."""
    skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
            types.MethodType, CKKSParams)
    seen, bases, out, stack = set(), set(), [], [root]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, skip):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            while isinstance(o.base, np.ndarray):
                o = o.base
            if id(o) not in bases:
                bases.add(id(o))
                out.append(o)
            continue
        stack.extend(gc.get_referents(o))
    return out


@pytest.mark.parametrize("hoisting", ["single", "double"])
def test_the_coefficient_form_keeps_no_complex_diagonals(c, hoisting):
    """All the arrays a coefficient-form transform holds are its words (`nbytes`, 8 bytes a
    coefficient), before and after it is applied and its diagonals and matrix are read; the
    rns form keeps the given complex diagonals (what the walk would find)."""
    coeff = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting,
                            diagonals="coeff")
    rns = LinearTransform(c.params, matrix(), baby_steps=4, hoisting=hoisting)
    for _ in range(2):
        held = reachable_arrays(coeff)
        assert not [a for a in held if np.iscomplexobj(a)]
        assert sum(a.nbytes for a in held) == coeff.nbytes == MATRIX * N * 8
        ren.realize(list(c.ev.linear_transform(c.cts[0], coeff, "double").parts))
        assert len(coeff.diagonals) == MATRIX and coeff.matrix().shape == (N // 2, N // 2)
    assert any(np.iscomplexobj(a) for a in reachable_arrays(rns))


def test_the_diagonals_and_matrix_are_decoded_from_the_words():
    """The coefficient form's `diagonals` (indices at once, each decoded at a read) and
    `matrix` are the given ones to within N/(2·Δ_pt), the rounding of the coefficients (not
    exactly: decoded); the rns form's are the given values, kept."""
    p = make_params(N=N, depth=3, scale_bits=40, first_bits=55, insecure=True)
    coeff = LinearTransform(p, matrix(), baby_steps=4, diagonals="coeff")
    rns = LinearTransform(p, matrix(), baby_steps=4)
    given = diagonals_of(matrix(), p.slots)
    assert rns.diagonals is rns.diagonals and list(rns.diagonals) == sorted(given)
    assert all(np.array_equal(rns.diagonals[i], d) for i, d in given.items())
    assert np.array_equal(rns.matrix(MATRIX), matrix())
    bound = N / (2 * float(coeff.plaintext_scale))
    assert list(coeff.diagonals) == sorted(given) and len(coeff.diagonals) == len(given)
    errors = [np.max(np.abs(coeff.diagonals[i] - d)) for i, d in given.items()]
    assert 0 < max(errors) <= bound
    assert 0 < np.max(np.abs(coeff.matrix(MATRIX) - matrix())) <= bound
    assert np.max(np.abs(coeff.matrix() - rns.matrix())) <= bound
    assert MATRIX not in coeff.diagonals and True not in coeff.diagonals
    with pytest.raises(KeyError):
        coeff.diagonals[MATRIX]  # (no such diagonal, as the rns form's dict says)
    with pytest.raises(TypeError):
        coeff.diagonals[0] = given[0]  # type: ignore[index]  # (read-only)


def test_the_bootstrapper_passes_the_form_through():
    """`Bootstrapper(diagonals=)` (and `preset_bootstrapper`) reaches every transform of both
    stages; a stage's parameter object may say it for that stage alone; a jitted bootstrapping
    on "cpu" gives the rns form's words."""
    params = bootstrap_params_small("cpu")
    rns, coeff = Bootstrapper(params), Bootstrapper(params, diagonals="coeff")
    assert {t.diagonal_form for t in rns.transforms} == {"rns"}
    assert {t.diagonal_form for t in coeff.transforms} == {"coeff"}
    assert {t.diagonal_form for t in preset_bootstrapper(params, "levels",
                                                         diagonals="coeff").transforms} == {"coeff"}
    # 8 bytes a coefficient below 2^62, else the fewest 32-bit words: SlotToCoeff's first
    # transform (EvalMod's output factor folded in) reaches 2^69 at this 60-bit scale: 12 bytes
    widths = []
    for t in coeff.transforms:
        for group in t.coefficient_words.values():
            for node in group.values():
                top = max(abs(x) for x in unpack_words(node.arg.array()))
                widths.append(2 if top < 1 << 62 else -(-(top.bit_length() + 1) // 32))
                assert node.arg.shape == (params.N, widths[-1])
    assert set(widths) == {2, 3}
    for tc, tr in zip(coeff.transforms, rns.transforms, strict=True):  # decoded, W = 3 too
        assert list(tc.diagonals) == sorted(tr.diagonals)
        for i, d in tr.diagonals.items():
            tol = params.N / (2 * float(tc.plaintext_scale)) + 1e-12 * np.max(np.abs(d))
            assert np.max(np.abs(tc.diagonals[i] - d)) <= tol
    assert sum(t.nbytes for t in coeff.transforms) == 4 * params.N * sum(widths)
    assert sum(t.nbytes for t in coeff.transforms) * 4 < sum(t.nbytes for t in rns.transforms)
    mixed = Bootstrapper(params, cts=CoeffToSlotParams(2, diagonals="coeff"))
    assert [t.diagonal_form for t in mixed.transforms] == ["coeff"] * 2 + ["rns"] * 2
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), rns.keys(kg))
        ct = Encryptor(params, kg.public_key()).encrypt(
            Encoder(params).encode(np.linspace(-1, 1, params.slots), level=0,
                                   scale=rns.input_scale))
    ren.realize(list(ct.parts))
    got = [ren.jit(lambda x, bt=bt: bt.bootstrap(ev, x))(ct) for bt in (rns, coeff)]
    assert same(*got)


def test_a_bad_form_is_refused():
    p = make_params(N=N, depth=3, scale_bits=40, first_bits=55, insecure=True)
    with pytest.raises(ParameterError, match="diagonals"):
        LinearTransform(p, matrix(), diagonals="limbs")
    with pytest.raises(ParameterError, match="diagonals"):
        Bootstrapper(bootstrap_params_small(), diagonals="int64")
    with pytest.raises(ParameterError, match="not both"):
        Bootstrapper(bootstrap_params_small(), diagonals="coeff", cts=CoeffToSlotParams(2))
