"""Block verification (Sun et al. 2024, "Block verification accelerates speculative
decoding", arXiv 2403.10444): the drafted block x_1..x_k is verified jointly.

Forward weights along the block, with p_i, q_i the rows at prefix x_1..x_i:
  w_0 = 1,  w_i = min(1, w_(i-1) p_(i-1)(x_i) / q_(i-1)(x_i))
  S_i = sum_x max(0, w_i p_i(x) - q_i(x))        (the mass left to correct with at i)
  h_i = S_i / (S_i + 1 - w_i) for i < k (0 when both vanish),  h_k = w_k
Backward coins: tau = the largest i in k..1 with eta_i < h_i (tau = 0 if none). Keep
x_1..x_tau, then one token: from p_k if tau = k, else from norm(max(0, w_tau p_tau - q_tau)).

Why it is exact: by induction P(tau >= i | x_1..x_i) = w_i, so
  P(x_1..x_i kept, tau = i, y) = q(x_1..x_i) max(0, w_i p_i(y) - q_i(y))
and summing over how the block goes on gives the target's law. Token by token keeps
prod_i min(1, p/q) <= w_i, so block verification never keeps fewer drafts in expectation.

The exact laws below walk the draft tree forward over states (last token, w_i) with
their draft mass; states with equal (start, last token, w) are merged. The number of
states grows with k (about 3x per level on the default pair), so the long-run law is
computed up to BLOCK_STATES_MAX states per level.
"""

from __future__ import annotations

import numpy as np

from .rule import RESIDUAL_EPS, ratio
from .sampling import draw_rows

BLOCK_STATES_MAX = 1_000_000  # merged (start, token, w) states per level of the exact walk
SLICE_CELLS = 1 << 20  # entries of one (decodes, V) slice in the vectorised round


