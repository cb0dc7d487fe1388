"""GPU benchmark of FlashAttention-2 (tritonlab.kernels.attention) against PyTorch eager
attention and SDPA's backends (cuDNN, FlashAttention-2, memory-efficient), in one run.

    python benchmarks/attention.py [--quick] [--out DIR] [--dtypes bf16,fp32] [--seqs 128,1024]
                                   [--dims 64,128] [--no-speed] [--no-table]
                                   [--variants ours-tma,ours-atomic] [--rows 0,2] [--repeats 3]
                                   [--tutorial TRITON/python/tutorials]

Two tables:
  * speed (issue 14): 4x32x4096x128 fp16 causal and not, 16x16384x64 bf16 causal (the CS336
    leaderboard: 16 batch*heads), 1x65536x128 bf16 causal: forward and forward+backward
    TFLOP/s, ours against cuDNN and flash SDPA measured in the same run, and the goals
    (forward >= 0.9x cuDNN, fwd+bwd >= 0.8x cuDNN and >= 1.3x flash; leaderboard <= 5.0 ms);
    and issue 36's (forward >= 0.95x cuDNN, fwd+bwd >= 0.9x; leaderboard <= 4.8 ms) beside;
    `--repeats 3` times them three times in one process, a table each; with `--tutorial DIR`
    (Triton's python/tutorials), tutorial 06's forward too (its fp16 rows; warp-specialized
    where the tutorial itself does it on Hopper: not causal), and issue 36's third bar (our
    forward at least the tutorial's faster one);
  * the variants (issue 36), timed in the speed rows beside ours: the TMA forwards
    (ours-tma: descriptors made in the kernel; ours-tma-ws: the same with warp
    specialization; ours-tma-host: host TensorDescriptors), the one-pass backward
    (ours-atomic: dQ by atomics; ours-atomic-tma: its tiles read and dQ added through TMA),
    the two-kernel backward reading through TMA (ours-bwd-tma), the Gluon forward and
    backwards (ours-gluon; ours-gluon-ws, warp-specialized in FlashAttention-3's consumer
    loop; ours-bwd-gluon, two kernels; ours-bwd-gluon-ws, the two warp-specialized;
    ours-bwd-gluon-atomic, one pass with dQ by TMA reductions; ours-bwd-gluon-ws-atomic, that
    pass warp-specialized: kernels/attention_gluon.py) and both changed
    (ours-tma+atomic); each against ours, cuDNN and
    flash, to choose AttentionTuning's fwd_impl / bwd_impl (kernels/tuning.py);
  * the assignment's table: batch 1, causal, sequence 128 ... 65536, head dim 16 ... 128
    (powers of 2), bf16 and fp32: forward, backward and end-to-end latency per implementation.
`--quick`: the speed rows only. Without variants (`--variants ''`) under 4 minutes on an H200,
autotuning included; each variant autotunes its own kernel per row (6 configs), so split the
variants over several commands (--variants, --rows; docs/attention.md lists them). The full
table takes longer than one 10-minute command: split it with --dtypes / --seqs / --dims.

Every configuration is first checked against SDPA (O and dQ, dK, dV, tolerances per dtype)
and only then timed, with triton.testing.do_bench (25 ms warm-up, 100 ms of repetitions, L2
flushed; median with p20/p80; --warmup/--rep shorten both for the long table). The speed rows
time each pass in --rounds rounds (3) that take turns over the implementations, a third of the
repetitions each, so that a drift of the GPU's clocks during the run meets all of them alike
(one H100 run of 2026-12-06 saw cuDNN's own forward+backward move by 25 % between repeats);
a row's quantiles are of all its rounds' times. FLOPs:
4*B*H*N^2*D forward (half when causal), 2.5x that for
the backward, 3.5x for forward+backward. Writes DIR/attention.json (every row, with the GPU,
versions, date and commit) and DIR/attention.md (the tables), and prints the markdown.
"""
import argparse
import contextlib
import importlib.util
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tritonlab.bench import export  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# (label, batch, heads, seq, head dim, dtype, causal): issue 14's speed table
SPEED_ROWS = [("4x32x4096x128 fp16", 4, 32, 4096, 128, "fp16", False),
              ("4x32x4096x128 fp16 causal", 4, 32, 4096, 128, "fp16", True),
              ("16x16384x64 bf16 causal (leaderboard)", 1, 16, 16384, 64, "bf16", True),
              ("1x65536x128 bf16 causal", 1, 1, 65536, 128, "bf16", True)]
