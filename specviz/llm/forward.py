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
the same code, with its own cache. Every product with a weight matrix goes through
blas.rows_by (one stacked product over the matrix's tiles: the layout this machine's BLAS
runs fast; q, k, v and gate, up as one product each, rows_by_each), under blas_limit's thread cap;
the head split over blas.PASS_THREADS threads, and the layers' products too where tune_split
(run once at load) found that faster on this machine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .blas import BLAS_THREADS, Tiled, blas_limit, choose_split, rows_by, rows_by_each
from .gemma import Weights

__all__ = ["BLAS_THREADS", "KVCache", "forward", "hidden", "largest_layer_product",
           "layer_products", "rms_norm", "tune_split"]

GROW = 256  # cache capacity grows by this many positions at a time


class KVCache:
    """Keys and values of the positions seen so far, per layer run; truncate() rolls back.
    Keys are held transposed, (kv heads, head_dim, positions) a layer, so that the scores
    q K^T, like the values' product, are row-major products (blas: the direct kernel)."""

    def __init__(self, w: Weights, layers: Sequence[int]) -> None:
        cfg = w.cfg
        self.layers = tuple(int(i) for i in layers)
        self.n = 0  # positions held
        self._k = np.zeros((len(self.layers), cfg.n_kv, cfg.head_dim, 0), np.float32)
        self._v = np.zeros((len(self.layers), 0, cfg.n_kv, cfg.head_dim), np.float32)

    @property
    def nbytes(self) -> int:
        return int(self._k.nbytes + self._v.nbytes)

    def reserve(self, n: int) -> None:
        cap = self._v.shape[1]
        if n > cap:
            new = max(n, cap + GROW)
            k = np.zeros(self._k.shape[:3] + (new,), np.float32)  # (L, kv, hd, cap)
            v = np.zeros((len(self.layers), new, *self._v.shape[2:]), np.float32)  # L cap kv hd
            k[..., : self.n] = self._k[..., : self.n]
            v[:, : self.n] = self._v[:, : self.n]
            self._k, self._v = k, v

    def truncate(self, n: int) -> None:
        """Forget every position from n on (rejected drafts)."""
        self.n = min(self.n, max(0, int(n)))

    def keys(self, li: int, lo: int, end: int) -> np.ndarray:  # (kv, hd, end - lo)
        return self._k[li, :, :, lo:end]

    def values(self, li: int, lo: int, end: int) -> np.ndarray:  # (kv, end - lo, hd)
        return self._v[li, lo:end].transpose(1, 0, 2)

    def move(self, src: Sequence[int], to: int) -> None:
        """Copy the positions src, in order, to to, to + 1, ... in every layer (a tree's
        kept path moved down after its base)."""
        idx = np.asarray(src, dtype=np.int64)
        k, v = self._k[..., idx], self._v[:, idx]  # copies: (L, kv, hd, n), (L, n, kv, hd)
        self._k[..., to: to + len(idx)] = k
        self._v[:, to: to + len(idx)] = v

    def put(self, li: int, start: int, k: np.ndarray, v: np.ndarray) -> None:
        """k, v: (n, kv, hd) at positions start..start+n-1."""
        self._k[li, :, :, start: start + len(k)] = k.transpose(1, 2, 0)
        self._v[li, start: start + len(v)] = v


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    ms = np.add.reduce(np.square(x), axis=-1, keepdims=True) / x.shape[-1]  # np.mean's sum
    return x / np.sqrt(ms + np.float32(eps)) * w


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    c = np.float32(np.sqrt(2.0 / np.pi))
    cube = x * x * x  # not x**3: NumPy's float32 power by 3 is ~200x slower
    return np.float32(0.5) * x * (np.float32(1.0) + np.tanh(c * (x + np.float32(0.044715) * cube)))


Rotation = tuple[np.ndarray, np.ndarray]  # (cos, sin), each (n, 1, head_dim / 2) f32


