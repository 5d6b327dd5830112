"""ren.distributed without a cluster: the wire format (Sealed records: a header and frames
that are the limbs' own storage, checksummed; BFV's objects too), the guard that refuses secret
keys, the sweep's grid and its point runner, and the message when Dask is missing.  None of
this needs Dask (the Dask family's check is skipped without it), so it runs on the README's
plain ``pip install -e ".[test]"`` too."""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from ckks_helpers import context

import ren
from ren.bfv import BFVParams, BGVDecryptor, BGVEncryptor, BGVEvaluator, BGVParams
from ren.bfv import Decryptor as BFVDecryptor
from ren.bfv import Encoder as BFVEncoder
from ren.bfv import Encryptor as BFVEncryptor
from ren.bfv import Evaluator as BFVEvaluator
from ren.bfv import InsecureParametersWarning as BFVInsecure
from ren.bfv import galois_keys as bfv_galois_keys
from ren.ckks import Decryptor, Encryptor, Evaluator, dumps
from ren.distributed import SecretKeyError, WireError, frames, run_point
from ren.distributed.frames import adoptable, register_dask
from ren.distributed.sweep import expand_grid
from ren.distributed.wire import Codec, Sealed, guarded_dumps, wire_bytes
from ren.errors import ParameterError, SerializationError
from ren.ir import storage_buffer
from ren.rlwe import KeyGenerator

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=2, scale_bits=30, first_bits=40)


def _frames_share_storage(rec, polys) -> bool:
    """Whether each frame of `rec` is the storage of the matching Poly itself (no copy)."""
    return len(rec.frames) == len(polys) and all(
        np.shares_memory(np.frombuffer(f, np.uint8), storage_buffer(p.node).array())
        for f, p in zip(rec.frames, polys))


def test_a_tree_of_ren_objects_round_trips_as_headers_and_frames(ckks):
    ct = ckks.encrypt([0.5, -0.25])
    poly = ren.Poly.from_coefficients(range(16), ren.RingSpec.generate(16, 2))
    tree = {"ct": ct, "rest": (poly, 3, "x", np.arange(4), None), "rlk": ckks.ev.relin_key}
    codec = Codec()
    wire = codec.encode(tree, "tree")
    # a ciphertext is one frame per part: the part's own storage (Montgomery words), not a copy
    assert isinstance(wire["ct"], Sealed) and wire["ct"].kind == "ct"
    assert _frames_share_storage(wire["ct"], ct.parts)
    assert bytes(wire["ct"].frames[1]) == storage_buffer(ct.parts[1].node).array().tobytes()
    assert _frames_share_storage(wire["rest"][0], [poly])
    # keys in the compact form: the uniform halves are seeds, only the b rows are frames
    dnum = len(ckks.params.digits)
    assert len(wire["rlk"].frames) == dnum
    assert wire["rlk"].nbytes < ckks.ev.relin_key.nbytes // 2 + 1000
    assert wire_bytes(wire) == sum(r.nbytes for r in (wire["ct"], wire["rest"][0], wire["rlk"]))
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire, protocol=5)))
    assert dumps(back["ct"]) == dumps(ct) and back["ct"].scale == ct.scale
    assert back["rest"][0].tolist() == poly.tolist()
    assert back["rest"][1:3] == (3, "x") and back["rest"][4] is None
    assert back["rest"][3].tolist() == [0, 1, 2, 3]
    assert dumps(back["rlk"]) == dumps(ckks.ev.relin_key)  # uniform halves regenerated
    assert np.allclose(ckks.decrypt(back["ct"])[:2], [0.5, -0.25], atol=1e-6)
    # the decoded Polys own their storage: the frames can go
    assert not np.shares_memory(storage_buffer(back["ct"].parts[0].node).array(),
                                storage_buffer(ct.parts[0].node).array())


