"""How an output of minitriton is compared with the same output of real Triton.

- `exact`: bit for bit; two NaNs are equal whatever their payload (the GPU's canonical NaN is
  0x7fffffff, NumPy's 0xffc00000), +0 and -0 are not.
- `ulp`: the approximate functions (math category, randn): within TOLERANCE[op] ulp, or within
  its absolute error where the function's error is absolute (near a zero of the result).
- `bound`: float sums and scans, whose order of additions differs: any two orders of n additions
  differ by at most 2 (n - 1) u sum|x| (each is within (n - 1) u sum|x| of the exact sum, u the
  unit roundoff of the accumulation type); the kernel stores sum|x| beside the sum.
- `dot`: likewise 2 K u (|A| |B|)_ij (+ |acc|) for a dot of depth K, from the inputs.
Infinities and NaNs must agree in every mode.
"""
from __future__ import annotations

import numpy as np

from .data import logical
from .types import FLOAT, TYPES

# op: (ulp, absolute error). Measured on the H200 against minitriton (docs/fuzzing.md), with
# the reason: which instruction Triton 3.6 emits and what its documented error is.
TINY = 1.1754943508222875e-38  # the smallest normal fp32

TOLERANCE = {
    # ex2.approx.f32 of the fp32 product x * log2(e), as minitriton; results below the smallest
    # normal fp32 come back 0 from the GPU
    "exp": (2, TINY),
    "exp2": (2, TINY),      # ex2.approx.f32: 2 ulp (PTX ISA), subnormal results flushed
    "log": (2, 2.0 ** -21),  # lg2.approx.f32 * ln 2: absolute error 2^-22 near 1
    "log2": (2, 2.0 ** -22),
    "sqrt": (1, 0.0),       # sqrt.approx.f32
    "rsqrt": (2, 0.0),      # rsqrt.approx.f32
    "sin": (2, 2.0 ** -20),  # sin.approx.f32: absolute error 2^-20.9 in [-pi, pi]
    "cos": (2, 2.0 ** -20),
    "erf": (2, 0.0),        # libdevice __nv_erff
    "sigmoid": (4, 0.0),    # 1 / (1 + exp(-x)) with div.full.f32
    "div": (2, 0.0),        # div.full.f32: 2 ulp
    "fdiv": (2, 0.0),
    "fdiv_ieee": (2, 0.0),  # Triton 3.6 ignores ieee_rounding: div.full.f32 as well
    "randn": (4, 2.0 ** -20),  # Box-Muller through the approximate log, sqrt and cos
}


def _bits(a, ty):
    width = {16: np.int16, 32: np.int32, 64: np.int64}[ty.bits]
    return a.view(width)


def ordered(a, ty):
    """Float bit patterns as integers in the order of the values (+0 and -0 both 0)."""
    s = _bits(a, ty).astype(np.int64)
    mag = s & np.int64((1 << (ty.bits - 1)) - 1)
    return np.where(s < 0, -mag, mag)


def ulp_distance(x, y, ty):
    """|x - y| in units in the last place of `ty`; 0 for two NaNs, inf for one NaN or for an
    infinity against anything but itself."""
    fx, fy = x.astype(np.float64), y.astype(np.float64)
    d = np.abs(ordered(x, ty).astype(np.float64) - ordered(y, ty).astype(np.float64))
    nx, ny = np.isnan(fx), np.isnan(fy)
    d = np.where(nx | ny, np.inf, d)
    d = np.where(nx & ny, 0.0, d)
    inf = (np.isinf(fx) | np.isinf(fy)) & ~(nx | ny)
    return np.where(inf & (fx != fy), np.inf, np.where(inf, 0.0, d))


def same_bits(x, y, ty):
    if ty.kind != FLOAT:
        return x == y
    both_nan = np.isnan(x.astype(np.float64)) & np.isnan(y.astype(np.float64))
    return (_bits(x, ty) == _bits(y, ty)) | both_nan


def _agree_specials(fx, fy):
    nx, ny = np.isnan(fx), np.isnan(fy)
    bad = nx != ny
    inf = (np.isinf(fx) | np.isinf(fy)) & ~(nx | ny)
    return ~(bad | (inf & (fx != fy)))


def dot_scale(check, host):
    """(|A| |B|)_ij + |acc|_ij per program, in float64, from the case's inputs."""
    M, N, K, kv = check["M"], check["N"], check["K"], check["kv"]
    a = host[check["a"]].astype(np.float64).reshape(-1, M, K)
    bmat = host[check["b"]].astype(np.float64)
    bmat = bmat.reshape(-1, N, K).transpose(0, 2, 1) if check["trans"] else bmat.reshape(-1, K, N)
    if kv is not None:
        a = a.copy()
        bmat = bmat.copy()
        a[:, :, kv:] = 0
        bmat[:, kv:, :] = 0
    with np.errstate(all="ignore"):
        s = np.abs(a) @ np.abs(bmat)
    if check["acc"] is not None:
        s = s + np.abs(host[check["acc"]].astype(np.float64).reshape(-1, M, N))
    return s.reshape(-1)


def compare(out, sim, real, sim_all, real_all, host):
    """One output: (ok, bit_exact, max_ulp, used, detail), `used` the largest difference as a
    fraction of the tolerance. `*_all` hold every output of the case
    (for the `bound` mode's sum|x|), `host` the case's inputs by name, in their logical dtype."""
    check = out.check
    ty = TYPES[out.ty]
    x, y = logical(sim, out.ty), logical(real, out.ty)
    equal = same_bits(x, y, ty)
    bit_exact = bool(equal.all())
    max_ulp = 0.0
    if ty.kind == FLOAT:
        max_ulp = float(ulp_distance(x, y, ty).max(initial=0.0))
    mode = check["mode"]
    used = 0.0  # the largest difference as a fraction of the tolerance
    if mode in ("exact", "aux") or bit_exact:
        ok = bit_exact or mode == "aux"
        bad = ~equal
    else:
        fx, fy = x.astype(np.float64), y.astype(np.float64)
        with np.errstate(all="ignore"):
            diff = np.abs(fx - fy)
            if mode == "ulp":
                n_ulp, abs_err = TOLERANCE[check["op"]]
                ulps = ulp_distance(x, y, ty)
                within = (ulps <= n_ulp) | (diff <= abs_err)
                used = np.where(equal, 0.0, np.minimum(ulps / max(n_ulp, 1e-30),
                                                       diff / max(abs_err, 1e-300)))
            else:
                if mode == "bound":
                    aux = np.maximum(np.abs(logical(sim_all[check["aux"]], out.ty).astype(np.float64)),
                                     np.abs(logical(real_all[check["aux"]], out.ty).astype(np.float64)))
                    n = check["n"]
                else:  # dot
                    aux = dot_scale(check, host)
                    n = check["K"] + 1
                tiny = n * float(np.finfo(ty.np).tiny) if ty.name != "bf16" else n * 1.2e-38
                tol = 2 * n * check["u"] * aux + tiny
                within = diff <= tol
                used = np.where(equal, 0.0, diff / tol)
        agree = _agree_specials(fx, fy)
        bad = ~(equal | (within & agree))
        ok = not bad.any()
        used = float(np.max(np.where(agree, used, np.inf), initial=0.0))
        used = used if used == used else float("inf")
    detail = None
    if not ok:
        idx = np.flatnonzero(bad)[:6]
        detail = {"output": out.name, "mode": mode, "bad": int(bad.sum()), "of": int(bad.size),
                  "first": [[int(i), repr(x[i].item()), repr(y[i].item())] for i in idx]}
    return ok, bit_exact, max_ulp, used, detail