def rotation(pos: np.ndarray, base: float, head_dim: int) -> Rotation:
    """cos and sin of the angles pos * base^(-2i/head_dim), i < head_dim / 2. pos: (n,)"""
    half = head_dim // 2
    inv = base ** (-np.arange(0, 2 * half, 2, dtype=np.float64) / (2 * half))  # (half,)
    ang = pos[:, None].astype(np.float64) * inv  # (n, half)
    return np.cos(ang).astype(np.float32)[:, None, :], np.sin(ang).astype(np.float32)[:, None, :]


def rope(x: np.ndarray, pos: np.ndarray, base: float, rot: Rotation | None = None) -> np.ndarray:
    """Neox-style rotary embedding: halves (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin),
    angle pos * base^(-2i/head_dim) (rot: those cos and sin, made once per pass).
    x: (n, heads, head_dim), pos: (n,)"""
    half = x.shape[-1] // 2
    cos, sin = rotation(pos, base, x.shape[-1]) if rot is None else rot
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _attention(w: Weights, layer: int, li: int, x: np.ndarray, start: int,
               cache: KVCache, rot: Rotation | None, pos: np.ndarray | None = None,
               mask: np.ndarray | None = None) -> np.ndarray:
    """One block's attention for cache slots start..start+n-1, reading and filling the cache.
    x: (n, d) normed input; pos: (n,) their RoPE positions (default the slots); mask:
    (n, start + n) bool, the slots each may read (default causal); returns (n, d)"""
    cfg, lw = w.cfg, w.layers[layer]
    n, hd = len(x), cfg.head_dim
    pos = np.arange(start, start + n) if pos is None else pos
    q, k, v = rows_by_each(x, (lw.attn_q, lw.attn_k, lw.attn_v))
    q, k, v = q.reshape(n, cfg.n_heads, hd), k.reshape(n, cfg.n_kv, hd), v.reshape(n, cfg.n_kv, hd)
    base = cfg.rope_base(layer)
    q = rope(rms_norm(q, lw.attn_q_norm, cfg.eps), pos, base, rot)
    k = rope(rms_norm(k, lw.attn_k_norm, cfg.eps), pos, base, rot)
    cache.put(li, start, k, v)
    end = start + n
    lo = max(0, int(pos.min()) - cfg.window + 1) if not cfg.is_global(layer) else 0  # 1st key
    kv, g = cfg.n_kv, cfg.n_heads // cfg.n_kv
    qg = q.reshape(n, kv, g, hd).transpose(1, 0, 2, 3).reshape(kv, n * g, hd)  # rows (i, head)
    s = qg @ cache.keys(li, lo, end) * np.float32(cfg.scale)  # (kv, n g, m): one product a kv
    if n > 1 or mask is not None:  # one position alone reads every key from lo
        j = np.arange(lo, end)
        allowed = j[None, :] <= pos[:, None] if mask is None else mask[:, lo:end]  # (n, m)
        if not cfg.is_global(layer):
            allowed = allowed & (j[None, :] > pos[:, None] - cfg.window)
        s = np.where(np.repeat(allowed, g, axis=0), s, np.float32(-np.inf))
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    o = s @ cache.values(li, lo, end)  # (kv, n g, hd)
    o = o.reshape(kv, n, g, hd).transpose(1, 0, 2, 3).reshape(n, cfg.n_heads * hd)
    return rows_by(o, lw.attn_output)


def _block(w: Weights, layer: int, li: int, h: np.ndarray, start: int,
           cache: KVCache, *, rot: Rotation | None = None, pos: np.ndarray | None = None,
           mask: np.ndarray | None = None) -> np.ndarray:
    """One block over positions start..start+len(h)-1 (rot: the pass's RoPE rotation at
    this layer's base, made here when None; pos, mask: as _attention). h: (n, d)"""
    cfg, lw = w.cfg, w.layers[layer]
    a = _attention(w, layer, li, rms_norm(h, lw.attn_norm, cfg.eps), start, cache, rot,
                   pos, mask)
    h = h + rms_norm(a, lw.post_attention_norm, cfg.eps)
    gate, up = rows_by_each(rms_norm(h, lw.ffn_norm, cfg.eps), (lw.ffn_gate, lw.ffn_up))
    f = rows_by(gelu_tanh(gate) * up, lw.ffn_down)
    return h + rms_norm(f, lw.post_ffw_norm, cfg.eps)


