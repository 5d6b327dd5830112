"""`host_empty`: the host arrays every backend's outputs and arenas come from (shape as an int,
a tuple or a NumPy integer; data on a HOST_ALIGN boundary unless there is none)."""

from __future__ import annotations

import numpy as np
import pytest

from ren.backend.numpy_backend import HOST_ALIGN, host_empty


@pytest.mark.parametrize("shape,want", [
    ((3, 1024), (3, 1024)), (7, (7,)), (np.int64(9), (9,)), ((np.int64(2), 5), (2, 5)),
    ([4, 3], (4, 3)), ((), ()), ((0, 8), (0, 8)), ((21, 1 << 16), (21, 1 << 16)),
])
def test_host_empty_has_the_shape_and_starts_on_a_line(shape, want) -> None:
    a = host_empty(shape)
    assert a.shape == want and a.dtype == np.uint32 and a.flags.c_contiguous
    assert a.size == int(np.prod(want))
    assert a.size == 0 or a.ctypes.data % HOST_ALIGN == 0  # (an empty view has no data to align)
    a[...] = 7  # writable, and all of it is ours
    assert int(a.sum()) == 7 * a.size
