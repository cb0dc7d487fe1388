"""What tritonlab's kernel tests compare with: float64 PyTorch references, seeded inputs on the
active backend's device, and the tolerance tables. (Not `references`: that name is minitriton's
NumPy module, tests/minitriton/references.py, and both directories share one import path.)"""
import torch
import torch.nn.functional as F

from tritonlab import backend

DEV = backend.DEVICE
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# ||out - ref|| / ||ref|| allowed, per input dtype: fp32 math rounded to the output dtype
TOLERANCES = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}
MATMUL_TOLERANCES = {torch.float32: 2e-3, torch.float16: 1e-3, torch.bfloat16: 8e-3}  # fp32: TF32
# max |out - ref| allowed (relative to max(1, max |ref|)) for elementwise kernels: one rounding
# of the output, plus fp32 transcendentals
ELEMENTWISE_TOLERANCES = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
# the public ops (test_ops.py), ||ours - torch fp64|| / ||torch fp64||, values and gradients:
# one rounding to the dtype plus fp32 math; matmuls: TF32 (fp32) or 16-bit products, and the
# gradients' two more matmuls
OP_TOLERANCES = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
OP_MATMUL_TOLERANCES = {torch.float32: 4e-3, torch.float16: 3e-3, torch.bfloat16: 2e-2}
# FlashAttention (test_attention.py), for O, L and each gradient: fp32 inputs multiply in TF32
# (10-bit mantissa) on the tensor cores and in the simulator; fp16/bf16 round P and dS to the
# input dtype before their dots; L is fp32 always and gets the same bound
ATTENTION_TOLERANCES = {torch.float32: 5e-3, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}


def rand(*shape, dtype=torch.float32, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(DEV, dtype)


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def gelu(x):
    """The lecture's GeLU (tanh approximation) in float64."""
    return F.gelu(x.double(), approximate="tanh")


def softmax(x, dim=-1):
    return torch.softmax(x.double(), dim)


ACTIVATIONS = {"none": lambda x: x, "relu": torch.relu, "gelu": gelu}


def matmul(a, b, activation="none"):
    """activation(a @ b) in float64."""
    return ACTIVATIONS[activation](a.double() @ b.double())


def rmsnorm(x, g, eps=1e-6):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * g.double()


def rmsnorm_grads(x, g, dy, eps=1e-6):
    """float64 reference (y, dx, dg)."""
    x64 = x.detach().double().requires_grad_()
    g64 = g.detach().double().requires_grad_()
    y = rmsnorm(x64, g64, eps)
    y.backward(dy.double())
    return y.detach(), x64.grad, g64.grad
