"""The device registry (ren.backend): names, allocators, copies between devices, and errors for
devices this build cannot run."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ren
from ren.backend import BACKENDS, Device, Unavailable, copy_fn, get_device
from ren.backend.numpy_backend import HOST, HostAllocator, NumpyDevice
from ren.device import Buffer, canonical_device, device_kinds, register_device, unregister_device
from ren.errors import DeviceError
from ren.reference import evaluate
from ren.replay import templates
from ren.ring import RingSpec

RING = RingSpec.generate(16, 3)
ROOT = Path(__file__).resolve().parent.parent


class CountingAllocator(HostAllocator):
    """A second kind of host memory: copies to and from it must go through the host."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def copyin(self, dst, host):
        self.calls.append("copyin")
        super().copyin(dst, host)

    def copyout(self, src):
        self.calls.append("copyout")
        return super().copyout(src)

    def transfer(self, dst, src):
        self.calls.append("transfer")
        super().transfer(dst, src)


@pytest.fixture
def fakedev():
    alloc = CountingAllocator()
    register_device("fakedev", lambda name: NumpyDevice(name, alloc))
    try:
        yield alloc
    finally:
        unregister_device("fakedev")


def test_registry_is_the_source_of_device_kinds():
    assert set(device_kinds()) == set(BACKENDS) >= {"python", "cpu", "cuda"}
    assert canonical_device("PYTHON:0") == "python"
    assert canonical_device("cuda:1") == "cuda:1"
    with pytest.raises(DeviceError, match="known devices are python, cpu, cuda"):
        canonical_device("tpu")


def test_registering_a_backend_adds_its_name(fakedev):
    assert canonical_device("FakeDev:2") == "fakedev:2"
    assert canonical_device("FakeDev:2") == "fakedev:2"  # (the second time from the memo)
    assert canonical_device("fakedev") == "fakedev"
    assert get_device("fakedev").allocator is fakedev
    unregister_device("fakedev")
    for name in ("fakedev", "FakeDev:2"):  # the memo forgets an unregistered kind
        with pytest.raises(DeviceError, match="unknown device"):
            canonical_device(name)
    with pytest.raises(DeviceError, match="must be a string"):
        canonical_device(7)


def test_host_devices_share_one_allocator():
    a, b = get_device("python"), get_device("python:1")
    assert isinstance(a, Device) and a is not b and a.name == "python" and b.name == "python:1"
    assert a.allocator is b.allocator is HOST
    assert get_device("python") is a  # opened once


@pytest.fixture
def nodev():
    """A device kind registered as unavailable (what the registry does for a backend that
    cannot run here)."""
    register_device("nodev", Unavailable("it needs hardware this machine lacks; run on "
                                         "device='python' instead"))
    try:
        yield
    finally:
        unregister_device("nodev")


def test_unavailable_backend_says_what_to_do(nodev):
    with pytest.raises(DeviceError, match=r"'nodev:1' is not available.*device='python'"):
        get_device("nodev:1")
    buf = Buffer("nodev", (2, 4))  # naming the device is fine; storage is not
    with pytest.raises(DeviceError, match="not available"):
        buf.allocate()
    with pytest.raises(DeviceError, match="not available"):
        ren.Poly.from_residues([[0] * 16] * 3, RING, device="nodev")
    p = ren.Poly.from_coefficients(list(range(16)), RING, device="nodev")
    with pytest.raises(DeviceError, match="nodev"):
        p.realize()


def _cupy_import_error() -> ImportError | None:
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        return exc
    return None


# The "cuda" extra is optional: the README's set-up (pip install -e ".[test]") has no CuPy, CI's
# full run has it.  Each branch is tested where it is real; the other one skips with the reason.
CUPY_IMPORT_ERROR = _cupy_import_error()


def test_cuda_is_a_registered_backend():
    assert BACKENDS["cuda"] == "ren.backend.cuda" and "cuda" in device_kinds()
    assert canonical_device("CUDA:0") == "cuda"  # naming it needs no CuPy


def test_cuda_past_the_gpus_says_what_to_do():
    pytest.importorskip("cupy", reason="needs CuPy, which only the cuda extra installs "
                                       "(pip install -e '.[cuda]')")
    from ren.backend.cuda import gpu_count

    if gpu_count() > 1:
        pytest.skip("this machine has a second GPU, cuda:1")
    with pytest.raises(DeviceError, match=r"'cuda:1' is not available.*device='python'"):
        get_device("cuda:1")


@pytest.mark.skipif(CUPY_IMPORT_ERROR is None,
                    reason="CuPy is installed (test_render_c simulates its absence)")