# ------------------------------------------------------------------ one block, scalar
def correction_mass(w: float | np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """S = sum_x max(0, w p(x) - q(x)) over the last axis. w: scalar or (n,); p, q: (..., V)"""
    w = np.asarray(w, dtype=np.float64)[..., None] if np.ndim(w) else w
    return np.maximum(w * p - q, 0.0).sum(axis=-1)


def correction_row(w: float, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, w p - q)): the law of the token after a block kept up to here. (V,)

    Reached only with positive mass (h = 0 otherwise); p itself below RESIDUAL_EPS."""
    d = np.maximum(w * np.asarray(p, dtype=np.float64) - q, 0.0)  # (V,)
    s = d.sum()
    return np.array(p, dtype=np.float64) if s < RESIDUAL_EPS else d / s


def stop_chance(w: np.ndarray, S: np.ndarray) -> np.ndarray:
    """h = S / (S + (1 - w)), and 0 where S = 0 (nothing to correct with). Elementwise."""
    den = S + (1.0 - w)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(S > 0, S / np.where(den > 0, den, 1.0), 0.0)
    return np.minimum(h, 1.0)


def block_weights(p_rows, q_rows, drafts) -> tuple[np.ndarray, np.ndarray]:
    """(w, h) for a block: w_0..w_k and h_0..h_k (h_0 = 1: tau = 0 always remains).

    p_rows: k + 1 rows (V,) at prefixes 0..k; q_rows: k rows; drafts: k tokens."""
    k = len(drafts)
    w = np.ones(k + 1)
    for i, x in enumerate(drafts):
        w[i + 1] = min(1.0, w[i] * float(ratio(p_rows[i][x], q_rows[i][x])))
    S = np.array([float(correction_mass(w[i], p_rows[i], q_rows[i])) for i in range(k)])
    h = np.ones(k + 1)
    h[1:k] = stop_chance(w[1:k], S[1:k])
    h[k] = w[k] if k else 1.0
    return w, h  # (k+1,), (k+1,)


# ------------------------------------------------------------------ vectorised round
def block_round(P, Qs, draft, bonus, ctx: np.ndarray, k: int, rng: np.random.Generator):
    """One block-verified round per context in ctx (n,): the algorithm itself, vectorised.

    draft(c, u) and bonus(c, u) draw from Qs[c] and P[c]. Returns (X (k+1, n), L, J, next)."""
    n = len(ctx)
    U = rng.random((2 * k + 1, n))  # drafts, coins, the final draw
    X = np.empty((k + 1, n), dtype=np.int64)
    C = np.empty((k + 1, n), dtype=np.int64)  # C[i]: the newest token at prefix i
    C[0] = ctx
    for i in range(k):
        X[i] = draft(C[i], U[i])
        C[i + 1] = X[i]
    R = ratio(P, Qs)  # (V, V)
    W = np.ones((k + 1, n))
    for i in range(k):
        W[i + 1] = np.minimum(1.0, W[i] * R[C[i], X[i]])
    H = np.ones((k + 1, n))
    for i in range(1, k):
        H[i] = stop_chance(W[i], _mass(W[i], P, Qs, C[i]))
    H[k] = W[k]
    passed = np.vstack([np.ones((1, n), bool), U[k:2 * k] < H[1:]])  # (k+1, n)
    J = k - np.argmax(passed[::-1], axis=0)  # tau: the last i whose coin passed
    rows = np.arange(n)
    full = J == k
    X[k, full] = bonus(C[k, full], U[2 * k, full])
    part = np.flatnonzero(~full)
    X[J[part], part] = _draw_correction(W[J[part], part], P, Qs, C[J[part], part],
                                        U[2 * k, part])
    L = J + 1
    return X, L, J, X[J, rows]


def _slices(n: int, V: int):
    step = max(1, SLICE_CELLS // max(1, V))
    return (slice(a, min(n, a + step)) for a in range(0, n, step))


def _mass(w: np.ndarray, P, Qs, c: np.ndarray) -> np.ndarray:
    """S = sum_x max(0, w p(x|c) - q(x|c)) for each decode, in bounded slices. (n,)"""
    out = np.empty(len(c))
    for s in _slices(len(c), P.shape[1]):
        out[s] = correction_mass(w[s], P[c[s]], Qs[c[s]])
    return out


def _draw_correction(w, P, Qs, c, u) -> np.ndarray:
    """y ~ norm(max(0, w p(.|c) - q(.|c))) by inverse CDF, per decode. (n,)"""
    y = np.empty(len(c), dtype=np.int64)
    for s in _slices(len(c), P.shape[1]):
        y[s] = draw_rows(np.maximum(w[s, None] * P[c[s]] - Qs[c[s]], 0.0), u[s])  # (m, V)
    return y


# ------------------------------------------------------------------ exact laws
def _grow(P, Qs, R, c, w, mass):
    """Every state one draft deeper: x ~ Qs[c], w' = min(1, w p(x)/q(x)); dead ones dropped.

    Returns (parent, x, w', mass'), parent indexing the states given. (m,) each"""
    V = P.shape[0]
    parent = np.repeat(np.arange(len(c)), V)
    x = np.tile(np.arange(V), len(c))
    w2 = np.minimum(1.0, w[parent] * R[c[parent], x])
    m2 = mass[parent] * Qs[c[parent], x]
    live = (m2 > 0) & (w2 > 0)
    return parent[live], x[live], w2[live], m2[live]


def _merge(s, c, w, mass):
    """States with equal (start, token, w) as one, their masses added."""
    if len(c) > 3 * BLOCK_STATES_MAX:  # they would not merge under the cap: say so early
        raise ValueError(f"the exact block law needs over {BLOCK_STATES_MAX:,} states at "
                         f"one level, the cap (before merging: {len(c):,}); lower k or V")
    key = np.stack([s.astype(np.float64), c.astype(np.float64), w], axis=1)  # (m, 3)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    if len(uniq) > BLOCK_STATES_MAX:
        raise ValueError(f"the exact block law needs {len(uniq):,} states at one level; the "
                         f"cap is {BLOCK_STATES_MAX:,} (lower k or V)")
    m = np.bincount(inv.ravel(), weights=mass, minlength=len(uniq))
    return uniq[:, 0].astype(np.int64), uniq[:, 1].astype(np.int64), uniq[:, 2], m


def round_tables(P: np.ndarray, Qs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """D[c, j] = P(the round from c keeps j drafts), N[c, c'] = P(it ends on c').

    Over the states at depth j (start s, token c, weight w, draft mass m):
      D[s, j] += m S(w, c) for j < k,  D[s, k] += m w
      N[s]    += m max(0, w p(.|c) - q(.|c)) for j < k,  m w p(.|c) at depth k
    (V, k+1), (V, V)"""
    V = P.shape[0]
    R = ratio(P, Qs)
    D, N = np.zeros((V, k + 1)), np.zeros((V, V))
    s = c = np.arange(V)
    w, mass = np.ones(V), np.ones(V)
    for j in range(k):
        d = np.maximum(w[:, None] * P[c] - Qs[c], 0.0) * mass[:, None]  # (states, V)
        np.add.at(D[:, j], s, d.sum(axis=1))
        np.add.at(N, s, d)
        parent, c, w, mass = _grow(P, Qs, R, c, w, mass)
        s, c, w, mass = _merge(s[parent], c, w, mass)
    np.add.at(D[:, k], s, mass * w)
    np.add.at(N, s, (mass * w)[:, None] * P[c])
    return D, N


def round_pieces(P, Qs, ctx: int, k: int, n: int) -> tuple[list, list]:
    """The first round from ctx, up to n tokens: A[i] (V^i,) = P(x_1..x_i drafted, tau >= i)
    = q(x_1..x_i) w_i for i <= min(k, n), and E[L] (V^L,) = P(the round emits exactly these
    L tokens) for L <= min(k + 1, n): q(x_1..x_i) max(0, w_i p_i(y) - q_i(y)) with L = i + 1,
    and q(x_1..x_k) w_k p_k(y) for L = k + 1."""
    V = P.shape[0]
    R = ratio(P, Qs)
    c, code = np.array([ctx]), np.zeros(1, dtype=np.int64)
    w, mass = np.ones(1), np.ones(1)
    A, E = [np.ones(1)], [None]
    for i in range(min(k, n) + 1):
        if i:
            A.append(np.bincount(code, weights=mass * w, minlength=V**i))
        if i == n:
            break
        law = P[c] * w[:, None] if i == k else np.maximum(w[:, None] * P[c] - Qs[c], 0.0)
        E.append(np.bincount((code[:, None] * V + np.arange(V)).ravel(),
                             weights=(law * mass[:, None]).ravel(), minlength=V**(i + 1)))
        if i == k:
            break
        parent, c, w, mass = _grow(P, Qs, R, c, w, mass)
        code = code[parent] * V + c
    return A, E


def block_joint(P: np.ndarray, Qs: np.ndarray, ctx: int, k: int, n: int) -> np.ndarray:
    """Exact law of the first n emitted tokens under block verification. (V,)*n"""
    V = P.shape[0]
    return joint_from_rounds([round_pieces(P, Qs, c, k, n) for c in range(V)], ctx, n)


def joint_from_rounds(pieces, ctx: int, n: int) -> np.ndarray:
    """The first n tokens of a stream of rounds, from each start's round pieces (A, E):
    A[i] (V^i,) = P(the round keeps these i drafts first, and emits more), E[L] (V^L,) =
    P(the round emits exactly these L tokens); missing entries are zero. With G_m[c] the
    law of the next m tokens from a round start at c:
      G_m[c] = A_m + E_m + sum_(L < m) E_L[c] (x) G_(m-L)[last token of E_L]   (V,)*n"""
    V = len(pieces)

    def at(seq, i):
        return seq[i] if i < len(seq) and seq[i] is not None else 0.0

    G = [np.ones((V, 1))]  # G[0]: nothing left to emit
    for m in range(1, n + 1):
        rows = []
        for c in range(V):
            A, E = pieces[c]
            g = np.zeros(V**m) + at(A, m) + at(E, m)
            for L in range(1, min(m, len(E))):
                if E[L] is None:
                    continue
                head = E[L].reshape(V**(L - 1), V)  # (prefix, last token)
                g += (head[:, :, None] * G[m - L][None, :, :]).ravel()
            rows.append(g)
        G.append(np.stack(rows))
    return G[n][ctx].reshape((V,) * n)
