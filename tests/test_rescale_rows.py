"""A RESCALE that reads only its K dropped rows (`RingCall.zero_rows`): a key switch's mod-down
by P is RESCALE(CONCAT(0 over Q, y)) (`ren.passes.elision`), and on the cpu device (whose
backend has `Device.rescale_zero_rows`: tests/test_zero_rows_capability.py) pass 5 stores y, not
the CONCAT, so the kernel reads K rows where it read L + K (L of them 0), and no
elementwise kernel writes the CONCAT.

Checked: the cpu library kernel (`ren_cpu_rescale`) and the NumPy backend (with the capability
turned on) with Z rows of 0 against Python big integers (the divide-and-round of the CRT-lifted
coefficients whose first Z residues are 0) for K = 1..8 dropped moduli and L >= 1 kept ones;
a backend without the shortcut refuses such a call rather than reading the wrong rows; and the
words of a CKKS multiply + relinearize + rescale (and a rotation) on the cpu device are those
of the stored-CONCAT form, with the kernels and rows read counted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fused_rescale import multiply_rescale
from test_rescale_kernel import big_rescale

from ren.backend.cpu_calls import library_call
from ren.backend.numpy_backend import RING_KERNELS, NumpyDevice
from ren.backend.ring_c import render_ring_call
from ren.ckks import CKKSParams, InsecureParametersWarning
from ren.errors import RealizeError
from ren.kernel import RingCall
from ren.passes import p05_materialize
from ren.replay import templates
from ren.ring import RingKernel, RingSpec
from ren.ring.ringspec import ntt_primes
from ren.schedule import schedule


@st.composite
def zero_rows_case(draw):
    """A ring of L kept + K dropped moduli, Z <= L rows of 0, and the K + L - Z other rows."""
    bits = draw(st.sampled_from((20, 30, 31)))
    N = draw(st.sampled_from((16, 256, 2048)))  # part of a 1024-word block; two blocks
    k = draw(st.integers(1, 8))
    kept = draw(st.integers(1, 5))
    zero = draw(st.integers(1, kept))
    pool = ntt_primes(N, bits, kept + k + 2)
    moduli = tuple(draw(st.permutations(pool))[: kept + k])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    words = np.stack([rng.integers(0, q, N) for q in moduli]).astype(np.uint32)
    words[:zero] = 0
    if draw(st.booleans()):  # the extremes of every residue
        words[zero:, : N // 2] = np.array(moduli[zero:], np.uint32)[:, None] - 1
    return RingSpec(N, moduli), k, zero, words


def _call(ring: RingSpec, k: int, zero: int) -> RingCall:
    return RingCall(RingKernel.RESCALE, ring.N, ring.moduli, ring.drop_last(k).moduli,
                    dropped=ring.moduli[-k:], zero_rows=zero)


@settings(max_examples=40, deadline=None)
@given(zero_rows_case())
def test_cpu_kernel_takes_rows_of_zero(case):
    """slot 1 holds rows Z.. only; the kernel must give the rounding of the whole input."""
    ring, k, zero, words = case
    call = library_call(_call(ring, k, zero), _lib())
    assert call is not None
    out = np.full((ring.limbs - k, ring.N), 0xFFFFFFFF, np.uint32)
    # junk in the rows just before slot 1's (a kernel reading there must not find the 0s)
    store = np.full((ring.limbs, ring.N), 0x5A5A5A5A, np.uint32)
    store[zero:] = words[zero:]
    call([out, store[zero:]])
    assert np.array_equal(out, big_rescale(words, ring, k))


@settings(max_examples=10, deadline=None)
@given(zero_rows_case())
def test_numpy_backend_takes_rows_of_zero(case):
    """Off on the python device (its plans keep the stored CONCAT), NumPy's rescale still runs
    rows of 0 where a test turns `NumpyDevice.rescale_zero_rows` on."""
    ring, k, zero, words = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(NumpyDevice, "rescale_zero_rows", True)
        fn = RING_KERNELS[RingKernel.RESCALE](_call(ring, k, zero))
    out = np.empty((ring.limbs - k, ring.N), np.uint32)
    fn([out, words[zero:].copy()])
    assert np.array_equal(out, big_rescale(words, ring, k))


def test_a_backend_reading_every_row_refuses_rows_of_zero():
    """The renderer of `ren.backend.ring_c` (host shim, CUDA) reads every source row from slot 1:
    it must not be given a call whose slot 1 holds fewer (it would read past the input)."""
    ring = RingSpec(16, ntt_primes(16, 30, 4))
    with pytest.raises(RealizeError, match=r"rows of 0.*call\.full"):
        render_ring_call(_call(ring, 2, 1), "k0_rescale")
    full = _call(ring, 2, 1).full()
    assert full.zero_rows == 0 and full.input_shape() == (4, 16)
    render_ring_call(full, "k0_rescale")  # the whole input: fine
    rows = np.arange(48, dtype=np.uint32).reshape(3, 16)
    assert np.array_equal(_call(ring, 2, 1).full_input(rows),
                          np.vstack([np.zeros((1, 16), np.uint32), rows]))


@pytest.mark.parametrize("zero", [0, 3])
def test_zero_rows_must_be_kept_limbs(zero):
    ring = RingSpec(16, ntt_primes(16, 30, 5))
    call = _call(ring, 3, 2)
    call = RingCall(call.kind, call.n, call.src, call.dst, dropped=call.dropped,
                    zero_rows=zero if zero else -1)
    with pytest.raises(RealizeError, match="rows of 0"):
        call.check_rescale("test", takes_zero_rows=True)


def _params(special: int, device: str = "cpu") -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=special,
                          insecure=True, device=device)


def _run(params: CKKSParams, short: bool, monkeypatch) -> tuple[list[np.ndarray], list]:
    monkeypatch.setattr(p05_materialize, "ZERO_ROWS_INPUT", short)
    templates.clear()
    ct = multiply_rescale(params)
    items = schedule(*ct.parts)
    words = [x.numpy() for x in ct.parts]
    templates.clear()
    return words, items


def _concat_writers(items) -> int:
    """Elementwise kernels whose output a RESCALE reads."""
    read = {id(i.inputs[0]) for i in items if i.kind == "rescale"}
    return sum(1 for i in items if i.kind == "elementwise" and id(i.outputs[0]) in read)


def _rows_read(items, kind: str) -> int:
    return sum(b.shape[0] for i in items if i.kind == kind for b in i.inputs)


@pytest.mark.parametrize("special", [3, 4])
def test_mod_down_reads_only_its_dropped_rows(special, monkeypatch):
    """On the cpu device every mod-down's RESCALE reads its K rows (L = |Q| rows of 0 not
    stored), one elementwise kernel fewer per mod-down, the same words."""
    p = _params(special)
    words, items = _run(p, True, monkeypatch)
    words_b, items_b = _run(p, False, monkeypatch)
    assert all(np.array_equal(a, b) for a, b in zip(words, words_b, strict=True))
    calls = [i.ring_call for i in items if i.kind == "rescale"]
    calls_b = [i.ring_call for i in items_b if i.kind == "rescale"]
    assert len(calls) == len(calls_b) >= 2
    for c, item in zip(calls, (i for i in items if i.kind == "rescale"), strict=True):
        L = len(c.src) - len(c.dropped)
        assert len(c.dropped) == special and c.zero_rows == L >= 1
        assert item.inputs[0].shape == (special, p.N)  # y only
    assert all(c.zero_rows == 0 for c in calls_b)
    zero = sum(c.zero_rows for c in calls)
    assert _rows_read(items_b, "rescale") - _rows_read(items, "rescale") == zero
    # no elementwise kernel writes a RESCALE's input (the CONCAT's), where one per mod-down did
    assert _concat_writers(items) == 0 and _concat_writers(items_b) == len(calls_b)
    wise = [i for i in items if i.kind == "elementwise"]
    wise_b = [i for i in items_b if i.kind == "elementwise"]
    assert len(wise_b) - len(wise) >= len(calls)  # (linearize may compute a value again)


def test_other_devices_keep_the_stored_concat(monkeypatch):
    """The "python" device's backend (NumPy; also the host shim or a GPU under
    `backend_override`) has no `rescale_zero_rows`: its plan keeps the stored CONCAT."""
    _, items = _run(_params(3, "python"), True, monkeypatch)
    calls = [i.ring_call for i in items if i.kind == "rescale"]
    assert calls and all(c.zero_rows == 0 for c in calls)


def _lib():
    from ren.backend import cpu
    return cpu.ring_library()


def test_dump_shows_a_calls_rows_of_zero():
    """`ren.dump.format_arg` names a rescale's rows of 0 (they are not read), and says nothing
    for a call that reads every row."""
    from ren.dump import _Names, format_arg

    ring = RingSpec(16, ntt_primes(16, 30, 5))
    short, full = _call(ring, 2, 3), _call(ring, 2, 0)
    assert "zero_rows=3" in format_arg(short, _Names())
    assert "zero_rows" not in format_arg(full, _Names())