def test_received_frames_become_the_storage_without_a_copy(ckks):
    ct = ckks.encrypt([0.5, 0.125])
    codec = Codec()
    rec = codec.encode(ct, "ct")
    # a writable buffer of the transport's own (what Dask reads a large frame into): adopted
    owned = [bytearray(f) for f in rec.frames]
    back = codec.decode(Sealed.from_header(rec.header(), owned))
    for part, frame in zip(back.parts, owned):
        assert np.shares_memory(storage_buffer(part.node).array(), np.frombuffer(frame, np.uint8))
    # read-only bytes may be shared (an in-band pickle, a caller's blob): copied
    shared = [bytes(f) for f in rec.frames]
    again = codec.decode(Sealed.from_header(rec.header(), shared))
    assert not np.shares_memory(storage_buffer(again.parts[0].node).array(),
                                np.frombuffer(shared[0], np.uint8))
    for got in (back, again):
        assert dumps(got) == dumps(ct)
        assert np.allclose(ckks.decrypt(ckks.ev.add(got, got))[:2], [1.0, 0.25], atol=1e-6)
    assert bytes(owned[0]) == bytes(rec.frames[0])  # computing on it did not write to it


def test_a_fresh_secret_key_encryption_sends_its_uniform_half_as_a_seed(ckks):
    ct = ckks.sk_encryptor.encrypt(ckks.enc.encode([0.75]))
    codec = Codec()
    rec = codec.encode(ct, "ct")
    assert len(rec.frames) == 1 and b'"s"' in rec.meta  # c0 dense, c1 a seed
    assert rec.nbytes < ct.parts[0].ring.limbs * ckks.params.N * 4 + 500
    back = Codec(codec.params).decode(rec)
    assert back.parts[1].tolist() == ct.parts[1].tolist()
    assert np.allclose(ckks.decrypt(back)[:1], [0.75], atol=1e-6)
    # a computed ciphertext has no uniform half: both parts travel
    assert len(codec.encode(ckks.ev.add(ct, ct), "sum").frames) == 2


