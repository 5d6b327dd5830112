"""Randomness for RANDOM nodes: where seeds come from, and the insecure reproducible mode.

Every RANDOM node carries a 32-byte seed drawn when the node is created, so realizing the same
node twice gives the same polynomial and two random polynomials never merge.  By default the
seeds come from the operating system's CSPRNG (`secrets`), and the samplers expand them with
SHAKE-256, an extendable-output function.

``ren.random.seed(s)`` switches to a reproducible stream of seeds derived from ``s``: **this is
insecure** (anyone who knows ``s`` knows every key and every encryption's randomness) and meant
only for tests, examples and teaching.  ``ren.random.seed(None)`` returns to the OS CSPRNG.
``with ren.random.seeded(s): ...`` does the same for one block.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from ren.errors import ParameterError, is_int

SEED_BYTES = 32


@dataclass(frozen=True)
class RandomSpec:
    """The `arg` of a RANDOM node: what to sample, with which seed, on which device.

    `public` marks a sample that is public and fixed, the same words wherever and whenever it
    is drawn: a switching key's uniform half kept as its seed (a lean key, `ren.rlwe.keys`).
    `ren.jit` captures such a node unrealized and every replay regenerates it where it is used;
    any other unrealized RANDOM node is refused there, since a replay would reuse its noise."""

    kind: str  # "uniform" | "uniform_on_interval" | "ternary" | "sparse_ternary" | "gaussian"
    params: tuple
    seed: bytes
    device: str
    public: bool = False


class _State(threading.local):
    def __init__(self) -> None:
        self.insecure_seed: bytes | None = None
        self.counter = 0


_state = _State()


def seed(s: int | bytes | str | None) -> None:
    """INSECURE: make every following RANDOM seed a deterministic function of `s` (for tests).
    ``seed(None)`` restores the OS CSPRNG."""
    if s is None:
        _state.insecure_seed = None
        return
    # The type is part of the material, so seed(0), seed(b"\x00") and seed("") != seed(b"").
    if is_int(s):
        s = int(s)
        material = b"int\0" + s.to_bytes((s.bit_length() + 8) // 8, "little", signed=True)
    elif isinstance(s, str):
        material = b"str\0" + s.encode()
    elif isinstance(s, bytes | bytearray):
        material = b"bytes\0" + bytes(s)
    else:
        raise ParameterError(f"ren.random.seed: expected an int, bytes, str or None, got {s!r}")
    _state.insecure_seed = hashlib.sha256(b"ren.random.insecure-seed\0" + material).digest()
    _state.counter = 0


def is_insecure() -> bool:
    """True while the reproducible (insecure) seed stream is on."""
    return _state.insecure_seed is not None


@contextlib.contextmanager
def seeded(s: int | bytes | str) -> Iterator[None]:
    """INSECURE: reproducible seeds inside the block; the previous mode is restored after it."""
    saved = (_state.insecure_seed, _state.counter)
    seed(s)
    try:
        yield
    finally:
        _state.insecure_seed, _state.counter = saved


def next_seed() -> bytes:
    """A fresh seed for a new RANDOM node."""
    if _state.insecure_seed is None:
        return secrets.token_bytes(SEED_BYTES)
    _state.counter += 1
    return hashlib.sha256(_state.insecure_seed + _state.counter.to_bytes(8, "little")).digest()
