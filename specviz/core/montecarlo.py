"""Vectorised Monte Carlo: many independent decodes run in lockstep, round by round.

Every decode executes the algorithm itself (draft draws, one coin per position, the
residual or bonus draw); nothing is sampled from a precomputed law. Decodes run in
chunks, so memory stays bounded whatever n is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import interrupt, tree
from .block import block_round
from .exact import N_TOKENS_MAX
from .roundstats import RoundStats
from .rules import RuleTables, apply_rule, coin_passes, get_rule
from .sampling import BucketSampler, GuideSampler, InverseCDF
from .tables import N_MAX, check_ctx, check_k, check_n, validate_pair

CHUNK_CELLS = 1 << 17  # entries of one chunk's (k + 1, n) arrays: 1 MB each, cache-sized
SMALL_V = 64  # up to this V, bucket tables (V rows x 2^14 / V buckets); above, a guide
JOINT_MAX_CELLS = 20_000_000  # V^n_tokens: the size of the count table


@dataclass(frozen=True, kw_only=True, eq=False)
class SimResult(RoundStats):
    """simulate(): counts of the first n_tokens emitted, and the rounds it took."""

    joint: np.ndarray  # (V,)*n_tokens counts
    n: int  # decodes run: the n asked for, or fewer when the time budget stopped them
    asked: int  # the n asked for

    @property
    def law(self) -> np.ndarray:
        """The empirical joint law. (V,)*n_tokens"""
        return self.joint / self.n


class _Engine:
    """A rule applied to a pair, with its samplers built once."""

    def __init__(self, rt: RuleTables) -> None:
        self.rt, self.V = rt, rt.V
        # Small vocabularies: a table of fine buckets per row (one gather per draw). Large
        # ones: inverse CDF with a guide table of V buckets per row.
        sampler = BucketSampler if rt.V <= SMALL_V else GuideSampler
        self.draft = sampler(rt.Qs)  # x ~ Qs[c]
        self.final = sampler(np.vstack([rt.R, rt.P]))  # rows 0..V-1: R, V..2V-1: P (bonus)
        self.A = rt.A.ravel()  # (V*V,) the coin's threshold at (c, x)
        if rt.rule.rejection_skips_draft:
            self.R_cdf = InverseCDF(rt.R)
        if rt.rule.kind == "multi":
            self.chain = [a.ravel() for a in rt.chain]  # (V*V,) per try

    def round(self, ctx: np.ndarray, k: int, rng: np.random.Generator):
        """One round for each context in ctx (n,) -> emitted (k+1, n), lengths, accepted, next."""
        if self.rt.rule.kind == "multi":
            return self._round_multi(ctx, k, rng)
        if self.rt.rule.kind == "block":
            return block_round(self.rt.P, self.rt.Qs, self.draft,
                               lambda c, u: self.final(self.V + c, u), ctx, k, rng)
        if self.rt.rule.kind == "tree":
            shape = tree.rule_shape(self.rt.rule, k)
            return tree.tree_round(self.rt.P, self.rt.Qs, shape, self.rt.rule.tree,
                                   lambda c, u: self.final(self.V + c, u), ctx, rng)
        n, V, rule = len(ctx), self.V, self.rt.rule
        U = rng.random((2 * k + 1, n))  # draft uniforms, coins, the final draw
        lazy = V > SMALL_V and not rule.keep_unverified
        X, C, J, all_kept = (self._lazy if lazy else self._whole)(ctx, k, U)
        # 4. one more token: from R at the rejected position's context, or the bonus from p.
        # Flat indices into the (k + 1, n) and (k, n) arrays: entry (i, d) is at i n + d.
        d = np.arange(n)
        at_J = J * n + d  # (n,) where the round's last token goes
        c_J = C.ravel()[np.minimum(at_J, k * n - n + d)]  # the rejected position's context
        if rule.rejection_skips_draft:  # y ~ R[c] given y != the rejected draft
            rej = np.flatnonzero(~all_kept)
            skip = X.ravel()[at_J[rej]]
        last = self.final(np.where(all_kept, V + X[k - 1], c_J), U[2 * k])
        if rule.rejection_skips_draft:
            last[rej] = self.R_cdf.skipping(c_J[rej], skip, U[2 * k][rej])
        X.ravel()[at_J] = last
        if rule.keep_unverified:
            L = np.where(all_kept, k + 1, k)  # the later drafts stay in X, unverified
            return X, L, J, X.ravel()[(L - 1) * n + d]
        return X, J + 1, J, last

    def _whole(self, ctx: np.ndarray, k: int, U: np.ndarray):
        """Steps 1-3 on whole arrays: draft x_1..x_k serially, then one coin per position.
        -> X (k+1, n) drafts, C (k, n) each position's context, J first misses, all kept."""
        n, V = len(ctx), self.V
        X = np.empty((k + 1, n), dtype=np.int64)  # drafts by position, then room for the last
        C = np.empty((k, n), dtype=np.int64)  # the context of each position
        C[0] = ctx
        for i in range(k):  # 1. draft serially
            X[i] = self.draft(C[i], U[i])
            if i + 1 < k:
                C[i + 1] = X[i]
        kept = coin_passes(self.rt.rule, U[k:2 * k], self.A[C * V + X[:k]])  # 3. (k, n)
        alive = kept[0].copy()  # every draft so far passed
        J = alive.astype(np.int64)  # drafts kept before the first miss
        for i in range(1, k):
            alive &= kept[i]
            J += alive
        return X, C, J, alive

    def _lazy(self, ctx: np.ndarray, k: int, U: np.ndarray):
        """Steps 1-3 for large vocabularies, where each draw is a cache miss: a decode's
        drafts after its first rejection are flushed unread, so they are not drawn (the
        uniforms they would use stay unread too). Same outputs as _whole in law."""
        n, V = len(ctx), self.V
        X = np.zeros((k + 1, n), dtype=np.int64)
        C = np.zeros((k, n), dtype=np.int64)
        J = np.full(n, k, dtype=np.int64)
        live, c = np.arange(n), ctx  # decodes whose drafts have all passed
        for i in range(k):
            C[i, live] = c
            x = X[i, live] = self.draft(c, U[i, live])
            ok = coin_passes(self.rt.rule, U[k + i, live], self.A[c * V + x])
            J[live[~ok]] = i
            live, c = live[ok], x[ok]
            if not len(live):
                break
        return X, C, J, J == k

    def _round_multi(self, ctx: np.ndarray, k: int, rng: np.random.Generator):
        """SpecInfer: at each position m candidates ~ q(.|c), tried in turn against p_j.

        The next position's candidates are drawn from q at the kept candidate: its children
        in the token tree. The children of candidates that were not kept never matter.
        """
        n, V, m = len(ctx), self.V, len(self.chain)
        X = np.zeros((k + 1, n), dtype=np.int64)
        J = np.full(n, k, dtype=np.int64)
        live = np.arange(n)  # decodes whose round is still going
        c = ctx.copy()
        for i in range(k + 1):
            if i == k:  # all k positions kept: the bonus from p at the last token
                X[k, live] = self.final(V + c, rng.random(len(live)))
                break
            U = rng.random((2 * m + 1, len(live)))
            token = np.full(len(live), -1, dtype=np.int64)
            for j in range(m):
                x = self.draft(c, U[2 * j])
                ok = (token < 0) & (U[2 * j + 1] < self.chain[j][c * V + x])
                token[ok] = x[ok]
            failed = token < 0
            X[i, live[~failed]] = token[~failed]
            y = self.final(c[failed], U[2 * m][failed])  # from p_(m+1)
            X[i, live[failed]] = y
            J[live[failed]] = i
            live, c = live[~failed], token[~failed]
            if not len(live):
                break
        L = J + 1
        return X, L, J, X[L - 1, np.arange(n)]


