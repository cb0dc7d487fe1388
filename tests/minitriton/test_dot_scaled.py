"""`tl.dot_scaled`: against a float64 product of the dequantized operands, fp4 packing, e8m0 and
e4m3 scales, Triton's rejections; and (GPU) bit for bit against Triton 3.6 on Hopper, which
emulates the op with bf16/fp16 dots.

One kernel serves every test: program `pid` multiplies its own block pair, so a launch of
several programs also checks that lockstep keeps their blocks apart."""
import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as mtl
from minitriton import CompilationError
from minitriton.tools.mxfp import MXFP4Tensor, MXScaleTensor

FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
HALF = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}


def make_kernel(triton, tl):
    @triton.jit
    def dot_scaled_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, acc_ptr, out_ptr,
                          A_ROWS: tl.constexpr, A_COLS: tl.constexpr,
                          B_ROWS: tl.constexpr, B_COLS: tl.constexpr,
                          M: tl.constexpr, N: tl.constexpr,
                          A_SCALE_K: tl.constexpr, B_SCALE_K: tl.constexpr,
                          A_FORMAT: tl.constexpr, B_FORMAT: tl.constexpr,
                          A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr,
                          HAS_ACC: tl.constexpr, FAST_MATH: tl.constexpr):
        pid = tl.program_id(0)
        a = tl.load(a_ptr + pid * A_ROWS * A_COLS + tl.arange(0, A_ROWS)[:, None] * A_COLS +
                    tl.arange(0, A_COLS)[None, :])
        b = tl.load(b_ptr + pid * B_ROWS * B_COLS + tl.arange(0, B_ROWS)[:, None] * B_COLS +
                    tl.arange(0, B_COLS)[None, :])
        if A_SCALE_K > 0:
            a_scale = tl.load(a_scale_ptr + pid * M * A_SCALE_K +
                              tl.arange(0, M)[:, None] * A_SCALE_K +
                              tl.arange(0, A_SCALE_K)[None, :])
        else:
            a_scale = None
        if B_SCALE_K > 0:
            b_scale = tl.load(b_scale_ptr + pid * N * B_SCALE_K +
                              tl.arange(0, N)[:, None] * B_SCALE_K +
                              tl.arange(0, B_SCALE_K)[None, :])
        else:
            b_scale = None
        out_offsets = pid * M * N + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
        if HAS_ACC:
            acc = tl.load(acc_ptr + out_offsets)
        else:
            acc = None
        c = tl.dot_scaled(a, a_scale, A_FORMAT, b, b_scale, B_FORMAT, acc, fast_math=FAST_MATH,
                          lhs_k_pack=A_K_PACK, rhs_k_pack=B_K_PACK)
        tl.store(out_ptr + out_offsets, c)

    return dot_scaled_kernel


KERNEL = make_kernel(minitriton, mtl)


# ----- the operands: element values drawn with NumPy, stored as the kernel reads them

def fp4_codes(rng, shape):
    """Random e2m1 codes, one per uint8."""
    return rng.integers(0, 16, size=shape, dtype=np.uint8)


def e2m1_value(codes):
    """e2m1 from its bits, for the reference: (-1)**s * 2**(e-1) * (1 + m/2), or m/2 if e = 0."""
    s, e, m = codes >> 3, (codes >> 1) & 3, (codes & 1).astype(np.float64)
    return np.where(s, -1.0, 1.0) * np.where(e == 0, m / 2, 2.0 ** (e.astype(np.int64) - 1) *
                                             (1 + m / 2))


def pack(codes, axis):
    """Two codes per byte along `axis` of the block (axis 0 is the program axis), low first."""
    low = np.take(codes, range(0, codes.shape[axis], 2), axis=axis)
    high = np.take(codes, range(1, codes.shape[axis], 2), axis=axis)
    return (high << 4) | low


