"""Key rows below the top level: a key switch at level l reads its key's rows on Q_l·P (the
first l+1 primes and the special primes: not a contiguous run of the key ring Q·P).  Every key
switch at that level shares that row selection (one hash-consed node); the scheduler should
read it in place (an index map over the key's buffer, pass 11's TABLE[l]) rather than copy it
into the arena, where the copy lives from the first key switch at that level to the last (in a
bootstrapping, most of what is live between the two EvalMods).

`test_no_key_row_copies_below_the_top` holds the schedule to that: it fails when pass 5
(`ren.passes.p05_materialize`, step 4) gives a row selection read by two kernels a buffer of
its own (as it did before issue 41's memory work).  The other
test holds the words: two key switches at a lower level that share the key's rows give the
words of key switches by keys stored on Q_l·P (their rows read as they are), on python and
cpu."""

from __future__ import annotations

import warnings

import pytest

import ren
from ren.ckks import CKKSParams, KeyGenerator
from ren.ir import storage_buffer
from ren.poly import Poly
from ren.realization import schedule_and_plan
from ren.rlwe.keys import RelinKey
from ren.rlwe.keyswitch import _decompose, key_switch


def _params(device: str = "python") -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CKKSParams(N=64, depth=4, scale_bits=30, first_bits=40, special_primes=2,
                          dnum=3, insecure=True, device=device)


def _setup(device: str):
    p = _params(device)
    with ren.random.seeded(7):
        key = KeyGenerator(p).relin_key()
        level = p.depth - 2
        ds = [Poly.uniform(p.ring(level), domain="NTT", device=device).realize()
              for _ in range(2)]
    return p, key, level, ds


def _key_row_copies(key: RelinKey, nodes) -> list:
    """Scheduled items that read nothing but the key's buffers (or views of them) and write an
    arena buffer: copies of key rows."""
    key_bufs = {storage_buffer(r.node) for r in key.b + key.a}
    items, plan, _ = schedule_and_plan(nodes)
    assert plan is not None
    out = []
    for it in items:
        ins = [getattr(b, "base", None) or b for b in it.bufs[1:]]
        if ins and all(b in key_bufs for b in ins) and it.bufs[0] in plan.planned:
            out.append(it)
    return out


def test_no_key_row_copies_below_the_top():
    _p, key, level, ds = _setup("python")
    outs = [u.node for d in ds for u in key_switch(d, key, level)]
    assert _key_row_copies(key, outs) == []


@pytest.mark.parametrize("device", ["python", "cpu"])
def test_shared_rows_give_the_words_of_restricted_keys(device):
    """Two key switches at level l by the full key (rows selected from Q·P, shared by both)
    against the same key switches by a key whose rows were cut to Q_l·P by NumPy and stored
    first (no selection left to schedule): the very words.  The cut key is not a key of the
    ring `RelinKey` checks, so its rows go through the inner product by hand."""
    p, key, level, ds = _setup(device)
    got = [u.numpy() for d in ds for u in key_switch(d, key, level)]
    ring_qp = p.ring_qp(level)
    rows = [p.key_ring.moduli.index(q) for q in ring_qp.moduli]  # picked by NumPy, not Ren
    assert rows != list(range(len(rows)))  # (not a contiguous run: the case at stake)

    def cut(r: Poly) -> Poly:
        return Poly.from_residues(r.numpy()[rows], ring_qp, "NTT", device)

    kb, ka = [cut(r) for r in key.b], [cut(r) for r in key.a]
    want = []
    for d in ds:
        ups = _decompose(d, p, level)
        acc0 = sum((u * b for u, b in zip(ups[1:], kb[1:])), ups[0] * kb[0])
        acc1 = sum((u * a for u, a in zip(ups[1:], ka[1:])), ups[0] * ka[0])
        want += [acc0.rescale(p.special_moduli).numpy(), acc1.rescale(p.special_moduli).numpy()]
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        assert g.shape == (p.ring(level).limbs, p.N)
        assert (g == w).all()