def _setup(P, Q, ctx, k, rule):
    P, Q = validate_pair(P, Q)
    return _Engine(apply_rule(get_rule(rule), P, Q)), check_ctx(ctx, P.shape[0]), check_k(k)


def simulate(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    *,
    n: int,
    rule: str = "correct",
    n_tokens: int = 2,
    seed: int = 0,
) -> SimResult:
    """n independent decodes from ctx, each running rounds until n_tokens are emitted.
    Past the time budget (core.interrupt.budget) it stops after the chunks done: res.n
    counts the decodes run, res.asked the n asked for."""
    eng, ctx, k = _setup(P, Q, ctx, k, rule)
    n, m = check_n(n, N_MAX), check_n(n_tokens, N_TOKENS_MAX, "n_tokens")
    V = eng.V
    if V**m > JOINT_MAX_CELLS:
        raise ValueError(f"a joint of V^n_tokens = {V**m:,} cells is over the cap "
                         f"{JOINT_MAX_CELLS:,}; lower n_tokens")
    rng = np.random.default_rng(seed)
    counts = RoundStats(histogram=np.zeros(k + 1, dtype=np.int64), tokens=0, drafted=0)
    joint, done_n = np.zeros(V**m, dtype=np.int64), n
    chunk = max(1, CHUNK_CELLS // (k + 1))
    for start in range(0, n, chunk):
        if start and interrupt.overdue():
            done_n = start  # the decodes of the chunks done
            break
        interrupt.check(deadline=False)
        size = min(chunk, n - start)
        code = np.zeros(size, dtype=np.int64)  # the first m tokens so far, a base-V number
        have = np.zeros(size, dtype=np.int64)  # tokens emitted so far
        c = np.full(size, ctx, dtype=np.int64)  # arrays hold the decodes still short of m
        while len(c):
            X, L, J, c_next = eng.round(c, k, rng)
            counts = counts.tally(J, L)
            for t in range(min(k + 1, m)):  # append the round's tokens while there is room
                room = (t < L) & (have + t < m)
                code = np.where(room, code * V + X[t], code)
            have += L
            done = have >= m
            joint += np.bincount(code[done], minlength=V**m)
            more = ~done
            code, have, c = code[more], have[more], c_next[more]
    return SimResult(**vars(counts), joint=joint.reshape((V,) * m), n=done_n, asked=n)


@dataclass(frozen=True, kw_only=True, eq=False)
class DecodeStats(RoundStats):
    """long_decode(): what a server would log over long generations."""

    tokens_per_call_var: float  # variance of a round's tokens

    @property
    def tokens_per_call_se(self) -> float:
        """Standard error of tokens per call, treating rounds as independent."""
        return float(np.sqrt(self.tokens_per_call_var / self.rounds))


def long_decode(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    *,
    n_rounds: int = 20_000,
    rule: str = "correct",
    seed: int = 0,
    chains: int = 100,
) -> DecodeStats:
    """Long generations from ctx, `chains` of them side by side, n_rounds rounds in all.

    Each chain feeds every round's last token into the next round, as a server does;
    tokens per target call is then the long-run average over those rounds. Past the time
    budget (core.interrupt.budget) it stops with the rounds run (stats.rounds).
    """
    eng, ctx, k = _setup(P, Q, ctx, k, rule)
    n_rounds = check_n(n_rounds, 10_000_000, "n_rounds")
    chains = check_n(chains, 100_000, "chains")
    chains = min(chains, n_rounds)
    rng = np.random.default_rng(seed)
    stats = RoundStats(histogram=np.zeros(k + 1, dtype=np.int64), tokens=0, drafted=0)
    c = np.full(chains, ctx, dtype=np.int64)
    sum_sq = 0
    for _ in range(n_rounds // chains):
        if stats.rounds and interrupt.overdue():  # the time budget is spent: the rounds run
            break
        interrupt.check(deadline=False)
        _, L, J, c = eng.round(c, k, rng)
        stats = stats.tally(J, L)
        sum_sq += int((L * L).sum())
    mean = stats.tokens_per_call
    var = max(0.0, sum_sq / stats.rounds - mean * mean)
    return DecodeStats(**vars(stats), tokens_per_call_var=var)