def test_a_record_frames_out_of_band_for_pickle_and_dask(ckks):
    ct = ckks.encrypt([0.5])
    rec = Codec().encode(ct, "ct")
    # protocol 5 (Dask's pickle family): each frame leaves the pickle stream as a buffer
    buffers: list = []
    stream = pickle.dumps(rec, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 2 and len(stream) < 400
    assert np.shares_memory(np.frombuffer(buffers[0].raw(), np.uint8),
                            storage_buffer(ct.parts[0].node).array())
    # the receiving transport hands the frames back as buffers of its own
    back = pickle.loads(stream, buffers=[bytearray(b.raw()) for b in buffers])
    assert back.checksum == rec.checksum
    assert [bytes(f) for f in back.frames] == [bytes(f) for f in rec.frames]
    # older protocols keep the frames in the stream
    for protocol in (2, 4):
        old = pickle.loads(pickle.dumps(rec, protocol=protocol))
        assert [bytes(f) for f in old.frames] == [bytes(f) for f in rec.frames]
    # Dask's own family: a small header and the frames, which are the limbs' storage
    protocol = pytest.importorskip("distributed.protocol")
    assert register_dask()
    header, frames = protocol.serialize(rec, serializers=("dask",))
    assert header["serializer"] == "dask"
    assert any(np.shares_memory(np.frombuffer(f, np.uint8),
                                storage_buffer(ct.parts[0].node).array()) for f in frames)
    again = protocol.deserialize(header, [bytearray(f) for f in frames])
    assert again.checksum == rec.checksum
    assert dumps(Codec({ckks.params.fingerprint: ckks.params}).decode(again)) == dumps(ct)


def test_out_of_band_buffers_in_a_garbage_cycle_do_not_crash_the_collector():
    """A PickleBuffer over a memoryview and that memoryview, collected in one cycle (a skipped
    test's traceback held both), crashed CPython 3.11's garbage collector (a segfault in the
    README run): the buffers wrap byte arrays instead.  In a subprocess, as a crash kills it."""
    code = """
        import gc, pickle
        import numpy as np
        from ren.distributed.frames import Sealed, byte_view
        for _ in range(100):
            arr = np.arange(4096, dtype=np.uint32)
            rec = Sealed("poly", b"{}", (byte_view(arr),))
            buffers = []
            pickle.dumps(rec, protocol=5, buffer_callback=buffers.append)
            cycle = [buffers, rec, rec.frames[0]]
            cycle.append(cycle)
            del arr, rec, buffers, cycle
            gc.collect()
        print("collected")
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["collected"], (r.returncode, r.stderr)


def _over_tcp(msg):
    """`msg` written to and read back from a real Dask TCP comm (this process, both ends)."""
    import asyncio

    from distributed.comm import connect, listen

    async def go():
        got: asyncio.Queue = asyncio.Queue()

        async def handle(comm):
            await got.put(await comm.read())
            await comm.close()

        listener = listen("tcp://127.0.0.1:0", handle, deserialize=True)
        await listener.start()
        comm = await connect(listener.contact_address, deserialize=True)
        await comm.write(msg, serializers=("dask", "pickle"))
        out = await asyncio.wait_for(got.get(), 30)
        await comm.close()
        listener.stop()
        return out

    return asyncio.run(go())


def test_every_frame_read_from_a_dask_socket_is_a_buffer_of_its_own(ckks):
    """Dask's TCP comm reads the message's first uncompressed frame into one buffer with the
    message header, at whatever offset follows it (often not 4-aligned: it would be copied,
    not adopted); a record's small leading frame takes that place, so every limb frame is read
    into a fresh buffer of its own and the receiver adopts it."""
    protocol = pytest.importorskip("distributed.protocol")
    assert register_dask()
    cts = [ckks.encrypt([0.5]), ckks.ev.multiply(ckks.encrypt([0.25]), ckks.encrypt([2.0]))]
    codec = Codec()
    msg = {"data": {f"x{i}": protocol.to_serialize(codec.encode(ct, "ct"))
                    for i, ct in enumerate(cts)}}
    header, frames = protocol.serialize(codec.encode(cts[0], "ct"), serializers=("dask",))
    with pytest.raises(SerializationError, match="without its lead frame"):
        protocol.deserialize(header, frames[1:])
    got = _over_tcp(msg)["data"]
    for i, ct in enumerate(cts):
        rec = got[f"x{i}"]
        assert isinstance(rec, Sealed) and len(rec.frames) == len(ct.parts)
        for frame in rec.frames:
            view = memoryview(frame)
            base = np.asarray(view.obj) if view.obj is not None else None
            assert base is not None and base.nbytes == view.nbytes, "shares a buffer"
            assert adoptable(np.frombuffer(frame, np.uint32), ckks.params.device)
        back = Codec(codec.params).decode(rec)
        assert dumps(back) == dumps(ct)
        for part, frame in zip(back.parts, rec.frames):  # adopted: no copy
            assert np.shares_memory(storage_buffer(part.node).array(),
                                    np.frombuffer(frame, np.uint8))


def test_a_process_that_imports_ren_before_dask_still_registers_the_records():
    # a LocalCluster's spawned worker imports the client's main module (and so Ren) before
    # Dask; the first record it receives is deserialized by Dask before any Ren code runs
    pytest.importorskip("distributed", reason="the Dask family needs Dask")
    code = """
        import sys
        from ren.distributed.frames import Sealed
        assert "distributed" not in sys.modules
        from distributed.protocol import deserialize, serialize
        header, frames = serialize(Sealed("poly", b"{}", (b"abcd",)), serializers=("dask",))
        back = deserialize(header, frames)
        print(header["serializer"], type(back).__name__, bytes(back.frames[0]))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["dask", "Sealed", "b'abcd'"]


def _flip(rec, frame: int, at: int):
    f = bytearray(rec.frames[frame])
    f[at] ^= 1
    frames = list(rec.frames)
    frames[frame] = f
    return Sealed.from_header(rec.header(), frames)


def test_corrupted_truncated_or_unknown_records_are_refused(ckks):
    codec = Codec()
    rec = codec.encode(ckks.encrypt([0.5]), "ct")
    with pytest.raises(SerializationError, match=r"failed its .* checksum"):
        codec.decode(_flip(rec, 1, 100))
    short = Sealed.from_header(rec.header(), [rec.frames[0], bytes(rec.frames[1])[:-4]])
    with pytest.raises(SerializationError, match="checksum"):
        codec.decode(short)
    with pytest.raises(SerializationError, match="malformed header"):
        Sealed.from_header({"kind": "ct"}, [])
    # a record whose checksum matches but whose content is wrong: still refused, specifically
    resealed = Sealed("ct", rec.meta, (rec.frames[0], bytes(rec.frames[1])[:-4]))
    with pytest.raises(SerializationError, match="cut short or mixed up"):
        codec.decode(resealed)
    q0 = ckks.params.ring(ckks.params.depth).moduli[0]
    big = np.frombuffer(bytes(rec.frames[0]), np.uint32).copy()
    big[5] = q0
    with pytest.raises(SerializationError, match=r"residue \[0, 5\] .* not below"):
        codec.decode(Sealed("ct", rec.meta, (big.tobytes(), rec.frames[1])))
    three = rec.meta.replace(b'"polys":[', b'"polys":[["d",1],')
    with pytest.raises(SerializationError, match=r"describes 3 dense .* has 2 frame"):
        codec.decode(Sealed("ct", three, rec.frames))
    with pytest.raises(SerializationError, match=r"4 polynomial.* is not a ciphertext"):
        codec.decode(Sealed("ct", three.replace(b'"polys":[', b'"polys":[["d",1],'),
                            (*rec.frames, *rec.frames)))
    with pytest.raises(SerializationError, match="metadata is not JSON"):
        codec.decode(Sealed("ct", b"{" + rec.meta, rec.frames))
    with pytest.raises(WireError, match=r"parameters .* were not sent with the job"):
        Codec().decode(rec)
    with pytest.raises(WireError, match="unknown wire record kind 'blob'"):
        codec.decode(Sealed("blob", b"", ()))
    with pytest.raises(WireError, match="unknown checksum algorithm 'md5'"):
        codec.decode(Sealed("ct", rec.meta, rec.frames, "md5", rec.checksum))


def _reference_checksum(alg: str, rec) -> bytes:
    """The record's checksum recomputed by the hash package itself, over kind, meta, frames."""
    data = rec.kind.encode() + rec.meta + b"".join(bytes(f) for f in rec.frames)
    if alg == "sha256":
        return hashlib.sha256(data).digest()
    module = pytest.importorskip({"xxh3_128": "xxhash", "blake3": "blake3"}[alg])
    return (module.xxh3_128(data) if alg == "xxh3_128" else module.blake3(data)).digest()


@pytest.mark.parametrize("alg", ["xxh3_128", "blake3", "sha256"])
def test_records_of_every_checksum_algorithm_are_read(ckks, alg):
    # a sender without xxhash writes BLAKE3 records, one without blake3 too SHA-256 ones; every
    # receiver that has the package reads them, and a flipped bit fails under each
    codec = Codec()
    rec = codec.encode(ckks.encrypt([0.5]), "ct")
    want = _reference_checksum(alg, rec)
    other = Sealed(rec.kind, rec.meta, rec.frames, alg)
    assert other.alg == alg and other.checksum == want
    assert len(want) == (16 if alg == "xxh3_128" else 32)
    assert dumps(codec.decode(other)) == dumps(codec.decode(rec))
    with pytest.raises(SerializationError, match=f"failed its {alg} checksum"):
        codec.decode(_flip(other, 0, 7))
    with pytest.raises(SerializationError, match=f"failed its {alg} checksum"):
        codec.decode(_flip(other, 1, len(other.frames[1]) - 1))  # the last byte counts too


def test_records_are_checksummed_with_xxh3_and_cache_keys_with_a_cryptographic_hash(ckks):
    # transit corruption: the fast non-cryptographic XXH3-128 (the distributed extra's xxhash);
    # content addressing (the workers' cache keys): BLAKE3, never the records' hash
    pytest.importorskip("xxhash")
    blake3 = pytest.importorskip("blake3")
    rec = Codec().encode(ckks.encrypt([0.5]), "ct")
    assert frames.CHECKSUM == rec.alg == "xxh3_128"
    assert rec.checksum == _reference_checksum("xxh3_128", rec)
    assert frames.CONTENT_HASH == "blake3"
    assert frames.digest(b"plan") == "blake3-" + blake3.blake3(b"plan").hexdigest()[:32]
    # a receiver without the package the record names: WireError saying what to install
    for alg, attr, package in (("xxh3_128", "_xxhash", "xxhash"), ("blake3", "_blake3", "blake3")):
        other = Sealed(rec.kind, rec.meta, rec.frames, alg)
        saved = getattr(frames, attr)
        setattr(frames, attr, None)
        try:
            with pytest.raises(WireError, match=f"checksummed with {alg} arrived, but the "
                                                f"{package} package is not installed here"):
                Codec({ckks.params.fingerprint: ckks.params}).decode(other)
        finally:
            setattr(frames, attr, saved)


def test_without_xxhash_a_sender_falls_back_to_blake3_and_still_talks_to_others():
    # the README's venv may lack the extra: a process without xxhash writes BLAKE3 records
    # (SHA-256 without blake3 too) and reads an XXH3 record only with a clear WireError
    code = """
        import sys
        sys.modules["xxhash"] = None  # not installed
        from ren.distributed import frames
        from ren.distributed.errors import WireError
        rec = frames.Sealed("poly", b"{}", (b"abcd",))
        print(frames.CHECKSUM, rec.alg, frames.CONTENT_HASH)
        rec.verify()
        try:
            frames.Sealed("poly", b"{}", (b"abcd",), "xxh3_128", bytes(16)).verify()
        except WireError as e:
            print("WireError", "pip install xxhash" in str(e))
        import importlib
        sys.modules["blake3"] = None
        print(*(importlib.reload(frames).CHECKSUM, frames.CONTENT_HASH))
    """
    pytest.importorskip("blake3")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["blake3", "blake3", "blake3", "WireError", "True", "sha256",
                                "sha256"]


def test_bgv_ciphertexts_travel_with_their_level_and_factor():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BFVInsecure)
        params = BGVParams.generate(64, 257, 2, insecure=True)
    kg = KeyGenerator(params)
    enc = BFVEncoder(params)
    ct = BGVEncryptor(params, kg.public_key()).encrypt(enc.encode([7, 0, 256, 2]))
    ev = BGVEvaluator(params, kg.relin_key())
    low = ev.mod_switch(ev.multiply(ct, ct))  # a lower level, a factor other than 1
    assert low.level < params.depth and low.factor != 1
    codec = Codec()
    wire = codec.encode([ct, low], "bgv")
    assert b'"factor"' in wire[1].meta
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire, protocol=5)))
    assert [(c.level, c.factor) for c in back] == [(ct.level, ct.factor), (low.level, low.factor)]
    dec = BGVDecryptor(params, kg.secret_key())
    assert enc.decode(dec.decrypt(back[1]))[:4].tolist() == [49, 0, 1, 4]  # mod 257, exactly
    forged = Sealed("ct", wire[1].meta.replace(b'"factor":', b'"factor":0,"x":'), wire[1].frames)
    with pytest.raises(SerializationError, match="'factor' must be an int in"):
        codec.decode(forged)
    with pytest.raises(SecretKeyError, match="refusing to send a Decryptor"):
        codec.encode([dec], "batch")