TABLE_SEQS = [2 ** i for i in range(7, 17)]  # 128 ... 65536
TABLE_DIMS = [16, 32, 64, 128]
PASSES = ("fwd", "bwd", "fwd+bwd")
# SDPA's backends by name (torch.nn.attention.SDPBackend members)
SDPA_BACKENDS = {"sdpa-cudnn": "CUDNN_ATTENTION", "sdpa-flash": "FLASH_ATTENTION",
                 "sdpa-efficient": "EFFICIENT_ATTENTION"}
HALF_ONLY_SDPA = ("sdpa-cudnn", "sdpa-flash")
# max |got - SDPA| / max(1, max |SDPA|) allowed in the check before timing; fp32: ours
# multiplies in TF32, SDPA's efficient kernel in fp32
CHECK_TOLERANCES = {torch.float32: 2e-2, torch.float16: 1e-2, torch.bfloat16: 3e-2}
GOALS = {"fwd_vs_cudnn": 0.9, "fwd+bwd_vs_cudnn": 0.8, "fwd+bwd_vs_flash": 1.3,
         "leaderboard_ms": 5.0}
# issue 36's; its third, our forward at least tutorial 06's (--tutorial), where that ran
GOALS_36 = {"fwd_vs_cudnn": 0.95, "fwd+bwd_vs_cudnn": 0.9, "leaderboard_ms": 4.8,
            "fwd_vs_tutorial06": 1.0}
# Triton's tutorial 06 forward (--tutorial), timed beside ours: name -> its warp_specialize
TUTORIAL06 = {"tutorial06": False, "tutorial06-ws": True}


def flops(batch, heads, n, d, causal, which):
    """FLOPs of one pass: 4 B H N^2 D forward (2 matmuls of 2 N^2 D), half when causal; the
    backward recomputes S and does 4 more matmuls: 2.5x the forward."""
    fwd = 4 * batch * heads * n * n * d * (0.5 if causal else 1.0)
    return {"fwd": fwd, "bwd": 2.5 * fwd, "fwd+bwd": 3.5 * fwd}[which]


