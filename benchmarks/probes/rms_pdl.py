"""Probe: RMSNorm with programmatic dependent launch (RMSNormTuning.pdl, off by default).

A training step runs two or three kernels back to back: the forward, then the backward and
dg's sum (or the exchange backward, or the coefficient and tiled kernels). Each waits for the
one before it to end and its stores to land, then is launched and ramps up, while the SMs the
one before left idle in its last wave do nothing. With `pdl` every RMSNorm kernel is launched
with Triton's `launch_pdl` (the native node through cuLaunchKernelEx with programmatic stream
serialization), waits with `griddepcontrol.wait` before it touches memory and releases the
next launch as it starts, so that launch's programs are placed while this one drains. Timed
at benchmarks/kernels.py's shapes, both dtypes, as kernels.py times its rows: the training
step as `torch.autograd.grad(rmsnorm(x, g), (x, g), dy)` (the native node after a first
step) against a copy of 5·MN bytes, and the forward alone against a copy of 2·MN; CUDA-graph
replays and do_bench (L2 flushed), interleaved, three repeats. Each setting is checked first:
y, dx and dg bit for bit the step without PDL. A third step row, "off, autograd on one
thread" (`torch.autograd.set_multithreading_enabled(False)`: the backward on the calling
thread, no handoff to autograd's CUDA worker; a diagnosis, not a setting to benchmark with),
says how much of the step's do_bench time beyond its graph time is the host's.
Decides: RMSNormTuning.pdl (kernels/tuning.py; docs/decisions.md#rmsnorm-pdl; issue 37's
forward+backward rows).

    python benchmarks/probes/rms_pdl.py [MxN ...]      ($OUT/rms_pdl.json: every row)
"""
import dataclasses
import os
import sys

from _common import ROOT, against_copy, dtype_name, rms_inputs, save_rows, shapes_from_argv, torch
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels._launch import PlanCache
from tritonlab.kernels.tuning import tuning_for

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling

SHAPES = ((8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536), (256, 262144))


def setting(on):
    """A function that makes RMSNorm plan with `pdl` on or off from then on: the device's
    tuning with `pdl` replaced, and a plan cache of that setting's own (plans hold their
    launches)."""
    t = dataclasses.replace(tuning_for("rmsnorm", torch.cuda.current_device()), pdl=on)
    cache = PlanCache()

    def use():
        rn.tuning_for, rn._PLANS = (lambda kind, device: t), cache
    return use


def main(shapes=SHAPES):
    rows = []
    settings = {"off": setting(False), "pdl": setting(True)}
    for M, N in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            x, g, dy = rms_inputs(M, N, dtype)
            xg, gg = x.clone().requires_grad_(), g.clone().requires_grad_()
            name = f"{M}x{N} {dtype_name(dtype)}"
            wants = {}

            node = {}

            def step(use):
                use()
                y = rn.rmsnorm(xg, gg)
                node["name"] = y.grad_fn.name()
                # y detached: a y kept with its graph keeps the leaves' AccumulateGrad nodes
                # of this (default) stream alive, which breaks the CUDA-graph capture on another
                return (y.detach(), *torch.autograd.grad(y, (xg, gg), dy))

            def forward(use):
                use()
                return rn._forward(x, g, 1e-6)

            def checked(kind, label, run):
                def check():
                    got = [run() for _ in range(2)][-1]  # the second: the native node
                    if kind == "step":  # timed as kernels.py's row runs: the C++ node
                        assert node["name"] == "TritonlabRMSNormBackward", \
                            rn._plan(x, g).native_why
                    want = wants.setdefault(kind, got)
                    same = all(torch.equal(a, b) for a, b in zip(got, want))
                    assert same, f"{label}: not the bits of the step without PDL"
                    return "same bits"
                return check
            def one_thread(use):  # a diagnosis (docs/benchmarking.md), not a setting
                with torch.autograd.set_multithreading_enabled(False):
                    return step(use)
            for kind, run, copy_bytes in (("step", step, 5), ("fwd", forward, 2)):
                impls = []
                for label, use in settings.items():
                    fn = (lambda use=use, run=run: run(use))
                    impls.append((label, fn, checked(kind, label, fn)))
                if kind == "step":  # how much of do_bench's time is autograd's thread handoff
                    fn = (lambda: one_thread(settings["off"]))
                    impls.append(("off, autograd on one thread", fn,
                                  checked(kind, "one thread", fn)))
                impls.append(("copy", same_bytes_copy(x, copy_bytes * x.nbytes), None))
                rows += against_copy(f"{name} {kind}", impls, shape=f"{M}x{N}",
                                     dtype=dtype_name(dtype), kind=kind)
    print("\nsummary: graph / do_bench us, PDL against off (>1: PDL faster), each of the copy")
    for key in sorted({(r["shape"], r["dtype"], r["kind"]) for r in rows}):
        by = {r["label"]: r for r in rows if (r["shape"], r["dtype"], r["kind"]) == key}
        if not {"off", "pdl", "copy"} <= set(by):
            continue
        off, on, copy = by["off"], by["pdl"], by["copy"]
        print(f"{' '.join(key):<26} off {off['graph_us']:7.1f} / {off['do_bench_us']:7.1f} "
              f"({copy['graph_us'] / off['graph_us']:.2f} / "
              f"{copy['do_bench_us'] / off['do_bench_us']:.2f})  pdl {on['graph_us']:7.1f} / "
              f"{on['do_bench_us']:7.1f} ({copy['graph_us'] / on['graph_us']:.2f} / "
              f"{copy['do_bench_us'] / on['do_bench_us']:.2f})  "
              f"{off['graph_us'] / on['graph_us']:.3f}x / "
              f"{off['do_bench_us'] / on['do_bench_us']:.3f}x", flush=True)
    save_rows(os.environ.get("OUT", "out"), "rms_pdl.json", rows)


if __name__ == "__main__":  # rms_pdl.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
