"""Which devices run a RESCALE's rows of 0 without their buffer is one fact of the backend in
force: `ren.backend.Device.rescale_zero_rows` (the cpu device: on; NumPy and the renderer of
`ren.backend.ring_c`: off).  Pass 5 asks it of the RESCALE's device (`takes_zero_rows`), so a
key switch's mod-down RESCALE(CONCAT(0, y)) reads only y where it is on and the stored CONCAT
where it is off; the backend's kernel checks calls against the same attribute.

Checked: the attribute (monkeypatched) decides the pass on the python and cpu devices, with
the words of the reference evaluator either way; ``backend_override("python", cpu)`` (how
bench_ckks runs the cpu backend) gets the zero-rows form, where the kind name "python" did not;
an unavailable device has no capability and its graphs still schedule; a backend whose
attribute is off refuses a call with rows of 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_fused_rescale import multiply_rescale

from ren.backend import Unavailable, backend_override, cpu, takes_zero_rows, zero_rows_devices
from ren.backend.numpy_backend import RING_KERNELS, NumpyDevice
from ren.ckks import CKKSParams, InsecureParametersWarning
from ren.errors import RealizeError
from ren.kernel import RingCall
from ren.node import toposort
from ren.ops import Op
from ren.reference import evaluate
from ren.replay import templates
from ren.ring import RingKernel, RingSpec
from ren.ring.ringspec import ntt_primes
from ren.schedule import run_passes, schedule


def _params(device: str, special: int = 3) -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=64, depth=4, scale_bits=58, first_bits=60, special_primes=special,
                          insecure=True, device=device)


def _mod_down_inputs(parts) -> tuple[int, int]:
    """(RESCALEs reading CONCAT(0, y) with only y stored, RESCALEs reading a stored CONCAT of
    rows of 0) after pass 5."""
    sink = run_passes(*parts, upto=5).sink
    short = stored = 0
    for n in toposort(sink):
        if n.op is not Op.RESCALE:
            continue
        s = n.src[0]
        if s.op is Op.CONCAT and s.src[1].op is Op.BUFFERIZE:
            short += 1
        elif s.op is Op.BUFFERIZE and s.src[0].op is Op.CONCAT:
            stored += 1
    return short, stored


def _run(params: CKKSParams) -> tuple[tuple[int, int], list, list[np.ndarray], list[np.ndarray]]:
    """(pass 5's mod-down inputs, the schedule's rescale calls, the words, the reference
    evaluator's words) of a CKKS multiply + relinearize + rescale."""
    templates.clear()
    ct = multiply_rescale(params)
    forms = _mod_down_inputs(ct.parts)
    want = evaluate(*ct.parts)
    calls = [i.ring_call for i in schedule(*ct.parts) if i.kind == "rescale"]
    words = [x.numpy() for x in ct.parts]
    templates.clear()
    return forms, calls, words, want


@pytest.mark.parametrize("device, cls", [("python", NumpyDevice), ("cpu", cpu.CpuDevice)])
def test_the_capability_decides_the_pass(device, cls, monkeypatch):
    """On: every mod-down RESCALE of CONCAT(0, y) reads y alone (its call's rows of 0 not
    passed); off: it reads the stored CONCAT.  Same words, the reference evaluator's."""
    p = _params(device)
    monkeypatch.setattr(cls, "rescale_zero_rows", True)
    (short, stored), calls, words, want = _run(p)
    assert short >= 2 and stored == 0
    assert sum(c.zero_rows > 0 for c in calls) == short
    monkeypatch.setattr(cls, "rescale_zero_rows", False)
    (short_b, stored_b), calls_b, words_b, want_b = _run(p)
    assert short_b == 0 and stored_b == short
    assert all(c.zero_rows == 0 for c in calls_b)
    for got in (words, words_b):
        assert all(np.array_equal(w, x) for w, x in zip(got, want, strict=True))
    assert all(np.array_equal(w, x) for w, x in zip(want, want_b, strict=True))


def test_python_run_by_the_cpu_backend_takes_rows_of_zero():
    """`backend_override("python", cpu.open_device)` (bench_ckks): the pass asks the device
    in force, not the kind's name, so the python device's RESCALEs read y alone there."""
    p = _params("python")
    (short, stored), calls, words, want = _run(p)
    # NumPy: the stored CONCAT (the goldens' form)
    assert short == 0 and stored >= 2 and all(c.zero_rows == 0 for c in calls)
    with backend_override("python", cpu.open_device):
        assert takes_zero_rows("python") and takes_zero_rows("python:1")
        (short_c, stored_c), calls_c, words_c, want_c = _run(p)
    assert not takes_zero_rows("python")
    assert short_c == stored and stored_c == 0
    assert sum(c.zero_rows > 0 for c in calls_c) == stored
    for got in (words, words_c):
        assert all(np.array_equal(w, x) for w, x in zip(got, want, strict=True))
    assert all(np.array_equal(w, x) for w, x in zip(want, want_c, strict=True))


def test_an_unavailable_device_has_no_capability():
    """A graph for a device this machine cannot open ("cuda" without a GPU; here "cpu" made
    unavailable) still goes through pass 5 (ren-inspect schedules such graphs): no capability,
    the stored CONCAT."""
    templates.clear()
    ct = multiply_rescale(_params("cpu"))
    assert _mod_down_inputs(ct.parts)[0] >= 2
    with backend_override("cpu", Unavailable("a test without it")):
        assert not takes_zero_rows("cpu")
        short, stored = _mod_down_inputs(ct.parts)
    assert short == 0 and stored >= 2
    templates.clear()


def test_zero_rows_devices_names_those_in_force(monkeypatch):
    assert zero_rows_devices(["python", "cpu", "cpu", "python:1"]) == ("cpu",)
    monkeypatch.setattr(NumpyDevice, "rescale_zero_rows", True)
    assert zero_rows_devices(["python:1", "cpu", "python"]) == ("cpu", "python", "python:1")
    with backend_override("cpu", Unavailable("a test without it")):
        assert zero_rows_devices(["cpu", "python"]) == ("python",)


def test_the_kernel_checks_calls_against_the_same_attribute(monkeypatch):
    """NumPy's rescale takes rows of 0 exactly where its device says so: a plan made for a
    backend with the capability never runs short inputs on one without it."""
    ring = RingSpec(16, ntt_primes(16, 30, 5))
    call = RingCall(RingKernel.RESCALE, 16, ring.moduli, ring.drop_last(2).moduli,
                    dropped=ring.moduli[-2:], zero_rows=2)
    with pytest.raises(RealizeError, match="rows of 0"):
        RING_KERNELS[RingKernel.RESCALE](call)
    monkeypatch.setattr(NumpyDevice, "rescale_zero_rows", True)
    RING_KERNELS[RingKernel.RESCALE](call)
    assert cpu.CpuDevice.rescale_zero_rows and cpu.library_call(call) is not None


def test_a_pickled_plan_says_when_its_devices_backend_lacks_the_capability():
    """A plan captured with "python" on the cpu backend (its mod-down RESCALEs take rows of 0)
    and loaded where "python" is NumPy's is refused by name — the backend, not the rows — and
    loads under the same override; a plan without such calls loads anywhere."""
    from ren.replay import Template

    p = _params("python")
    with backend_override("python", cpu.open_device):
        templates.clear()
        ct = multiply_rescale(p)
        items = schedule(*ct.parts)
        assert any(i.ring_call is not None and i.ring_call.zero_rows for i in items)
        state = {"items": items, "plan": None, "params": [], "outputs": [], "runner": False}
        Template.__new__(Template).__setstate__(dict(state))  # the backend it was made for
    with pytest.raises(RealizeError, match=r"device 'python' is opened by a backend whose "
                                           r"rescale takes rows of 0.*backend_override"):
        Template.__new__(Template).__setstate__(dict(state))
    templates.clear()
    plain = schedule(*multiply_rescale(p).parts)  # NumPy's own plan: no rows of 0
    Template.__new__(Template).__setstate__(
        {"items": plain, "plan": None, "params": [], "outputs": [], "runner": False})
