"""The chain: one draft per position, verified in order until the first rejection.

Leviathan et al. 2022, Algorithm 1; Chen et al. 2023, Algorithm 2: draft x_1..x_k
serially, each from q at its prefix (or take a deterministic proposal); one target call
gives p at all k + 1 prefixes; keep x_i while its coin passes, u_i < min(1, p/q) for the
standard rule; the first rejection emits one token from the rule's rejection law
(norm(max(0, p - q)) for the standard rule) and ends the round; if all are kept, a bonus
token comes from p at the last prefix. The rule is read from the registry, one position's
rows at a time (scalar) or as whole tables (vectorised, exact).

Exact laws by dynamic programming over the round's structure. Write F[r][m][c] for the
law of the next m emitted tokens when the round stands at context c with r drafts still
to verify. With ACC[c, x] = Qs[c, x] min(1, A[c, x]) (x drafted and kept) and
REJ[c, y] = (1 - sum_x ACC[c, x]) R[c, y] (rejected, y emitted instead):
  F[0][m][c, y, ...] = P[c, y] F[k][m-1][y, ...]                 (bonus, new round at y)
  F[r][m][c, x, ...] = ACC[c, x] F[r-1][m-1][x, ...] + REJ[c, x] F[k][m-1][x, ...]
For the 'continue' rule a rejection with r > 1 also emits the r - 1 later drafts, a
q-chain from the rejected draft; K[s][m][z] carries that chain (K[0] = F[k]).
"""

from __future__ import annotations

import numpy as np

from ..draws import Draws
from ..pair import ModelPair
from ..rule import overlap
from ..ruledefs import Rule, RuleTables, coin_passes, keep_prob
from ..trace import Emitted, Position, RoundDigest, RoundTrace, frozen
from ..verify import rejection_row, threshold
from .base import Line, draft_chain, ending, make_trace


class Chain(Line):
    name = "chain"

    def play(self, pair: ModelPair, prefix: list[int], k: int, rule: Rule, draws: Draws,
             light: bool = False, betas: bool = False) -> RoundTrace | RoundDigest:
        """One round; betas=True adds sum_x min(p, q) at each verified position."""
        proposed, drafts, q_rows, qs_rows, p_rows, stopped = draft_chain(pair, prefix, k, rule,
                                                                         draws)
        n = len(drafts)

        def p_at(i: int) -> np.ndarray:  # the target's row at position i's prefix
            if i not in p_rows:
                p_rows[i] = pair.p(prefix + drafts[:i])
            return p_rows[i]

        coins, A = [], []  # 3. verify in order until the first rejection
        rejected_at = None
        for i in range(n):
            A.append(threshold(rule, p_at(i), q_rows[i], drafts[i]))
            coins.append(draws.coin(i))
            if not coin_passes(rule, coins[i], A[i]):
                rejected_at = i + 1
                break
        n_acc = n if rejected_at is None else rejected_at - 1
        rejection = None if rejected_at is None else _rejection(
            pair, prefix + drafts[:n_acc], rule, drafts[n_acc], p_at(n_acc), q_rows[n_acc],
            proposed)
        emitted, final_u, row = ending(pair, rule, prefix, drafts[:n_acc], draws, rejection)  # 4.
        later = tuple(range(n_acc + 2, n + 1)) if rejected_at else ()  # 1-based
        if rule.keep_unverified:
            emitted += [Emitted(drafts[j - 1], "unverified", j) for j in later]
        if light:
            beta = tuple(float(overlap(p_at(i), qs_rows[i])) for i in range(len(coins))) \
                if betas else ()
            return RoundDigest(prefix[-1], n, tuple(emitted), n_acc, beta)
        last = [prefix[-1]] + drafts  # the newest token at each position's prefix
        positions = tuple(
            Position(
                i=i + 1, context=last[i], token=x, p_row=frozen(p_at(i)),
                q_row=frozen(qs_rows[i]), p=float(p_at(i)[x]), q=float(qs_rows[i][x]),
                threshold=float(keep_prob(rule, np.asarray(
                    A[i] if i < len(A) else threshold(rule, p_at(i), q_rows[i], x)))),
                u=coins[i] if i < len(coins) else None,
                accepted=bool(coin_passes(rule, coins[i], A[i])) if i < len(coins) else None,
            )
            for i, x in enumerate(drafts)
        )
        return make_trace(pair, rule, prefix, n, positions, emitted, final_u, rejected_at,
                          row, last[n_acc], () if rule.keep_unverified else later,
                          proposed=proposed, stopped=stopped)

    def round(self, eng, ctx: np.ndarray, k: int, rng: np.random.Generator):
        """One round for each context in ctx (n,) -> emitted (k+1, n), lengths, accepted, next."""
        n, V, rule = len(ctx), eng.V, eng.rt.rule
        U = rng.random((2 * k + 1, n))  # draft uniforms, coins, the final draw
        X, C, J, all_kept = _verify(eng, ctx, k, U)
        # 4. one more token: from R at the rejected position's context, or the bonus from p.
        # Flat indices into the (k + 1, n) and (k, n) arrays: entry (i, d) is at i n + d.
        d = np.arange(n)
        at_J = J * n + d  # (n,) where the round's last token goes
        c_J = C.ravel()[np.minimum(at_J, k * n - n + d)]  # the rejected position's context
        last = eng.final(np.where(all_kept, V + X[k - 1], c_J), U[2 * k])
        if rule.rejection_skips_draft:  # y ~ R[c] given y != the rejected draft
            rej = np.flatnonzero(~all_kept)
            last[rej] = eng.R_cdf.skipping(c_J[rej], X.ravel()[at_J[rej]], U[2 * k][rej])
        X.ravel()[at_J] = last
        if rule.keep_unverified:
            L = np.where(all_kept, k + 1, k)  # the later drafts stay in X, unverified
            return X, L, J, X.ravel()[(L - 1) * n + d]
        return X, J + 1, J, last

    def joint(self, rt: RuleTables, ctx: int, k: int, n: int) -> np.ndarray:
        F, K = _levels(rt, k, n - 1)
        return _step(rt, k, F, K, k, np.array([ctx])).reshape((rt.V,) * n)  # (1, V^n)

    def tables(self, rt: RuleTables, k: int, long_run: bool) -> tuple[np.ndarray, ...]:
        """D[c, j] = P(the round from c keeps j drafts), (V, k+1); N[c, c'] = P(it ends on
        c'), (V, V). With r drafts left to verify: D_0[c] = [1], D_r[c] = [reject_mass(c),
        ACC[c] @ D_(r-1)] (kept at c, then r - 1 to go); N_0 = P (the bonus token), N_r =
        ACC @ N_(r-1) + REJ (ends on the rejection token), or under 'continue' with r > 1
        + W Qs^(r-1) (ends on the last unverified draft)."""
        D, N = np.ones((rt.V, 1)), rt.P
        chain = np.eye(rt.V)  # Qs^(r-1): the q-chain of the later drafts under 'continue'
        for r in range(1, k + 1):
            D = np.concatenate([rt.reject_mass[:, None], rt.acc @ D], axis=1)
            if long_run:
                N = rt.acc @ N + (rt.W @ chain if rt.rule.keep_unverified and r > 1 else rt.rej)
                chain = chain @ rt.Qs if rt.rule.keep_unverified else chain
        return D, N if long_run else None

    def columns(self, rule: Rule, k: int) -> int:
        return 1


