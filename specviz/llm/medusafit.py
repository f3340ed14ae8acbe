"""Fitting Medusa heads to the target's own text, in NumPy: the loss, its gradient, Adam.

Head k (Cai et al. 2024, Medusa-1): u = SiLU(h W1_k) + h, z = u E^T, p_k = softmax(z), with
h the target's last hidden state at position t (after the final norm, (d,)), W1_k (d, d) the
head's own and E (N, d) the target's tied output rows the heads read (a trimmed head: FR-Spec,
Zhao et al. 2025). The label is the token the target wrote at t + k + 1. Cross-entropy over
the N rows (labels off them are left out), its gradient by hand:
  dz = softmax(z) - onehot(y);  du = dz E;  da = du * SiLU'(a), a = h W1_k;  dW1_k = h^T da
SiLU'(a) = s (1 + a (1 - s)), s = sigmoid(a). Adam (Kingma & Ba 2015) with bias correction.
W1_k starts at 0: the head starts as the target's own, one token ahead. llm.medusa runs
the heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def sigmoid(a: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * a))  # no overflow for large |a|


def residual(h: np.ndarray, W1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """u = SiLU(h W1) + h and a = h W1. h: (B, d), W1: (d, d) -> (B, d) each."""
    a = h @ W1
    return a * sigmoid(a) + h, a


def ce_grad(h: np.ndarray, y: np.ndarray, W1: np.ndarray,
            E: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of labels y (B,) (row indices into E) and its gradient in W1."""
    u, a = residual(h, W1)
    z = u @ E.T  # (B, N)
    z -= z.max(axis=1, keepdims=True)
    ez = np.exp(z)
    s = ez.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(s[:, 0]) - z[np.arange(len(y)), y]))
    dz = ez / s
    dz[np.arange(len(y)), y] -= 1.0
    dz /= len(y)
    du = dz @ E  # (B, d)
    sg = sigmoid(a)
    da = du * sg * (1.0 + a * (1.0 - sg))
    return loss, h.T @ da


@dataclass
class Adam:
    """Adam over one array: step(g) moves the parameter x against g."""

    x: np.ndarray
    lr: float
    m: np.ndarray = field(init=False)
    v: np.ndarray = field(init=False)
    t: int = 0

    def __post_init__(self) -> None:
        self.m, self.v = np.zeros_like(self.x), np.zeros_like(self.x)

    def step(self, g: np.ndarray) -> None:
        b1, b2 = BETAS
        self.t += 1
        self.m = b1 * self.m + (1 - b1) * g
        self.v = b2 * self.v + (1 - b2) * g * g
        mh = self.m / (1 - b1 ** self.t)
        vh = self.v / (1 - b2 ** self.t)
        self.x -= self.lr * mh / (np.sqrt(vh) + ADAM_EPS)


def top1(h: np.ndarray, W1: np.ndarray, E: np.ndarray, *, chunk: int = 2048) -> np.ndarray:
    """The head's argmax row for each h (B, d) -> (B,) row indices into E."""
    out = np.empty(len(h), dtype=np.int64)
    for a in range(0, len(h), chunk):
        u, _ = residual(h[a: a + chunk], W1)
        out[a: a + chunk] = np.argmax(u @ E.T, axis=1)
    return out


def cluster_interval(hits: np.ndarray, groups: np.ndarray, *, n_boot: int = 2000,
                     seed: int = 0) -> tuple[float, float, float]:
    """Top-1 rate of hits (bool, positions) with a 95% bootstrap interval that resamples
    whole sequences (groups: each position's sequence), since positions of one text are
    not independent. -> (rate, low, high)"""
    ids, g = np.unique(groups, return_inverse=True)
    n_hit = np.bincount(g, weights=hits.astype(float), minlength=len(ids))
    n_all = np.bincount(g, minlength=len(ids)).astype(float)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(ids), size=(n_boot, len(ids)))
    rates = n_hit[pick].sum(axis=1) / np.maximum(1.0, n_all[pick].sum(axis=1))
    lo, hi = np.quantile(rates, [0.025, 0.975])
    return float(n_hit.sum() / max(1.0, n_all.sum())), float(lo), float(hi)
