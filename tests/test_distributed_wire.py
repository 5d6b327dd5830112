"""ren.distributed without a cluster: the wire format (Ren's checksummed formats inside plain
containers), the guard that refuses secret keys, the sweep's grid and its point runner, and the
message when Dask is missing.  None of this needs Dask, so it runs on the README's plain
``pip install -e ".[test]"`` too."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from ckks_helpers import context

import ren
from ren.ckks import Decryptor, Encryptor, dumps
from ren.distributed import SecretKeyError, WireError, run_point
from ren.distributed.sweep import expand_grid
from ren.distributed.wire import Codec, Sealed, guarded_dumps, wire_bytes
from ren.errors import ParameterError, SerializationError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=2, scale_bits=30, first_bits=40)


def test_a_tree_of_ren_objects_round_trips_in_rens_own_formats(ckks):
    ct = ckks.encrypt([0.5, -0.25])
    poly = ren.Poly.from_coefficients(range(16), ren.RingSpec.generate(16, 2))
    tree = {"ct": ct, "rest": (poly, 3, "x", np.arange(4), None), "rlk": ckks.ev.relin_key}
    codec = Codec()
    wire = codec.encode(tree, "tree")
    # every Ren object is a Sealed record holding exactly the bytes of Ren's own format, the
    # polynomials in the Montgomery form Ren stores them in (no conversion at either end)
    assert wire["ct"] == Sealed("ckks", ckks.params.fingerprint, dumps(ct, form="montgomery"))
    assert wire["rest"][0] == Sealed("poly", "python", poly.tobytes("montgomery"))
    assert wire["rlk"].data == dumps(ckks.ev.relin_key, compact=True, form="montgomery")
    assert wire_bytes(wire) == sum(len(r.data) for r in (wire["ct"], wire["rest"][0], wire["rlk"]))
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire)))
    assert dumps(back["ct"]) == dumps(ct)
    assert back["rest"][0].tolist() == poly.tolist()
    assert back["rest"][1:3] == (3, "x") and back["rest"][4] is None
    assert back["rest"][3].tolist() == [0, 1, 2, 3]
    assert dumps(back["rlk"]) == dumps(ckks.ev.relin_key)  # uniform halves regenerated
    assert np.allclose(ckks.decrypt(back["ct"])[:2], [0.5, -0.25], atol=1e-6)


def test_a_sealed_record_pickles_its_data_out_of_band(ckks):
    rec = Codec().encode(ckks.encrypt([0.5]), "ct")
    # protocol 5 (Dask's): the data leaves the pickle stream as one buffer, not copied into it
    buffers: list = []
    stream = pickle.dumps(rec, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and bytes(buffers[0].raw()) == rec.data
    assert len(stream) < 200 < len(rec.data)
    # the receiving transport hands the frame back as a buffer of its own: bytes again
    back = pickle.loads(stream, buffers=[bytearray(buffers[0].raw())])
    assert back == rec and type(back.data) is bytes
    # older protocols keep the data in the stream
    for protocol in (2, 4):
        old = pickle.loads(pickle.dumps(rec, protocol=protocol))
        assert old == rec and type(old.data) is bytes


def test_corrupted_or_unknown_records_are_refused(ckks):
    codec = Codec()
    rec = codec.encode(ckks.encrypt([0.5]), "ct")
    bad = Sealed(rec.kind, rec.tag, rec.data[:100] + bytes([rec.data[100] ^ 1]) + rec.data[101:])
    with pytest.raises(SerializationError, match="checksum mismatch"):
        codec.decode(bad)
    with pytest.raises(WireError, match=r"parameters .* were not sent with the job"):
        Codec().decode(rec)
    with pytest.raises(WireError, match="unknown wire record kind 'blob'"):
        codec.decode(Sealed("blob", b"", b""))


def test_values_that_cannot_travel_say_what_can(ckks):
    with pytest.raises(WireError, match=r"batch\[2\]\[0\]: a Evaluator cannot travel.*NumPy"):
        Codec().encode([1, 2, (ckks.ev,)], "batch")
    with pytest.raises(WireError, match="dict keys on the wire are str or int"):
        Codec().encode({(1, 2): 3}, "keys")
    with pytest.raises(WireError, match="array of Python objects"):
        Codec().encode(np.array([object()]), "x")


def test_secret_keys_and_their_holders_are_refused(ckks):
    sk = ckks.keygen.secret_key()
    for holder, what in [(sk, "a SecretKey"), (ckks.keygen, "a KeyGenerator"),
                         (ckks.dec, "a Decryptor"),
                         (Encryptor(ckks.params, sk), "a secret-key Encryptor")]:
        with pytest.raises(SecretKeyError, match=f"keys\\[1\\]: refusing to send {what}"):
            Codec().encode((ckks.ev.relin_key, holder), "keys")
    # the pickler of plans and functions finds a secret however deeply it is nested
    dec = Decryptor(ckks.params, sk)
    with pytest.raises(SecretKeyError, match="job: refusing to send a Decryptor"):
        guarded_dumps({"f": [1, (dec,)]}, "job")
    assert pickle.loads(guarded_dumps({"ok": [1, ckks.params]}, "x"))["ok"][1] == ckks.params


def test_a_function_closing_over_a_secret_is_refused(ckks):
    pytest.importorskip("cloudpickle", reason="functions travel by cloudpickle, which comes "
                        'with Dask: pip install -e ".[distributed]"')
    dec = ckks.dec

    def leaky(ct):
        return dec.decrypt(ct)

    with pytest.raises(SecretKeyError, match="fn: refusing to send a Decryptor"):
        guarded_dumps({"f": [leaky]}, "fn")


def test_grid_expansion_and_its_errors():
    pts = expand_grid({"N": [64, 128], "depth": [1, 2], "secret": ("sparse", 8),
                       "insecure": True})
    assert len(pts) == 4 and pts[0] == {"N": 64, "depth": 1, "secret": ("sparse", 8),
                                        "insecure": True}
    assert expand_grid([{"preset": "N12"}]) == [{"preset": "N12"}]
    with pytest.raises(ParameterError, match=r"unknown field\(s\) \['scale'\]"):
        expand_grid({"N": [64], "scale": [30]})
    with pytest.raises(ParameterError, match="have no choices"):
        expand_grid({"N": []})
    with pytest.raises(ParameterError, match="dict of field -> list of choices"):
        expand_grid(64)


def _square_rotated(ev, ct):
    return ev.rescale(ev.multiply(ev.rotate(ct, 1), ct))


def test_run_point_measures_against_numpy_and_the_meter():
    point = {"N": 64, "depth": 2, "scale_bits": 30, "first_bits": 40, "insecure": True}
    row = run_point(_square_rotated, point, reference=lambda x: np.roll(x, -1) * x, meter=True,
                    seed=3, repeat=1)
    assert row["N"] == 64 and row["levels_used"] == 1 and row["output_level"] == 1
    assert row["galois_keys"] == 1  # the key planner found the one rotation
    assert row["key_bytes"] == row["relin_key_bytes"] + row["galois_key_bytes"] > 0
    assert row["key_bytes_compact"] < row["key_bytes"]
    assert 18 < row["bits"] < 40 and row["meter_worst_op"] in ("rotate", "multiply", "rescale")
    assert "largest loss" in row["meter"]
    again = run_point(_square_rotated, point, reference=lambda x: np.roll(x, -1) * x, seed=3,
                      repeat=1)
    assert again["bits"] == row["bits"]  # seeded: the same keys, encryption and result


def test_without_dask_the_message_says_what_to_install():
    hide = """
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("distributed", "dask"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Hide())
        import ren.distributed as rd
        try:
            rd.map(lambda x: x, [1])
        except rd.DaskUnavailableError as e:
            print(e)
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(hide)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": f"{ROOT}", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert 'pip install -e ".[distributed]"' in r.stdout
