"""ren.distributed's map over BFV and BGV ciphertexts on a one-worker LocalCluster (issue 43): a
jitted BFV multiply-and-rotate with its relinearization and Galois keys sent once, and a BGV
product switched down a level, results decrypted on the client against exact integer arithmetic
mod t (NumPy, slot by slot).  Skipped without the `distributed` extra."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

import ren  # noqa: E402
from ren.bfv import (  # noqa: E402
    BFVParams,
    BGVDecryptor,
    BGVEncryptor,
    BGVEvaluator,
    BGVParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    galois_keys,
)
from ren.distributed import SecretKeyError, local_client, submit  # noqa: E402
from ren.distributed import map as dmap  # noqa: E402
from ren.rlwe import KeyGenerator  # noqa: E402

T = 40961  # a batching prime: 40961 = 1 (mod 2N) for N = 1024


@pytest.fixture(scope="module")
def client():
    with local_client(workers=1, silence_logs=logging.CRITICAL) as c:
        yield c


@pytest.fixture(scope="module")
def bfv():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = BFVParams.generate(1024, T, 3, 1, insecure=True)
    kg = KeyGenerator(params)
    keys = {"relin": kg.relin_key(), "galois": galois_keys(kg, [1], rows=False)}
    return params, kg, keys


@ren.jit
def square_rotate(ct, keys):
    """ct² relinearized, then rotated left by one column."""
    ev = Evaluator(ct.params, keys["relin"], keys["galois"])
    return ev.rotate_columns(ev.multiply(ct, ct), 1)


def test_a_bfv_map_on_a_local_cluster_is_exact(bfv, client):
    params, kg, keys = bfv
    enc = Encoder(params)
    rng = np.random.default_rng(5)
    values = [rng.integers(0, T, params.N) for _ in range(3)]
    cts = [Encryptor(params, kg.public_key()).encrypt(enc.encode(v)) for v in values]
    cts.append(Encryptor(params, kg.secret_key()).encrypt(enc.encode(values[0])))  # seeded c1
    job = submit(square_rotate, cts, keys=keys, client=client)
    outs = job.result()
    dec = Decryptor(params, kg.secret_key())
    half = params.N // 2
    for i, out in enumerate(outs):
        v = values[i % 3].astype(object)
        sq = (v * v) % T  # exact, slot by slot
        want = np.concatenate([np.roll(sq[:half], -1), np.roll(sq[half:], -1)])
        assert enc.decode(dec.decrypt(out)).tolist() == want.tolist(), f"input {i}"
    assert job.plans == 1  # one captured plan, replayed on the worker
    # 4 inputs are 8 parts, but the fresh secret-key encryption's c1 travelled as a seed
    part = 4 * params.N * params.ring(0).limbs
    assert 7 * part < job.input_bytes < 7 * part + 4000
    # the plain (eager) path too, and the guard: a BFV Decryptor never travels
    assert enc.decode(dec.decrypt(dmap(lambda ct: ct, cts[:1], client=client)[0]))[:4] \
        .tolist() == values[0][:4].tolist()
    with pytest.raises(SecretKeyError, match="Decryptor"):
        dmap(lambda ct, d: ct, [(cts[0], dec)], client=client)


@ren.jit
def bgv_square(ct, keys):
    """ct² relinearized, then switched down one level (the factor changes)."""
    ev = BGVEvaluator(ct.params, keys)
    return ev.mod_switch(ev.multiply(ct, ct))


def test_a_bgv_map_keeps_levels_and_factors(client):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = BGVParams.generate(1024, T, 2, insecure=True)
    kg = KeyGenerator(params)
    enc = Encoder(params)
    values = [np.random.default_rng(i).integers(0, T, params.N) for i in range(2)]
    cts = [BGVEncryptor(params, kg.public_key()).encrypt(enc.encode(v)) for v in values]
    outs = dmap(bgv_square, cts, keys=kg.relin_key(), client=client)
    local = bgv_square(cts[0], keys=kg.relin_key())
    assert local.level < params.depth - 1 and local.factor != 1  # both travel in the metadata
    dec = BGVDecryptor(params, kg.secret_key())
    for v, out in zip(values, outs):
        assert (out.level, out.factor) == (local.level, local.factor)  # as replayed here
        v = v.astype(object)
        assert enc.decode(dec.decrypt(out)).tolist() == ((v * v) % T).tolist()
