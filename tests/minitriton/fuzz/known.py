"""Where minitriton is known to differ from Triton 3.6 on the H200, found by this fuzzer.

Each key is a tag the generator puts on every case that uses the construct (Case.ops). The GPU
run reports the mismatches of cases with such a tag apart from the unexplained ones; the CPU
test generates cases without them (`generate(..., avoid=KNOWN)`), since minitriton would fail
its own type assertions there. tests/minitriton/fuzz_seeds.json holds a minimal reproducer
of each, with the GPU's output, as a strict xfail: when minitriton is fixed, the xfail fails
and the tag is to be removed here.
"""

# Fixed on 2026-12-01 and kept as regression cases in fuzz_seeds.json (no longer xfail):
# minmax_promotes, neg_zero_literal, scan_types, offset64, float_mod, umulhi_signed,
# umulhi64_broadcast, rshift_signed_lhs, broadcast_scalar, contract:fp64, fma:fp64, erf,
# accepts_refused, clamp_nan, signed_zero_max, fma32_tie, subnormal_input.
# Fixed on 2026-12-03 (issue 33, benchmarks/probes/fp_contract.py): contract:fp16,
# contract:bf16, contract2 (LLVM fuses the product with fewer uses, the left one on a tie, in
# every float type), bf16_literal (comparisons promote the literal as a tensor; bf16 constants
# go through std::to_string), and fp64 exp2 of a product (libdevice's reduction is contracted).
# Fixed on 2026-12-05 (issue 33): const_fold (a compile-time constant is marked, `tensor.const`,
# and folded as Triton's compiler does: `%` of constants is C's fmod, a product of constants is
# rounded and never fused; docs/numerics.md "Constants").
# Fixed on 2026-12-05 (session 20, issue 33): shared_product (a launch that chose between two
# products by the uses seen so far runs again with the whole launch's uses where they choose
# otherwise, as LLVM counts uses after CSE; language/arith.py, final_uses).
KNOWN = {}
