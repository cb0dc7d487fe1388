"""`tritonlab occupancy`, `waves`, `roofline` and `predict`: the hardware model on the command
line."""
from __future__ import annotations

import argparse
import contextlib
import os
import warnings

from ..hardware import GPUS, occupancy, roofline, waves
from .options import (DTYPES, UserError, add_dtype, add_gpu, gpu_name, non_negative_int,
                      parse_shape, positive_int)

_GPU_LIST = ", ".join(GPUS)


def _block_limits():
    """The resident-block limit of each GPU, e.g. '32 on A100, H100; 24 on L4'."""
    by_limit = {}
    for name, spec in GPUS.items():
        by_limit.setdefault(spec.max_blocks_per_sm, []).append(name)
    return "; ".join(f"{n} on {', '.join(names)}" for n, names in by_limit.items())


def run_occupancy(args):
    try:
        print(occupancy(args.threads, args.registers, args.shared, args.gpu))
    except ValueError as e:  # a block the GPU cannot run: too many threads, registers or bytes
        raise UserError(str(e)) from None
    return 0


def run_waves(args):
    try:
        print(waves(args.blocks, args.blocks_per_sm, args.gpu))
    except ValueError as e:  # more blocks per SM than the GPU can hold
        raise UserError(str(e)) from None
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
    shape = parse_shape(args.shape, least=1)
    if args.kernel == "matmul" and len(shape) != 3:
        raise UserError("matmul takes --shape MxKxN")
    dtype = torch.float32 if args.dtype == "tfloat32" else getattr(torch, args.dtype)
    sim = backend.with_backend(module_name, "sim")

    def launches():
        # The report's coverage lines say what a PartialWriteWarning would: not both.
        # ranked by the roofline, as this command reports it (`predict` shows the model's)
        with minitriton.configure(footprint=True, coverage=True, autotune_rank="roofline"), \
                minitriton.record() as rec, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", minitriton.PartialWriteWarning)
            call(sim, shape, lambda s: torch.randn(*s, dtype=dtype))
        return list(rec)

    first = launches()
    # An autotuned kernel's first call launches it once per configuration (the trials) and
    # then once more with the chosen one; a second call runs only the chosen configuration,
    # as every later call does: that is the launch whose bound the user asks for.
    chosen = launches() if _repeats(first) else first
    if not chosen:
        raise UserError(f"{args.kernel} --shape {args.shape} launched no kernel")
    rate = PEAK_RATE_KEYS[args.dtype]
    trials = autotune_trials(first, chosen)
    for launch in chosen:
        print(launch_report(launch, args.gpu, rate))
        if launch.kernel in trials:
            print(f"  autotuned: this is the configuration chosen ({config_label(launch)}) of "
                  f"{_tried(trials[launch.kernel])}" +
                  ("" if args.all_configs else "; --all-configs prints the bound of each"))
    if args.all_configs:
        _print_trials(trials, chosen, args, rate)
    return 0


def _tried(records):
    """'N tried', or where configurations that differ only in num_warps and num_stages shared
    a trial launch (minitriton's autotuner runs one for them, LaunchRecord.stands_for):
    'N configurations (M trial launches ...)'."""
    configs = sum(r.stands_for for r in records)
    if configs == len(records):
        return f"{len(records)} tried"
    return (f"{configs} configurations ({len(records)} trial launches: those that differ "
            "only in num_warps and num_stages share one)")


def _print_trials(trials, chosen, args, rate):
    """--all-configs: the report of every configuration each autotuned kernel tried."""
    if not trials:
        print(f"\n(no autotuning ran: {args.kernel} at this shape launches one configuration)")
    for kernel, records in trials.items():
        picked = {config_label(c) for c in chosen if c.kernel == kernel}
        print(f"\n{kernel}: the {len(records)} configurations the autotuner tried (it ranks "
              "them by their roofline time on its emulated GPU, Settings.autotune_gpu; one "
              "trial stands for the configurations that differ from it only in num_warps and "
              "num_stages):")
        for launch in records:
            label = config_label(launch)
            print(f"- {label}{' (chosen)' if label in picked else ''}\n"
                  + launch_report(launch, args.gpu, rate))


def _repeats(launches):
    """Whether some kernel was launched several times in a row (autotune trials, perhaps)."""
    return any(a.kernel == b.kernel for a, b in zip(launches, launches[1:]))


def autotune_trials(first, steady):
    """{kernel: its trial launches} from the launches of a first call and of a second one
    (which runs each autotuned kernel's chosen configuration only): of a kernel launched more
    often the first time, the extra launches came first, the chosen one's run after them."""
    trials = {}
    for kernel in dict.fromkeys(launch.kernel for launch in first):
        ran = [launch for launch in first if launch.kernel == kernel]
        extra = len(ran) - sum(launch.kernel == kernel for launch in steady)
        if extra > 0:
            trials[kernel] = ran[:extra]
    return trials


