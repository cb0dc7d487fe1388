"""What `kernel.warmup(...)` returns: a compiled kernel, as Triton's `CompiledKernel`.

`compiled[grid](*args)` launches it with the constexprs and options it was compiled with.
`metadata` has the fields of Triton 3.6's KernelMetadata that mean something here (name,
num_warps, num_stages, num_ctas, maxnreg, shared, the launch flags, the emulated target).

`n_regs`, `n_spills` and `shared` are estimates, not the output of ptxas. They come from what the
warmup saw the first program do: the largest block it loaded or stored (E elements) and its
tl.dot tiles (M x N accumulator, M x K and K x N operands), spread over the
`num_warps * 32` threads of a program (T):
  * registers per thread: 24 (pointers, offsets, program ids, loop counters) + 3 * ceil(E / T)
    (an operand, a result and a temporary of the largest block live at once, one 32-bit
    register per element); for a kernel with a dot, 24 + ceil(M*N / T) (the fp32
    accumulator, twice where the kernel has several tl.dot lines: their results are live
    together, two accumulators in a gated MLP, the scores and the output in attention; more
    lines than two, as in attention's backward, are mostly in different loops)
    + ceil((M*K + K*N) * itemsize / 4 / T) (operand fragments) instead, its
    tiles passing through shared memory (a least-squares fit of 130 matmul compilations of
    Triton 3.6 on an H100 gave 21 + 1.08 x accumulator + 1.05 x fragments, a median error of 9
    registers; docs/hardware.md); rounded up to a multiple of 8 and capped at `maxnreg` (255
    by default);
  * spills: the registers over that cap (Triton reports spilled 32-bit registers);
  * shared memory, in bytes: for a dot, `num_stages` buffers of both operand tiles (the
    software pipeline's ring: num_stages * (M*K + K*N) * itemsize); for a reduction, the
    scratch where the warps exchange their partial results (num_warps * R * max(4, itemsize)
    for a result of R elements); the largest of these (layout conversions are not estimated;
    a kernel with neither reports 0).
"""
from __future__ import annotations

import collections

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


def estimate(options, max_block, dots, reductions=(), dot_sites=1):
    """(n_regs, n_spills, shared bytes) per the module's docstring; `dot_sites`: the kernel's
    distinct tl.dot lines, whose results are live together (ResourceWatcher.dot_sites)."""
    num_warps = options.get("num_warps") or _DEFAULTS["num_warps"]
    num_stages = options.get("num_stages") or _DEFAULTS["num_stages"]
    threads = num_warps * THREADS_PER_WARP
    regs = 24 + 3 * _ceil_div(max_block, threads)
    shared = max((num_warps * numel * max(4, size) for numel, size in reductions), default=0)
    if dots:
        regs = 24
    for a_ty, b_ty, m, n, k, _ in dots:
        size = max(a_ty.itemsize, b_ty.itemsize)
        regs_dot = min(max(1, dot_sites), 2) * _ceil_div(m * n, threads) + \
            _ceil_div((m * k + k * n) * size, 4 * threads)
        regs = max(regs, 24 + regs_dot)
        shared = max(shared, num_stages * (m * k * a_ty.itemsize + k * n * b_ty.itemsize))
    regs = _ceil_div(regs, 8) * 8
    cap = options.get("maxnreg") or MAX_REGISTERS
    return min(regs, cap), max(0, regs - cap), shared


class CompiledKernel:
    """One kernel compiled for one set of constexprs and options."""

    def __init__(self, kernel, record, max_block, dots, reductions=(), dot_sites=1):
        self.kernel = kernel
        self.name = kernel.__name__
        self.constexprs = dict(record.constexprs)
        self.options = {k: v for k, v in record.options.items() if k not in ("warmup", "stream")}
        self.n_regs, self.n_spills, self.shared = estimate(self.options, max_block, dots,
                                                           reductions, dot_sites)
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
