"""Small-coefficient samplers in parts (issue 42 §4): a purpose's words (`ren.sampling`:
``ternary``'s "hi" and "lo", the Gaussian's two-row "gauss", the sparse secret's "positions" and
"signs") come from one SHAKE-256 stream per part of `ren.sampling.PART` indices, the part's
index in the stream's input, so a device may squeeze the parts on any threads.  Checked here:
the reference's words are the documented streams (an independent hashlib construction), the
"cpu" device's C squeeze gives the same words on every vector path at 1, 2 and 3 threads and
beside a board helper, and seeded key generation + encryption give the same words at 1, 2 and
3 device threads."""

from __future__ import annotations

import hashlib
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sampling_helpers import on_threads, ring_paths

import ren
import ren.random
import ren.sampling
from ren.backend import backend_override, cpu
from ren.backend.c_host import find_cc
from ren.random import RandomSpec
from ren.sampling import PART, sample_signed, stream_words

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

#: index counts around the part boundaries (PART = 1024), and above a team's threshold
SIZES = [1, 5, PART - 1, PART, PART + 1, 3 * PART + 17, 16 * PART + 3]
PURPOSES = ["hi", "lo", "gauss", "positions", "signs"]


def _documented(seed: bytes, purpose: str, n: int) -> np.ndarray:
    """The module docstring's words, built here without `ren.sampling`'s helpers: part k of n
    indices is SHAKE-256(b"ren-sample\\0" purpose b"\\0" || k (4 bytes LE) || seed), rows of m
    words row-major, row r of index i at r·n + i."""
    rows = 2 if purpose == "gauss" else 1
    out = np.zeros((rows, n), dtype=np.uint64)
    for k, start in enumerate(range(0, n, 1024)):
        m = min(1024, n - start)
        msg = b"ren-sample\0" + purpose.encode() + b"\0" + k.to_bytes(4, "little") + seed
        words = np.frombuffer(hashlib.shake_256(msg).digest(8 * rows * m), dtype="<u8")
        out[:, start:start + m] = words.reshape(rows, m)
    return out.reshape(-1)


@pytest.mark.parametrize("purpose", PURPOSES)
def test_the_reference_words_are_the_documented_parts(purpose: str) -> None:
    rows = 2 if purpose == "gauss" else 1
    for n in SIZES:
        for seed in (b"", b"parts", bytes(range(40))):
            got = stream_words(seed, purpose, rows * n)
            assert got.dtype == np.uint64 and np.array_equal(got, _documented(seed, purpose, n)), \
                (purpose, n, seed)


def test_a_parts_words_do_not_depend_on_the_count_or_the_other_parts() -> None:
    """Part k's stream is its own: the first indices' words are the same for any n, and two
    parts' words differ (the part index is in the input)."""
    for purpose in ("hi", "gauss"):
        rows = 2 if purpose == "gauss" else 1
        small = stream_words(b"s", purpose, rows * PART).reshape(rows, PART)
        big = stream_words(b"s", purpose, rows * 3 * PART).reshape(rows, 3 * PART)
        assert np.array_equal(big[:, :PART], small)
        assert not np.array_equal(big[:, :PART], big[:, PART:2 * PART])
    with pytest.raises(ValueError, match="2 words an index"):
        stream_words(b"s", "gauss", 5)


@pytest.mark.parametrize("purpose", PURPOSES)
def test_the_c_squeeze_gives_the_reference_words_on_every_path_and_thread_count(purpose) -> None:
    from ren.backend import cpu_sampling

    rows = 2 if purpose == "gauss" else 1
    for n in SIZES:
        want = stream_words(b"c parts", purpose, rows * n)
        for isa, lib in ring_paths():
            for threads in (1, 2, 3):
                got = on_threads(lib, threads, lambda lib=lib, n=n: cpu_sampling.shake256_words(
                    lib, b"c parts", purpose, rows * n))
                assert got is not None and np.array_equal(got, want), (purpose, n, isa, threads)
    lib = cpu.ring_library()
    assert cpu_sampling.shake256_words(lib, bytes(2000), "hi", 10) is None  # too long for C


KINDS = [("ternary", ()), ("gaussian", (3.2,)), ("sparse_ternary", (100,)),
         ("uniform_on_interval", (-7, 2**31))]


