"""The worker's one pass over a received ciphertext: checksum and residue-range check together
(`ren.distributed.frames.fused_pass`, `Sealed.verify(ranges)`), and each failure still a
specific `SerializationError` (a corrupted record fails its checksum first; an out-of-range
residue is named; a record whose metadata names other moduli is checked against the right
ones)."""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import context

from ren.distributed import frames
from ren.distributed.wire import Codec, Sealed
from ren.errors import SerializationError


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=2, scale_bits=30, first_bits=40)


def _words(rec, k):
    return np.frombuffer(bytes(rec.frames[k]), np.uint32).copy()


def test_fused_pass_hashes_like_the_checksum_and_finds_any_residue_out_of_range(monkeypatch):
    monkeypatch.setattr(frames, "FUSED_CHUNK", 64)  # 4 rows of 4 words: several chunks
    moduli = (97, 101, 103, 107, 109, 113, 127, 131)
    rng = np.random.default_rng(5)
    words = np.stack([rng.integers(0, q, 4, dtype=np.uint32) for q in moduli])
    for row in range(len(moduli)):  # a residue equal to its modulus, in each chunk
        h, ref = frames._hasher(frames.CHECKSUM), frames._hasher(frames.CHECKSUM)
        assert frames.fused_pass(h, words.tobytes(), moduli)
        ref.update(words.tobytes())
        assert h.digest() == ref.digest()
        bad = words.copy()
        bad[row, 3] = moduli[row]
        h = frames._hasher(frames.CHECKSUM)
        assert not frames.fused_pass(h, bad.tobytes(), moduli)
        ref = frames._hasher(frames.CHECKSUM)
        ref.update(bad.tobytes())
        assert h.digest() == ref.digest()  # the whole frame is hashed all the same
    # a frame that is not whole rows: hashed whole, nothing claimed
    h, ref = frames._hasher("sha256"), frames._hasher("sha256")
    assert not frames.fused_pass(h, b"abcdefg", moduli)
    ref.update(b"abcdefg")
    assert h.digest() == ref.digest()


def test_verify_with_ranges_returns_the_frames_in_range_and_the_same_checksum(ckks):
    codec = Codec()
    rec = codec.encode(ckks.encrypt([0.5]), "ct")
    moduli = tuple(ckks.params.ring(ckks.params.depth).moduli)
    assert codec._ranges(rec) == {0: moduli, 1: moduli}  # read from the metadata
    assert rec.verify({0: moduli, 1: moduli}) == {0: moduli, 1: moduli}
    assert rec.verify() == {}
    big = _words(rec, 1)
    big[-1] = moduli[-1]  # the last residue of the last limb: the last chunk counts
    out = Sealed("ct", rec.meta, (rec.frames[0], big.tobytes()))
    assert out.verify({0: moduli, 1: moduli}) == {0: moduli}
    n = len(big) // len(moduli)
    with pytest.raises(SerializationError, match=rf"polynomial 1: residue \[{len(moduli) - 1}, "
                                                  rf"{n - 1}\] = {moduli[-1]} is not below"):
        codec.decode(out)


def test_a_corrupted_record_fails_its_checksum_before_its_ranges_are_named(ckks):
    codec = Codec()
    rec = codec.encode(ckks.encrypt([0.5]), "ct")
    q0 = ckks.params.ring(ckks.params.depth).moduli[0]
    big = _words(rec, 0)
    big[3] = q0 + 1  # out of range AND the checksum no longer matches
    with pytest.raises(SerializationError, match=r"failed its .* checksum"):
        codec.decode(Sealed.from_header(rec.header(), [big.tobytes(), rec.frames[1]]))
    # corrupted metadata (the level): no ranges are read from it; the checksum says so
    meta = rec.meta.replace(b'"level":2', b'"level":1')
    assert meta != rec.meta
    with pytest.raises(SerializationError, match=r"failed its .* checksum"):
        codec.decode(Sealed.from_header({**rec.header(), "meta": meta}, rec.frames))


def test_metadata_naming_other_moduli_is_checked_against_the_right_ones(ckks):
    # a record sealed with a level whose ring has other moduli: the frames' words are checked
    # against the ring the decoding uses, never skipped on the strength of the first guess
    codec = Codec()
    ct = ckks.encrypt([0.5])
    rec = codec.encode(ct, "ct")
    moduli = tuple(ckks.params.ring(ckks.params.depth).moduli)
    monkey = {0: tuple(2**32 - 1 for _ in moduli), 1: moduli}
    big = _words(rec, 0)
    big[0] = 2**32 - 2  # in range for the wrong moduli only
    out = Sealed("ct", rec.meta, (big.tobytes(), rec.frames[1]))
    assert out.verify(monkey) == monkey  # "in range" for what it was told
    codec._ranges = lambda rec: monkey  # type: ignore[method-assign]
    with pytest.raises(SerializationError, match=r"residue \[0, 0\] .* not below"):
        codec.decode(out)