CHAIN = Chain()


def _rejection(pair, prefix, rule, x, p, q, proposed) -> np.ndarray:
    """The rejection law at prefix, cached by what the models read of it (the rejected draft
    too when q is one-hot at it, or the law skips it)."""
    key = (rule.name, rule.values, pair.key(prefix), proposed,
           x if proposed or rule.rejection_skips_draft else None)
    return pair.rejections.get(key, lambda: rejection_row(rule, p, q, x))


# ------------------------------------------------------------------ vectorised round
def _verify(eng, ctx: np.ndarray, k: int, U: np.ndarray):
    """Steps 1-3: draft x_1..x_k serially and flip one coin per position, for the decodes
    whose drafts have all passed (each draw may be a cache miss: drafts after a decode's
    first rejection are flushed unread, so they are not drawn), or for every decode when
    the rule emits the later drafts unverified. -> X (k+1, n) drafts, C (k, n) each
    position's context, J (n,) first misses, all kept (n,)."""
    n, V, rule = len(ctx), eng.V, eng.rt.rule
    X = np.zeros((k + 1, n), dtype=np.int64)  # drafts by position, then room for the last
    C = np.zeros((k, n), dtype=np.int64)
    J = np.full(n, k, dtype=np.int64)
    live, c = np.arange(n), ctx  # decodes still drafting
    for i in range(k):
        C[i, live] = c
        x = X[i, live] = eng.draft(c, U[i, live])
        ok = coin_passes(rule, U[k + i, live], eng.A[c * V + x])
        missed = live[~ok]
        J[missed[J[missed] == k]] = i
        live, c = (live, x) if rule.keep_unverified else (live[ok], x[ok])
        if not len(live):
            break
    return X, C, J, J == k


# ------------------------------------------------------------------ exact laws
def _levels(rt: RuleTables, k: int, m_max: int):
    """F[r] (r = 0..k) and K[s] (s = 0..k-1) at level m_max, each (V, V^m_max)."""
    V = rt.V
    every = np.arange(V)
    F = [np.ones((V, 1)) for _ in range(k + 1)]  # level m = 0: nothing left to emit
    K = [F[k]] * k
    for _ in range(m_max):
        F = [_step(rt, k, F, K, r, every) for r in range(k + 1)]  # from the level below
        K = [F[k]] + [_chain(rt.Qs, K[s - 1]) for s in range(1, k)]
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