def config_label(launch):
    """A launch's configuration: its block-size constexprs and num_warps/num_stages."""
    consts = {k: v for k, v in launch.constexprs.items() if isinstance(v, int)
              and not isinstance(v, bool)}
    options = {k: launch.options[k] for k in ("num_warps", "num_stages") if k in launch.options}
    return ", ".join(f"{k}={v}" for k, v in {**consts, **options}.items())


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


def run_predict(args):
    import minitriton
    from minitriton.runner import run
    from minitriton.runtime.gpus import gpu
    if not os.path.isfile(args.script):
        raise UserError(f"there is no file {args.script}")
    with contextlib.ExitStack() as stack:
        try:
            launches = stack.enter_context(minitriton.predicting(args.gpu, sample=args.sample))
        except ValueError as e:  # a GPU the model has no constants for
            raise UserError(str(e)) from None
        code = run(args.script, args.args, gpu=args.gpu, small=args.small, cuda_on_cpu=True)
    print(predict_report(launches, gpu(args.gpu).key, args.sample, stopped=code != 0))
    return code


def predict_report(launches, gpu, sample, stopped=False):
    """What `tritonlab predict` prints: each distinct launch (kernel, grid, configuration)
    once, with how often it ran, then the predicted total. `stopped`: the script ended in
    an error (reported above), so a launch may have failed part way and is not predicted."""
    if not launches:
        return ("(no launch completed before the script stopped: nothing to predict)"
                if stopped else "(the script launched no kernel)")
    groups = {}
    for p in launches:
        groups.setdefault((p.kernel, p.grid, p.config), []).append(p)
    sampled = (f"; {sample} programs of each launch ran, so the program's results are not "
               "the kernels' results") if sample else ""
    lines = [f"\npredicted on the {gpu} (minitriton's performance model, constants fitted on "
             f"measurements; 8 times in 10 the GPU's time falls in the range){sampled}:"]
    for same in groups.values():
        first = same[0]
        ranked = next((p for p in same if p.ranking), first)
        head, _, rest = str(ranked).partition("\n")
        if len(same) > 1:
            head += f" (x{len(same)}: {sum(p.seconds for p in same) * 1e6:.1f} us in all)"
        lines += [head, rest]
    total = sum(p.seconds for p in launches)
    lines.append(f"total: {len(launches)} launch{'es' if len(launches) != 1 else ''}, "
                 f"{total * 1e6:.1f} us predicted")
    return "\n".join(lines)


def register(subparsers):
    p = subparsers.add_parser("occupancy",
                              help="blocks and warps resident per SM, and what limits them",
                              description="How many blocks of a kernel fit on one SM, given its "
                                          "threads per block, registers per thread and shared "
                                          "memory per block; registers are allocated per warp in "
                                          f"units of 256. GPUs: {_GPU_LIST}.")
    p.add_argument("--threads", type=positive_int, required=True, help="threads per block")
    p.add_argument("--registers", type=positive_int, required=True,
                   help="registers per thread")
    p.add_argument("--shared", type=non_negative_int, default=0,
                   help="shared memory per block, bytes (default 0)")
    add_gpu(p)
    p.set_defaults(func=run_occupancy)

    p = subparsers.add_parser("waves", help="wave quantisation of a launch",
                              description="Blocks run in waves of (SMs x blocks per SM): how "
                                          "many full waves, the tail, and the SM time left "
                                          f"idle. GPUs: {_GPU_LIST}.")
    p.add_argument("--blocks", type=non_negative_int, required=True,
                   help="blocks (programs) in the launch")
    p.add_argument("--blocks-per-sm", type=positive_int, default=1,
                   help="resident blocks per SM, as occupancy gives it (default 1; at most the "
                        f"GPU's limit: {_block_limits()})")
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
    p.add_argument("--all-configs", action="store_true",
                   help="also print the bound of every configuration an autotuned kernel tried "
                        "(default: only the one it chose)")
    p.set_defaults(func=run_roofline)

    p = subparsers.add_parser("predict",
                              help="each launch's GPU time, predicted from the simulator",
                              description="Run SCRIPT under minitriton (as `python -m "
                                          "minitriton SCRIPT`: `import triton` gives minitriton, "
                                          "CUDA tensors live on the CPU) and print, for each "
                                          "kernel launch, its predicted time on the GPU, the "
                                          "range the GPU's time falls in, the term that bounds "
                                          "it, and for each autotuned kernel the ranking of its "
                                          "configurations (the autotuner ranks by the same "
                                          "model). GPUs: H100, H200 (the model's constants are "
                                          "fitted on their measurements; docs/hardware.md).")
    p.add_argument("script", help="a Python program that launches Triton kernels")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    p.add_argument("--gpu", type=gpu_name, default="H200",
                   help="H200 (default) or H100; options go before SCRIPT, what follows it is "
                        "the program's")
    p.add_argument("--sample", type=non_negative_int, default=0,
                   help="run only this many programs of each launch, counts scaled to the grid "
                        "(fast at a GPU's sizes, but the program's results are wrong: its own "
                        "checks fail); 0 (default) runs them all")
    p.add_argument("--small", action="store_true",
                   help="shrink triton.testing's benchmarks as `python -m minitriton --small`")
    p.set_defaults(func=run_predict)
