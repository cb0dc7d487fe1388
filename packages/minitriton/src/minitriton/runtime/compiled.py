"""What `kernel.warmup(...)` returns: a compiled kernel, as Triton's `CompiledKernel`.

`compiled[grid](*args)` launches it with the constexprs and options it was compiled with.
`metadata` has the fields of Triton 3.6's KernelMetadata that mean something here (name,
num_warps, num_stages, num_ctas, maxnreg, shared, the launch flags, the emulated target).

`n_regs`, `n_spills` and `shared` are estimates, not the output of ptxas. They come from what the
warmup saw the first program do: the largest block it loaded or stored (E elements) and its
tl.dot tiles (M x N accumulator, M x K and K x N operands), spread over the
`num_warps * 32` threads of a program (T):
  * registers per thread: 15.7 (pointers, offsets, program ids, loop counters) + 1.29 x
    ceil(E / T) (the largest block's elements per thread, some of them live at once;
    `ELEMENT_REGISTERS`, a least-squares fit of the sweep's 361 compilations without a dot on
    the H200, median error 4 registers); for a kernel with a dot, instead, a fitted sum
    (`DOT_REGISTERS`) of three terms per thread (`dot_register_terms`): the fp32
    accumulators of its two largest distinct tl.dot lines (their results live together: two
    accumulators in a gated MLP, the scores and the output in attention; more lines than two,
    as in attention's backward, are mostly in different loops), the operand fragments of its
    largest dot ((M*K + K*N) * itemsize / 4: on Hopper wgmma reads its operands from shared
    memory, so well under one register per element is live), and the A operand of a dot that
    takes an earlier dot's result (attention's P = softmax(Q K^T), held in registers with the
    scores and their exponentials). The constants are a least-squares fit of 572 compilations
    of Triton 3.6 on an H200 (the project's matmul and attention forward over tiles 64-256,
    BLOCK_K 32-128, 4-8 warps, 2-4 stages; `benchmarks/perf_model_fit.py --registers`;
    docs/hardware.md). Where the kernel loads its tiles through tensor descriptors and they
    feed at most two dot lines (`TMA_DOT_REGISTERS`), 28 + the accumulators + the chained
    operand, one register each, and no fragments: TMA copies global memory to shared with no
    registers on the way (tritonlab's TMA attention forward, 8 tiles of d = 64 and 128 on 4
    and 8 warps without a tail loop, and its TMA matmul's 3 tiles: within 2 and 10 registers
    of Triton 3.6's sm_90 compilations, where the pointer fit was 50-130 over and spilled);
    rounded up and capped at `maxnreg` (255 by default);
  * spills: the registers over that cap (Triton reports spilled 32-bit registers);
  * shared memory, in bytes: for a dot, `num_stages` buffers of both operand tiles (the
    software pipeline's ring: num_stages * (M*K + K*N) * itemsize); for a reduction, the
    scratch where the warps exchange their partial results (num_warps * R * max(4, itemsize)
    for a result of R elements); the largest of these (layout conversions are not estimated;
    a kernel with neither reports 0).
"""
from __future__ import annotations

import collections
import math

MAX_REGISTERS = 255  # per thread on NVIDIA GPUs since Kepler
THREADS_PER_WARP = 32
KernelMetadata = collections.namedtuple("KernelMetadata", (
    "name", "num_warps", "num_stages", "num_ctas", "maxnreg", "shared", "enable_fp_fusion",
    "launch_cooperative_grid", "launch_pdl", "debug", "backend_name", "arch", "warp_size",
    "triton_version"))
_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None,
             "enable_fp_fusion": True, "launch_cooperative_grid": False, "launch_pdl": False,
             "debug": False}