def test_bfv_objects_travel(ckks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BFVInsecure)
        params = BFVParams.generate(64, 257, 3, 1, insecure=True)
    kg = KeyGenerator(params)
    enc, pk = BFVEncoder(params), kg.public_key()
    pt = enc.encode([3, 1, 4, 1, 5])
    ct = BFVEncryptor(params, pk).encrypt(pt)
    ev = BFVEvaluator(params, kg.relin_key())
    tree = (ct, pt, kg.relin_key(), pk, bfv_galois_keys(kg, [1]), ev.multiply(ct, ct, relin=False))
    codec = Codec()
    wire = codec.encode(tree, "bfv")
    assert [r.kind for r in wire] == ["ct", "bfv-pt", "swk", "pk", "gks", "ct"]
    assert len(wire[5].frames) == 3 and len(wire[3].frames) == 1  # pk: a is a seed
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire, protocol=5)))
    dec = BFVDecryptor(params, kg.secret_key())
    assert enc.decode(dec.decrypt(back[0]))[:5].tolist() == [3, 1, 4, 1, 5]
    assert back[1].coeffs.tolist() == pt.coeffs.tolist() and back[1].params == params
    assert enc.decode(dec.decrypt(back[5]))[:5].tolist() == [9, 1, 16, 1, 25]
    rlk, got = tree[2], back[2]
    assert [p.tolist() for p in (*got.b, *got.a)] == [p.tolist() for p in (*rlk.b, *rlk.a)]
    assert [back[3].b.tolist(), back[3].a.tolist()] == [pk.b.tolist(), pk.a.tolist()]
    assert sorted(back[4].keys) == sorted(tree[4].keys)
    # a multiplication on the decoded ciphertext with the decoded keys is still exact
    again = BFVEvaluator(params, back[2]).multiply(back[0], back[0])
    assert enc.decode(dec.decrypt(again))[:5].tolist() == [9, 1, 16, 1, 25]
    # and BFV's holders of the secret are refused like CKKS's
    with pytest.raises(SecretKeyError, match="refusing to send a Decryptor"):
        codec.encode([dec], "batch")
    with pytest.raises(SecretKeyError, match="refusing to send a secret-key Encryptor"):
        codec.encode([BFVEncryptor(params, kg.secret_key())], "batch")