class Case:
    """Operands for P programs: `a` (P, M, K) and `b` (P, K, N) as element values, with the
    stored forms the kernel loads. `narrow`: values of at most 5 significant bits within a few
    binades (with scales of 2**-1..2**1), so that every sum is exact in fp32 and the result does
    not depend on the order of accumulation; `special_scales`: some e8m0 scales 255 and 0."""

    def __init__(self, rng, a_format, b_format, M=32, N=32, K=64, P=2, a_scaled=True,
                 b_scaled=True, a_k_pack=True, b_k_pack=True, nvfp4=False, acc=False,
                 exponents=(124, 131), fast_math=False, narrow=False, special_scales=False):
        self.formats, self.shape, self.P = (a_format, b_format), (M, N, K), P
        self.k_pack, self.fast_math, self.narrow = (a_k_pack, b_k_pack), fast_math, narrow
        exponents = (126, 128) if narrow else exponents
        self.a, self.a_stored = self._operand(rng, a_format, (P, M, K), 2 if a_k_pack else 1)
        self.b, self.b_stored = self._operand(rng, b_format, (P, K, N), 1 if b_k_pack else 2)
        group = 16 if nvfp4 else 32
        self.a_scale = self._scales(rng, (P, M, K // group), nvfp4, exponents) if a_scaled \
            else None
        self.b_scale = self._scales(rng, (P, N, K // group), nvfp4, exponents) if b_scaled \
            else None
        if special_scales:
            self.a_scale[:, ::7, 0] = 255  # NaN: rows 0, 7, 14... of the product
            self.b_scale[:, ::5, 1] = 0  # the GPU multiplies by 0 (not 2**-127)
        self.acc = None
        if acc:
            self.acc = (rng.integers(-16, 17, (P, M, N)) / 8 if narrow else
                        rng.standard_normal((P, M, N))).astype(np.float32)

    def _operand(self, rng, fmt, shape, packed_axis):
        if fmt == "e2m1":
            codes = fp4_codes(rng, shape)
            return e2m1_value(codes), pack(codes, packed_axis)
        if fmt in FP8:
            bits = rng.integers(0, 256, size=shape, dtype=np.uint8)
            if self.narrow:  # exponent field within one binade of the bias
                mantissa = 3 if fmt == "e4m3" else 2
                bias = 7 if fmt == "e4m3" else 15
                field = rng.integers(bias - 1, bias + 2, size=shape, dtype=np.uint8)
                bits = (bits & np.uint8(0x80 | (1 << mantissa) - 1)) | (field << mantissa)
            bits[~np.isfinite(bits.view(FP8[fmt]).astype(np.float32))] = 0  # finite operands
            return bits.view(FP8[fmt]).astype(np.float64), bits
        values = (rng.integers(-16, 17, size=shape) / 8 if self.narrow else
                  rng.standard_normal(shape)).astype(HALF[fmt])
        return values.astype(np.float64), values

    def _scales(self, rng, shape, nvfp4, exponents):
        if nvfp4:  # e4m3 scales: positive and finite; narrow: 0.5 to 1.875
            low, high = (0x30, 0x40) if self.narrow else (0x20, 0x50)
            return rng.integers(low, high, size=shape, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
        return rng.integers(exponents[0], exponents[1] + 1, size=shape, dtype=np.uint8)

    def run(self, kernel=KERNEL, put=np.asarray, empty=lambda shape: np.empty(shape, np.float32),
            numpy=np.asarray):
        """The kernel's output for this case, (P, M, N) fp32, as a NumPy array."""
        M, N, K = self.shape
        out = empty((self.P, M, N))
        scale_k = [0 if s is None else s.shape[-1] for s in (self.a_scale, self.b_scale)]
        kernel[(self.P,)](put(self.a_stored), None if self.a_scale is None else put(self.a_scale),
                          put(self.b_stored), None if self.b_scale is None else put(self.b_scale),
                          None if self.acc is None else put(self.acc), out,
                          *self.a_stored.shape[1:], *self.b_stored.shape[1:], M, N, *scale_k,
                          *self.formats, *self.k_pack, self.acc is not None, self.fast_math)
        return numpy(out)

    def reference(self):
        """(the float64 product of the dequantized operands, the bound on fp32 accumulation
        error: K * 2**-24 * (|A| @ |B|), as accumulation in any order stays within)."""
        a, b = self.a, self.b
        if self.a_scale is not None:
            a = a * np.repeat(_scale_values(self.a_scale), a.shape[-1] // self.a_scale.shape[-1],
                              axis=-1)
        if self.b_scale is not None:
            factors = np.repeat(_scale_values(self.b_scale), b.shape[-2] //
                                self.b_scale.shape[-1], axis=-1)
            b = b * np.swapaxes(factors, -1, -2)
        exact = a @ b + (0 if self.acc is None else self.acc)
        bound = self.shape[2] * 2.0 ** -24 * (np.abs(a) @ np.abs(b) +
                                               (0 if self.acc is None else np.abs(self.acc)))
        return exact, bound


def _scale_values(scale):
    if scale.dtype == np.uint8:
        return 2.0 ** (scale.astype(np.float64) - 127)  # e8m0
    return scale.astype(np.float64)


# ----- values

# (lhs, rhs, options): the paths of the decomposition each row exercises
CASES = {
    "mxfp4": ("e2m1", "e2m1", {}),
    "mixed e4m3 x e2m1": ("e4m3", "e2m1", {}),
    "e5m2 x e4m3": ("e5m2", "e4m3", {}),
    "bf16 unscaled x mxfp4": ("bf16", "e2m1", {"a_scaled": False}),
    "fp16 x e4m3 (fp16 compute)": ("fp16", "e4m3", {}),
    "bf16 x bf16, no scales": ("bf16", "bf16", {"a_scaled": False, "b_scaled": False}),
    "nvfp4 (e4m3 scales, 16 per scale)": ("e2m1", "e2m1", {"nvfp4": True}),
    "fp4 packed along M and N": ("e2m1", "e2m1", {"a_k_pack": False, "b_k_pack": False}),
    "accumulator": ("e2m1", "e4m3", {"acc": True}),
    "one program, K = 32, M = 16": ("e2m1", "e2m1", {"P": 1, "K": 32, "M": 16}),
}


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("name", CASES)
def test_matches_the_dequantized_float64_product(name):
    a_format, b_format, options = CASES[name]
    case = Case(np.random.default_rng(0), a_format, b_format, **options)
    out = case.run()
    exact, bound = case.reference()
    assert out.dtype == np.float32
    assert np.all(np.abs(out - exact) <= bound), f"{name}: max error {np.abs(out - exact).max()}"


def test_fp4_holds_the_first_element_in_the_low_bits():
    # bytes 0x62: low nibble 2 (1.0) then high nibble 6 (4.0) along K; b picks column n = k
    a = np.full((1, 16, 16), 0x62, np.uint8)
    b = np.eye(32, 16, dtype=ml_dtypes.bfloat16)[None]
    out = np.empty((1, 16, 16), np.float32)
    KERNEL[(1,)](a, None, b, None, None, out, 16, 16, 32, 16, 16, 16, 0, 0, "e2m1", "bf16",
                 True, True, False, False)
    assert np.array_equal(out[0], np.tile([1.0, 4.0], (16, 8)))


def test_scales_multiply_groups_of_32_along_k():
    case = Case(np.random.default_rng(1), "e2m1", "e2m1", P=1, exponents=(127, 127))
    case.a_scale[0, 3, 1] = 129  # row 3, k in [32, 64): times 4
    exact, _ = case.reference()
    assert np.array_equal(case.run(), exact)  # small exact sums: bit for bit


def _ones_case(fast_math=False):
    """fp4 ones (code 2) times bf16 ones: every output is K = 64 before scaling."""
    case = Case(np.random.default_rng(2), "e2m1", "bf16", P=1, b_scaled=False,
                exponents=(127, 127), fast_math=fast_math)
    case.a_stored[:] = 0x22
    case.b_stored[:] = 1
    return case


def test_scale_255_is_nan_and_scale_0_multiplies_by_zero():
    case = _ones_case()
    case.a_scale[0, 5, 0] = 255  # row 5: NaN
    case.a_scale[0, 7, 1] = 0  # row 7, second half of K: the GPU's bf16 scale is 0, not 2**-127
    out = case.run()[0]
    assert np.isnan(out[5]).all() and not np.isnan(np.delete(out, 5, axis=0)).any()
    assert (out[7] == 32).all() and (np.delete(out, [5, 7], axis=0) == 64).all()


def test_fast_math_skips_the_nan_check():
    case = _ones_case(fast_math=True)
    case.a_scale[0, 5, 0] = 255  # the scale's bf16 is inf: ones times inf
    out = case.run()[0]
    assert (out[5] == np.inf).all()


def test_counts_the_dot_of_the_unpacked_operands():
    case = Case(np.random.default_rng(3), "e2m1", "e4m3")
    with minitriton.record() as rec:
        case.run()
    M, N, K = case.shape
    assert rec[0].dot_flops == 2 * M * N * K * case.P


# ----- the host helpers (triton.tools.mxfp), on NumPy arrays

def test_mxfp4_rounds_to_nearest_even_and_saturates():
    values = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 7, np.inf, -0.0, -0.3, 1e-3, np.nan],
                      np.float32)
    fp4 = MXFP4Tensor(values)
    assert isinstance(fp4.data, np.ndarray) and fp4.data.dtype == np.uint8
    decoded = fp4.to(np.float32)
    assert np.array_equal(decoded[:-1], [0, 1, 1, 2, 2, 4, 4, 6, 6, -0.0, -0.5, 0])
    assert np.signbit(decoded[9]) and decoded[-1] in (6, -6)  # NaN saturates too
    assert np.array_equal(e2m1_value(fp4.data[:-1]), decoded[:-1])


@pytest.mark.parametrize("dim", [0, 1])
def test_mxfp4_packs_two_codes_per_byte_low_first(dim):
    codes = fp4_codes(np.random.default_rng(4), (6, 5))  # 5 is odd: padded with a zero code
    fp4 = MXFP4Tensor(e2m1_value(codes).astype(np.float32))
    assert np.array_equal(fp4.data, codes)  # every value rounds to its own code, -0.0 too
    packed = fp4.to_packed_tensor(dim)
    padded = np.pad(codes, [(0, codes.shape[d] % 2 if d == dim else 0) for d in (0, 1)])
    assert np.array_equal(packed, pack(padded[None], dim + 1)[0])
    assert np.array_equal(fp4.unpack_packed_tensor(packed, dim, codes.shape), codes)


def test_mxscale_is_floor_log2_and_255_for_what_has_none():
    values = np.array([1.0, 1.5, 0.49, 2 ** -130, 3e38, 0, -1, np.inf, np.nan], np.float32)
    scale = MXScaleTensor(values)
    assert scale.data.tolist() == [127, 127, 125, 0, 254, 255, 255, 255, 255]
    decoded = scale.to(np.float32)
    assert np.array_equal(decoded[:5], [1, 1, 0.25, 2.0 ** -127, 2.0 ** 127])
    assert np.isnan(decoded[5:]).all()


def test_mxscale_random_stays_in_range():
    np.random.seed(0)
    scale = MXScaleTensor(size=(1000,)).random(low=0.25, high=8)
    data = scale.data if isinstance(scale.data, np.ndarray) else scale.data.numpy()
    assert data.min() >= 125 and data.max() <= 130


def test_mxfp_with_torch_tensors_as_triton():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    fp4 = MXFP4Tensor(size=(4, 64), device="cpu").random()
    assert fp4.data.dtype == torch.uint8 and fp4.data.max() < 16
    packed = fp4.to_packed_tensor(dim=1)
    assert isinstance(packed, torch.Tensor) and packed.shape == (4, 32)
    values = fp4.to(torch.float32)
    assert torch.equal(MXFP4Tensor(values).data, fp4.data)  # each value rounds to itself
    scale = MXScaleTensor(torch.rand(4, 2) + 1e-8)
    assert scale.data.dtype == torch.uint8 and scale.to(torch.float32).max() <= 0.5 + 1e-7


# ----- what Triton rejects

# name: ((lhs, rhs, options), what spoils the case (a value, or a function of the case), error)
REJECTIONS = {
    "a format 3.6 lacks": (("e2m1", "e4m3", {}), {"formats": ("e2m3", "e4m3")},
                           "NYI: lhs_format e2m3"),
    "an unknown format": (("e2m1", "e4m3", {}), {"formats": ("e2m1", "fp8")},
                          "Invalid float format: fp8"),
    "an upper-case format": (("e2m1", "e4m3", {}), {"formats": ("E2M1", "e4m3")},
                             "NYI: lhs_format E2M1"),
    "fp8 packed along N": (("e2m1", "e4m3", {}), {"k_pack": (True, False)},
                           "only mxfp4 inputs can be packed along a dimension different than K"),
    "fp4 in int8": (("e2m1", "e2m1", {}), {"a_stored": lambda c: c.a_stored.view(np.int8)},
                    "e2m1 format must be packed as uint8. Got int8"),
    "fp8 in int8": (("e4m3", "e2m1", {}), {"a_stored": lambda c: c.a_stored.view(np.int8)},
                    "Unexpected dtype for e4m3. Got int8"),
    "K differs": (("e2m1", "e4m3", {}), {"formats": ("e4m3", "e4m3")},  # lhs bytes as fp8
                  "Reduction dimension should pack the same number of elements"),
    "a scale shape": (("e2m1", "e2m1", {}),
                      {"b_scale": lambda c: np.ascontiguousarray(c.b_scale[:, :, :1])},
                      r"rhs_scale must be a tensor of shape \[32, 2\]. Got \[32, 1\]"),
    "e8m0 scales, one per 16": (("e2m1", "e2m1", {"nvfp4": True}),
                                {"a_scale": lambda c: c.a_scale.view(np.uint8)},
                                r"lhs_scale must be a tensor of shape \[32, 2\]. Got \[32, 4\]"),
    "an fp16 accumulator": (("e2m1", "e2m1", {"acc": True}),
                            {"acc": lambda c: c.acc.astype(np.float16)},
                            r"the accumulator must be a \[32, 32\] block of fp32"),
}


def _spoilt(name):
    (a_format, b_format, options), changes, match = REJECTIONS[name]
    case = Case(np.random.default_rng(5), a_format, b_format, **options)
    for key, value in changes.items():
        setattr(case, key, value(case) if callable(value) else value)
    return case, match


@pytest.mark.parametrize("name", REJECTIONS)
def test_rejects_what_triton_rejects(name):
    case, match = _spoilt(name)
    with pytest.raises(CompilationError, match=match):
        case.run()


def test_rejects_scales_that_are_not_bytes():
    case = Case(np.random.default_rng(5), "e2m1", "e2m1")
    case.a_scale = case.a_scale.astype(np.float32)
    with pytest.raises(CompilationError, match="lhs_scale must hold e8m0 exponents as uint8"):
        case.run()


# ----- real Triton on the GPU

# name: (lhs, rhs, options); `narrow` cases must agree bit for bit, the others within the bound
# on fp32 accumulation error (the GPU's tensor cores sum in another order than NumPy). Triton
# 3.6 cannot compile two of CASES for sm_90 (an internal compiler error that may abort the
# process, not a CompilationError): e4m3 scales (nvfp4) and fp4 packed along M or N; nor
# bf16 x fp16.
GPU_CASES = {
    "mxfp4": ("e2m1", "e2m1", {"narrow": True}),
    "mixed e4m3 x e2m1": ("e4m3", "e2m1", {"narrow": True}),
    "e5m2 x e4m3": ("e5m2", "e4m3", {"narrow": True}),
    "fp16 x e4m3 (fp16 compute)": ("fp16", "e4m3", {"narrow": True}),
    "mxfp4 x fp16 unscaled": ("e2m1", "fp16", {"narrow": True, "b_scaled": False}),
    "bf16 unscaled x mxfp4": ("bf16", "e2m1", {"narrow": True, "a_scaled": False}),
    "accumulator": ("e2m1", "e4m3", {"narrow": True, "acc": True}),
    "scales 255 and 0": ("e2m1", "e4m3", {"narrow": True, "special_scales": True}),
    "fast math, scales 255 and 0": ("e2m1", "e2m1", {"narrow": True, "special_scales": True,
                                                      "fast_math": True}),
    "e5m2 x e4m3, full range": ("e5m2", "e4m3", {"exponents": (120, 134)}),
    "mxfp4, full range": ("e2m1", "e2m1", {"exponents": (120, 134)}),
}


def _on_gpu(case):
    import torch
    import triton
    import triton.language as tl

    def put(a):
        a = np.ascontiguousarray(a)
        if a.dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16):
            view = {np.dtype(ml_dtypes.float8_e4m3fn): torch.float8_e4m3fn,
                    np.dtype(ml_dtypes.float8_e5m2): torch.float8_e5m2,
                    np.dtype(ml_dtypes.bfloat16): torch.bfloat16}[a.dtype]
            bits = a.view(np.uint8 if a.dtype.itemsize == 1 else np.int16)
            return torch.from_numpy(bits).cuda().view(view)  # torch cannot read ml_dtypes
        return torch.from_numpy(a).cuda()

    out = case.run(make_kernel(triton, tl), put=put,
                   empty=lambda shape: torch.empty(shape, device="cuda"),
                   numpy=lambda t: t.cpu().numpy())
    torch.cuda.synchronize()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CASES)
def test_same_values_as_triton_on_the_gpu(name):
    a_format, b_format, options = GPU_CASES[name]
    case = Case(np.random.default_rng(6), a_format, b_format, **options)
    sim, gpu = case.run(), _on_gpu(case)
    if case.narrow:
        np.testing.assert_array_equal(sim, gpu, err_msg=name)
    else:
        _, bound = case.reference()
        assert np.all(np.abs(sim - gpu) <= 2 * bound), f"{name}: {np.abs(sim - gpu).max()}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(REJECTIONS))
def test_same_rejections_as_triton_on_the_gpu(name):
    from triton.compiler.errors import CompilationError as TritonCompilationError
    case, _ = _spoilt(name)
    with pytest.raises(TritonCompilationError):
        _on_gpu(case)