def eager_attention(q, k, v, causal):
    """PyTorch eager attention: S and P materialised, softmax in fp32 for 16-bit inputs."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        keep = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s.float(), -1).to(q.dtype) @ v


# our implementations beside "ours" (the device's defaults): name -> (fwd_impl, bwd_impl,
# the passes it changes, which alone are timed)
VARIANTS = {"ours-pointers": ("pointers", None, ("fwd", "fwd+bwd")),
            "ours-split": ("split", None, ("fwd", "fwd+bwd")),
            "ours-tma": ("tma", None, ("fwd", "fwd+bwd")),
            "ours-tma-ws": ("tma-ws", None, ("fwd", "fwd+bwd")),
            "ours-tma-host": ("tma-host", None, ("fwd", "fwd+bwd")),
            "ours-gluon": ("gluon", None, ("fwd", "fwd+bwd")),
            "ours-gluon-ws": ("gluon-ws", None, ("fwd", "fwd+bwd")),
            "ours-atomic": (None, "atomic", ("bwd", "fwd+bwd")),
            "ours-atomic-tma": (None, "atomic-tma", ("bwd", "fwd+bwd")),
            "ours-bwd-tma": (None, "two-kernel-tma", ("bwd", "fwd+bwd")),
            "ours-bwd-gluon": (None, "gluon", ("bwd", "fwd+bwd")),
            "ours-bwd-gluon-ws": (None, "gluon-ws", ("bwd", "fwd+bwd")),
            "ours-bwd-gluon-atomic": (None, "gluon-atomic", ("bwd", "fwd+bwd")),
            "ours-bwd-gluon-ws-atomic": (None, "gluon-ws-atomic", ("bwd", "fwd+bwd")),
            "ours-tma+atomic": ("tma", "atomic", PASSES)}


def load_tutorial(folder):
    """Triton's tutorial 06 (06-fused-attention.py in `folder`) as a module."""
    path = Path(folder) / "06-fused-attention.py"
    if not path.is_file():
        raise FileNotFoundError(f"--tutorial: no 06-fused-attention.py in {folder} (give "
                                f"Triton's python/tutorials folder)")
    spec = importlib.util.spec_from_file_location("tutorial06", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tutorial_forward(tut, warp_specialize):
    """fn(q, k, v, causal) of tutorial 06's forward, refusing what the tutorial does not
    run: other dtypes than fp16 (its P is cast to fp16), and warp specialization with the
    causal mask on Hopper (its own benchmark turns it on there only without)."""
    def fn(q, k, v, causal):
        if q.dtype != torch.float16:
            raise ValueError(f"tutorial 06 takes fp16 only, not {q.dtype}")
        if warp_specialize and causal and torch.cuda.get_device_capability()[0] == 9:
            raise ValueError("tutorial 06 specializes warps on Hopper only without the mask")
        return tut.attention(q, k, v, causal, q.shape[-1] ** -0.5, warp_specialize)
    return fn


def sdpa_forward(name):
    """SDPA under backend `name`; the half-precision-only backends refuse fp32 with the reason
    in one line (the row's "n/a"), before torch warns once per backend it tried."""
    def fn(q, k, v, causal):
        if name in HALF_ONLY_SDPA and q.dtype == torch.float32:
            raise ValueError(f"{name} takes fp16 and bf16 only, not fp32")
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def implementations(names, tutorial=None):
    """{name: (fn(q, k, v, causal), context manager factory or None)}; `tutorial`: tutorial
    06's module, for the names in TUTORIAL06."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tritonlab.kernels import attention as fa
    impls = {"ours": (lambda q, k, v, c: fa.flash_attention(q, k, v, c), None),
             "eager": (eager_attention, None)}
    for name, (fwd, bwd, _) in VARIANTS.items():
        impls[name] = (lambda q, k, v, c, f=fwd, b=bwd: fa.flash_attention(q, k, v, c, None, f, b),
                       None)
    for name, member in SDPA_BACKENDS.items():
        impls[name] = (sdpa_forward(name), (lambda m=getattr(SDPBackend, member): sdpa_kernel(m)))
    if tutorial is not None:
        for name, ws in TUTORIAL06.items():
            impls[name] = (tutorial_forward(tutorial, ws), None)
    return {n: impls[n] for n in names}


# do_bench's warm-up and repetition budgets in ms (--warmup / --rep)
TIMING = {"warmup": 25, "rep": 100}


def _bench(fn, rep=None):
    """Every time (ms) of do_bench's repetitions of fn (`rep` ms of them, TIMING's if None)."""
    from triton.testing import do_bench
    return do_bench(fn, warmup=TIMING["warmup"], rep=rep or TIMING["rep"], return_mode="all")


def _quantiles(times):
    """median, p20, p80 of times, as do_bench's quantiles take them (torch.quantile)."""
    q = torch.quantile(torch.tensor(times, dtype=torch.float64),
                       torch.tensor([0.5, 0.2, 0.8], dtype=torch.float64))
    return tuple(q.tolist())


def _inputs(batch, heads, n, d, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn(batch, heads, n, d, device="cuda", dtype=dtype, generator=g)
                   for _ in range(4))
    return q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), do


def _max_rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1.0)).item()


def check(fn, ctx, q, k, v, do, causal, reference, grads=True):
    """max relative difference of O, dQ, dK, dV (not `grads`: O) against `reference` (SDPA's),
    or raise."""
    with ctx() if ctx else contextlib.nullcontext():
        o = fn(q, k, v, causal)
        got = (o, *torch.autograd.grad(o, (q, k, v), do)) if grads else (o,)
    return max(_max_rel(a, b) for a, b in zip(got, reference))


def reference_outputs(q, k, v, do, causal):
    """SDPA's O, dQ, dK, dV with whatever backend it picks (the check's reference)."""
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return (o, *torch.autograd.grad(o, (q, k, v), do))


