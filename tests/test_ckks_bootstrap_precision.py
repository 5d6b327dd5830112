"""Meta-BTS (`ren.ckks.circuits.metabts`): the bootstrapping error bootstrapped once more.

At the small preset (N = 256) one bootstrapping gives ~28 bits; the Meta-BTS correction must
add at least `MARGIN` bits against NumPy, on the same ciphertexts and keys, and return at the
level it reports (one below the bootstrapper's per correction).  Bad arguments raise RenError
subclasses naming what was wrong."""

from __future__ import annotations

import numpy as np
import pytest

import ren
from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
from ren.ckks.circuits import Bootstrapper, MetaBootstrapper, default_error_bits
from ren.ckks.circuits.bootstrap import bootstrap_params_small
from ren.ckks.errors import OutOfLevelsError
from ren.errors import ParameterError, RenError

#: bits Meta-BTS must add at the small preset (measured: +16 to +23, 28 -> 44..51)
MARGIN = 12


@pytest.fixture(scope="module", autouse=True)
def _python_run_only(request):
    """A few bootstrappings take seconds: this module runs once, in the "python" run (its own
    bootstrappings run on the compiled "cpu" device)."""
    if request.config.getoption("--ren-backend") != "python":
        pytest.skip("the python run covers it")


class Setup:
    def __init__(self, secret="default"):
        kw = {} if secret == "default" else {"secret": secret}
        self.params = params = bootstrap_params_small("cpu", **kw)
        self.bt = Bootstrapper(params)
        with ren.random.seeded(1):
            kg = KeyGenerator(params)
            rlk, pk = kg.relin_key(), kg.public_key()
        self.enc, self.encryptor = Encoder(params), Encryptor(params, pk)
        self.dec = Decryptor(params, kg.secret_key())
        with ren.random.seeded(2):
            self.ev = Evaluator(params, rlk, self.bt.keys(kg))
        self.ek = self.bt.encapsulation_keys(kg) if self.bt.encapsulation is not None else None

    def sample(self, seed, level=1):
        x = np.random.default_rng(10 + seed).uniform(-1, 1, self.params.slots)
        pt = (self.enc.encode(x, level=level) if level else
              self.enc.encode(x, level=0, scale=self.bt.input_scale))
        with ren.random.seeded(20 + seed):
            return x, self.encryptor.encrypt(pt)

    def bits(self, ct, x):
        return float(-np.log2(np.max(np.abs(self.enc.decode(self.dec.decrypt(ct)).real - x))))


@pytest.fixture(scope="module")
def small():
    return Setup()


@pytest.mark.parametrize("seed", [0, 1])
def test_meta_bts_beats_one_bootstrapping(small, seed):
    x, ct = small.sample(seed)
    plain = small.bt.bootstrap(small.ev, ct)
    meta = MetaBootstrapper(small.bt)
    out = meta.bootstrap(small.ev, ct)
    before, after = small.bits(plain, x), small.bits(out, x)
    print(f"[meta-bts] N=256 seed {seed}: {before:.2f} -> {after:.2f} bits, levels left "
          f"{plain.level} -> {out.level}")
    assert before > 25
    assert after >= before + MARGIN
    assert out.level == meta.output_level == small.bt.output_level - 1
    assert meta.levels_used == small.params.depth - out.level
    assert out.scale == small.params.scale(out.level)


def test_a_level_zero_input_at_the_input_scale(small):
    x, ct = small.sample(2, level=0)
    out = MetaBootstrapper(small.bt).bootstrap(small.ev, ct)
    assert small.bits(out, x) >= small.bits(small.bt.bootstrap(small.ev, ct), x) + MARGIN


def test_one_iteration_is_the_plain_bootstrapping(small):
    _, ct = small.sample(3)
    meta = MetaBootstrapper(small.bt, iterations=1)
    assert meta.output_level == small.bt.output_level
    a = small.dec.decrypt(meta.bootstrap(small.ev, ct))
    b = small.dec.decrypt(small.bt.bootstrap(small.ev, ct))
    assert np.array_equal(np.asarray(a.poly.coefficients()), np.asarray(b.poly.coefficients()))


def test_three_iterations_spend_two_levels(small):
    x, ct = small.sample(4)
    meta = MetaBootstrapper(small.bt, iterations=3, error_bits=16)
    out = meta.bootstrap(small.ev, ct)
    assert out.level == meta.output_level == small.bt.output_level - 2
    assert small.bits(out, x) >= small.bits(small.bt.bootstrap(small.ev, ct), x) + MARGIN


