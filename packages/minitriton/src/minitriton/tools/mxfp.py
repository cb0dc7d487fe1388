"""`MXFP4Tensor` and `MXScaleTensor`: OCP microscaling data on the host, as `triton.tools.mxfp`.

    a = MXFP4Tensor(size=(M, K), device=DEVICE).random()    # e2m1 codes, one per uint8
    packed = a.to_packed_tensor(dim=1)                        # two codes per byte: (M, K // 2)
    scale = MXScaleTensor(torch.rand(M, K // 32) + 1e-8)      # e8m0 exponents, uint8
    ref = a.to(torch.float32) * scale.to(torch.float32).repeat_interleave(32, dim=1)

E2M1 (fp4): a sign, 2 exponent bits and 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
negatives, no inf and no NaN. From float it rounds to nearest, ties to an even mantissa, and
saturates at 6 (inf and NaN too, keeping their sign bit). E8M0: a biased exponent, 2**(e - 127),
255 is NaN. From float: floor(log2(x)), clamped to [0, 254]; zero, negatives, inf and NaN give
255. (The floor is exact here; Triton's float32 log2 can round up to the next exponent for
values just below a power of two.)

The data follow the input: torch tensors in give torch tensors out, on the input's device, as
Triton's do; NumPy arrays in give NumPy arrays out, so that minitriton runs without torch. With
`size=`, the tensors are torch's when torch is installed (random() draws with torch.randint, so
torch.manual_seed reproduces them) and NumPy's otherwise (np.random, seeded by np.random.seed).
The arithmetic is done in NumPy in every case.
"""
from __future__ import annotations

import importlib.util

import numpy as np

E2M1_VALUES = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], np.float32)  # by the code's low 3 bits
_E2M1_MIDPOINTS = (E2M1_VALUES[1:] + E2M1_VALUES[:-1]) / 2
E8M0_BIAS, E8M0_NAN = 127, 255


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _numpy(x, dtype=None):
    if _is_torch(x):
        import torch
        x = x.detach().cpu()
        return (x.to(torch.float32) if dtype == np.float32 else x).numpy()
    return np.asarray(x, dtype)


def _check_float32(dtype, what):
    if _is_torch(dtype):
        import torch
        ok = dtype == torch.float32
    else:
        try:
            ok = np.dtype(dtype) == np.float32
        except TypeError:
            ok = False
    if not ok:
        raise ValueError(f"Currently only float32 is supported for {what} to float conversion "
                         f"(got {dtype}); convert the float32 result with .to(...)")


class _Host:
    """What the two classes share: where the data live and how they come back."""

    def __init__(self, data=None, size=None, device=None):
        self.device = device
        if data is not None:
            self.torch = _is_torch(data)
            if self.torch:
                self.device = data.device
            self.data = self._from_float(_numpy(data, np.float32))
        elif size is not None:
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
            self.torch = importlib.util.find_spec("torch") is not None
        else:
            raise ValueError("Either parameter data or size must be provided")

    def _out(self, array):
        """A NumPy result as the kind of data this tensor holds."""
        if not self.torch:
            return array
        import torch
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def _randint(self, low, high):
        """Integers in [low, high) of self.size, uint8, drawn as Triton draws them."""
        if self.torch:
            import torch
            return torch.randint(low, high, size=self.size, dtype=torch.uint8,
                                 device=self.device)
        return np.random.randint(low, high, size=self.size).astype(np.uint8)


