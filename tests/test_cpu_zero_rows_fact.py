"""The cpu device's one fact about a RESCALE's rows of 0: `CpuDevice.rescale_zero_rows`.

Pass 5 and the plan cache ask it through `ren.backend.Device.rescale_zero_rows`; the cpu
device's library call (`ren.backend.cpu.library_call`) checks every rescale against the same
attribute, so turning it off makes the device refuse a call with rows of 0 (as NumPy's kernel
does when its attribute is off), and no second name can say otherwise.
"""

from __future__ import annotations

import pytest

from ren.backend import cpu
from ren.errors import RealizeError
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec
from ren.ring.ringspec import ntt_primes


def _short_rescale() -> RingCall:
    ring = RingSpec(16, ntt_primes(16, 30, 5))
    return RingCall(RingKernel.RESCALE, 16, ring.moduli, ring.drop_last(2).moduli,
                    dropped=ring.moduli[-2:], zero_rows=2)


def test_the_library_call_follows_the_device_attribute(monkeypatch):
    call = _short_rescale()
    assert cpu.CpuDevice.rescale_zero_rows
    assert cpu.library_call(call) is not None
    monkeypatch.setattr(cpu.CpuDevice, "rescale_zero_rows", False)
    with pytest.raises(RealizeError, match="rows of 0"):
        cpu.library_call(call)
    full = call.full()  # the whole input: every device takes it
    assert full.zero_rows == 0 and cpu.library_call(full) is not None


def test_no_second_name_for_the_fact():
    from ren.backend import cpu_calls

    assert not hasattr(cpu_calls, "RESCALE_ZERO_ROWS")
