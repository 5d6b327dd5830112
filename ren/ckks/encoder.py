"""The CKKS encoder: N/2 complex slots <-> a real polynomial through the canonical embedding.

Slot j is the evaluation m(ζ^(5^j)) with ζ = exp(iπ/N).  Then X -> X^(5^k) (`Poly.rotate(k)`)
moves slot j + k to slot j (a left rotation by k) and X -> X^-1 conjugates every slot, because m
has real coefficients.  All evaluations at the odd powers ζ^(2t+1) are one length-N FFT of the
twisted coefficients m_i·ζ^i, so both directions cost O(N log N) with NumPy's FFT
(`ren.ckks.embedding`); decoding lifts the RNS words to floats first (`ren.ckks.lift`).
"""

from __future__ import annotations

import math
import sys
import threading
from fractions import Fraction
from numbers import Number

import numpy as np

from ren.ckks.ciphertext import Plaintext
from ren.ckks.embedding import (
    EMBED_SPLIT_MIN,
    embed,
    embed_inverse,
    embed_inverse_rounded,
    quarter_fft,
    quarter_inputs,
)
from ren.ckks.errors import DecodeOverflowError, ParamsMismatchError, ScaleOutOfBoundsError
from ren.ckks.hostpool import side_by_side
from ren.ckks.lift import LIFT_PIECE, lift, lift_bound, prefix_lift
from ren.ckks.params import CKKSParams, log2_exact, scale_arg
from ren.device import canonical_device, in_host_memory
from ren.errors import ParameterError, ShapeError, check_int_range
from ren.ir import storage_buffer
from ren.ops import Op
from ren.poly import Poly, words_node
from ren.realization import host_residues
from ren.ring import RingSpec

#: Coefficients stay below 2^62 in magnitude on the fast (int64) path.
_INT64_SAFE = float(1 << 62)
#: Scaled values below this stay far from float64's overflow (2^1024) on the float path.
_FLOAT_SAFE = 2.0 ** 960


def _host_words(p: Poly) -> np.ndarray:
    """A realized Poly's words as its device stores them (Montgomery form): the host array
    itself where the device keeps it in host memory (read only; `p` holds it), else a copy
    (`host_residues`)."""
    leaf = p.node.src[0]
    if leaf.op is not Op.CONST:
        words = storage_buffer(leaf).array()
        if isinstance(words, np.ndarray) and words.dtype == np.uint32:
            return words
    return host_residues(p.node, montgomery=True)


def _threads(device: str) -> int:
    """The threads the host work of an encoding for `device` may take: the "cpu" device's
    (`ren.backend.cpu.threads()`), one for any other."""
    if not _compiled_device(device):
        return 1
    from ren.backend.cpu import threads
    return threads()


def _compiled_device(name: str) -> bool:
    """Whether device `name` runs compiled kernels (the "cpu" device, whatever its name)."""
    from ren.backend import get_device
    from ren.backend.cpu import CpuDevice
    return isinstance(get_device(name), CpuDevice)


def _message_poly(coeffs: np.ndarray | list[int], ring: RingSpec, device: str) -> Poly:
    """`Poly.from_coefficients(coeffs, ring, device)`.  An int64 array (the encoder's fast path,
    |c| < 2^62 already checked) on a device with host storage goes in as it is: its bytes on a
    little-endian host are `pack_int64`'s (N, 2) words, low word first, so neither that copy
    nor from_coefficients' scan for |c| < 2^62 is made (~0.25 ms of serial encoding at
    N = 2^16)."""
    device = canonical_device(device)
    if not (isinstance(coeffs, np.ndarray) and coeffs.dtype == np.int64 and coeffs.ndim == 1
            and len(coeffs) == ring.N and in_host_memory(device) and sys.byteorder == "little"):
        return Poly.from_coefficients(coeffs, ring, device=device)
    return Poly(words_node(np.ascontiguousarray(coeffs).view(np.uint32).reshape(ring.N, 2),
                           ring, device))


