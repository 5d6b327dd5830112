"""Lean switching keys (issue 41 §3, memory): a key whose uniform halves a_j are kept as their
seeds and regenerated inside each key switch must give the stored key's results word for word
(key switch at every level, rotation, conjugation, relinearization, a bootstrapping with
encapsulation), eagerly and under ren.jit, on the python and cpu devices; hold half the bytes;
stay lean through serialization (compact form), the distributed wire and JIT replays; and refuse
to become lean when a row is not a seeded sample."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

import ren
from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, Evaluator, dumps, loads
from ren.ckks.encapsulation import Encapsulation
from ren.errors import JitError, ParameterError
from ren.poly import Poly
from ren.rlwe.gadget import gadget_constants
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import GaloisKey, SwitchingKey
from ren.rlwe.keyswitch import key_switch
from ren.sampling import gaussian_bound, sample

DEVICES = ["python", "cpu"]



def _params(device: str, secret: str | tuple[str, int] = "ternary") -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CKKSParams(N=256, depth=3, scale_bits=30, first_bits=40, secret=secret,
                          insecure=True, device=device)


def _same(xs, ys) -> bool:
    xs, ys = list(xs), list(ys)
    return len(xs) == len(ys) and all(np.array_equal(x.numpy(), y.numpy())
                                      for x, y in zip(xs, ys, strict=True))


def _pair(params: CKKSParams, seed: int = 7):
    """(stored generator, lean generator) drawing the same secret."""
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
    with ren.random.seeded(seed):
        lean = KeyGenerator(params, lean=True)
    return kg, lean


def _both(params: CKKSParams, make, seed: int = 7):
    """(generator, make(generator)) stored and lean, from the same seeds."""
    out = []
    for lean in (False, True):
        with ren.random.seeded(seed):
            kg = KeyGenerator(params, lean=lean)
            out.append((kg, make(kg)))
    return out


def _centred_max(p: Poly) -> int:
    return max(abs(c) for c in p.coefficients())


def test_lean_keys_are_the_stored_keys_seeds_and_half_the_bytes():
    params = _params("python")
    kg, lg = _pair(params)
    with ren.random.seeded(11):
        stored = kg.galois_key(5)
    with ren.random.seeded(11):
        lean = lg.galois_key(5)
    assert lean.is_lean and not stored.is_lean and isinstance(lean, GaloisKey)
    assert _same(lean.b, stored.b)
    assert lean.seeds == stored.seeds and lean.seeds is not None
    # the rows a lean key regenerates are ren.sampling's samples of its seeds (the definition)
    ring = params.key_ring
    for spec, a in zip(lean.seeds, lean.a, strict=True):
        assert np.array_equal(a.intt().ntt().numpy(), sample(spec, ring))  # NTT-domain words
    assert _same(lean.a, stored.a)
    # reading (and realizing) the rows leaves the key lean: it holds b and the seeds only
    b_bytes = sum(4 * ring.limbs * ring.N for _ in lean.b)
    assert lean.nbytes == b_bytes + 32 * len(lean.b) and lean.is_lean
    assert stored.nbytes == lean.full_nbytes == 2 * b_bytes
    assert not any(a.is_realized for a in lean.a)
    # a valid key: b_j + a_j·s - G_j·s(X^5) is the small error e_j
    s = kg.secret_key().poly
    for b, a, g in zip(lean.b, lean.a, gadget_constants(params), strict=True):
        assert _centred_max((b + a * s - s.automorph(5) * g).intt()) <= gaussian_bound(
            params.sigma)


def test_lean_and_stored_convert_both_ways():
    params = _params("python")
    kg, _ = _pair(params)
    stored = kg.relin_key()
    lean = stored.lean()
    assert lean.is_lean and type(lean) is type(stored) and lean.lean() is lean
    back = lean.stored()
    assert not back.is_lean and all(a.is_realized for a in back.a)
    assert _same(back.a, stored.a) and back.nbytes == stored.nbytes
    gks = kg.rotation_keys([1, 3], conjugate=True)
    lgks = gks.lean()
    assert lgks.is_lean and not gks.is_lean and list(lgks.keys) == list(gks.keys)
    assert lgks.nbytes < gks.nbytes == lgks.full_nbytes
    assert lgks.stored().nbytes == gks.nbytes


def test_lean_refuses_a_row_that_is_not_a_seeded_sample():
    params = _params("python")
    kg, _ = _pair(params)
    k = kg.relin_key()
    computed = SwitchingKey(k.b, tuple(a + 0 for a in k.a), params)
    with pytest.raises(ParameterError, match="not a seeded uniform sample"):
        computed.lean()
    with pytest.raises(ParameterError, match="lean"):
        KeyGenerator(params, lean="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("device", DEVICES)
def test_key_switch_at_every_level_is_the_stored_keys(device):
    params = _params(device)
    (kg, stored), (_, lean) = _both(params, lambda k: k.galois_key(5))
    s = kg.secret_key().poly
    for level in range(params.depth + 1):
        d = Poly.uniform(params.ring(level), device=device, domain="NTT").realize()
        u, v = key_switch(d, stored, level), key_switch(d, lean, level)
        assert _same(u, v)
        # independent of either key: u0 + u1·s ≈ d·s(X^5) on Q_level (small key-switch noise)
        sl, s5 = s.to_ring(params.ring(level)), s.automorph(5).to_ring(params.ring(level))
        assert _centred_max((v[0] + v[1] * sl - d * s5).intt()) < 2 ** 12
    assert lean.is_lean and not any(a.is_realized for a in lean.a)


@pytest.mark.parametrize("device", DEVICES)
def test_rotate_conjugate_relinearize_are_the_stored_keys(device):
    params = _params(device)
    (kg, ev), (_, lev) = _both(params, lambda k: Evaluator(
        params, k.relin_key(), k.rotation_keys([1, -2], conjugate=True)))
    assert lev.relin_key.is_lean and not ev.relin_key.is_lean
    sk = kg.secret_key()
    enc, dec = Encoder(params), Decryptor(params, sk)
    x = np.linspace(-1, 1, params.N // 2)
    ct = Encryptor(params, sk).encrypt(enc.encode(x))
    for f in (lambda e: e.rescale(e.multiply(ct, ct)), lambda e: e.rotate(ct, 1),
              lambda e: e.rotate(ct, -2), lambda e: e.conjugate(ct)):
        out, lout = f(ev), f(lev)
        assert dumps(out) == dumps(lout)
    got = enc.decode(dec.decrypt(lev.rotate(ct, 1))).real
    assert np.max(np.abs(got - np.roll(x, -1))) < 1e-3


@pytest.mark.parametrize("device", DEVICES)
def test_jit_replays_regenerate_the_rows(device):
    params = _params(device)
    (_, stored), (_, lean) = _both(params, lambda k: k.galois_key(5))
    level = params.depth - 1  # below the top: the Q_l·P rows of the regenerated samples

    @ren.jit
    def switch(d):
        return key_switch(d, lean, level)

    for _ in range(3):
        d = Poly.uniform(params.ring(level), device=device, domain="NTT").realize()
        assert _same(switch(d), key_switch(d, stored, level))
    assert switch.misses == 1 and lean.is_lean and not any(a.is_realized for a in lean.a)

    @ren.jit
    def by_argument(d, key):
        return key_switch(d, key, level)

    assert _same(by_argument(d, lean), key_switch(d, stored, level))
    with pytest.raises(JitError, match="frozen scalar"):  # another key's seeds: not this plan
        by_argument(d, KeyGenerator(params, lean=True).galois_key(5))


def test_bootstrapping_with_lean_keys_is_the_stored_keys():
    from ren.ckks.circuits.bootstrap import Bootstrapper, bootstrap_params_small

    params = bootstrap_params_small("cpu", N=256, secret="ternary")  # encapsulation keys too
    bt = Bootstrapper(params)
    outs = []
    for lean in (False, True):
        with ren.random.seeded(5):
            kg = KeyGenerator(params, lean=lean)
            rlk, gks, ek = kg.relin_key(), bt.keys(kg), bt.encapsulation_keys(kg)
            enc = Encoder(params)
            x = np.linspace(-0.5, 0.5, params.N // 2)
            ct = Encryptor(params, kg.secret_key()).encrypt(enc.encode(x, level=1))
        assert rlk.is_lean is gks.is_lean is ek.is_lean is lean
        outs.append(bt.bootstrap(Evaluator(params, rlk, gks), ct, ek))
        if lean:
            assert ek.nbytes < ek.full_nbytes and gks.nbytes < gks.full_nbytes / 1.9
            got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(outs[-1])).real
            assert np.max(np.abs(got - x)) < 2 ** -15
    assert dumps(outs[0]) == dumps(outs[1])


def test_serialization_writes_the_compact_form_and_keeps_the_key_lean():
    params = _params("python")
    (_, stored), (_, lean) = _both(params, lambda k: (
        k.relin_key(), k.rotation_keys([1], conjugate=True), Encapsulation(params).keys(k)))
    for s, k in zip(stored, lean, strict=True):
        assert k.is_lean
        # the same seeds and b rows; the lean key's container also says it is lean
        assert len(dumps(k, compact=True)) > len(dumps(s, compact=True))
        assert dumps(k) == dumps(s)  # the full form regenerates the rows to write them
        assert k.is_lean and k.nbytes < k.full_nbytes
        back = loads(dumps(k, compact=True), params)  # lean again, as written
        assert back.is_lean and dumps(back, compact=True) == dumps(k, compact=True)
        assert dumps(back.stored(), compact=True) == dumps(s, compact=True)
        assert not loads(dumps(s, compact=True), params).is_lean  # a stored key stays stored
        assert not loads(dumps(k), params).is_lean  # the full form holds the rows themselves
    d = Poly.uniform(params.ring(1), domain="NTT").realize()
    back = loads(dumps(lean[0], compact=True), params)
    assert _same(key_switch(d, back, 1), key_switch(d, stored[0], 1))


def test_a_loaded_lean_key_replays_a_plan_captured_on_the_lean_key_and_bad_flags_fail():
    from ren.rlwe.serialize import CorruptedDataError

    params = _params("python")
    (_, stored), (_, lean) = _both(params, lambda k: k.rotation_keys([1]))
    d = Poly.uniform(params.ring(1), domain="NTT").realize()
    g = next(iter(lean.keys))

    @ren.jit
    def switch(x, keys):
        return key_switch(x, keys.keys[g], 1)

    want = switch(d, lean)
    back = loads(dumps(lean, compact=True), params)
    assert _same(switch(d, back), want) and len(switch.plans) == 1  # no second capture
    assert _same(want, key_switch(d, stored.keys[g], 1))
    # a container whose flag is not the list of booleans it must be is refused
    data = bytearray(dumps(lean, compact=True))
    meta_at = data.index(b'"lean":[true]')
    for bad in (b'"lean":[1234]', b'"lean":"yes!"'):  # the same length as the flag
        body = bytes(data[:meta_at] + bad + data[meta_at + len(bad):-16])
        # the checksum recomputed: the flag itself must be refused, not the checksum
        forged = body + hashlib.sha256(body).digest()[:16]
        with pytest.raises(CorruptedDataError, match="'lean' must be a list of booleans"):
            loads(forged, params)


def test_distributed_wire_sends_seeds_and_decodes_the_same_key():
    pytest.importorskip("dask")
    from ren.distributed.wire import Codec

    params = _params("python")
    (_, stored), (_, lean) = _both(params, lambda k: k.rotation_keys([1]))
    codec = Codec()
    rec = codec.encode(lean, "keys")
    assert lean.is_lean  # encoding did not realize the rows into the key
    sent = sum(len(memoryview(f).cast("B")) for f in rec.frames)
    assert sent == lean.nbytes - 32 * len(params.digits)  # the b rows; the a rows as seeds
    back = codec.decode(rec)
    d = Poly.uniform(params.ring(params.depth), domain="NTT").realize()
    g = next(iter(stored.keys))
    assert _same(key_switch(d, back.keys[g], params.depth),
                 key_switch(d, stored.keys[g], params.depth))


def test_the_compact_form_of_a_lean_key_samples_no_row(monkeypatch):
    """A seed record needs no words: writing a lean key compactly regenerates nothing (the full
    form does, to write the words)."""
    import ren.backend.numpy_backend as nb
    from ren.backend import get_device

    if not isinstance(get_device("python"), nb.NumpyDevice):
        pytest.skip("counts the NumPy device's sampler calls (--ren-backend cpu samples in C)")
    params = _params("python")
    key = KeyGenerator(params, lean=True).relin_key()
    calls = []
    real = nb.sample
    monkeypatch.setattr(nb, "sample", lambda spec, ring: calls.append(spec) or real(spec, ring))
    dumps(key, compact=True)
    assert calls == []
    dumps(key)
    assert len(calls) == len(key.a_rows)
