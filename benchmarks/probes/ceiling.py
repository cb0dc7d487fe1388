"""Probe: the copy and read ceilings at the byte counts of issue 17's memory-bound rows, timed
the way benchmarks/kernels.py times the kernels (do_bench median, L2 flushed; and CUDA-graph
replays), so that a kernel's rate can be read as a fraction of what moving the same bytes
costs at that size: a copy (read B/2, write B/2: torch's copy_ and clone, and a Triton copy
over block and warps) and a read (read B: torch's sum of all elements, and a Triton read that
stores one partial sum per program). Three interleaved repeats, medians.
Decides: docs/decisions.md#same-size-ceiling."""
from _common import dtype_name, interleaved, tl, torch, triton

SHAPES = (((8192, 4096), torch.bfloat16), ((4096, 16384), torch.bfloat16),
          ((32768, 1024), torch.bfloat16), ((1024, 65536), torch.bfloat16),
          ((256, 262144), torch.bfloat16), ((8192, 4096), torch.float32),
          ((1024, 65536), torch.float32), ((16384, 16384), torch.bfloat16))


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def read_kernel(x_ptr, part_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(part_ptr + tl.program_id(0), tl.sum(x, axis=0))


def main():
    summary = []
    for (M, N), dtype in SHAPES:
        x = torch.randn(M, N, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        n = x.numel()
        e = x.element_size()
        rows = [["copy: y.copy_(x)", lambda: y.copy_(x), 2 * n * e],
                ["copy: x.clone()", lambda: x.clone(), 2 * n * e],
                ["read: x.sum()", lambda: x.sum(), n * e]]
        for block in (2048, 4096, 8192, 16384):
            for warps in (4, 8, 16):
                grid = (triton.cdiv(n, block),)
                part = torch.empty(grid[0], device="cuda")
                rows.append([f"copy: triton {block} w{warps}",
                             lambda grid=grid, b=block, w=warps: copy_kernel[grid](
                                 x, y, n, BLOCK=b, num_warps=w), 2 * n * e])
                rows.append([f"read: triton {block} w{warps}",
                             lambda grid=grid, b=block, w=warps, p=part: read_kernel[grid](
                                 x, p, n, BLOCK=b, num_warps=w), n * e])
        name = f"{M}x{N} {dtype_name(dtype)}"
        best = {}
        nbytes = {label: n for label, _, n in rows}
        kept = interleaved([(label, fn, None) for label, fn, _ in rows])
        assert torch.equal(y, x)  # the copies copied
        for label, _, _, g, c in kept:
            rate, grate = nbytes[label] / c / 1e3, nbytes[label] / g / 1e3
            print(f"ceiling {name:<18} {label:<24} do_bench {c:7.1f} us {rate:6.0f} GB/s  "
                  f"graph {g:7.1f} us {grate:6.0f} GB/s", flush=True)
            kind = label.split(":")[0]
            b = best.setdefault(kind, [0, "", 0, ""])
            if rate > b[0]:
                b[0], b[1] = rate, label
            if grate > b[2]:
                b[2], b[3] = grate, label
        summary.append(f"{name:<18} " + "  ".join(
            f"{k} best do_bench {v[0]:5.0f} GB/s ({v[1]}), graph {v[2]:5.0f} ({v[3]})"
            for k, v in best.items()))
    print("\nsummary (same-size ceilings, do_bench median of 3 / graph):")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
