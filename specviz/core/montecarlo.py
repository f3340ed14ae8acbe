"""Vectorised Monte Carlo: many independent decodes run in lockstep, round by round.

Every decode executes the algorithm itself (draft draws, one coin per position, the
residual or bonus draw); nothing is sampled from a precomputed law. Decodes run in
chunks, so memory stays bounded whatever n is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import tree
from .block import block_round
from .exact import _check_n_tokens
from .rules import RuleTables, apply_rule, coin_passes
from .sampling import GuideSampler, InverseCDF, RowSampler
from .tables import N_MAX, check_ctx, check_k, check_n, validate_pair

CHUNK_CELLS = 1 << 20  # entries of one chunk's (k + 1, n) arrays: ~8 MB each
ALIAS_MAX_V = 64  # above this, draws use the inverse CDF (alias set-up is a Python loop)
JOINT_MAX_CELLS = 20_000_000  # V^n_tokens: the size of the count table


@dataclass
class RoundCounts:
    """Totals over the rounds a run executed; every metric is derived from these."""

    k: int
    histogram: np.ndarray  # (k+1,) rounds by accepted drafts j = 0..k
    tokens: int = 0  # tokens emitted over all rounds

    @property
    def rounds(self) -> int:
        """Target calls: one per round."""
        return int(self.histogram.sum())

    @property
    def accepted(self) -> int:
        return int(self.histogram @ np.arange(self.k + 1))

    @property
    def drafted(self) -> int:
        return self.k * self.rounds

    @property
    def tokens_per_call(self) -> float:
        return self.tokens / self.rounds

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted (vLLM's draft acceptance rate; not alpha)."""
        return self.accepted / self.drafted

    @property
    def mean_acceptance_length(self) -> float:
        """1 + accepted / rounds (vLLM's mean acceptance length)."""
        return 1.0 + self.accepted / self.rounds

    @property
    def per_position(self) -> np.ndarray:
        """(k,) share of rounds whose position i was accepted, i = 1..k."""
        return self.histogram[::-1].cumsum()[::-1][1:] / self.rounds

    def add(self, J: np.ndarray, L: np.ndarray) -> None:
        self.histogram += np.bincount(J, minlength=self.k + 1)
        self.tokens += int(L.sum())


@dataclass
class SimResult(RoundCounts):
    """simulate(): counts of the first n_tokens emitted, and the rounds it took."""

    joint: np.ndarray = field(default=None)  # (V,)*n_tokens counts
    n: int = 0
    rule: str = "correct"

    @property
    def law(self) -> np.ndarray:
        """The empirical joint law. (V,)*n_tokens"""
        return self.joint / self.n


class _Engine:
    """A rule applied to a pair, with its samplers built once."""

    def __init__(self, rt: RuleTables) -> None:
        self.rt, self.V = rt, rt.V
        # Small vocabularies: the alias method (a few array operations per draw). Large ones:
        # inverse CDF with a guide table, whose set-up is vectorised, not a Python loop.
        sampler = RowSampler if rt.V <= ALIAS_MAX_V else GuideSampler
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
            shape = tree.preset(self.rt.rule.prm["shape"], k)
            return tree.tree_round(self.rt.P, self.rt.Qs, shape, self.rt.rule.tree,
                                   lambda c, u: self.final(self.V + c, u), ctx, rng)
        n = len(ctx)
        V = self.V
        U = rng.random((2 * k + 1, n))  # draft uniforms, coins, the final draw
        X = np.empty((k + 1, n), dtype=np.int64)  # drafts by position, then room for the bonus
        C = np.empty((k, n), dtype=np.int64)  # the context of each position
        c = ctx
        for i in range(k):  # 1. draft serially
            C[i] = c
            c = X[i] = self.draft(c, U[i])
        kept = coin_passes(self.rt.rule, U[k:2 * k], self.A[C * V + X[:k]])  # 3. (k, n)
        J = np.argmin(np.concatenate([kept, np.zeros((1, n), bool)]), axis=0)  # first miss
        rows = np.arange(n)
        all_kept = J == k
        # 4. one more token: from R at the rejected position's context, or the bonus from p
        c_J = C[np.minimum(J, k - 1), rows]
        if self.rt.rule.rejection_skips_draft:  # y ~ R[c] given y != the rejected draft
            rej = np.flatnonzero(~all_kept)
            skip = X[J[rej], rej]
        X[J, rows] = self.final(np.where(all_kept, V + X[k - 1], c_J), U[2 * k])
        if self.rt.rule.rejection_skips_draft:
            X[J[rej], rej] = self.R_cdf.skipping(c_J[rej], skip, U[2 * k][rej])
        if self.rt.rule.keep_unverified:
            L = np.where(all_kept, k + 1, k)  # the later drafts stay in X, unverified
        else:
            L = J + 1
        return X, L, J, X[L - 1, rows]

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
    return _Engine(apply_rule(rule, P, Q)), check_ctx(ctx, P.shape[0]), check_k(k)