@ren.jit
def _rotate_sum(ct, keys):
    ev = Evaluator(ct.params, rotation_keys=keys)
    return ev.add(ev.rotate(ct, 1), ev.rotate(ct, 4))


def test_decoded_galois_keys_keep_their_order_so_a_plan_captured_on_them_replays(ckks):
    gk = ckks.ev.rotation_keys
    assert list(gk.keys) != sorted(gk.keys)  # created in an order that is not sorted
    ct = ckks.encrypt([0.5, -0.25, 0.125])
    want = _rotate_sum(ct, keys=gk)  # captured on the original keys
    assert len(_rotate_sum.plans) == 1
    codec = Codec()
    wire = codec.encode(gk, "keys")
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire, protocol=5)))
    assert list(back.keys) == list(gk.keys)
    # the decoded key set replays the plan captured on the original (no second capture)
    assert dumps(_rotate_sum(ct, keys=back)) == dumps(want)
    assert len(_rotate_sum.plans) == 1


def test_lean_keys_arrive_lean_so_a_plan_captured_on_them_replays(ckks):
    """A lean key (a rows as seeds) travels as its b rows and seeds and arrives lean: a plan
    captured on lean keys reads their b rows only, and a stored key arriving in its place
    would not match it (the bootstrapping bench's --lean failed so on the workers)."""
    from ren.ckks.encapsulation import Encapsulation

    params = ckks.params
    with ren.random.seeded(11):
        kg = KeyGenerator(params, lean=True)
        rlk, gk = kg.relin_key(), kg.rotation_keys([1, 4])
        ek = Encapsulation(params, weight=8).keys(kg)
    assert rlk.is_lean and gk.is_lean and ek.is_lean
    codec = Codec()
    wire = codec.encode({"rlk": rlk, "gk": gk, "ek": ek, "stored": rlk.stored()}, "keys")
    back = Codec(codec.params).decode(pickle.loads(pickle.dumps(wire, protocol=5)))
    assert back["rlk"].is_lean and back["gk"].is_lean and back["ek"].is_lean
    assert not back["stored"].is_lean  # a stored key stays stored
    assert back["rlk"].seeds == rlk.seeds and list(back["gk"].keys) == list(gk.keys)
    for k in (back["rlk"], back["stored"], *back["gk"].keys.values()):
        want = rlk if k.galois is None else gk.keys[k.galois]
        assert [p.coefficients() for p in k.stored().a] == \
            [p.coefficients() for p in want.stored().a]
    ct = ckks.encrypt([0.5, -0.25, 0.125])
    want = _rotate_sum_lean(ct, keys=gk)
    assert dumps(_rotate_sum_lean(ct, keys=back["gk"])) == dumps(want)
    assert len(_rotate_sum_lean.plans) == 1  # the decoded lean keys replay the captured plan
    # a record whose flag is not a boolean is refused, not read as stored or lean
    bad = codec.encode(rlk, "rlk")
    meta = frames.unpack_meta(bad)
    meta["lean"] = "yes"
    forged = Sealed(bad.kind, frames.pack_meta(meta), bad.frames)
    with pytest.raises(SerializationError, match=r"'swk'.*'lean' must be a boolean, got 'yes'"):
        Codec(codec.params).decode(forged)
    # the Galois keys' flags: one boolean per element (the file container's own check)
    bad = codec.encode(gk, "gk")
    meta = frames.unpack_meta(bad)
    for flags in ([True], [1] * len(meta["elements"]), True):
        meta["lean"] = flags
        forged = Sealed(bad.kind, frames.pack_meta(meta), bad.frames)
        with pytest.raises(SerializationError, match="'lean' must be a list of booleans, one"):
            Codec(codec.params).decode(forged)


@ren.jit
def _rotate_sum_lean(ct, keys):
    ev = Evaluator(ct.params, None, keys)
    return ev.add(ev.rotate(ct, 1), ev.rotate(ct, 4))


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
