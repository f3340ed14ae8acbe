"""The Gemma 3 forward pass in f32 NumPy, over a KV cache.

Per block (Gemma Team 2025, "Gemma 3 Technical Report"), with norm(x) = x / sqrt(mean(x^2)
+ eps) * w:
  a = Attn(norm(h));  h = h + norm_post_attn(a)
  f = W_down (gelu_tanh(W_gate x) * (W_up x)), x = norm_ffn(h);  h = h + norm_post_ffw(f)
Attention: q, k, v from x; RMSNorm on each q and k head; RoPE on the two halves of each head
(neox style) at base rope_base(layer); grouped queries (n_heads per KV head); scale
1/sqrt(head_dim); causal, and on the sliding-window layers position i reads only
j > i - window. Inputs are embed[ids] * sqrt(d); the head is the embedding (tied), applied
after the final norm and only at the positions asked for.

A pass runs any subset of the layers (`layers`), so an early-exit or layer-skipping draft is
the same code, with its own cache. A pass holds BLAS to $SPECVIZ_BLAS_THREADS threads
(default 1; threadpoolctl): a position's matrix-vector products are small, and on a
loaded 2-core machine a second BLAS thread made a pass 3-10x slower (waiting for a core
to wake it), not faster (measured: the 18 blocks at one position took 0.21-0.78 s with
OpenBLAS's default threads and 0.04-0.07 s with one).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from .gemma import Weights

GROW = 256  # cache capacity grows by this many positions at a time
BLAS_THREADS = int(os.environ.get("SPECVIZ_BLAS_THREADS", "1"))  # threads a pass may use


class KVCache:
    """Keys and values of the positions seen so far, per layer run; truncate() rolls back."""

    def __init__(self, w: Weights, layers: Sequence[int]) -> None:
        self.layers = tuple(int(i) for i in layers)
        self.kv_dim = w.cfg.n_kv * w.cfg.head_dim
        self.n = 0  # positions held
        self._k = np.zeros((len(self.layers), 0, self.kv_dim), np.float32)  # (L, cap, kv)
        self._v = np.zeros_like(self._k)

    def reserve(self, n: int) -> None:
        cap = self._k.shape[1]
        if n > cap:
            new = max(n, cap + GROW)
            for name in ("_k", "_v"):
                a = np.zeros((len(self.layers), new, self.kv_dim), np.float32)
                a[:, : self.n] = getattr(self, name)[:, : self.n]
                setattr(self, name, a)

    def truncate(self, n: int) -> None:
        """Forget every position from n on (rejected drafts)."""
        self.n = min(self.n, max(0, int(n)))

    def keys(self, li: int, end: int) -> np.ndarray:  # (end, kv)
        return self._k[li, :end]

    def values(self, li: int, end: int) -> np.ndarray:  # (end, kv)
        return self._v[li, :end]

    def put(self, li: int, start: int, k: np.ndarray, v: np.ndarray) -> None:
        self._k[li, start: start + len(k)] = k
        self._v[li, start: start + len(v)] = v


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    ms = np.mean(np.square(x), axis=-1, keepdims=True)
    return x / np.sqrt(ms + np.float32(eps)) * w


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    c = np.float32(np.sqrt(2.0 / np.pi))
    return np.float32(0.5) * x * (np.float32(1.0) + np.tanh(c * (x + np.float32(0.044715) * x**3)))


def rope(x: np.ndarray, pos: np.ndarray, base: float) -> np.ndarray:
    """Neox-style rotary embedding: halves (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin),
    angle pos * base^(-2i/head_dim). x: (n, heads, head_dim), pos: (n,)"""
    half = x.shape[-1] // 2
    inv = base ** (-np.arange(0, 2 * half, 2, dtype=np.float64) / (2 * half))  # (half,)
    ang = pos[:, None].astype(np.float64) * inv  # (n, half)
    cos = np.cos(ang).astype(np.float32)[:, None, :]
    sin = np.sin(ang).astype(np.float32)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _attention(w: Weights, layer: int, li: int, x: np.ndarray, start: int,
               cache: KVCache) -> np.ndarray:
    """One block's attention for positions start..start+n-1, reading and filling the cache.
    x: (n, d) normed input; returns (n, d)"""
    cfg, lw = w.cfg, w.layers[layer]
    n, hd = len(x), cfg.head_dim
    pos = np.arange(start, start + n)
    q = (x @ lw.attn_q.T).reshape(n, cfg.n_heads, hd)
    k = (x @ lw.attn_k.T).reshape(n, cfg.n_kv, hd)
    v = (x @ lw.attn_v.T).reshape(n, cfg.n_kv, hd)
    base = cfg.rope_base(layer)
    q = rope(rms_norm(q, lw.attn_q_norm, cfg.eps), pos, base)
    k = rope(rms_norm(k, lw.attn_k_norm, cfg.eps), pos, base)
    cache.put(li, start, k.reshape(n, -1), v.reshape(n, -1))
    end = start + n
    lo = max(0, start - cfg.window + 1) if not cfg.is_global(layer) else 0  # first key read
    K = cache.keys(li, end)[lo:].reshape(end - lo, cfg.n_kv, hd)
    Vv = cache.values(li, end)[lo:].reshape(end - lo, cfg.n_kv, hd)
    j = np.arange(lo, end)
    allowed = j[None, :] <= pos[:, None]  # (n, m) causal
    if not cfg.is_global(layer):
        allowed &= j[None, :] > pos[:, None] - cfg.window
    group = cfg.n_heads // cfg.n_kv
    qg = q.reshape(n, cfg.n_kv, group, hd).transpose(1, 2, 0, 3)  # (kv, g, n, hd)
    s = qg @ K.transpose(1, 2, 0)[:, None] * np.float32(cfg.scale)  # (kv, g, n, m)
    s = np.where(allowed, s, np.float32(-np.inf))
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    o = s @ Vv.transpose(1, 0, 2)[:, None]  # (kv, g, n, hd)
    o = o.transpose(2, 0, 1, 3).reshape(n, cfg.n_heads * hd)
    return o @ lw.attn_output.T


def _block(w: Weights, layer: int, li: int, h: np.ndarray, start: int,
           cache: KVCache) -> np.ndarray:
    cfg, lw = w.cfg, w.layers[layer]
    a = _attention(w, layer, li, rms_norm(h, lw.attn_norm, cfg.eps), start, cache)
    h = h + rms_norm(a, lw.post_attention_norm, cfg.eps)
    x = rms_norm(h, lw.ffn_norm, cfg.eps)
    f = (gelu_tanh(x @ lw.ffn_gate.T) * (x @ lw.ffn_up.T)) @ lw.ffn_down.T
    return h + rms_norm(f, lw.post_ffw_norm, cfg.eps)


def hidden(w: Weights, tokens: Sequence[int], cache: KVCache) -> np.ndarray:
    """Run tokens (the positions cache.n ..) through the cache's layers; the cache grows by
    len(tokens). Returns the final-normed hidden states, (n, d) f32."""
    ids = np.asarray(tokens, dtype=np.int64)
    start, n = cache.n, len(ids)
    cache.reserve(start + n)
    h = w.embed[ids] * np.float32(np.sqrt(w.cfg.d))  # (n, d)
    for li, layer in enumerate(cache.layers):
        h = _block(w, layer, li, h, start, cache)
    cache.n = start + n
    return rms_norm(h, w.output_norm, w.cfg.eps)


def forward(w: Weights, tokens: Sequence[int], cache: KVCache, *,
            rows: Sequence[int] | None = None, head: np.ndarray | None = None) -> np.ndarray:
    """Logits at the given rows of this block (indices into tokens; default the last),
    from the head (default the tied embedding, (V, d); a trimmed draft head passes its own
    rows). Returns (len(rows), V_head) f32."""
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        h = hidden(w, tokens, cache)
        at = [len(tokens) - 1] if rows is None else list(rows)
        return h[at] @ (w.embed if head is None else head).T
