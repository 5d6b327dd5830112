"""Ren: a lazy polynomial IR for RNS-CKKS, with a twelve-pass scheduler, a memory planner and
backends from a device registry ("python": NumPy; "cpu": C compiled by the system compiler;
"cuda": CuPy).

Start with `Poly` and `RingSpec`::

    import ren
    ring = ren.RingSpec.generate(N=16, count=3)
    a = ren.Poly.from_coefficients(range(16), ring)
    b = (a * a + 1)          # lazy: nothing has run yet

`ren.jit` captures a function's realization once per input spec and replays it afterwards.
"""

from ren import errors, jit, random, settings
from ren.device import Buffer, canonical_device
from ren.errors import (
    ContractError,
    DeviceError,
    DomainError,
    InspectError,
    JitError,
    KernelCompileError,
    LevelError,
    MemoryPlanError,
    OperandError,
    ParameterError,
    RealizeError,
    RenError,
    RingMismatchError,
    ScheduleError,
    SerializationError,
    SettingsError,
    ShapeError,
    TruthValueError,
)
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.passes.pipeline import using as pipeline
from ren.poly import Poly
from ren.poly import realize_polys as realize
from ren.ring import Domain, RingSpec
from ren.schedule import run_passes, schedule
from ren.spec import PolySpec, spec_of

__all__ = [
    "Buffer",
    "ContractError",
    "DType",
    "DeviceError",
    "Domain",
    "DomainError",
    "InspectError",
    "JitError",
    "KernelCompileError",
    "LevelError",
    "MemoryPlanError",
    "Node",
    "Op",
    "OperandError",
    "ParameterError",
    "Poly",
    "PolySpec",
    "RealizeError",
    "RenError",
    "RingMismatchError",
    "RingSpec",
    "ScheduleError",
    "SerializationError",
    "SettingsError",
    "ShapeError",
    "TruthValueError",
    "canonical_device",
    "errors",
    "jit",
    "pipeline",
    "random",
    "realize",
    "run_passes",
    "schedule",
    "settings",
    "spec_of",
    "toposort",
]