def test_cuda_without_cupy_says_how_to_install():
    """The README's set-up has no CuPy: opening "cuda" names the extra that installs it."""
    with pytest.raises(DeviceError) as info:
        get_device("cuda:1")
    assert str(info.value) == (
        f"the CUDA backend needs CuPy, which is not installed ({CUPY_IMPORT_ERROR}); install it "
        "with pip install -e '.[cuda]' (cupy-cuda13x and nvidia-cuda-nvrtc), or run on "
        "device='python'")


def test_buffer_storage_through_the_allocator():
    base = Buffer("python", (4, 8)).copyin(np.arange(32, dtype=np.uint32).reshape(4, 8))
    view = Buffer("python", (2, 8), base=base, offset=8)
    assert np.array_equal(view.copyout(), np.arange(8, 24).reshape(2, 8))
    out = view.copyout()
    out[...] = 0  # copyout is a copy
    assert base.copyout()[1, 0] == 8
    view.array()[...] = 7  # array() of a view is a view of the base's storage
    assert (base.copyout()[1:3] == 7).all()
    with pytest.raises(DeviceError, match="uint32"):
        Buffer("python", (2, 2)).attach(np.zeros(4, dtype=np.int64))
    with pytest.raises(DeviceError, match="does not fit"):
        Buffer("python", (2, 2)).copyin(np.zeros((2, 3), dtype=np.uint32))
    with pytest.raises(DeviceError, match="does not fit"):
        HOST.view(np.zeros(8, np.uint32), 4, (2, 4))


def test_copy_between_devices(fakedev):
    src = Buffer("python", (2, 4)).copyin(np.arange(8, dtype=np.uint32).reshape(2, 4))
    same = Buffer("python:1", (2, 4)).allocate()
    copy_fn("python:1", "python")([same.array(), src.array()])
    assert np.array_equal(same.copyout(), src.copyout())
    other = Buffer("fakedev", (2, 4)).allocate()
    copy_fn("fakedev", "python")([other.array(), src.array()])
    back = Buffer("python", (2, 4)).allocate()
    copy_fn("python", "fakedev")([back.array(), other.array()])
    assert np.array_equal(back.copyout(), src.copyout())
    assert fakedev.calls == ["copyin", "copyout"]  # host-mediated both ways, no transfer
    copy_fn("fakedev", "fakedev:1")([other.array(), other.array()])
    assert fakedev.calls[-1] == "transfer"  # one allocator: a direct transfer


def test_realize_on_a_registered_backend(fakedev):
    a = ren.Poly.from_coefficients(list(range(16)), RING)
    b = ren.Poly.from_coefficients([3] * 16, RING)
    moved = (a * b).to("fakedev")
    out = moved * 2 + moved
    expected = evaluate(out)[0]
    assert out.device == "fakedev"
    assert np.array_equal(out.numpy(), expected)
    assert "copyin" in fakedev.calls


def test_no_device_kind_checks_outside_the_registry():
    """Backends are chosen through the registry only (`ren.backend`'s module docstring: a
    device name maps to a Device, and a new backend is one module plus one registry line)."""
    offenders = []
    for path in sorted((ROOT / "ren").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("ren/device.py",) or rel.startswith("ren/backend/"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"device_kind\(", line):
                offenders.append(f"{rel}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# -- the compiled-kernel cache ------------------------------------------------------------------
def _product(seed: int, device: str = "python") -> ren.Poly:
    a = ren.Poly.from_coefficients([seed + i for i in range(16)], RING, device=device).ntt()
    b = ren.Poly.from_coefficients([seed * i - 3 for i in range(16)], RING, device=device).ntt()
    a.realize(b)
    return a * b + a


def test_kernels_compile_once_per_ast():
    dev = get_device("python")
    first = _product(1)
    expected = evaluate(first)[0]
    first.realize()
    assert np.array_equal(first.numpy(), expected)
    second = _product(2)  # new buffers, same kernel AST
    expected = evaluate(second)[0]
    templates.clear()  # schedule again (a replayed template would not even look kernels up)
    compiles, hits = dev.compiles, dev.hits
    second.realize()
    assert np.array_equal(second.numpy(), expected)
    assert dev.compiles == compiles and dev.hits == hits + 1
    other = get_device("python:1")  # a cache per device
    third = _product(3, "python:1")
    other.clear_cache()
    before = other.compiles
    third.realize()
    assert other.compiles == before + 1


def test_kernel_cache_is_a_bounded_lru():
    dev = NumpyDevice("python", HOST, cache_size=2)
    items = ren.schedule(*[_product(s) * k for s, k in ((4, 2), (5, 3), (6, 4))])
    kernels = [it for it in items if it.kind == "elementwise"]
    assert len({it.key for it in kernels}) == 3
    fns = [dev.compile(it) for it in kernels]
    assert dev.compiles == 3 and len(dev._cache) == 2
    assert dev.compile(kernels[2]) is fns[2] and dev.compiles == 3  # most recent: kept
    assert dev.compile(kernels[0]) is not fns[0] and dev.compiles == 4  # evicted: rebuilt