def _calls(fn, q, k, v, do, causal, backward=True):
    """The timed passes of fn: fwd, bwd (through one forward's graph, kept), fwd+bwd. Where
    fn has a backward, one forward+backward runs first, so that the kept graph is a training
    step's steady state: a first backward compiles its kernels (or keeps the autotuner's
    choice), after which tritonlab's native path records its own C++ node
    (kernels/_native.py), where the graph of an earlier call would keep the Python one."""
    if backward:
        torch.autograd.grad(fn(q, k, v, causal), (q, k, v), do)
    o = fn(q, k, v, causal)
    return {"fwd": lambda: fn(q, k, v, causal),
            "bwd": lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True),
            "fwd+bwd": lambda: torch.autograd.grad(fn(q, k, v, causal), (q, k, v), do)}


def measure(impls, shape, dtype, causal, reference, inputs, rounds=1):
    """{name: rows} of implementations {name: (fn, ctx, passes)} on one shape. Each is checked
    against `reference`, then its passes are timed pass by pass in `rounds` rounds that take
    turns over the implementations, rep / rounds ms of do_bench each: a drift of the GPU's
    clocks in the run meets every implementation alike. A row's median, p20 and p80 are of all
    its rounds' times. A backend that cannot run the shape gives one row with its reason."""
    batch, heads, n, d = shape
    q, k, v, do = inputs
    rows, timed, bases, errs = {}, {}, {}, {}
    for name, (fn, ctx, passes) in impls.items():
        bases[name] = {"impl": name, "batch": batch, "heads": heads, "seq": n, "head_dim": d,
                       "dtype": str(dtype).replace("torch.", ""), "causal": causal}
        try:
            errs[name] = check(fn, ctx, q, k, v, do, causal, reference, passes != ("fwd",))
        except Exception as e:  # no kernel for it, no memory, or (a variant) no compile
            torch.cuda.empty_cache()
            first = (str(e).splitlines() or [""])[0]
            rows[name] = [dict(bases[name], status=f"n/a: {type(e).__name__}: {first[:120]}")]
            continue
        if errs[name] > CHECK_TOLERANCES[dtype]:
            rows[name] = [dict(bases[name],
                               status=f"wrong: max rel diff {errs[name]:.2e} against SDPA")]
            continue
        rows[name] = []
        with ctx() if ctx else contextlib.nullcontext():
            calls = _calls(fn, q, k, v, do, causal, passes != ("fwd",))
        timed[name] = {w: (calls[w], []) for w in PASSES if w in passes}
    for which in PASSES:
        for _ in range(rounds):
            for name, passes in timed.items():
                if which not in passes or passes[which] is None:
                    continue
                call, times = passes[which]
                ctx = impls[name][1]
                try:
                    with ctx() if ctx else contextlib.nullcontext():
                        times.extend(_bench(call, TIMING["rep"] / rounds))
                except torch.cuda.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    passes[which] = None
                    rows[name].append(dict(bases[name], status="out of memory",
                                           **{"pass": which}))
        for name, passes in timed.items():
            if passes.get(which):
                median, p20, p80 = _quantiles(passes[which][1])
                rows[name].append(dict(
                    bases[name], status="ok", median_ms=median, p20_ms=p20, p80_ms=p80,
                    tflops=flops(batch, heads, n, d, causal, which) / median / 1e9,
                    check_max_rel=errs[name], rounds=rounds, **{"pass": which}))
    timed = None  # free the graphs before the next shape
    torch.cuda.empty_cache()
    return rows


def run_shape(label, shape, dtype, causal, impl_names, eager_max_seq, table, tutorial=None,
              rounds=1):
    batch, heads, n, d = shape
    inputs = _inputs(batch, heads, n, d, dtype)
    reference = reference_outputs(*inputs, causal)
    impls, skipped = {}, {}
    for name, (fn, ctx) in implementations(impl_names, tutorial).items():
        if name == "eager" and n > eager_max_seq:
            skipped[name] = [{"impl": name, "batch": batch, "heads": heads, "seq": n,
                              "head_dim": d, "dtype": str(dtype).replace("torch.", ""),
                              "causal": causal, "status": f"skipped (seq > {eager_max_seq})"}]
            continue
        passes = (VARIANTS[name][2] if name in VARIANTS else ("fwd",) if name in TUTORIAL06
                  else PASSES)
        impls[name] = (fn, ctx, passes)
    measured = {**skipped, **measure(impls, shape, dtype, causal, reference, inputs, rounds)}
    rows = []
    for name in impl_names:
        if name not in measured:
            continue
        rows.extend(dict(row, table=table, label=label) for row in measured[name])
        times = " ".join(f"{r['pass']} {r['median_ms']:.3f} ms" if r.get("status") == "ok"
                         else r.get("status", "") for r in measured[name])
        print(f"  {label:<40} {name:<15} {times}", flush=True)
    del inputs, reference
    torch.cuda.empty_cache()
    return rows