@pytest.mark.parametrize("kind,params", KINDS)
def test_every_kind_is_the_references_at_every_thread_count(kind, params) -> None:
    """The coefficients from the C squeeze and mapping (tasks of several parts, on a team) equal
    `ren.sampling.sample_signed`'s at 1, 2 and 3 threads, on every path, at sizes with a short
    last part, and for seeds the C sampler does not take (hashlib's words then)."""
    from ren.backend import cpu_sampling

    for n in (PART + 1, 16 * PART + 3):
        for seed in (b"kinds", bytes(range(256)) * 5):
            spec = RandomSpec(kind, params, seed, "cpu")
            want = sample_signed(spec, n)
            for isa, lib in ring_paths():
                for threads in (1, 2, 3):
                    got = on_threads(lib, threads, lambda s=spec, lib=lib, n=n:
                                      cpu_sampling.sample_signed(lib, s, n))
                    assert np.array_equal(got, want), (kind, n, isa, threads, len(seed))


def test_a_lone_leaf_splits_with_a_board_helper_and_keeps_its_words() -> None:
    """A side-by-side sampler of one ternary posts its tasks (parts) on the board; a helper
    waiting there joins them; the words stay the reference's."""
    from ren.backend import cpu_sampling
    from ren.ring import RingSpec
    from ren.ring.ringspec import ntt_primes

    lib = cpu.ring_library()
    ring = RingSpec(1 << 14, tuple(ntt_primes(1 << 14, 30, 2)))
    spec = RandomSpec("ternary", (), b"lone", "cpu")
    want = ren.sampling.sample(spec, ring)
    lib.ren_set_threads(2)
    try:
        for _ in range(20):
            waiting = threading.Event()

            def helper(waiting=waiting):
                lib.ren_cpu_sample_side_by_side(1)
                lib.ren_cpu_sample_side_by_side(0)
                waiting.set()
                return cpu_sampling.help_side_by_side(lib, 0.05)

            def owner(waiting=waiting):
                waiting.wait(10)
                return cpu_sampling.sample(lib, spec, ring)

            with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as p:
                h = p.submit(helper)
                got = p.submit(owner).result()
                joined = h.result()
            assert np.array_equal(got, want)
            if joined:
                return
    finally:
        lib.ren_set_threads(cpu.threads())
    pytest.fail("no helper ever joined a ternary's parts")


def _keygen_encrypt_words(threads: int) -> list[np.ndarray]:
    from ren.ckks import CKKSParams, Encoder, Encryptor, KeyGenerator

    dev = cpu.CpuDevice("cpu")
    dev.set_threads(threads)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (insecure: a small ring of several parts)
            p = CKKSParams(N=1 << 12, depth=3, scale_bits=30, first_bits=40, insecure=True,
                           device="cpu")
        with ren.random.seeded(7), backend_override("python", cpu.open_device):
            kg = KeyGenerator(p)
            sk, pk = kg.secret_key(), kg.public_key()
            rlk = kg.relin_key()
            x = np.linspace(-1, 1, p.N // 2)
            ct = Encryptor(p, pk).encrypt(Encoder(p).encode(x))
            polys = [sk.poly, pk.b, pk.a, *rlk.b, *rlk.a_rows, *ct.parts]
            return [q.numpy() for q in polys]
    finally:
        dev.set_threads(None)


def test_seeded_keygen_and_encryption_give_the_same_words_at_1_2_and_3_threads() -> None:
    one = _keygen_encrypt_words(1)
    for threads in (2, 3):
        got = _keygen_encrypt_words(threads)
        assert len(got) == len(one)
        assert all(np.array_equal(g, w) for g, w in zip(got, one, strict=True)), threads


@pytest.mark.parametrize("kind,params", [*KINDS, ("uniform", ()),
                                         ("uniform_on_interval", (-(2**31), 2**31 - 1))])
def test_rows_in_storage_form_are_the_references_times_2_to_the_32(kind, params) -> None:
    """``cpu_sampling.sample(..., stored=True)``: r·2^32 mod q_i of the reference's residues
    (a Shoup product in the pass that writes them), 30- and 31-bit moduli, every path, 1-3
    threads."""
    from ren.backend import cpu_sampling
    from ren.ring import RingSpec
    from ren.ring.ringspec import ntt_primes

    for bits in (30, 31):
        ring = RingSpec(4096, tuple(ntt_primes(4096, bits, 3)))
        spec = RandomSpec(kind, params, b"stored", "cpu")
        q = np.array(ring.moduli, dtype=np.uint64)[:, None]
        want = (ren.sampling.sample(spec, ring).astype(np.uint64) << np.uint64(32)) % q
        for isa, lib in ring_paths():
            for threads in (1, 2, 3):
                got = on_threads(lib, threads, lambda s=spec, lib=lib, r=ring:
                                  cpu_sampling.sample(lib, s, r, stored=True))
                assert got is not None and got.dtype == np.uint32, (kind, isa)
                assert np.array_equal(got, want), (kind, bits, isa, threads)
