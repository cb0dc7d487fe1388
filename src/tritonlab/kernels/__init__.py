"""The lecture's kernels. Each op: `*_kernel` (Triton source) -> launch function."""
