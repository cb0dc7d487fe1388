"""`tritonlab occupancy`, `waves` and `roofline`: the hardware model on the command line."""
from __future__ import annotations

import warnings

from ..hardware import GPUS, occupancy, roofline, waves
from .options import DTYPES, UserError, add_dtype, add_gpu, parse_shape, positive_int

_GPU_LIST = ", ".join(GPUS)


def run_occupancy(args):
    try:
        print(occupancy(args.threads, args.registers, args.shared, args.gpu))
    except ValueError as e:  # a block the GPU cannot run: too many threads, registers or bytes
        raise UserError(str(e)) from None
    return 0


def run_waves(args):
    print(waves(args.blocks, args.blocks_per_sm, args.gpu))
    return 0


ROOFLINE_KERNELS = {  # name -> (kernels module, call(module, shape, make_tensor))
    "add": ("tritonlab.kernels.elementwise", lambda m, s, r: m.add(r(s), r(s))),
    "gelu": ("tritonlab.kernels.elementwise", lambda m, s, r: m.gelu(r(s))),
    "softmax": ("tritonlab.kernels.softmax", lambda m, s, r: m.softmax(r(s))),
    "rowsum": ("tritonlab.kernels.rowsum", lambda m, s, r: m.row_sum(r(s))),
    "rmsnorm": ("tritonlab.kernels.rmsnorm", lambda m, s, r: m.rmsnorm_forward(r(s), r(s[-1:]))),
    "matmul": ("tritonlab.kernels.matmul", lambda m, s, r: m.matmul(r(s[:2]), r(s[1:3]))),
}
# dtype -> its key in the GPU specs' peak rates; tfloat32 is fp32 data on TF32 tensor cores
PEAK_RATE_KEYS = {"float32": "fp32", "tfloat32": "tf32", "float16": "fp16", "bfloat16": "bf16"}


def run_roofline(args):
    import minitriton  # imports numpy and ml_dtypes (about a second)
    import torch

    from .. import backend  # imports torch and triton or minitriton
    module_name, call = ROOFLINE_KERNELS[args.kernel]
    shape = parse_shape(args.shape)
    if args.kernel == "matmul" and len(shape) != 3:
        raise UserError("matmul takes --shape MxKxN")
    dtype = torch.float32 if args.dtype == "tfloat32" else getattr(torch, args.dtype)
    sim = backend.with_backend(module_name, "sim")
    # The report's coverage lines say what a PartialWriteWarning would: not both.
    with minitriton.configure(footprint=True, coverage=True), minitriton.record() as rec, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", minitriton.PartialWriteWarning)
        call(sim, shape, lambda s: torch.randn(*s, dtype=dtype))
    for launch in rec:
        print(launch_report(launch, args.gpu, PEAK_RATE_KEYS[args.dtype]))
    return 0


def launch_report(launch, gpu, dtype):
    """One simulated launch: its traffic, its roofline bound, and one `coverage` line per
    argument it wrote (recorded with Settings(coverage=True)): how many elements of the view
    were written, and where the unwritten ones are when it wrote only part of an output."""
    unique = "" if launch.unique_bytes is None else f", unique {launch.unique_bytes:,} B"
    lines = [f"{launch.kernel}: grid {launch.grid}, read {launch.bytes_read:,} B, written "
             f"{launch.bytes_written:,} B{unique}, {launch.dot_flops:,} FLOP (simulated)",
             "  " + str(roofline(launch, gpu, dtype))]
    for arg in launch.args.values():
        coverage = getattr(arg, "coverage", None)
        if coverage is None:
            continue
        note = "" if coverage.complete else " (PARTIAL: the rest keeps what memory held)"
        where = ("" if coverage.complete or not coverage.first_unwritten
                 or len(coverage.first_unwritten) < 2
                 else f"; the first at index {coverage.first_unwritten}")
        lines.append(f"  coverage of {arg.name}: {coverage}{where}{note}")
    return "\n".join(lines)


def register(subparsers):
    p = subparsers.add_parser("occupancy",
                              help="blocks and warps resident per SM, and what limits them",
                              description="How many blocks of a kernel fit on one SM, given its "
                                          "threads per block, registers per thread and shared "
                                          "memory per block; registers are allocated per warp in "
                                          f"units of 256. GPUs: {_GPU_LIST}.")
    p.add_argument("--threads", type=int, required=True, help="threads per block")
    p.add_argument("--registers", type=int, required=True, help="registers per thread")
    p.add_argument("--shared", type=int, default=0, help="shared memory per block, bytes")
    add_gpu(p)
    p.set_defaults(func=run_occupancy)

    p = subparsers.add_parser("waves", help="wave quantisation of a launch",
                              description="Blocks run in waves of (SMs x blocks per SM): how "
                                          "many full waves, the tail, and the SM time left "
                                          f"idle. GPUs: {_GPU_LIST}.")
    p.add_argument("--blocks", type=int, required=True, help="blocks (programs) in the launch")
    p.add_argument("--blocks-per-sm", type=positive_int, default=1)
    add_gpu(p)
    p.set_defaults(func=run_waves)

    p = subparsers.add_parser("roofline",
                              help="lower bound on a kernel's GPU time, from the simulator",
                              description="Run one of tritonlab's kernels on minitriton, count "
                                          "the bytes it moves (total and unique) and its tl.dot "
                                          "FLOPs, and bound its time on GPU: bytes / bandwidth "
                                          "against FLOPs / peak rate. Kernels: "
                                          f"{', '.join(ROOFLINE_KERNELS)}. GPUs: {_GPU_LIST}.")
    p.add_argument("kernel", choices=list(ROOFLINE_KERNELS))
    p.add_argument("--shape", required=True, help="input shape, e.g. 4096x1024 (matmul: MxKxN)")
    add_gpu(p)
    add_dtype(p, names=DTYPES + ("tfloat32",),
              note="; tfloat32 means fp32 inputs on TF32 tensor cores (matmul)")
    p.set_defaults(func=run_roofline)