def _check_numbers(values) -> None:
    """Reject bools and strings, which NumPy would turn into 1.0/0.0 or parse ("1.5") (a
    ShapeError, as for other values that are not numbers)."""
    if isinstance(values, bool | np.bool_ | str | bytes):
        raise ShapeError(f"encode: values must be numbers, got {type(values).__name__} "
                         f"{values!r}" + _BOOL_HINT * isinstance(values, bool | np.bool_))
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iufc":
            return
        if values.dtype.kind != "O":
            raise ShapeError(f"encode: values must be numbers, got an array of dtype "
                             f"{values.dtype}" + _BOOL_HINT * (values.dtype.kind == "b"))
        values = values.ravel().tolist()
    if isinstance(values, list | tuple):
        for i, v in enumerate(values):
            if isinstance(v, bool | np.bool_ | str | bytes):
                raise ShapeError(f"encode: values must be numbers, got {type(v).__name__} {v!r} "
                                 f"at index {i}" + _BOOL_HINT * isinstance(v, bool | np.bool_))


_BOOL_HINT = " (a bool is a flag, not a number: convert with float() if 1.0/0.0 is meant)"


def _as_slots(values, slots: int) -> np.ndarray:
    _check_numbers(values)
    if isinstance(values, Number):
        z = np.full(slots, values, dtype=np.complex128)
    else:
        try:
            z = np.asarray(values, dtype=np.complex128)
        except (TypeError, ValueError):
            raise ShapeError(
                f"encode: values must be numbers, got {type(values).__name__}") from None
        if z.ndim != 1:
            raise ShapeError(f"encode: values must be a 1-D vector, got shape {z.shape}")
        if z.size > slots:
            raise ShapeError(f"encode: {z.size} values do not fit {slots} slots (N/2); use N >= "
                             f"{2 * z.size} or split the vector")
        z = np.concatenate([z, np.zeros(slots - z.size, dtype=np.complex128)])
    if not np.all(np.isfinite(z)):
        raise ParameterError("encode: values must be finite (no NaN or infinity)")
    return z


def _check_peak(peak: float, shift: int, scale: Fraction) -> None:
    """DecodeOverflowError where the largest |coefficient| (`peak`·2^shift) over the scale
    passes float64's range."""
    top_bits = (math.frexp(peak)[1] + shift) if peak else 0  # bits of the largest |coefficient|
    log2_scale = log2_exact(scale)
    if top_bits - log2_scale > 1000:  # |m| would pass float64's 2^1024
        raise DecodeOverflowError(
            f"decode: the coefficients reach 2^{top_bits} at scale 2^"
            f"{log2_scale:.2f}, values near 2^{top_bits - log2_scale:.0f}, beyond "
            "float64's range (2^1024). This is no encoding at this scale: check that the "
            "ciphertext was decrypted with the secret key it was encrypted under, and that "
            "its message stayed below Q/2 (operations raise ScaleOutOfBoundsError when a "
            "scale cannot hold a message of magnitude 1)")


