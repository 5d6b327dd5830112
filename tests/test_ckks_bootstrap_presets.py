"""The bootstrapping presets of `ren.ckks.circuits.presets` at the small ring (N = 256): each
one's shape, levels left, Galois keys and precision are the figures its module docstring's
table states (parsed from it, so the documentation and the test cannot drift apart), and the
trade goes the way each name says against the balanced preset."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ren
from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
from ren.ckks.circuits import presets
from ren.ckks.circuits.bootstrap import bootstrap_params_small
from ren.ckks.circuits.presets import PRESETS, bootstrap_shape, preset_bootstrapper
from ren.errors import ParameterError

#: bits the measured range may move by with other seeds (three seeds span ~0.4 bits)
SLACK = 0.6


@pytest.fixture(scope="module", autouse=True)
def _python_run_only(request):
    """Three bootstrappings per preset take seconds: this module runs once, in the "python"
    run (its own bootstrappings run on the compiled "cpu" device)."""
    if request.config.getoption("--ren-backend") != "python":
        pytest.skip("the python run covers it")


def documented() -> dict[str, dict]:
    """The docstring's table: preset -> shape, bits range, levels left, Galois keys."""
    rows = {}
    pattern = (r"^(\w+)\s+(\d), (\d), 2\^(\d+)\s+([\d.]+)–([\d.]+) bits\s+(\d+) of (\d+)\s+"
               r"(\d+) \+ conj\.$")
    for line in (presets.__doc__ or "").splitlines():
        m = re.match(pattern, line.strip())
        if m:
            name, cts, stc, ratio, lo, hi, left, depth, keys = m.groups()
            rows[name] = {"shape": (int(cts), int(stc), int(ratio)), "bits": (float(lo),
                          float(hi)), "left": int(left), "depth": int(depth), "keys": int(keys)}
    return rows


@pytest.fixture(scope="module")
def measured():
    params = bootstrap_params_small("cpu")
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        rlk, pk = kg.relin_key(), kg.public_key()
    enc, encryptor = Encoder(params), Encryptor(params, pk)
    dec = Decryptor(params, kg.secret_key())
    out = {}
    for name in PRESETS:
        bt = preset_bootstrapper(params, name)
        with ren.random.seeded(2):
            ev = Evaluator(params, rlk, bt.keys(kg))
        bits, left = [], set()
        for seed in range(3):
            x = np.random.default_rng(10 + seed).uniform(-1, 1, params.slots)
            with ren.random.seeded(20 + seed):
                ct = encryptor.encrypt(enc.encode(x, level=1))
            res = bt.bootstrap(ev, ct)
            left.add(res.level)
            bits.append(-np.log2(np.max(np.abs(enc.decode(dec.decrypt(res)).real - x))))
        out[name] = {"bt": bt, "bits": bits, "left": left, "params": params}
    return out


def test_the_table_names_every_preset():
    assert sorted(documented()) == sorted(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_each_preset_has_its_documented_figures(measured, name):
    doc, got = documented()[name], measured[name]
    bt, params = got["bt"], got["params"]
    print(f"[bootstrap preset] {name}: {min(got['bits']):.2f}..{max(got['bits']):.2f} bits, "
          f"{got['left']} levels left, {len(bt.rotation_steps)} Galois keys + conj.")
    assert (bt.cts_levels, bt.stc_levels, bt.message_ratio_bits) == doc["shape"]
    assert params.depth == doc["depth"] and got["left"] == {doc["left"]}
    assert bt.output_level == doc["left"] and len(bt.rotation_steps) == doc["keys"]
    lo, hi = doc["bits"]
    assert lo - SLACK <= min(got["bits"]) and max(got["bits"]) <= hi + SLACK, got["bits"]


def test_each_preset_trades_the_way_its_name_says(measured):
    balanced, levels, precision = (measured[n] for n in ("balanced", "levels", "precision"))
    assert min(levels["left"]) == min(balanced["left"]) + 2
    assert min(precision["left"]) == min(balanced["left"]) - 1
    # the same seeds: precision gains on every input, levels loses
    assert all(p > b for p, b in zip(precision["bits"], balanced["bits"], strict=True))
    assert np.mean(levels["bits"]) < np.mean(balanced["bits"])


def test_the_shapes_and_bad_names():
    params = bootstrap_params_small()
    assert bootstrap_shape(params) == {"cts_levels": 2, "stc_levels": 2}
    assert bootstrap_shape(params, "levels") == {"cts_levels": 1, "stc_levels": 1}
    assert bootstrap_shape(params, "precision") == {"cts_levels": 3, "stc_levels": 2,
                                                    "message_ratio_bits": 13}
    assert bootstrap_shape(params, "precision", slots=8)["message_ratio_bits"] == 15
    bt = preset_bootstrapper(params, "levels", slots=32)  # a keyword of the caller's as well
    assert bt.slots == 32 and bt.cts_levels == 1
    with pytest.raises(ParameterError, match="preset"):
        bootstrap_shape(params, "fast")
    with pytest.raises(ParameterError, match="slots"):
        bootstrap_shape(params, "balanced", slots=0)
