"""torch's matrix products on the emulated GPU: computed as its tensor cores compute them.

A Triton program checks its kernel against torch (`torch.allclose(triton_out, torch.matmul(a,
b), atol=1e-2)`). On the GPU both sides run the same tensor-core chain (cuBLAS and Triton's
`tl.dot` sum 16 fp16 products per step, cut toward zero; language/dot.py), so they agree bit
for bit and such checks hold with an atol under one fp16 ulp. On a CPU, torch's own fp16 matmul
rounds differently, and the same checks fail on a few elements in a million (Triton's tutorials
03 and 08). So while a program runs under the runner, torch's fp16/bf16 products on CPU tensors
take the GPU's numerics, and so does the fp32 accumulation of its layer-norm backward, as CUDA's
kernels accumulate half types:

    aten.mm, aten.bmm, aten.addmm (alpha = beta = 1)   fp16/bf16 operands: the tensor-core
                                   chain over all of K from zero (`mma_chain`, 16 products per
                                   step), the bias added in fp32, one rounding to the type
    aten.native_layer_norm       fp16/bf16: computed in fp32, the output rounded once, the
                                 mean and 1/std kept in fp32 (CUDA's accumulate type)
    aten.native_layer_norm_backward  fp16/bf16: computed in fp32, rounded once

Everything else, and every fp32/fp64/integer operation, is torch's own. The matrix products
cover `@`, torch.matmul/mm/bmm, nn.functional.linear and their backward passes (autograd calls
the same aten operators). `--no-torch-patch` turns this off with the rest of the torch patch,
and `MINITRITON_EXACT_DOT=0` with minitriton's own exact dots.
"""
from __future__ import annotations

import numpy as np

from ..language.dot import mma_chain
from ..settings import current_settings

HALF_TYPES = ("torch.float16", "torch.bfloat16")
_ROWS_BYTES = 256 << 20  # memory for one block of rows' products of one tensor-core step


def _half_cpu(*tensors):
    return all(t is not None and hasattr(t, "dtype") and str(t.dtype) in HALF_TYPES and
               t.device.type == "cpu" for t in tensors)


def _as_float64(t):
    return t.detach().float().numpy().astype(np.float64)


def gpu_matmul(torch, a, b, bias=None):
    """a (..., M, K) @ b (..., K, N) (+ bias) as the tensor cores compute it, in a's type."""
    x, y = _as_float64(a), _as_float64(b)
    M, N = x.shape[-2], y.shape[-1]
    lead = int(np.prod(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), dtype=np.int64))
    rows = max(1, _ROWS_BYTES // (8 * 16 * N * max(lead, 1)))
    out = np.concatenate([mma_chain(x[..., r:r + rows, :], y, None, 16)
                          for r in range(0, M, rows)], axis=-2) if M else \
        np.zeros((*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), 0, N), np.float32)
    result = torch.from_numpy(np.ascontiguousarray(out))
    if bias is not None:
        result = result + bias.detach().float()
    return result.to(a.dtype)


def mode_class(torch):
    """The TorchDispatchMode that gives torch's CPU half-precision products the GPU's
    numerics (made when torch is imported)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    aten = torch.ops.aten
    handled = (aten.mm.default, aten.bmm.default, aten.addmm.default,
               aten.native_layer_norm.default, aten.native_layer_norm_backward.default)

    class GPUNumerics(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):
            # else torch wraps __torch_dispatch__ in torch._dynamo.disable, importing
            # torch._dynamo (and inductor, which probes `import triton`: minitriton here) at the
            # first operation; this mode never runs under torch.compile's tracing
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in handled or not current_settings().exact_dot:
                return func(*args, **kwargs)  # every other operator, without reading settings
            if func in (aten.mm.default, aten.bmm.default) and not kwargs and \
                    _half_cpu(*args[:2]) and args[0].dtype == args[1].dtype:
                return gpu_matmul(torch, args[0], args[1])
            if func is aten.addmm.default and _half_cpu(*args[:3]) and \
                    kwargs.get("beta", 1) == 1 and kwargs.get("alpha", 1) == 1 and \
                    len(args) == 3 and len({t.dtype for t in args[:3]}) == 1:
                return gpu_matmul(torch, args[1], args[2], bias=args[0])
            if func is aten.native_layer_norm.default and _half_cpu(args[0]):
                return _in_fp32(torch, func, args, kwargs, half=args[0].dtype, narrowed=(0,))
            if func is aten.native_layer_norm_backward.default and _half_cpu(args[1]):
                return _in_fp32(torch, func, args, kwargs, half=args[1].dtype)
            return func(*args, **kwargs)

    return GPUNumerics


def _in_fp32(torch, func, args, kwargs, half, narrowed=None):
    """`func` with its `half` tensors in fp32; its tensor results back in `half` (those at the
    positions `narrowed` only, when given)."""
    wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == half else a for a in args]
    out = func(*wide, **kwargs)
    return tuple(o.to(half) if isinstance(o, torch.Tensor) and o.dtype == torch.float32 and
                 (narrowed is None or i in narrowed) else o for i, o in enumerate(out))


__all__ = ["gpu_matmul", "mode_class"]
