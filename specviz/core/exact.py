"""Exact laws by dynamic programming over the round's structure: no sampling anywhere.

The stream of emitted tokens is built from rounds. Write F[r][m][c] for the law of the
next m emitted tokens when the round stands at context c with r drafts still to verify.
With ACC[c, x] = Qs[c, x] min(1, A[c, x]) (x drafted and kept) and
REJ[c, y] = (1 - sum_x ACC[c, x]) R[c, y] (rejected, y emitted instead):
  F[0][m][c, y, ...] = P[c, y] F[k][m-1][y, ...]                 (bonus, new round at y)
  F[r][m][c, x, ...] = ACC[c, x] F[r-1][m-1][x, ...] + REJ[c, x] F[k][m-1][x, ...]
For the 'continue' rule a rejection with r > 1 also emits the r - 1 later drafts, a
q-chain from the rejected draft; K[s][m][z] carries that chain (K[0] = F[k]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import tree
from .block import block_joint, joint_from_rounds, round_tables
from .roundstats import RoundStats
from .rule import overlap
from .rules import RuleTables, apply_rule, get_rule
from .tables import check_ctx, check_k, check_n, validate_pair, validate_table

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


def exact_joint(
    P: np.ndarray, Q: np.ndarray, ctx: int, k: int, *, n_tokens: int = 2,
    rule: str = "correct",
) -> np.ndarray:
    """Exact law of the first n_tokens emitted by speculative decoding from ctx. (V,)*n"""
    P, Q = validate_pair(P, Q)
    V = P.shape[0]
    k, ctx, n = check_k(k), check_ctx(ctx, V), check_n(n_tokens, N_TOKENS_MAX, "n_tokens")
    if (2 * k + 1) * V**n > EXACT_MAX_CELLS:
        raise ValueError(
            f"exact enumeration at V = {V}, n_tokens = {n}, k = {k} needs "
            f"{(2 * k + 1) * V**n:,} cells; the cap is {EXACT_MAX_CELLS:,} (lower V, n_tokens or k)"
        )
    rt = apply_rule(get_rule(rule), P, Q)
    if rt.rule.kind == "block":
        return block_joint(rt.P, rt.Qs, ctx, k, n)
    if rt.rule.kind == "tree":
        shape, mode = tree.rule_shape(rt.rule, k), rt.rule.tree
        return joint_from_rounds([tree.round_pieces(rt.P, rt.Qs, shape, mode, c, n)
                                  for c in range(V)], ctx, n)
    F, K = _levels(rt, k, n - 1)
    top = _step(rt, k, F, K, k, np.array([ctx]))  # (1, V^n)
    return top.reshape((V,) * n)


def _levels(rt: RuleTables, k: int, m_max: int):
    """F[r] (r = 0..k) and K[s] (s = 0..k-1) at level m_max, each (V, V^m_max)."""
    V = rt.V
    every = np.arange(V)
    F = [np.ones((V, 1)) for _ in range(k + 1)]  # level m = 0: nothing left to emit
    K = [F[k]] * k
    for _ in range(m_max):
        F_new = [_step(rt, k, F, K, r, every) for r in range(k + 1)]
        K = [F_new[k]] + [_chain(rt.Qs, K[s - 1]) for s in range(1, k)]
        F = F_new
    return F, K


def _chain(W: np.ndarray, G: np.ndarray) -> np.ndarray:
    """H[c, (x, rest)] = W[c, x] G[x, rest]. W: (C, V), G: (V, T) -> (C, V*T)"""
    return (W[:, :, None] * G[None, :, :]).reshape(W.shape[0], -1)


def _step(rt: RuleTables, k: int, F, K, r: int, rows: np.ndarray) -> np.ndarray:
    """F[r] one level up, from the level below, for the contexts in rows. (C, V^m)"""
    if r == 0:  # all k kept: bonus from p, then a new round at the bonus token
        return _chain(rt.P[rows], F[k])
    kept = _chain(rt.acc[rows], F[r - 1])
    if rt.rule.keep_unverified and r > 1:
        # rejection under 'continue': y ~ R[c], then the r - 1 later drafts, a q-chain from
        # the rejected draft x; given x that chain does not depend on y.
        tail = rt.W[rows] @ K[r - 1]  # (C, T): W[c, x] = x drafted and rejected
        R = rt.R[rows]  # (C, V)
        return kept + (R[:, :, None] * tail[:, None, :]).reshape(len(rows), -1)
    REJ = rt.rej[rows]  # (C, V): rejected, y emitted
    return kept + _chain(REJ, F[k])


@dataclass(frozen=True, kw_only=True, eq=False)
class RoundLaw(RoundStats):
    """The exact law of one round (histogram P(accepted drafts = j), tokens E[tokens]), for
    one start context or averaged over the long run."""

    alpha: float  # E[beta]: the mean of sum_x min(p, q) over the contexts the target visits


def _accepted_law(rt: RuleTables, k: int) -> np.ndarray:
    """D[c, j] = P(the round from c keeps exactly j drafts). (V, k+1)

    D_0[c] = [1]; D_r[c] = [reject_mass(c), ACC[c] @ D_{r-1}] (kept at c, then r - 1 to go).
    """
    D = np.ones((rt.V, 1))
    for _ in range(k):
        D = np.concatenate([rt.reject_mass[:, None], rt.acc @ D], axis=1)
    return D


def _next_context_law(rt: RuleTables, k: int) -> np.ndarray:
    """N[c, c'] = P(the round from c ends on token c', where the next round starts). (V, V)"""
    N = rt.P  # r = 0: the bonus token
    chain = np.eye(rt.V)  # Qs^(r-1): the q-chain of the later drafts under 'continue'
    for r in range(1, k + 1):
        if rt.rule.keep_unverified and r > 1:
            rejected = rt.W @ chain  # ends on the last unverified draft
        else:
            rejected = rt.rej  # ends on the rejection token
        N = rt.acc @ N + rejected
        chain = chain @ rt.Qs
    return N


def _tokens_per_round(rt: RuleTables, k: int, D: np.ndarray) -> np.ndarray:
    """E[tokens emitted | start context]: j + 1, or k under 'continue' after a rejection. (V,)"""
    j = np.arange(k + 1)
    L = np.where(j < k, k, k + 1) if rt.rule.keep_unverified else j + 1  # (k+1,)
    return D @ L


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


def round_law(
    P: np.ndarray, Q: np.ndarray, ctx: int, k: int, *, rule: str = "correct",
    long_run: bool = False,
) -> RoundLaw:
    """Exact acceptance metrics of the first round from ctx, or (long_run) of a long decode.

    The long run weights each start context by how often rounds start there, the
    time-average of the chain of round-start contexts begun at ctx.
    """
    P, Q = validate_pair(P, Q)
    V = P.shape[0]
    k, ctx = check_k(k), check_ctx(ctx, V)
    if long_run and V > 512:
        raise ValueError(f"the exact long run is computed for V <= 512; got V = {V}")
    rt = apply_rule(get_rule(rule), P, Q)
    if rt.rule.kind == "block":
        D, N = round_tables(rt.P, rt.Qs, k)  # (V, k+1), (V, V)
    elif rt.rule.kind == "tree":
        shape = tree.rule_shape(rt.rule, k)
        D, N = tree.round_tables(rt.P, rt.Qs, shape, rt.rule.tree)
        D = np.pad(D, ((0, 0), (0, k - shape.depth)))  # a tree shallower than k
    else:
        D, N = _accepted_law(rt, k), None
    L = _tokens_per_round(rt, k, D)  # (V,)
    e = np.zeros(V)
    e[ctx] = 1.0
    if long_run:
        N = _next_context_law(rt, k) if N is None else N
    w = cesaro_stationary(N, e) if long_run else e  # (V,) weights
    pi_target = cesaro_stationary(rt.P, e)  # where the target's own text spends its time
    return RoundLaw(
        histogram=w @ D, tokens=float(w @ L), drafted=k,  # (k+1,) P(J = j); E[tokens]
        alpha=min(1.0, float(pi_target @ overlap(rt.P, rt.Qs))),  # rounding can pass 1
    )
