"""The baseline for bench_engine.py: speculative decoding one round at a time in plain Python.

Written in the from-scratch style of a tutorial: scalar uniforms from rng.random(),
rng.choice(V, p=row) for every draft, residual and bonus draw, the correct rule
(Leviathan et al. 2022, Algorithm 1). It returns the same counts as specviz.simulate
(the joint of the first n_tokens emitted), so the two can be timed and compared.
Not used by the library.
"""

from __future__ import annotations

import numpy as np


def residual_row(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p - q)); p itself when that mass is empty (a rejection then never happens)."""
    d = np.maximum(p - q, 0.0)
    s = d.sum()
    return d / s if s > 1e-12 else p


def decode(P: np.ndarray, Q: np.ndarray, ctx: int, k: int, n_tokens: int,
           rng: np.random.Generator) -> list[int]:
    """One decode from ctx: rounds until n_tokens are emitted; returns the first n_tokens."""
    V = P.shape[0]
    out: list[int] = []
    c = ctx
    while len(out) < n_tokens:
        drafts = []  # 1. k serial draft calls
        x = c
        for _ in range(k):
            x = int(rng.choice(V, p=Q[x]))
            drafts.append(x)
        prev = c  # 2./3. the target scores every prefix; verify left to right
        for x in drafts:
            p, q = P[prev], Q[prev]
            if rng.random() < p[x] / q[x]:  # accept with probability min(1, p/q)
                out.append(x)
                prev = x
            else:  # first rejection: one token from the residual, then stop
                prev = int(rng.choice(V, p=residual_row(p, q)))
                out.append(prev)
                break
        else:  # 4. all k kept: a bonus token from p at the last prefix
            prev = int(rng.choice(V, p=P[prev]))
            out.append(prev)
        c = prev
    return out[:n_tokens]


def loop_simulate(P: np.ndarray, Q: np.ndarray, ctx: int, k: int, n: int, n_tokens: int = 2,
                  seed: int = 0) -> np.ndarray:
    """n decodes, one at a time: counts of the first n_tokens emitted. (V,)*n_tokens"""
    V = P.shape[0]
    rng = np.random.default_rng(seed)
    joint = np.zeros((V,) * n_tokens, dtype=np.int64)
    for _ in range(n):
        joint[tuple(decode(P, Q, ctx, k, n_tokens, rng))] += 1
    return joint
