"""Probe: where RMSNorm's training step loses its do_bench time (docs/decisions.md#rmsnorm-pdl).

kernels.py's forward+backward rows take 6-11 us more in do_bench than in CUDA-graph replays
at the shorter rows (bf16 8192x4096 on an H100: 130.4 against 121.0 us), the same-bytes copy
3. Autograd's worker thread is not it (rms_pdl.py's one-thread row). Here each call is timed
between CUDA events, as do_bench does, after one of five states: nothing (the previous
call's L2), do_bench's flush (a 256 MB buffer zeroed: the L2 full of dirty lines), the flush
then a long sleep kernel (torch.cuda._sleep, about 250 us: the host's launches of the call
queued before the GPU reaches them, so any time left over the no-host figure is the GPU's),
a long sleep alone, and a read of 256 MB (the L2 full of clean lines). For the step
(`torch.autograd.grad(rmsnorm(x, g), (x, g), dy)`, the native node), the forward alone, the
backward alone (the plan's kernels from Python) and a copy of the step's 5·MN bytes; median
of 50 calls each.

    python benchmarks/probes/step_state.py [MxN ...]      ($OUT/step_state.json)
"""
import os
import sys

from _common import ROOT, dtype_name, rms_inputs, save_rows, shapes_from_argv, torch
from flush_state import timed
from tritonlab.kernels import rmsnorm as rn

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling

SHAPES = ((8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536))
SLEEP = 500_000  # cycles: about 250-300 us at the H100's and H200's clocks


def main(shapes=SHAPES):
    buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    states = {"no flush": lambda: None, "dirty 256M": buf.zero_,
              "dirty+sleep": lambda: (buf.zero_(), torch.cuda._sleep(SLEEP)),
              "sleep": lambda: torch.cuda._sleep(SLEEP),
              "clean 256M": lambda: buf.view(torch.int32).sum()}
    rows = []
    for M, N in shapes:
        for dtype in (torch.bfloat16, torch.float32):
            x, g, dy = rms_inputs(M, N, dtype)
            xg, gg = x.clone().requires_grad_(), g.clone().requires_grad_()
            plan = rn._plan(x, g)
            _, rstd = plan.forward(x, g, 1e-6)
            impls = {"step": lambda: torch.autograd.grad(rn.rmsnorm(xg, gg), (xg, gg), dy),
                     "forward": lambda: plan.forward(x, g, 1e-6),
                     "backward": lambda: plan.backward(dy, x, g, rstd),
                     "copy 5MN": same_bytes_copy(x, 5 * x.nbytes)}
            impls["step"]()
            impls["step"]()  # the second: the native node, as kernels.py times it
            name = f"{M}x{N} {dtype_name(dtype)}"
            print(f"{name:<20}" + "".join(f"{s[:11]:>12}" for s in states), flush=True)
            for label, fn in impls.items():
                us = {s: timed(fn, before) for s, before in states.items()}
                rows.append({"shape": f"{M}x{N}", "dtype": dtype_name(dtype), "impl": label,
                             **us})
                print(f"  {label:<18}" + "".join(f"{v:12.1f}" for v in us.values()),
                      flush=True)
    save_rows(os.environ.get("OUT", "out"), "step_state.json", rows)


if __name__ == "__main__":  # step_state.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
