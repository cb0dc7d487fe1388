"""Probe: why the exchange kernels lose 10-24 us in do_bench that they do not lose in CUDA-graph
replays (docs/decisions.md#exchange-split-forward). Times each call between CUDA events, as
do_bench does, with the L2 and the GPU in eight states before it: as the previous call left them
(no flush), the L2 full of dirty lines (do_bench's flush: zeroing a 256 MB buffer) or of clean
ones (a read of 256 MB, or of 1 GB: more pages), a read of 4 MB (within the L2) and a kernel
that touches no memory (torch.cuda._sleep), and the zeroing or the 4 MB read followed by
that sleep (about 60 us: time for the memory system to drain), for the exchange forwards
(softmax and RMSNorm, fp32 1024x65536), the online softmax and a copy of the same bytes;
median of 50 calls each.
Found (H100, 2026-12-07, docs/decisions.md#exchange-split-forward): a cost of 8-19 us that the
exchange alone pays after any kernel that touched memory, a sleep between them or not."""
import os
import sys

from _common import ROOT, save_rows, torch
from softmax_exchange import exchange
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling


def timed(fn, before, calls=50):
    """Median us of `calls` calls of fn, each after before() and between two CUDA events."""
    fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(calls):
        before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in pairs)[calls // 2] * 1e3


def main():
    buf = torch.empty(1 << 30, dtype=torch.int8, device="cuda")
    mb256, mb4 = buf[:256 << 20].view(torch.int32), buf[:4 << 20].view(torch.int32)
    # the L2 (50 MB) left dirty or clean; a read that fits in it (no DRAM pages touched
    # beyond 4 MB); a read over 1 GB (more pages than 256 MB); a kernel that touches no memory
    states = {"no flush": lambda: None, "dirty 256M": mb256.zero_,
              "clean 256M": lambda: mb256.sum(), "clean 1G": lambda: buf.view(torch.int32).sum(),
              "read 4M": lambda: mb4.sum(), "sleep": lambda: torch.cuda._sleep(100_000),
              # the same with the memory system given time to drain before the call
              "dirty+sleep": lambda: (mb256.zero_(), torch.cuda._sleep(100_000)),
              "4M+sleep": lambda: (mb4.sum(), torch.cuda._sleep(100_000))}
    x = torch.randn(1024, 65536, device="cuda")
    g = torch.randn(65536, device="cuda")
    y = torch.empty_like(x)
    impls = {"exchange, plain loads and stores": exchange(x, y, 8192, 8, EVICT="", STORE=""),
             "exchange, plain loads": exchange(x, y, 8192, 8, EVICT=""),
             "exchange, plain stores": exchange(x, y, 8192, 8, STORE=""),
             "softmax exchange 16384 w16 (4 pieces)": exchange(x, y, 16384, 16),
             "softmax exchange (default)": lambda: sm.softmax(x),
             "softmax online": lambda: sm.softmax(x, variant="online"),
             "rmsnorm exchange (default)": lambda: rn.rmsnorm(x, g),
             "copy": same_bytes_copy(x, 2 * x.numel() * x.element_size())}
    rows = []
    print(f"{'fp32 1024x65536':<38}" + "".join(f"{s:>12}" for s in states), flush=True)
    for name, fn in impls.items():
        us = {s: timed(fn, before) for s, before in states.items()}
        rows.append({"impl": name, **us})
        print(f"{name:<38}" + "".join(f"{v:12.1f}" for v in us.values()), flush=True)
    save_rows(os.environ.get("OUT", "out"), "flush_state.json", rows)


if __name__ == "__main__":
    main()
