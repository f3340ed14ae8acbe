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

The exact laws. A round still going at depth j has a future that depends only on its last
token c and its weight w, with r = k - j levels to go; as a pair (law of the drafts kept
from here, law of the token the round ends on) it is
  F_0(c, w) = (w e_0, w p(.|c))
  F_r(c, w) = (S(w, c) e_0, max(0, w p(.|c) - q(.|c)))
              + sum_x q(x|c) shift F_(r-1)(x, min(1, w R(c, x))),   R = p/q
(shift: one more draft kept). Each F_r(c, .) is piecewise linear in w; its kinks lie among
those of F_(r-1)(x) and 1 (where min(1, w R) and max(0, w p(x) - q(x)) bend) divided by
R(c, x), so it is stored by its values there and read by linear interpolation, exactly.
The last levels of a round are solved this way (about half, as VALUE_CELLS_MAX allows);
the first ones by a forward walk over states (start, token, w) with their draft mass,
equal states merged, up to BLOCK_STATES_MAX per level, whose states at depth j then read
F_(k-j).
"""

from __future__ import annotations

import numpy as np

from .. import interrupt
from ..draws import Draws
from ..pair import ModelPair
from ..rule import ratio, residual
from ..ruledefs import Rule, RuleTables
from ..sampling import draw_rows
from ..trace import Position, RoundDigest, RoundTrace, frozen
from .base import Line, draft_chain, ending, joint_from_rounds, make_trace, slices

BLOCK_STATES_MAX = 1_000_000  # merged (start, token, w) states per level of the exact walk
VALUE_CELLS_MAX = 12_000_000  # kinks x (levels + V) of one level of the value functions
KINK_CANDIDATES_MAX = 8_000_000  # kinks gathered for one level before they are merged
PROBE_STATES = 20_000  # the walk is priced from its first levels, up to this many states


# ------------------------------------------------------------------ one block, scalar
def correction_mass(w: float | np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """S = sum_x max(0, w p(x) - q(x)) over the last axis. w: scalar or (n,); p, q: (..., V)"""
    w = np.asarray(w, dtype=np.float64)[..., None] if np.ndim(w) else w
    return np.maximum(w * p - q, 0.0).sum(axis=-1)


def stop_chance(w: np.ndarray, S: np.ndarray) -> np.ndarray:
    """h = S / (S + (1 - w)), and 0 where S = 0 (nothing to correct with). Elementwise."""
    den = S + (1.0 - w)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(S > 0, S / np.where(den > 0, den, 1.0), 0.0)
    return np.minimum(h, 1.0)


def weights(r: np.ndarray, mass) -> tuple[np.ndarray, np.ndarray]:
    """(w, h) along a block from its drafts' ratios r_i = p_(i-1)(x_i) / q_(i-1)(x_i):
    w_0 = 1, w_i = min(1, w_(i-1) r_i); h_0 = 1 (tau = 0 always remains), h_i =
    stop_chance(w_i, S_i) for 0 < i < k with S_i = mass(i, w_i), h_k = w_k.
    r: (k,) for one block or (k, n) for n -> (k+1,) or (k+1, n) each"""
    W = np.ones((len(r) + 1,) + np.shape(r)[1:])
    for i in range(len(r)):
        W[i + 1] = np.minimum(1.0, W[i] * r[i])
    H = np.ones_like(W)
    for i in range(1, len(r)):
        H[i] = stop_chance(W[i], mass(i, W[i]))
    H[-1] = W[-1]
    return W, H


# ------------------------------------------------------------------ the kind
class Block(Line):
    name = "block"

    def play(self, pair: ModelPair, prefix: list[int], k: int, rule: Rule, draws: Draws,
             light: bool = False, betas: bool = False) -> RoundTrace | RoundDigest:
        """Weights w_i forward, all k coins drawn, tau = the last i whose coin passes h_i;
        x_1..x_tau kept, then one token from norm(max(0, w_tau p - q)) or, with tau = k,
        the bonus from p."""
        proposed, drafts, _, qs_rows, _, stopped = draft_chain(pair, prefix, k, rule, draws)
        n = len(drafts)
        p_rows = [pair.p(prefix + drafts[:i]) for i in range(n + 1)]
        r = np.array([ratio(p_rows[i][x], qs_rows[i][x]) for i, x in enumerate(drafts)])
        w, h = weights(r, lambda i, w_i: correction_mass(w_i, p_rows[i], qs_rows[i]))
        coins = [draws.coin(i - 1) for i in range(n, 0, -1)][::-1]  # eta_1..eta_n, drawn k..1
        tau = max((i for i in range(1, n + 1) if coins[i - 1] < h[i]), default=0)
        # the correction norm(max(0, w_tau p - q)): h_tau = 0 where it has no mass
        rejection = None if tau == n else residual(w[tau] * p_rows[tau], qs_rows[tau])
        emitted, final_u, row = ending(pair, rule, prefix, drafts[:tau], draws, rejection)
        if light:
            return RoundDigest(prefix[-1], n, tuple(emitted), tau)
        last = [prefix[-1]] + drafts
        positions = tuple(Position(
            i=i + 1, context=last[i], token=x, p_row=frozen(p_rows[i]),
            q_row=frozen(qs_rows[i]), p=float(p_rows[i][x]), q=float(qs_rows[i][x]),
            threshold=float(h[i + 1]), u=coins[i], accepted=i < tau) for i, x in enumerate(drafts))
        return make_trace(pair, rule, prefix, n, positions, emitted, final_u,
                          None if tau == n else tau + 1, row, last[tau],
                          range(tau + 2, n + 1), proposed=proposed, weights=w,
                          stopped=stopped)

    def round(self, eng, ctx: np.ndarray, k: int, rng: np.random.Generator):
        return block_round(eng.rt.P, eng.rt.Qs, eng.draft, eng.bonus, ctx, k, rng)

    def joint(self, rt: RuleTables, ctx: int, k: int, n: int) -> np.ndarray:
        """Exact law of the first n emitted tokens under block verification. (V,)*n"""
        return joint_from_rounds([round_pieces(rt.P, rt.Qs, c, k, n) for c in range(rt.V)],
                                 ctx, n)

    def tables(self, rt: RuleTables, k: int, long_run: bool) -> tuple[np.ndarray, ...]:
        return round_tables(rt.P, rt.Qs, k)  # (V, k+1), (V, V)

    def columns(self, rule: Rule, k: int) -> int:
        raise ValueError("block verification reads the coins of drafts it then throws away; "
                         "common random numbers by output position would reuse them")


BLOCK = Block()


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
    W, H = weights(ratio(P, Qs)[C[:k], X[:k]], lambda i, w: _mass(w, P, Qs, C[i]))  # (k+1, n)
    passed = np.vstack([np.ones((1, n), bool), U[k:2 * k] < H[1:]])  # (k+1, n)
    J = k - np.argmax(passed[::-1], axis=0)  # tau: the last i whose coin passed
    full = J == k
    X[k, full] = bonus(C[k, full], U[2 * k, full])
    part = np.flatnonzero(~full)
    X[J[part], part] = _draw_correction(W[J[part], part], P, Qs, C[J[part], part],
                                        U[2 * k, part])
    return X, J + 1, J, X[J, np.arange(n)]


def _mass(w: np.ndarray, P, Qs, c: np.ndarray) -> np.ndarray:
    """S = sum_x max(0, w p(x|c) - q(x|c)) for each decode, in bounded slices. (n,)"""
    out = np.empty(len(c))
    for s in slices(len(c), P.shape[1]):
        out[s] = correction_mass(w[s], P[c[s]], Qs[c[s]])
    return out


def _draw_correction(w, P, Qs, c, u) -> np.ndarray:
    """y ~ norm(max(0, w p(.|c) - q(.|c))) by inverse CDF, per decode. (n,)"""
    y = np.empty(len(c), dtype=np.int64)
    for s in slices(len(c), P.shape[1]):
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
    order = np.lexsort((w, c, s))
    s, c, w, mass = s[order], c[order], w[order], mass[order]
    new = np.ones(len(c), dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (c[1:] != c[:-1]) | (w[1:] != w[:-1])
    first = np.flatnonzero(new)
    if len(first) > BLOCK_STATES_MAX:
        raise ValueError(f"the exact block law needs {len(first):,} states at one level; the "
                         f"cap is {BLOCK_STATES_MAX:,} (lower k or V)")
    return s[first], c[first], w[first], np.add.reduceat(mass, first)


def _walk(P, Qs, R):
    """The forward walk's merged states (start s, token c, weight w, draft mass), depth 0,
    1, 2, ... (an endless generator; the caller stops it)."""
    V = P.shape[0]
    s = c = np.arange(V)
    w, mass = np.ones(V), np.ones(V)
    while True:
        yield s, c, w, mass
        interrupt.check()
        parent, c, w, mass = _grow(P, Qs, R, c, w, mass)
        s, c, w, mass = _merge(s[parent], c, w, mass)


def check_walk(P, Qs, R, depth: int) -> None:
    """ValueError, before enumerating, when the walk to `depth` is priced over the cap: its
    states there are counted while they stay under PROBE_STATES, then extrapolated at the
    growth of the last level counted (merging slows the growth with depth, so this leans
    high)."""
    before = None
    for j, (s, *_) in enumerate(_walk(P, Qs, R)):
        if j >= depth or not len(s):
            est = float(len(s))
            break
        if len(s) > PROBE_STATES and before:
            est = len(s) * max(1.0, len(s) / before) ** (depth - j)
            break
        before = len(s)
    if est > BLOCK_STATES_MAX:
        raise ValueError(f"the exact block law would walk about {est:,.3g} states at depth "
                         f"{depth} (priced from its first levels); the cap is "
                         f"{BLOCK_STATES_MAX:,} (lower k or V)")


def round_tables(P: np.ndarray, Qs: np.ndarray, k: int, *,
                 backward: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """D[c, j] = P(the round from c keeps j drafts), N[c, c'] = P(it ends on c').

    The first j0 = k - r0 levels by the forward walk, over its states at depth j (start s,
    token c, weight w, draft mass m):
      D[s, j] += m S(w, c),  N[s] += m max(0, w p(.|c) - q(.|c))
    and the rest from the value functions: D[s, j0:] += m F_r0(c, w) and N[s] likewise.
    backward = r0 (at most k; 0 is the forward walk alone); None: about half the levels,
    fewer if the value functions would not fit. (V, k+1), (V, V)"""
    V = P.shape[0]
    R = ratio(P, Qs)
    levels = min(k, (k + 3) // 2 if backward is None else backward)  # about half each way
    check_walk(P, Qs, R, k - levels)  # priced before anything is enumerated
    knots, vals = value_functions(P, Qs, R, levels, fit=backward is None)
    j0 = k - (vals[0].shape[1] - V - 1)  # levels left to the forward walk
    if j0 > k - levels:  # the value functions fitted fewer levels: the walk goes deeper
        check_walk(P, Qs, R, j0)
    D, N = np.zeros((V, k + 1)), np.zeros((V, V))
    for j, (s, c, w, mass) in enumerate(_walk(P, Qs, R)):
        if j == j0:
            break
        d = np.maximum(w[:, None] * P[c] - Qs[c], 0.0) * mass[:, None]  # (states, V)
        np.add.at(D[:, j], s, d.sum(axis=1))
        np.add.at(N, s, d)
    F = mass[:, None] * _evaluate(knots, vals, c, w)  # (states, k - j0 + 1 + V)
    np.add.at(D[:, j0:], s, F[:, :k - j0 + 1])
    np.add.at(N, s, F[:, k - j0 + 1:])
    return D, N


def value_functions(P, Qs, R, levels: int, *, fit: bool = False):
    """F_r(c, .) at its kinks for r = levels (or, with fit, the deepest level up to it that
    fits the caps): (knots, values), knots[c] (n_c,) from 0 to 1, values[c] (n_c, r + 1 + V)."""
    V = P.shape[0]
    edge = np.array([0.0, 1.0])
    knots = [edge] * V
    vals = [np.concatenate([edge[:, None], edge[:, None] * P[c]], axis=1) for c in range(V)]
    live = (Qs > 0) & (R > 0)  # drafted with a weight that stays positive
    for r in range(1, levels + 1):
        interrupt.check()
        want = sum(len(knots[x]) for c in range(V) for x in np.flatnonzero(live[c]))
        if fit and want > KINK_CANDIDATES_MAX:
            break
        new_knots = []
        for c in range(V):
            kinks = np.concatenate([edge] + [knots[x] / R[c, x]
                                             for x in np.flatnonzero(live[c])])
            new_knots.append(np.unique(kinks[(kinks >= 0) & (kinks <= 1)]))
        if fit and sum(map(len, new_knots)) * (r + 1 + V) > VALUE_CELLS_MAX:
            break
        vals = [_level(P, Qs, R, c, new_knots[c], knots, vals, r) for c in range(V)]
        knots = new_knots
    return knots, vals


def _level(P, Qs, R, c: int, b: np.ndarray, knots, vals, r: int) -> np.ndarray:
    """F_r(c, b) from F_(r-1): the correction at depth 0, every kept draft's future shifted
    one level. b: (n,) -> (n, r + 1 + V)"""
    V = P.shape[0]
    d = np.maximum(b[:, None] * P[c] - Qs[c], 0.0)  # (n, V)
    out = np.zeros((len(b), r + 1 + V))
    out[:, 0], out[:, r + 1:] = d.sum(axis=1), d
    for x in np.flatnonzero((Qs[c] > 0) & (R[c] > 0)):
        f = Qs[c, x] * _interp(knots[x], vals[x], np.minimum(1.0, b * R[c, x]))  # (n, r + V)
        out[:, 1:r + 1] += f[:, :r]
        out[:, r + 1:] += f[:, r:]
    return out


def _interp(knots: np.ndarray, vals: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The piecewise linear function with these values at these knots, at w. (n, d)"""
    i = np.clip(np.searchsorted(knots, w, side="right") - 1, 0, len(knots) - 2)
    t = (w - knots[i]) / (knots[i + 1] - knots[i])  # (n,) in [0, 1]
    return vals[i] + t[:, None] * (vals[i + 1] - vals[i])


def _evaluate(knots, vals, c: np.ndarray, w: np.ndarray) -> np.ndarray:
    """F_r(c, w) for each state (c, w). (states, r + 1 + V)"""
    out = np.empty((len(c), vals[0].shape[1]))
    for t in np.unique(c):
        at = np.flatnonzero(c == t)
        out[at] = _interp(knots[t], vals[t], w[at])
    return out


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