def _ceil_div(a, b):
    return -(-a // b)


# registers per thread of a kernel with dots: base + accumulators, operand fragments and a
# chained dot's operand (dot_register_terms), each times its coefficient (the docstring)
DOT_REGISTERS = (25.1, 1.13, 0.678, 2.42)
# ... and of a kernel with dots whose tiles come through tensor descriptors (TMA: global to
# shared memory with no registers on the way): base + accumulators + the chained operand, no
# operand fragments (the docstring)
TMA_DOT_REGISTERS = (28.0, 1.0, 0.0, 1.0)
# ... and of a kernel without: base + its largest block's elements per thread
ELEMENT_REGISTERS = (15.7, 1.29)


def dot_register_terms(threads, sites):
    """(accumulators, fragments, chained) 32-bit registers per thread of a kernel whose
    distinct dot lines ran `sites` ((a dtype, b dtype, M, N, K, flops), the first dot of each
    line, in the order they first ran), spread over `threads`."""
    accumulators = sum(sorted((m * n for _, _, m, n, _, _ in sites), reverse=True)[:2])
    fragments = max((m * k * a.itemsize + k * n * b.itemsize) / 4 for a, b, m, n, k, _ in sites)
    chained = sum(m * k * a.itemsize / 4 for i, (a, _, m, _, k, _) in enumerate(sites[:2])
                  if any((m, k) == (m0, n0) for _, _, m0, n0, _, _ in sites[:i]))
    return accumulators / threads, fragments / threads, chained / threads


def estimate(options, max_block, dots, reductions=(), sites=None, tma=False):
    """(n_regs, n_spills, shared bytes) per the module's docstring; `sites`: the first dot of
    each distinct tl.dot line (ResourceWatcher.dot_sites; default: the first dot); `tma`: the
    kernel loaded tiles through tensor descriptors (ResourceWatcher.tma)."""
    num_warps = options.get("num_warps") or _DEFAULTS["num_warps"]
    num_stages = options.get("num_stages") or _DEFAULTS["num_stages"]
    threads = num_warps * THREADS_PER_WARP
    regs = math.ceil(ELEMENT_REGISTERS[0] + ELEMENT_REGISTERS[1] * _ceil_div(max_block, threads))
    shared = max((num_warps * numel * max(4, size) for numel, size in reductions), default=0)
    if dots:  # the compiler's own counts, as fitted
        lines = sites or dots[:1]
        terms = dot_register_terms(threads, lines)
        # TMA's coefficients where its tiles feed at most two dot lines (a matmul, attention's
        # forward loop); more lines (attention's backward, a loop split in two) keep more
        # tiles in registers, as the fit of pointer kernels has them
        coef = TMA_DOT_REGISTERS if tma and len(lines) <= 2 else DOT_REGISTERS
        regs = math.ceil(coef[0] + sum(c * t for c, t in zip(coef[1:], terms)))
    for a_ty, b_ty, m, n, k, _ in dots:
        shared = max(shared, num_stages * (m * k * a_ty.itemsize + k * n * b_ty.itemsize))
    cap = options.get("maxnreg") or MAX_REGISTERS
    return min(regs, cap), max(0, regs - cap), shared


class CompiledKernel:
    """One kernel compiled for one set of constexprs and options."""

    def __init__(self, kernel, record, max_block, dots, reductions=(), sites=None, tma=False):
        self.kernel = kernel
        self.name = kernel.__name__
        self.constexprs = dict(record.constexprs)
        self.options = {k: v for k, v in record.options.items() if k not in ("warmup", "stream")}
        self.n_regs, self.n_spills, self.shared = estimate(self.options, max_block, dots,
                                                           reductions, sites, tma)
        fields = {**_DEFAULTS, **{k: v for k, v in self.options.items() if k in _DEFAULTS}}
        self.metadata = KernelMetadata(name=self.name, shared=self.shared, backend_name="cuda",
                                       arch="sm90", warp_size=THREADS_PER_WARP,
                                       triton_version="minitriton", **fields)
        self.n_max_threads = fields["num_warps"] * THREADS_PER_WARP

    @property
    def src(self):
        return self.kernel.src

    def _init_handles(self):
        """Triton loads the binary here; there is nothing to load."""

    def __getitem__(self, grid):
        def runner(*args, **kwargs):
            named = dict(zip(self.kernel.arg_names, args))
            named.update(kwargs)
            named.update(self.constexprs)  # as on the GPU: the compiled values, whatever passed
            return self.kernel.run(grid=grid, **{**named, **self.options})
        return runner

    def __repr__(self):
        return (f"CompiledKernel({self.name}, constexprs={self.constexprs}, "
                f"n_regs={self.n_regs}, n_spills={self.n_spills}, shared={self.shared})")
