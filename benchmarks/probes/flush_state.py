"""Probe: why the exchange kernels lose 10-24 us in do_bench that they do not lose in CUDA-graph
replays (docs/decisions.md#exchange-split-forward). Times each call between CUDA events, as
do_bench does, with the L2 and the GPU in fourteen states before it: as the previous call
left them (no flush), the L2 full of dirty lines (do_bench's flush: zeroing a 256 MB buffer)
or of clean ones (a read of 256 MB, or of 1 GB: more pages), a read of 4 MB (within the L2),
a kernel that touches no memory (torch.cuda._sleep), the zeroing or the 4 MB read followed by
that sleep (about 60 us: time for the memory system to drain), a kernel on every SM that
touches no memory, and Triton reads of 4 and 32 MB leaving their L2 lines with one eviction
policy (plain, evict_first, evict_last). For the exchange forwards (softmax and RMSNorm, fp32
1024x65536; softmax's with its load's evict_first and its store's .cs on and off, and
without its meeting: MEET, a wrong result; and pipelined, benchmarks/probes/
exchange_pipelined.py's), the online softmax and a copy of the same bytes; median of 50 calls
each.
Found (H100, 2026-12-07, sessions 44-45, docs/decisions.md#exchange-split-forward): with its
hints the exchange reaches 0.97 of the copy only while the L2 holds evict-first lines (its
own previous call's, or a read marked evict_first); behind any other kernel's lines, do_bench's
flush included, it runs at 0.88-0.89; without the hints at 0.90-0.91 whatever the L2 holds."""
import os
import sys

from _common import ROOT, save_rows, tl, torch, triton
from exchange_pipelined import pipelined, pipelined_rms
from softmax_exchange import HINTS, exchange
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels._checks import sm_count
from tritonlab.kernels import softmax as sm

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling


@triton.jit
def _idle_kernel(out_ptr):
    # a launch over every SM that touches no memory (no program id is negative)
    if tl.program_id(0) < 0:
        tl.store(out_ptr, 0)


@triton.jit
def _read_kernel(src_ptr, out_ptr, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    # a read of BLOCK int32 a program, its lines left in L2 with the policy EVICT
    pid = tl.program_id(0)
    v = tl.load(src_ptr + pid * BLOCK + tl.arange(0, BLOCK), eviction_policy=EVICT)
    tl.store(out_ptr + pid, tl.sum(v, axis=0))


def read(buf, out, evict, block=4096):
    """A Triton read of all of buf (int32), its L2 lines marked `evict`."""
    return lambda: _read_kernel[(buf.numel() // block,)](buf, out, BLOCK=block, EVICT=evict,
                                                        num_warps=4)


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
    mb32 = buf[:32 << 20].view(torch.int32)
    out = torch.empty(1 << 16, dtype=torch.int32, device="cuda")
    # the L2 (50 MB) left dirty or clean; a read that fits in it (no DRAM pages touched
    # beyond 4 MB); a read over 1 GB (more pages than 256 MB); a kernel that touches no memory
    states = {"no flush": lambda: None, "dirty 256M": mb256.zero_,
              "clean 256M": lambda: mb256.sum(), "clean 1G": lambda: buf.view(torch.int32).sum(),
              "read 4M": lambda: mb4.sum(), "sleep": lambda: torch.cuda._sleep(100_000),
              # the same with the memory system given time to drain before the call
              "dirty+sleep": lambda: (mb256.zero_(), torch.cuda._sleep(100_000)),
              "4M+sleep": lambda: (mb4.sum(), torch.cuda._sleep(100_000)),
              # every SM runs a kernel that touches no memory (sleep runs on one)
              "idle SMs": lambda: _idle_kernel[(sm_count(0) * 16,)](out),
              # the L2 holding 4 or 32 MB of lines of one eviction policy
              "4M plain": read(mb4, out, ""), "4M ef": read(mb4, out, "evict_first"),
              "4M el": read(mb4, out, "evict_last"), "32M plain": read(mb32, out, ""),
              "32M ef": read(mb32, out, "evict_first")}
    x = torch.randn(1024, 65536, device="cuda")
    g = torch.randn(65536, device="cuda")
    y = torch.empty_like(x)
    # the exchange (8 pieces) with its cache hints, then with them off (softmax_exchange.py's)
    impls = {"exchange 8192 w8": exchange(x, y, 8192, 8),
             **{f"exchange 8192 w8 {tag}": exchange(x, y, 8192, 8, **kw)
                for tag, kw in HINTS.items()},
             # what the meeting costs (a wrong result): statistics stored and read back
             # without the wait, then no exchange at all
             "exchange 8192 w8 no wait": exchange(x, y, 8192, 8, MEET=1),
             "exchange 8192 w8 no exchange": exchange(x, y, 8192, 8, MEET=0),
             "exchange 8192 w8 plain no exchange": exchange(x, y, 8192, 8, MEET=0, EVICT="",
                                                            STORE=""),
             "softmax exchange (default)": lambda: sm.softmax(x),
             "softmax online": lambda: sm.softmax(x, variant="online"),
             "rmsnorm exchange (default)": lambda: rn.rmsnorm(x, g),
             # groups walking rows in a pipelined loop (docs/decisions.md#exchange-pipelined):
             # does keeping the next rows in flight through the meeting undo the L2's say?
             **{f"softmax pipelined s{s} {p}/SM": pipelined(x, y, 8192, 8, s, p)
                for s, p in ((3, 2), (4, 1))},
             "rmsnorm pipelined s3 2/SM": pipelined_rms(x, g, 8192, 8, 3, 2),
             "copy": same_bytes_copy(x, 2 * x.numel() * x.element_size())}
    rows = []
    print(f"{'fp32 1024x65536':<30}" + "".join(f"{s[:9]:>10}" for s in states), flush=True)
    for name, fn in impls.items():
        us = {s: timed(fn, before) for s, before in states.items()}
        rows.append({"impl": name, **us})
        print(f"{name[:30]:<30}" + "".join(f"{v:10.1f}" for v in us.values()), flush=True)
    save_rows(os.environ.get("OUT", "out"), "flush_state.json", rows)


if __name__ == "__main__":
    main()