class MXFP4Tensor(_Host):
    """E2M1 values, one 4-bit code per uint8 in `data` (bit 3 the sign, bits 2-1 the exponent,
    bit 0 the mantissa). `MXFP4Tensor(data=floats)` rounds them; `MXFP4Tensor(size=...)`
    leaves `data` to `random()`."""

    def random(self):
        """Random codes: every sign, exponent and mantissa equally likely."""
        S, E, M = self._randint(0, 2), self._randint(0, 4), self._randint(0, 2)
        self.data = (S << 3) | (E << 1) | M
        return self

    def to(self, dtype):
        """The values as float32 (-0.0 for the negative zero code)."""
        _check_float32(dtype, "fp4e2m1")
        codes = _numpy(self.data)
        values = E2M1_VALUES[codes & 7]
        return self._out(np.where(codes & 8, -values, values))

    def _from_float(self, values):
        sign = np.signbit(values).astype(np.uint8) << 3
        magnitude = np.abs(values)
        magnitude = np.where(np.isfinite(magnitude), magnitude, E2M1_VALUES[-1])
        code = np.searchsorted(_E2M1_MIDPOINTS, magnitude, side="left").astype(np.uint8)
        # a value on a midpoint got the lower neighbour: ties go to the even mantissa
        lower = np.minimum(code, len(_E2M1_MIDPOINTS) - 1)
        tie = (code < len(_E2M1_MIDPOINTS)) & (magnitude == _E2M1_MIDPOINTS[lower]) & (code & 1)
        return self._out(sign | (code + tie.astype(np.uint8)))

    def to_packed_tensor(self, dim):
        """Two codes per uint8 along `dim`, the first in the low 4 bits; an odd length is
        padded with a zero code."""
        data = _numpy(self.data)
        if not 0 <= dim < data.ndim:
            raise ValueError(f"The dimension to pack along ({dim}) is not within the range of "
                             f"tensor dimensions (0 to {data.ndim - 1})")
        if data.shape[dim] % 2:
            pad = [(0, 0)] * data.ndim
            pad[dim] = (0, 1)
            data = np.pad(data, pad)
        shape = list(data.shape)
        shape[dim:dim + 1] = [shape[dim] // 2, 2]
        pairs = data.reshape(shape)
        low, high = np.take(pairs, 0, axis=dim + 1), np.take(pairs, 1, axis=dim + 1)
        return self._out((high << 4) | low)

    def unpack_packed_tensor(self, packed_tensor, dim, original_shape):
        """The codes of a tensor packed along `dim` by to_packed_tensor, one per uint8, cut to
        `original_shape` (undoing the padding of an odd length)."""
        packed = _numpy(packed_tensor)
        codes = np.stack([packed & 0xF, (packed >> 4) & 0xF], axis=dim + 1)
        shape = list(packed.shape)
        shape[dim] *= 2
        codes = codes.reshape(shape)
        index = [slice(None)] * codes.ndim
        index[dim] = slice(0, original_shape[dim])
        return self._out(codes[tuple(index)].astype(np.uint8))


class MXScaleTensor(_Host):
    """E8M0 block scales, one biased exponent per uint8 in `data`. `MXScaleTensor(data=floats)`
    rounds them down to powers of two; `MXScaleTensor(size=...)` leaves `data` to `random()`."""

    def random(self, low=None, high=None):
        """Random exponents for scales in [low, high] (default: every one but NaN's)."""
        lo = 0 if low is None else max(0, int(np.log2(np.float32(low))) + E8M0_BIAS)
        hi = 254 if high is None else min(254, max(0, int(np.log2(np.float32(high))) +
                                                      E8M0_BIAS))
        if lo > hi:
            raise ValueError(f"Low must be less than or equal to high (got low={low}, "
                             f"high={high})")
        self.data = self._randint(lo, hi + 1)
        return self

    def to(self, dtype):
        """The scales as float32: 2**(e - 127), NaN for 255."""
        _check_float32(dtype, "f8e8m0")
        e = _numpy(self.data).astype(np.int32)
        is_nan = e == E8M0_NAN
        value = np.ldexp(np.float32(1), np.where(is_nan, E8M0_BIAS, e) - E8M0_BIAS)
        return self._out(np.where(is_nan, np.float32(np.nan), value).astype(np.float32))

    def _from_float(self, values):
        invalid = ~np.isfinite(values) | (values <= 0)
        _, e = np.frexp(np.where(invalid, np.float32(1), values))  # x = m * 2**e, m in [.5, 1)
        biased = np.clip(e.astype(np.int32) - 1 + E8M0_BIAS, 0, 254)
        return self._out(np.where(invalid, E8M0_NAN, biased).astype(np.uint8))