def hidden(w: Weights, tokens: Sequence[int], cache: KVCache, *,
           positions: Sequence[int] | None = None,
           mask: np.ndarray | None = None) -> np.ndarray:
    """Run tokens (the cache slots cache.n ..) through the cache's layers; the cache grows by
    len(tokens). positions: their RoPE positions (default the slots); mask: (n, cache.n + n)
    bool, the slots each token reads (default causal): a token tree passes each node's
    depth and its ancestors (tree attention, SpecInfer). Returns the final-normed hidden
    states, (n, d) f32."""
    ids = np.asarray(tokens, dtype=np.int64)
    start, n = cache.n, len(ids)
    cache.reserve(start + n)
    h = w.embed.rows(ids) * np.float32(np.sqrt(w.cfg.d))  # (n, d)
    pos = np.arange(start, start + n) if positions is None else np.asarray(positions)
    rots = {b: rotation(pos, b, w.cfg.head_dim)
            for b in {w.cfg.rope_base(layer) for layer in cache.layers}}
    for li, layer in enumerate(cache.layers):
        h = _block(w, layer, li, h, start, cache, rot=rots[w.cfg.rope_base(layer)],
                   pos=None if positions is None else pos, mask=mask)
    cache.n = start + n
    return rms_norm(h, w.output_norm, w.cfg.eps)


def tune_split(w: Weights) -> int:
    """Split the layers' products over the pass's threads only where that is faster on this
    machine: one row through every layer's products, as a pass multiplies them, timed split
    and whole (blas.choose_split; the head, larger than any of them, is split either way).
    Handing a range to the pool costs a thread's wake-up, 72 times a pass: 13-21 us on one
    host here, 55-150 us on another (a virtual machine's), where the layers ran whole in
    36-44 ms a decode step against 49-56 split. Returns blas.split_from."""
    cfg = w.cfg
    x = {n: np.ones((1, n), np.float32) for n in (cfg.d, cfg.n_heads * cfg.head_dim, cfg.ffn)}
    groups = layer_products(w)

    def run() -> None:
        for g in groups:
            rows_by_each(x[g[0].shape[1]], g)

    with blas_limit():
        return choose_split(run, above=largest_layer_product(w))


def layer_products(w: Weights) -> list[tuple[Tiled, ...]]:
    """The layers' products as a pass multiplies them: q, k, v as one; the output; gate,
    up as one; down (each a tuple for rows_by_each), layer by layer."""
    return [g for lw in w.layers for g in ((lw.attn_q, lw.attn_k, lw.attn_v),
                                           (lw.attn_output,), (lw.ffn_gate, lw.ffn_up),
                                           (lw.ffn_down,))]


def largest_layer_product(w: Weights) -> int:
    """Bytes of the largest of layer_products(w): split_from above it leaves them whole."""
    return max(sum(m.nbytes for m in g) for g in layer_products(w))


def forward(w: Weights, tokens: Sequence[int], cache: KVCache, *,
            rows: Sequence[int] | None = None, head: Tiled | None = None,
            positions: Sequence[int] | None = None,
            mask: np.ndarray | None = None, with_hidden: bool = False):
    """Logits at the given rows of this block (indices into tokens; default the last),
    from the head (default the tied embedding, (V, d); a trimmed draft head passes its own
    rows); positions, mask: as hidden. Returns (len(rows), V_head) f32; with_hidden: and
    the final-normed hidden states at those rows, (len(rows), d) (what Medusa heads read)."""
    with blas_limit():
        h = hidden(w, tokens, cache, positions=positions, mask=mask)
        at = [len(tokens) - 1] if rows is None else list(rows)
        z = rows_by(h[at], w.embed if head is None else head)
        return (z, h[at]) if with_hidden else z