def test_keep_level_spends_no_level_and_labels_the_scale(small):
    x, ct = small.sample(7)
    plain = small.bt.bootstrap(small.ev, ct)
    meta = MetaBootstrapper(small.bt, keep_level=True)
    out = meta.bootstrap(small.ev, ct)
    assert out.level == meta.output_level == small.bt.output_level
    assert out.scale == meta.output_scale == small.params.scale(out.level) * 2 ** meta.shift_bits
    assert small.bits(out, x) >= small.bits(plain, x) + MARGIN
    # the caller folds the label into a later product: y = 3·out at the level's scale
    x2 = small.ev.explicit()
    y = x2.rescale(x2.multiply_scalar(out, 3.0, target_scale=small.params.scale(out.level - 1)))
    assert small.bits(y, 3 * x) >= small.bits(plain, x) + MARGIN - 2


def test_an_optimistic_error_bound_loses_bits_gracefully(small):
    """The shift should keep 2^k·e inside EvalMod's nearly linear range.  Claiming 40 bits of a
    ~28-bit bootstrapping (2^11 in slots) bends the correction on the sine (bits lost against
    the default bound, still better than one bootstrapping); claiming 50 (2^21) wraps it, and
    the wrapped correction, divided by 2^49, changes nothing: one bootstrapping's bits."""
    x, ct = small.sample(5)
    plain = small.bits(small.bt.bootstrap(small.ev, ct), x)
    default = small.bits(MetaBootstrapper(small.bt).bootstrap(small.ev, ct), x)
    off = small.bits(MetaBootstrapper(small.bt, error_bits=40).bootstrap(small.ev, ct), x)
    wild = small.bits(MetaBootstrapper(small.bt, error_bits=50).bootstrap(small.ev, ct), x)
    print(f"[meta-bts] error_bits default/40/50: {default:.2f}/{off:.2f}/{wild:.2f} bits "
          f"(plain {plain:.2f})")
    assert plain + 3 < off < default - 5
    assert abs(wild - plain) < 1


def small_bt():
    return Bootstrapper(bootstrap_params_small("cpu"))


def test_a_dense_secret_with_encapsulation():
    s = Setup(secret="ternary")
    x, ct = s.sample(6)
    plain = s.bits(s.bt.bootstrap(s.ev, ct, s.ek), x)
    out = MetaBootstrapper(s.bt).bootstrap(s.ev, ct, s.ek)
    print(f"[meta-bts] N=256 dense secret: {plain:.2f} -> {s.bits(out, x):.2f} bits")
    assert s.bits(out, x) >= plain + MARGIN
    assert default_error_bits(s.bt) == 17 < default_error_bits(small_bt()) == 24


@pytest.mark.parametrize("kwargs, error, words", [
    ({"iterations": 0}, ParameterError, "iterations"),
    ({"iterations": 4}, ParameterError, "iterations"),
    ({"iterations": 2.5}, ParameterError, "iterations"),
    ({"error_bits": 1}, ParameterError, "error_bits"),
    ({"error_bits": 59}, ParameterError, "error_bits"),
    ({"error_bits": "20"}, ParameterError, "error_bits"),
    ({"keep_level": 1}, ParameterError, "keep_level"),
])
def test_bad_arguments(small, kwargs, error, words):
    with pytest.raises(error, match=words) as info:
        MetaBootstrapper(small.bt, **kwargs)
    assert isinstance(info.value, RenError)


def test_not_a_bootstrapper_and_too_few_levels(small):
    with pytest.raises(ParameterError, match="bt"):
        MetaBootstrapper("bt")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="bt"):
        default_error_bits(None)  # type: ignore[arg-type]
    deep = Bootstrapper(small.params, cts_levels=3, stc_levels=3)  # 0 levels left
    with pytest.raises(OutOfLevelsError, match="iterations"):
        MetaBootstrapper(deep)
    assert MetaBootstrapper(deep, iterations=1).output_level == 0
    # keep_level spends none, but the scale label Δ·2^k must fit Q_0 (62 bits) there
    with pytest.raises(RenError, match="keep_level"):
        MetaBootstrapper(deep, keep_level=True)


def test_bad_ciphertext_and_missing_keys(small):
    meta = MetaBootstrapper(small.bt)
    with pytest.raises(RenError):
        meta.bootstrap(small.ev, "ct")  # type: ignore[arg-type]


def test_ren_jit_captures_and_replays_it(small):
    """One lazy graph (both bootstrappings and the correction): a ren.jit plan, replayed on
    another ciphertext, decrypts to exactly what the eager call gives."""
    meta = MetaBootstrapper(small.bt)
    fn = ren.jit(lambda c: meta.bootstrap(small.ev, c))
    fn(small.sample(8)[1])
    x, ct = small.sample(9)
    replayed, eager = fn(ct), meta.bootstrap(small.ev, ct)
    assert len(fn.plans) == 1
    a, b = small.enc.decode(small.dec.decrypt(replayed)), small.enc.decode(small.dec.decrypt(eager))
    assert np.array_equal(a, b)
    assert small.bits(replayed, x) >= 40
