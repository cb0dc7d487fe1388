"""Where minitriton is known to differ from Triton 3.6 on the H200, found by this fuzzer.

Each key is a tag the generator puts on every case that uses the construct (Case.ops). The GPU
run reports the mismatches of cases with such a tag apart from the unexplained ones; the CPU
test generates cases without them (`generate(..., avoid=KNOWN)`), since minitriton would fail
its own type assertions there. tests/minitriton/fuzz_seeds.json holds a minimal reproducer
of each, with the GPU's output, as a strict xfail: when minitriton is fixed, the xfail fails
and the tag is to be removed here.
"""

KNOWN = {
    "minmax_promotes": "tl.maximum/minimum/clamp make a literal operand a tensor of its own type "
                       "(fp32, int32) before promoting, and widen bf16 to fp32: "
                       "`tl.minimum(fp16_x, 0.1)` is fp32 in Triton, fp16 in minitriton",
    "neg_zero_literal": "a literal -0.0 (an operand, `other=-0.0`, `tl.full(.., -0.0, ..)`) "
                        "is +0.0 in Triton (`scalar_constant` tests `value == 0`)",
    "scan_types": "tl.cumsum of bf16 and tl.cumprod of bf16 give fp32 in Triton; tl.cumprod "
                  "of narrow ints keeps their type; minitriton keeps bf16 and widens the ints",
    "offset64": "tl.rand/randint with 64-bit offsets: Triton 3.6 runs Philox 4x32 on the "
                "offset's low and high words and returns uint32; minitriton runs Philox 4x64 "
                "(other values, uint64 from randint)",
    "float_mod": "float `%` is LLVM's frem as NVPTX lowers it (x - trunc(x / y) * y), not C "
                 "fmod: far from fmod where the quotient is large, and the sign of a zero "
                 "result differs",
    "umulhi_signed": "tl.umulhi is the unsigned high product for int32/int64 too in Triton; "
                     "minitriton computes the signed one",
    "umulhi64_broadcast": "minitriton's 64-bit tl.umulhi fails (NumPy broadcast error) when "
                          "its operands have different block shapes",
    "rshift_signed_lhs": "`x >> y` is an arithmetic shift when x is signed, even where the "
                         "promoted type is unsigned (core.tensor.__rshift__ looks at x); "
                         "minitriton shifts logically",
    "broadcast_scalar": "tl.broadcast_to(scalar, shape) is refused by minitriton ('rank "
                        "mismatch'); Triton splats it",
    "contract:fp64": "the GPU contracts fp64 `a * b + c` into fma too; minitriton rounds twice",
    "contract:fp16": "in fp16 the GPU also fuses `a * b + c` when the product has one use "
                     "(`2 - x * y`); minitriton fuses only a sum of two products",
    "contract:bf16": "as contract:fp16, for bf16",
    "contract2": "which product of `a * b + c * d` the GPU fuses depends on LLVM's operand "
                 "order, not always the second as minitriton assumes",
    "fma:fp64": "minitriton's fp64 tl.fma rounds the product and the sum separately",
    "erf": "minitriton's erf is a 1.2e-7 approximation (Numerical Recipes): erf(0) = -3e-8, "
           "fp64 erf off by ~1e-8 absolute; the GPU's libdevice erf is within 2 ulp",
    "accepts_refused": "minitriton accepts kernels Triton 3.6 refuses: tl.argmax/argmin with "
                       "axis=None, an int8 tl.dot with an int32 accumulator but no "
                       "out_dtype=tl.int32, tl.associative_scan of bf16 with a tl.maximum "
                       "combine (which returns fp32); the generator does not write them",
    "clamp_nan": "tl.clamp of a NaN gives the upper bound on the GPU (min first, then max, "
                 "neither propagating NaN) and the lower bound in minitriton",
    "signed_zero_max": "tl.max/tl.min and a tl.maximum scan over -0.0 and +0.0: the GPU's "
                       "max.f32 returns +0.0, minitriton -0.0 where NumPy's fmax keeps it",
    "bf16_literal": "Triton builds bf16 constants from std::to_string(value) (six decimals): "
                    "a literal below 5e-7 (1e-40) becomes 0 in bf16 arithmetic",
    "fma32_tie": "minitriton computes a contracted fp32 a * b + c (and fp32 tl.fma) in float64 "
                 "and rounds that to fp32: two roundings, wrong where the float64 result "
                 "falls on an fp32 tie (products of integer-valued operands); the GPU's fma "
                 "rounds once",
    "subnormal_input": "tl.sqrt/tl.rsqrt (sqrt.approx/rsqrt.approx.ftz) and tl.floor/tl.ceil "
                       "flush subnormal fp32 inputs to zero on the GPU (rsqrt(-1e-43) = -inf, "
                       "floor(-3e-39) = -0.0); minitriton does not",
}