def _time(rows, impl, which):
    for r in rows:
        if r.get("impl") == impl and r.get("pass") == which and r.get("status") == "ok":
            return r["median_ms"]
    return None


def speed_summary(rows):
    """Per speed row: TFLOP/s of ours, cuDNN and flash, fwd and fwd+bwd, ratios, goals."""
    out = []
    for label, batch, heads, n, d, dt, causal in SPEED_ROWS:
        mine = [r for r in rows if r.get("label") == label]
        if not mine:
            continue
        entry = {"label": label}
        for which in ("fwd", "fwd+bwd"):
            f = flops(batch, heads, n, d, causal, which)
            for impl in ("ours", "sdpa-cudnn", "sdpa-flash"):
                ms = _time(mine, impl, which)
                entry[f"{impl} {which} ms"] = ms
                entry[f"{impl} {which} TFLOP/s"] = f / ms / 1e9 if ms else None
            ours = entry[f"ours {which} ms"]
            for impl, key in (("sdpa-cudnn", "cudnn"), ("sdpa-flash", "flash")):
                other = entry[f"{impl} {which} ms"]
                entry[f"{which}_vs_{key}"] = other / ours if ours and other else None
        # tutorial 06's faster forward, where it ran (the bar holds only there)
        tut = [ms for ms in (_time(mine, name, "fwd") for name in TUTORIAL06) if ms]
        entry["tutorial06 fwd ms"] = min(tut) if tut else None
        ours = entry["ours fwd ms"]
        entry["fwd_vs_tutorial06"] = min(tut) / ours if tut and ours else None
        for name, table in (("goals met", GOALS), ("issue 36 met", GOALS_36)):
            goals = [entry[key] is not None and entry[key] >= table[key]
                     for key in table if key != "leaderboard_ms" and not (
                         key == "fwd_vs_tutorial06" and entry["tutorial06 fwd ms"] is None)]
            if "leaderboard" in label:
                ms = entry["ours fwd+bwd ms"]
                goals.append(ms is not None and ms <= table["leaderboard_ms"])
            entry[name] = all(goals)
        out.append(entry)
    return out


def variants_summary(rows):
    """Per speed row and our implementation (ours and each variant timed): fwd, bwd and
    fwd+bwd ms, and the ratios that choose the defaults: against ours (> 1: the variant is
    faster) and against cuDNN."""
    out = []
    for label, batch, heads, n, d, dt, causal in SPEED_ROWS:
        mine = [r for r in rows if r.get("label") == label]
        for impl in ("ours", *VARIANTS, *TUTORIAL06):
            if not any(r["impl"] == impl for r in mine):
                continue
            entry = {"label": label, "impl": impl}
            failed = [r["status"] for r in mine if r["impl"] == impl and r["status"] != "ok"]
            entry["status"] = failed[0] if failed else "ok"
            for which in PASSES:
                ms = _time(mine, impl, which)
                entry[f"{which} ms"] = ms
                base, cudnn = _time(mine, "ours", which), _time(mine, "sdpa-cudnn", which)
                entry[f"{which} vs ours"] = base / ms if ms and base else None
                entry[f"{which} vs cudnn"] = cudnn / ms if ms and cudnn else None
            out.append(entry)
    return out


def _fmt(x, spec):
    return "—" if x is None else format(x, spec)