def simulate(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    n: int,
    rule: str = "correct",
    n_tokens: int = 2,
    seed: int = 0,
) -> SimResult:
    """n independent decodes from ctx, each running rounds until n_tokens are emitted."""
    eng, ctx, k = _setup(P, Q, ctx, k, rule)
    n, m = check_n(n, N_MAX), _check_n_tokens(n_tokens)
    V = eng.V
    if V**m > JOINT_MAX_CELLS:
        raise ValueError(f"a joint of V^n_tokens = {V**m:,} cells is over the cap "
                         f"{JOINT_MAX_CELLS:,}; lower n_tokens")
    rng = np.random.default_rng(seed)
    res = SimResult(k=k, histogram=np.zeros(k + 1, dtype=np.int64), n=n, rule=eng.rt.rule.name,
                    joint=np.zeros(V**m, dtype=np.int64))
    chunk = max(1, CHUNK_CELLS // (k + 1))
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        code = np.zeros(size, dtype=np.int64)  # the first m tokens as a base-V number
        have = np.zeros(size, dtype=np.int64)  # tokens emitted so far
        live = np.arange(size)  # decodes still short of m tokens
        c = np.full(size, ctx, dtype=np.int64)
        while len(live):
            X, L, J, c_next = eng.round(c, k, rng)
            res.add(J, L)
            h = have[live]
            for t in range(min(k + 1, m)):  # append the round's tokens while there is room
                room = (t < L) & (h + t < m)
                code[live[room]] = code[live[room]] * V + X[t, room]
            have[live] = h + L
            more = have[live] < m
            live, c = live[more], c_next[more]
        res.joint += np.bincount(code, minlength=V**m)
    res.joint = res.joint.reshape((V,) * m)
    return res


@dataclass
class DecodeStats(RoundCounts):
    """long_decode(): what a server would log over long generations."""

    chains: int = 1

    @property
    def draft_calls(self) -> int:
        return self.drafted

    @property
    def target_calls(self) -> int:
        return self.rounds

    @property
    def tokens_per_call_se(self) -> float:
        """Standard error of tokens per call, treating rounds as independent."""
        return float(np.sqrt(self.tokens_per_call_var / self.rounds))

    tokens_per_call_var: float = 0.0


def long_decode(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    n_rounds: int = 20_000,
    rule: str = "correct",
    seed: int = 0,
    chains: int = 100,
) -> DecodeStats:
    """Long generations from ctx, `chains` of them side by side, n_rounds rounds in all.

    Each chain feeds every round's last token into the next round, as a server does;
    tokens per target call is then the long-run average over those rounds.
    """
    eng, ctx, k = _setup(P, Q, ctx, k, rule)
    n_rounds = check_n(n_rounds, 10_000_000, "n_rounds")
    chains = check_n(chains, 100_000, "chains")
    chains = min(chains, n_rounds)
    rng = np.random.default_rng(seed)
    stats = DecodeStats(k=k, histogram=np.zeros(k + 1, dtype=np.int64), chains=chains)
    c = np.full(chains, ctx, dtype=np.int64)
    sum_sq = 0
    for _ in range(n_rounds // chains):
        _, L, J, c = eng.round(c, k, rng)
        stats.add(J, L)
        sum_sq += int((L * L).sum())
    mean = stats.tokens_per_call
    stats.tokens_per_call_var = max(0.0, sum_sq / stats.rounds - mean * mean)
    return stats
