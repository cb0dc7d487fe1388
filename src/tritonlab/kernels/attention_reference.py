"""FlashAttention-2 in plain PyTorch, tile by tile (the assignment's first part): the algorithm
of kernels/attention.py with the tiles as Python loops, for reading next to the kernels and as a
second reference in the tests. Runs on any device; slow (a Python loop per tile pair).

Forward (FlashAttention-2 Algorithm 1), for each query tile Q_i:
    m = -inf, l = 0, O = 0
    for each key tile K_j, V_j (causal: only j's tiles at or below the diagonal):
        S = Q_i K_j^T * scale                   (Bq, Bk), never stored
        m' = max(m, rowmax(S));  P = exp(S - m')
        l = exp(m - m') l + rowsum(P);  O = exp(m - m') O + P V_j;  m = m'
    O_i = O / l;  L_i = m + log(l)
Backward (Algorithm 2), with D = rowsum(dO * O), for each key tile K_j, V_j:
    for each query tile Q_i:  P = exp(Q_i K_j^T * scale - L_i)
        dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P * (dP - D_i)
        dQ_i += scale dS K_j;  dK_j += scale dS^T Q_i
Accumulators are fp32 (fp64 for fp64 inputs), as on chip in the kernels.
"""
from __future__ import annotations

import math

import torch


def _acc_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _causal_keep(q0, k0, bq, bk, device):
    """(bq, bk) mask of a tile: query i keeps key j when i >= j (top-left aligned)."""
    rows = torch.arange(q0, q0 + bq, device=device)[:, None]
    cols = torch.arange(k0, k0 + bk, device=device)[None, :]
    return rows >= cols


def _key_tiles(q0, bq, n_keys, tile_k, causal):
    """Start of each key tile a query tile [q0, q0 + bq) needs: all of them, or (causal) none
    that starts after the tile's last query."""
    hi = min(n_keys, q0 + bq) if causal else n_keys
    return range(0, hi, tile_k)


def tiled_forward(q, k, v, causal=False, scale=None, tile_q=16, tile_k=16):
    """(O, L) for q (..., Nq, d), k and v (..., Nk, d): O in q's dtype, L fp32 (fp64)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    acc = _acc_dtype(q)
    n_q, n_k = q.shape[-2], k.shape[-2]
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:-1], dtype=acc, device=q.device)
    for q0 in range(0, n_q, tile_q):
        qi = q[..., q0:q0 + tile_q, :].to(acc)
        bq = qi.shape[-2]
        m = torch.full(qi.shape[:-1], float("-inf"), dtype=acc, device=q.device)
        l = torch.zeros_like(m)
        out = torch.zeros(qi.shape, dtype=acc, device=q.device)
        for k0 in _key_tiles(q0, bq, n_k, tile_k, causal):
            kj, vj = k[..., k0:k0 + tile_k, :].to(acc), v[..., k0:k0 + tile_k, :].to(acc)
            s = qi @ kj.transpose(-1, -2) * scale  # (..., bq, bk)
            if causal:
                s = s.masked_fill(~_causal_keep(q0, k0, bq, kj.shape[-2], q.device),
                                  float("-inf"))
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(-1)
            out = alpha[..., None] * out + p @ vj
            m = m_new
        o[..., q0:q0 + tile_q, :] = (out / l[..., None]).to(q.dtype)
        lse[..., q0:q0 + tile_q] = m + torch.log(l)
    return o, lse


def tiled_backward(do, q, k, v, o, lse, causal=False, scale=None, tile_q=16, tile_k=16):
    """(dQ, dK, dV) by Algorithm 2: P recomputed from L, D = rowsum(dO * O)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    acc = _acc_dtype(q)
    n_q, n_k = q.shape[-2], k.shape[-2]
    delta = (do.to(acc) * o.to(acc)).sum(-1)  # (..., Nq)
    dq = torch.zeros(q.shape, dtype=acc, device=q.device)
    dk = torch.zeros(k.shape, dtype=acc, device=q.device)
    dv = torch.zeros(v.shape, dtype=acc, device=q.device)
    for k0 in range(0, n_k, tile_k):
        kj, vj = k[..., k0:k0 + tile_k, :].to(acc), v[..., k0:k0 + tile_k, :].to(acc)
        first = (k0 // tile_q) * tile_q if causal else 0  # earlier queries see none of K_j
        for q0 in range(first, n_q, tile_q):
            qi, doi = q[..., q0:q0 + tile_q, :].to(acc), do[..., q0:q0 + tile_q, :].to(acc)
            p = torch.exp(qi @ kj.transpose(-1, -2) * scale - lse[..., q0:q0 + tile_q, None])
            if causal:
                p = p.masked_fill(~_causal_keep(q0, k0, qi.shape[-2], kj.shape[-2], q.device),
                                  0.0)
            dv[..., k0:k0 + tile_k, :] += p.transpose(-1, -2) @ doi
            dp = doi @ vj.transpose(-1, -2)
            ds = p * (dp - delta[..., q0:q0 + tile_q, None])
            dq[..., q0:q0 + tile_q, :] += scale * ds @ kj
            dk[..., k0:k0 + tile_k, :] += scale * ds.transpose(-1, -2) @ qi
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class FlashAttentionTorch(torch.autograd.Function):
    """The assignment's PyTorch interface: forward(ctx, Q, K, V, is_causal=False) -> O, saving
    L, Q, K, V and O."""

    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False, scale=None):
        O, L = tiled_forward(Q, K, V, is_causal, scale)
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal, ctx.scale = is_causal, scale
        return O

    @staticmethod
    def backward(ctx, dO):
        L, Q, K, V, O = ctx.saved_tensors
        return (*tiled_backward(dO, Q, K, V, O, L, ctx.is_causal, ctx.scale), None, None)


def flash_attention_torch(q, k, v, causal=False, scale=None):
    return FlashAttentionTorch.apply(q, k, v, causal, scale)