class Encoder:
    """Encode vectors of up to N/2 real or complex numbers into Plaintexts and decode back."""

    def __init__(self, params: CKKSParams) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Encoder needs CKKSParams, got {type(params).__name__}")
        self.params = params

    def coefficients(self, values, scale: Fraction | int | float) -> list[int]:
        """The integer coefficients round(Δ·m) of `values` at `scale` (exact Python ints)."""
        c, _ = self._coefficients(values, scale)
        return c.tolist() if isinstance(c, np.ndarray) else c

    def _coefficients(self, values, scale: Fraction | int | float
                      ) -> tuple[np.ndarray | list[int], int]:
        """(`coefficients`, the largest |coefficient|): the coefficients as an int64 array when
        they fit one (the common case: no Python ints are made), else exact Python ints.

        On the int64 path the bound takes no pass over the coefficients: rounding is monotone
        and odd, so max |fl(m_i·Δ)| = fl(max |m_i|·Δ) and max |rint(x_i)| = rint(max |x_i|)."""
        scale = scale_arg(scale, "coefficients: scale")
        z = _as_slots(values, self.params.slots)
        N, threads = self.params.N, _threads(self.params.device)
        if log2_exact(scale) < math.log2(_FLOAT_SAFE):
            # the int64 path's scaling and rounding inside the transform's two halves (on both
            # threads, in cache: `embed_inverse_rounded`), the same integers; any other case
            # (values too large for it, a NaN) takes the passes below, which decide
            with np.errstate(over="ignore", invalid="ignore"):
                fused = embed_inverse_rounded(z, N, float(scale), threads)
            if fused is not None:
                rounded, top = fused
                peak = top * float(scale)
                if math.isfinite(top) and peak < _INT64_SAFE and (
                        top == 0 or log2_exact(scale) + math.log2(top) < math.log2(_FLOAT_SAFE)):
                    return rounded, int(np.rint(peak))
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below
            m = embed_inverse(z, N, threads)
            top = float(np.max(np.abs(m), initial=0.0))
        if not math.isfinite(top):  # finite values near float64's limit (1e308) overflow the FFT
            raise ScaleOutOfBoundsError(
                f"encode: values up to {float(np.max(np.abs(z))):.3g} overflow float64 in the "
                "embedding (no modulus could hold them anyway); scale the values down")
        if top == 0 or log2_exact(scale) + math.log2(top) < math.log2(_FLOAT_SAFE):
            scaled = m * float(scale)
            peak = top * float(scale)  # = max |scaled| (see above)
            if peak < _INT64_SAFE:
                return np.rint(scaled).astype(np.int64), int(np.rint(peak))
            c = [int(x) for x in np.rint(scaled)]
        else:  # a scale beyond float64's range (log2 Q > 1024 allows it): exact products, rounded
            c = [round(Fraction(float(x)) * scale) for x in m]
        return c, max(map(abs, c), default=0)

    def _slot_count(self, slots: int | None, op: str = "encode") -> int:
        """`slots` checked: a power of two n in [1, N/2] (None: N/2)."""
        full = self.params.slots
        if slots is None:
            return full
        hint = (f"a power of two in [1, {full}] (N/2): sparse packing replicates n values "
                f"N/(2n) times")
        n = check_int_range(slots, f"{op}: slots", 1, full, hint=hint)
        if n & (n - 1):
            raise ParameterError(f"{op}: slots must be {hint}, got {n}")
        return n

    def encode(self, values, level: int | None = None,
               scale: Fraction | int | float | None = None,
               slots: int | None = None) -> Plaintext:
        """A Plaintext of `values` (a vector of up to N/2 numbers, zero-padded, or one number
        for every slot) at `level` (default: the top) and `scale` (default: the level's scale).
        With `slots` = n < N/2 (sparse packing, as `Bootstrapper(slots=n)` takes): up to n
        values, zero-padded to n and repeated N/(2n) times, a polynomial in X^(N/2n); the
        plaintext remembers the repeated vector.
        The polynomial is built lazily with `Poly.from_coefficients` and kept in the NTT domain.
        A scale that does not fit the level (`CKKSParams.check_scale`), or values whose scaled
        coefficients reach Q/2, raise ScaleOutOfBoundsError."""
        p = self.params
        n = self._slot_count(slots)
        level = p.depth if level is None else p.check_level(level)
        if n != p.slots:
            values = np.tile(_as_slots(values, n), p.slots // n)
        default = scale is None
        scale = p.check_scale(
            p.scale(level) if default else scale_arg(scale, "encode: scale"), level, "encode",
            fix=(f"the default scale of level {level} does not fit its modulus: use parameters "
                 "with first_bits >= scale_bits + 2, or encode at a higher level") if default
            else "use a smaller scale or a higher level")
        coeffs, bound = self._coefficients(values, scale)
        ring = p.ring(level)
        if 2 * bound >= ring.Q:
            raise ScaleOutOfBoundsError(
                f"encode: the scaled values reach 2^{bound.bit_length()}, beyond Q/2 at level "
                f"{level} (2^{ring.Q.bit_length() - 1}); use a smaller scale or a higher level")
        pt = Plaintext(_message_poly(coeffs, ring, p.device).ntt(), scale, level, p)
        return pt.keep_values(values if isinstance(values, Number) else  # (checked above)
                              np.asarray(values, dtype=np.complex128))

    def decode(self, pt: Plaintext, slots: int | None = None) -> np.ndarray:
        """The N/2 complex slots of a Plaintext (realizes it); with `slots` = n, the first n
        (a sparse packing's values)."""
        n = self._slot_count(slots, "decode")
        return self._decode(pt)[:n]

    def _decode(self, pt: Plaintext) -> np.ndarray:
        if not isinstance(pt, Plaintext):
            raise ParameterError(f"decode expects a Plaintext, got {type(pt).__name__}; decrypt "
                                 "a Ciphertext first")
        if pt.params != self.params:
            raise ParamsMismatchError("decode: the plaintext was made under other CKKSParams")
        ring = pt.poly.ring
        # coefficient form on the plaintext's own device (the compiled INTT on "cpu"; realized
        # with the decryption where `Decryptor.decrypt` made it), then the centred CRT lift
        # straight to floats (Garner's mixed radix: no Python ints)
        coeffs = pt.coefficient_form
        if coeffs is None:
            coeffs = pt.poly.intt()
            coeffs.realize()
        words = _host_words(coeffs)  # from Montgomery form in lift
        shift = max(0, ring.Q.bit_length() - 1000)  # Q·2^-shift fits a float64
        # messages up to 2^62 take the short path (a prefix of the moduli, checked against the
        # rest); anything larger falls back to the whole basis by itself
        bits = math.ceil(log2_exact(pt.scale)) + 64
        factor = float(Fraction(1 << shift) / pt.scale)
        compiled = _compiled_device(coeffs.device)
        threads = _threads(coeffs.device)
        if compiled:
            z = self._decode_fused(words, ring, shift, bits, factor, pt.scale, threads)
            if z is not None:
                return z
        x = lift(words, ring, shift, bits=bits, compiled=compiled)
        _check_peak(float(np.max(np.abs(x), initial=0.0)), shift, pt.scale)
        return embed(x * factor, self.params.N, threads)

    def _decode_fused(self, words: np.ndarray, ring: RingSpec, shift: int, bits: int,
                      factor: float, scale: Fraction, threads: int) -> np.ndarray | None:
        """`_decode`'s lift, scaling and embedding with one hand-off to the host pool and no
        serial pass over the floats: pieces of LIFT_PIECE columns (a quarter-transform column
        range r and its partners r + N/4, r + N/2, r + 3N/4) each run the compiled prefix
        lift, the scaling and both quarter transforms' inputs in cache, side by side
        (`hostpool.side_by_side`), then the two transforms, the last two tasks of the same
        hand-out.  The same floats as the unfused path (`lift` then `embed`) at every thread
        count: each column's float and each input's elementwise arithmetic are the same
        whichever piece makes them.  None where it does not apply or a value needs the whole
        basis (the unfused path then decides)."""
        N = words.shape[1]
        pl = prefix_lift(words, ring, shift, bits)
        if pl is None or N < EMBED_SPLIT_MIN:
            return None
        q, w = N // 4, LIFT_PIECE // 4
        b = np.empty((2, q), dtype=np.complex128)
        peaks = np.zeros(q // w)
        bound = lift_bound(bits, shift)
        failed: list[int] = []

        def piece(j: int) -> None:
            if failed:
                return
            x = pl.floats(j * w, w, 4, q)  # columns r, r + N/4, r + N/2, r + 3N/4 (w each)
            if x is None:
                failed.append(j)
                return
            peaks[j] = float(np.max(np.abs(x)))
            if peaks[j] >= bound:  # the prefix may not hold it: `lift` lifts again
                failed.append(j)
                return
            x *= factor
            quarter_inputs((x[:w], x[w:2 * w], x[2 * w:3 * w], x[3 * w:]), N, j * w, b)

        # the two transforms are the last two tasks of the same hand-out: a thread that takes
        # one waits for the pieces still running (the other thread's last), so the thread that
        # ends the pieces goes straight on to a transform, with no new hand-off to the pool
        pieces, left, lock, ready = q // w, [q // w], threading.Lock(), threading.Event()
        out = np.empty(N // 2, dtype=np.complex128)

        def task(j: int) -> None:
            if j >= pieces:
                ready.wait()
                if not failed:
                    quarter_fft(b, N, j - pieces, out)
                return
            try:
                piece(j)
            except BaseException:
                failed.append(j)
                ready.set()  # (no transform waits for pieces that will not run)
                raise
            with lock:
                left[0] -= 1
                if not left[0]:
                    ready.set()

        side_by_side(task, range(pieces + 2), threads)
        if failed:
            return None
        _check_peak(float(peaks.max()), shift, scale)
        return out

    def decode_real(self, pt: Plaintext) -> np.ndarray:
        """The N/2 slots of a Plaintext as real numbers (float64): the real parts of `decode`,
        for messages that are real (SEAL's ``decode_double``).  Imaginary parts, which for a
        real message are only noise, are dropped."""
        return np.ascontiguousarray(self.decode(pt).real)