def speed_markdown(summary):
    lines = ["| shape | ours fwd / fwd+bwd TFLOP/s | cuDNN | flash | fwd vs cuDNN | fwd+bwd vs "
             "cuDNN | fwd+bwd vs flash | fwd vs tutorial 06 | ours fwd+bwd ms | goals | "
             "issue 36 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in summary:
        cells = [e["label"]]
        for impl in ("ours", "sdpa-cudnn", "sdpa-flash"):
            cells.append(f"{_fmt(e[f'{impl} fwd TFLOP/s'], '.0f')} / "
                         f"{_fmt(e[f'{impl} fwd+bwd TFLOP/s'], '.0f')}")
        cells += [f"{_fmt(e['fwd_vs_cudnn'], '.2f')}x", f"{_fmt(e['fwd+bwd_vs_cudnn'], '.2f')}x",
                  f"{_fmt(e['fwd+bwd_vs_flash'], '.2f')}x", _ratio(e.get("fwd_vs_tutorial06")),
                  _fmt(e["ours fwd+bwd ms"], ".2f"),
                  "met" if e["goals met"] else "missed",
                  "met" if e["issue 36 met"] else "missed"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ratio(x):
    return "—" if x is None else f"{x:.2f}x"


def variants_markdown(summary):
    lines = ["| shape | impl | fwd ms | bwd ms | fwd+bwd ms | fwd vs ours | bwd vs ours | "
             "fwd+bwd vs ours | fwd vs cuDNN | fwd+bwd vs cuDNN |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for e in summary:
        if e["status"] != "ok":
            lines.append(f"| {e['label']} | {e['impl']} | {e['status']} |" + " |" * 7)
            continue
        cells = [e["label"], e["impl"]] + [_fmt(e[f"{w} ms"], ".3f") for w in PASSES]
        cells += [_ratio(e[f"{w} vs ours"]) for w in PASSES]
        cells += [_ratio(e[f"{w} vs cudnn"]) for w in ("fwd", "fwd+bwd")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_markdown(rows, impl_names):
    """The assignment's table: one line per (dtype, head dim, seq), fwd / bwd / fwd+bwd ms per
    implementation (or why it has none)."""
    head = "| dtype | d | seq | " + " | ".join(f"{n} fwd / bwd / e2e ms" for n in impl_names) + " |"
    lines = [head, "|" + "---|" * (3 + len(impl_names))]
    keys = sorted({(r["dtype"], r["head_dim"], r["seq"]) for r in rows if "head_dim" in r},
                  key=lambda t: (t[0], t[1], t[2]))
    for dtype, d, n in keys:
        mine = [r for r in rows
                if (r.get("dtype"), r.get("head_dim"), r.get("seq")) == (dtype, d, n)]
        cells = [dtype, str(d), str(n)]
        for impl in impl_names:
            of = [r for r in mine if r["impl"] == impl]
            if of and of[0]["status"] != "ok" and "pass" not in of[0]:
                cells.append(of[0]["status"].split(":")[0])
                continue
            cells.append(" / ".join(_fmt(_time(of, impl, w), ".3f") for w in PASSES))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# now / then above which a pass counts as slower beyond the noise of two do_bench medians in
# baseline_markdown's second list: a few percent between runs of one call on one card
# (docs/results/attention-table-*-s39.md, -s40.md)
NOISE = 1.03


def baseline_markdown(rows, baseline, impl="ours"):
    """`impl`'s table rows against a baseline run's (issue 36: "no row slower than before"):
    per (dtype, head dim, seq) both runs' fwd / bwd / e2e ms and now / then, and the rows
    where any pass is slower. `baseline`: the rows of an earlier attention.json. Returns
    (markdown, [(dtype, d, seq, pass, ratio) of each slower pass])."""
    def times(of):
        table = {}
        for r in of:
            if (r.get("table") == "assignment" and r.get("impl") == impl
                    and r.get("status") == "ok" and r.get("pass") in PASSES):
                table.setdefault((str(r["dtype"]), r["head_dim"], r["seq"]), {})[
                    r["pass"]] = r["median_ms"]
        return table
    now, then = times(rows), times(baseline)
    lines = [f"| dtype | d | seq | {impl} fwd / bwd / e2e ms | baseline | now / baseline |",
             "|---|---|---|---|---|---|"]
    slower = []
    for key in sorted(set(now) & set(then)):
        ratios = [now[key][w] / then[key][w] if now[key].get(w) and then[key].get(w) else None
                  for w in PASSES]
        slower += [(*key, w, r) for w, r in zip(PASSES, ratios) if r is not None and r > 1]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | "
                     + " / ".join(_fmt(now[key].get(w), ".3f") for w in PASSES) + " | "
                     + " / ".join(_fmt(then[key].get(w), ".3f") for w in PASSES) + " | "
                     + " / ".join(_fmt(r, ".2f") for r in ratios) + " |")
    lines += ["", f"Rows with a pass slower than the baseline: {len({s[:3] for s in slower})} "
                  f"of {len(set(now) & set(then))}"
              + ("" if not slower else ": " + ", ".join(
                  f"{dt} d={d} {n} {w} {r:.2f}x" for dt, d, n, w, r in slower))]
    beyond = [s for s in slower if s[4] > NOISE]
    if slower:  # the share of them beyond two medians' usual spread, to be timed again
        lines.append(f"\nOf them more than {NOISE - 1:.0%} slower: "
                     + (", ".join(f"{dt} d={d} {n} {w} {r:.2f}x"
                                  for dt, d, n, w, r in beyond) or "none"))
    return "\n".join(lines), slower


def _csv(text, convert):
    return [convert(x) for x in text.split(",") if x]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the speed rows only (< 4 min)")
    p.add_argument("--out", default="tritonlab-out/attention", help="folder for JSON and md")
    p.add_argument("--dtypes", default="bf16,fp32", help="the table's dtypes")
    p.add_argument("--seqs", default=",".join(map(str, TABLE_SEQS)), help="the table's lengths")
    p.add_argument("--dims", default=",".join(map(str, TABLE_DIMS)), help="the table's head dims")
    p.add_argument("--impls", default="ours,eager,sdpa-cudnn,sdpa-flash,sdpa-efficient")
    p.add_argument("--eager-max-seq", type=int, default=32768,
                   help="longest sequence eager attention is run at (S and P: 2 N^2 elements)")
    p.add_argument("--warmup", type=int, default=25, help="do_bench warm-up per timing, ms")
    p.add_argument("--rep", type=int, default=100, help="do_bench repetitions per timing, ms")
    p.add_argument("--no-speed", action="store_true", help="skip the speed rows")
    p.add_argument("--no-table", action="store_true", help="skip the assignment's table")
    p.add_argument("--variants", default="ours-tma,ours-tma-ws,ours-tma-host,ours-atomic",
                   help=f"our variants timed in the speed rows, of {','.join(VARIANTS)} "
                        f"('' for none)")
    p.add_argument("--repeats", type=int, default=1,
                   help="time the speed rows this many times in one process, each repeat a "
                        "table of its own (compiles and autotuning once; issue 36 asks for 3)")
    p.add_argument("--rounds", type=int, default=3,
                   help="speed rows: each pass's do_bench repetitions in this many rounds that "
                        "take turns over the implementations (the table: one)")
    p.add_argument("--rows", default=",".join(map(str, range(len(SPEED_ROWS)))),
                   help="the speed rows to run, by index: " + "; ".join(
                       f"{i} {r[0]}" for i, r in enumerate(SPEED_ROWS)))
    p.add_argument("--baseline", help="an earlier run's attention.json: the table's rows "
                   "of ours against it, and the rows slower than it (issue 36)")
    p.add_argument("--tutorial", help="Triton's python/tutorials folder: time tutorial 06's "
                                      "forward in the speed rows too (issue 36's third bar)")
    args = p.parse_args(argv)
    args.dtypes = _csv(args.dtypes, lambda s: DTYPES[s])
    args.seqs, args.dims = _csv(args.seqs, int), _csv(args.dims, int)
    args.impls, args.variants = _csv(args.impls, str), _csv(args.variants, str)
    args.rows = _csv(args.rows, int)
    unknown = (set(args.impls) - {"ours", "eager", *SDPA_BACKENDS, *VARIANTS}
               | set(args.variants) - set(VARIANTS))
    if unknown:
        p.error(f"unknown implementations {sorted(unknown)}")
    if not set(args.rows) <= set(range(len(SPEED_ROWS))):
        p.error(f"--rows: indices 0 to {len(SPEED_ROWS) - 1}")
    if args.repeats < 1 or args.rounds < 1:
        p.error("--repeats and --rounds: at least 1")
    if args.tutorial and not (Path(args.tutorial) / "06-fused-attention.py").is_file():
        p.error(f"--tutorial: no 06-fused-attention.py in {args.tutorial} (give Triton's "
                f"python/tutorials folder)")
    if args.quick:
        args.no_table = True
    return args


def main(argv=None):
    args = parse_args(argv)
    TIMING.update(warmup=args.warmup, rep=args.rep)
    if not torch.cuda.is_available():
        print("benchmarks/attention.py needs a CUDA GPU", file=sys.stderr)
        return 1
    from tritonlab import backend
    from tritonlab.kernels import _native
    print(f"kernels run on: {backend.describe()}", flush=True)
    # the native path's C++ node, built before any timing: its first build (about a minute)
    # runs in a thread beside the calls, which take the Python path meanwhile, and on the
    # H100 of 2026-12-07 it made the first minute's host-bound rows up to 10x slower
    print(f"native path: {'on' if _native.module() else 'off (' + str(_native.why()) + ')'}",
          flush=True)
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def keep(new_rows):  # what was measured so far survives a run cut short
        rows.extend(new_rows)
        (out / "attention.partial.json").write_text(json.dumps(rows, indent=1, default=str))

    if not args.no_speed:
        speed_impls = ([i for i in ("ours", "sdpa-cudnn", "sdpa-flash") if i in args.impls]
                       + args.variants + (list(TUTORIAL06) if args.tutorial else []))
        tutorial = load_tutorial(args.tutorial) if args.tutorial else None
        for repeat in range(args.repeats):
            for label, batch, heads, n, d, dt, causal in (SPEED_ROWS[i] for i in args.rows):
                keep([dict(r, repeat=repeat) for r in run_shape(
                    label, (batch, heads, n, d), DTYPES[dt], causal, speed_impls,
                    args.eager_max_seq, "speed", tutorial, args.rounds)])
    if not args.no_table:
        for dtype in args.dtypes:
            for d in args.dims:
                for n in args.seqs:
                    label = f"1x{n}x{d} {str(dtype)[6:]} causal"
                    keep(run_shape(label, (1, 1, n, d), dtype, True, args.impls,
                                   args.eager_max_seq, "assignment"))
    meta = dict(export.environment("cuda"), commit=export.git_commit(ROOT), run=export.run_label(),
                timing_ms=dict(TIMING), rounds=args.rounds)
    parts = []
    for repeat in range(0 if args.no_speed else args.repeats):
        speed = [r for r in rows if r.get("table") == "speed" and r["repeat"] == repeat]
        of = f", repeat {repeat + 1} of {args.repeats}" if args.repeats > 1 else ""
        summary = speed_summary(speed)
        parts.append(f"### Speed (issue 14){of}\n\n" + speed_markdown(summary))
        meta.setdefault("speed_summary", summary)  # the first repeat's (as before --repeats)
        meta.setdefault("speed_summaries", []).append(summary)
        if args.variants or args.tutorial:
            variants = variants_summary(speed)
            parts.append(f"### Variants (issue 36): against ours (> 1x: faster) and cuDNN{of}"
                         "\n\n" + variants_markdown(variants))
            meta.setdefault("variants_summary", variants)
            meta.setdefault("variants_summaries", []).append(variants)
    if not args.no_table:
        parts.append("### The assignment's table (batch 1, causal)\n\n"
                     + table_markdown([r for r in rows if r.get("table") == "assignment"],
                                      args.impls))
    if args.baseline and not args.no_table:
        base = json.loads(Path(args.baseline).read_text())
        text, slower = baseline_markdown([r for r in rows if r.get("table") == "assignment"],
                                         base["rows"])
        meta["baseline"] = {"file": str(args.baseline), "meta": base.get("meta"),
                            "slower": slower}
        parts.append(f"### The table against {args.baseline}\n\n" + text)
    text = (f"{meta['device_name']}, torch {meta['torch']}, triton {meta.get('triton')}, "
            f"{meta['date']}, commit {meta['commit']}\n\n" + "\n\n".join(parts) + "\n")
    (out / "attention.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "attention.md").write_text(text)
    print("\n" + text)
    print(f"wrote {out / 'attention.json'} and {out / 'attention.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
