"""Exact laws by dynamic programming over the round's structure: no sampling anywhere.

The stream of emitted tokens is built from rounds; each kind (specviz.core.kinds) gives
the law of its round: the first tokens emitted (kind.joint) and, per start context, the
drafts kept and the token the round ends on (kind.tables). Here the rounds are chained.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kinds import kind_of
from .roundstats import RoundStats
from .rule import overlap
from .rules import apply_rule
from .scenario import Scenario
from .tables import check_ctx, check_n, validate_table

N_TOKENS_MAX = 6
EXACT_MAX_CELLS = 20_000_000  # (2k + 1) V^n_tokens: the DP's working set in float64 entries


def target_joint(P: np.ndarray, ctx: int, *, n_tokens: int = 2) -> np.ndarray:
    """Law of the target's own next n_tokens from ctx: P[ctx, x1] P[x1, x2] ... (V,)*n"""
    P = validate_table(P, "P (target)")
    ctx = check_ctx(ctx, P.shape[0])
    n = check_n(n_tokens, N_TOKENS_MAX, "n_tokens")
    law = P[ctx]  # (V,)
    for _ in range(n - 1):
        law = law[..., None] * P  # (..., V) x (V, V) -> (..., V, V): row index = last token
    return law


def exact_joint(sc: Scenario, *, n_tokens: int = 2) -> np.ndarray:
    """Exact law of the first n_tokens emitted by speculative decoding from sc.ctx. (V,)*n"""
    pair, k, n = sc.tables, sc.k, check_n(n_tokens, N_TOKENS_MAX, "n_tokens")
    V = pair.V
    if (2 * k + 1) * V**n > EXACT_MAX_CELLS:
        raise ValueError(
            f"exact enumeration at V = {V}, n_tokens = {n}, k = {k} needs "
            f"{(2 * k + 1) * V**n:,} cells; the cap is {EXACT_MAX_CELLS:,} (lower V, n_tokens or k)"
        )
    rt = apply_rule(sc.rule, pair.P, pair.Q)
    return kind_of(rt.rule).joint(rt, sc.ctx, k, n)


@dataclass(frozen=True, kw_only=True, eq=False)
class RoundLaw(RoundStats):
    """The exact law of one round (histogram P(accepted drafts = j), tokens E[tokens]), for
    one start context or averaged over the long run."""

    alpha: float  # E[beta]: the mean of sum_x min(p, q) over the contexts the target visits


def cesaro_stationary(N: np.ndarray, start: np.ndarray) -> np.ndarray:
    """lim_T (1/T) sum_{t<T} start N^t, by doubling (2^50 steps); exact for periodic chains too.

    S_{2T} = S_T + S_T N^T and N^{2T} = N^T N^T, with S_1 = start.
    """
    S, M = start.astype(np.float64), N.astype(np.float64)
    for _ in range(50):
        S = 0.5 * (S + S @ M)  # running average over 2T steps
        M = M @ M
        M /= M.sum(axis=1, keepdims=True)  # keep rows stochastic against rounding
    return S / S.sum()


def round_law(sc: Scenario, *, long_run: bool = False) -> RoundLaw:
    """Exact acceptance metrics of the first round from sc.ctx, or (long_run) of a long
    decode.

    The long run weights each start context by how often rounds start there, the
    time-average of the chain of round-start contexts begun at ctx.
    """
    pair, k, V = sc.tables, sc.k, sc.tables.V
    if long_run and V > 512:
        raise ValueError(f"the exact long run is computed for V <= 512; got V = {V}")
    rt = apply_rule(sc.rule, pair.P, pair.Q)
    D, N = kind_of(rt.rule).tables(rt, k, long_run)  # (V, k+1), (V, V) or None
    j = np.arange(k + 1)  # a round keeping j drafts emits j + 1, or k under 'continue' if j < k
    L = D @ (np.where(j < k, k, k + 1) if rt.rule.keep_unverified else j + 1)  # (V,) E[tokens]
    e = np.zeros(V)
    e[sc.ctx] = 1.0
    w = cesaro_stationary(N, e) if long_run else e  # (V,) weights
    pi_target = cesaro_stationary(rt.P, e)  # where the target's own text spends its time
    return RoundLaw(
        histogram=w @ D, tokens=float(w @ L), drafted=k,  # (k+1,) P(J = j); E[tokens]
        alpha=min(1.0, float(pi_target @ overlap(rt.P, rt.Qs))),  # rounding can pass 1
    )
