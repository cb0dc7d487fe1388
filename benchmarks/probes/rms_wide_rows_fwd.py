"""Probe: RMSNorm forward on rows of 4096-65536 columns (2^26 elements), CUDA-graph replays:
the whole-row-in-registers kernel against the chunked one over chunk and warps, each checked
against the default path first.
Decided: docs/decisions.md#rmsnorm-register-limits and #rmsnorm-wide-forward."""
from _common import report, torch, tl, variant, wide_inputs
from tritonlab.kernels import rmsnorm as rn


def main():
    for N in (4096, 8192, 16384, 32768, 65536):
        for dtype in (torch.bfloat16, torch.float32):
            M, x, g, _, name = wide_inputs(N, dtype)
            y_ref, rstd = rn._forward(x, g, 1e-6)
            y = torch.empty_like(x)

            def y_err():
                return f"{(y.float() - y_ref.float()).abs().max().item():.1e}"

            warps = rn.num_warps_for(N)
            rows = [variant(f"registers w{warps}", lambda: rn.rmsnorm_fwd_kernel[(M,)](
                x, g, y, rstd, N, 1e-6, BLOCK_SIZE=N, ACC=tl.float32, num_warps=warps), y_err)]
            for chunk in (1024, 2048, 4096, 8192):
                for w in (4, 8, 16):
                    if chunk // (32 * w) >= 4 and chunk <= N:
                        rows.append(variant(f"chunk {chunk} w{w}", lambda chunk=chunk, w=w: (
                            rn.rmsnorm_fwd_wide_kernel[(M,)](x, g, y, rstd, N, 1e-6, CHUNK=chunk,
                                                              ACC=tl.float32, num_warps=w)),
                            y_err))
            report("fwd", name, rows, 2 * M * N * x.element_size())


if __name__ == "__main__":
    main()
