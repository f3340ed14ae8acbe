"""Vectorised Monte Carlo: many independent decodes run in lockstep, round by round.

Every decode executes the algorithm itself (draft draws, one coin per position, the
residual or bonus draw); nothing is sampled from a precomputed law. Decodes run in
chunks, so memory stays bounded whatever n is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import interrupt
from .exact import N_TOKENS_MAX
from .kinds import kind_of
from .roundstats import RoundStats
from .rules import RuleTables, apply_rule
from .sampling import BucketSampler, GuideSampler, InverseCDF
from .scenario import Scenario
from .tables import N_MAX, check_n

CHUNK_CELLS = 1 << 17  # entries of one chunk's (k + 1, n) arrays: 1 MB each, cache-sized
SMALL_V = 64  # up to this V, bucket tables (V rows x 2^14 / V buckets); above, a guide
JOINT_MAX_CELLS = 20_000_000  # V^n_tokens: the size of the count table


@dataclass(frozen=True, kw_only=True, eq=False)
class SimResult(RoundStats):
    """simulate(): counts of the first n_tokens emitted, and the rounds it took."""

    joint: np.ndarray  # (V,)*n_tokens counts
    n: int  # decodes run: the n asked for, or fewer when the time budget stopped them

    @property
    def law(self) -> np.ndarray:
        """The empirical joint law. (V,)*n_tokens"""
        return self.joint / self.n


class _Engine:
    """A rule applied to a pair, with its samplers built once; its kind plays the rounds."""

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
        self.memo: dict = {}  # what a kind tables once for this call's rounds, by its key

    def bonus(self, c: np.ndarray, u: np.ndarray) -> np.ndarray:
        """y ~ P[c] for each decode. (n,)"""
        return self.final(self.V + c, u)

    def round(self, ctx: np.ndarray, k: int, rng: np.random.Generator):
        """One round for each context in ctx (n,) -> emitted (k+1, n), lengths, accepted, next."""
        return kind_of(self.rt.rule).round(self, ctx, k, rng)


def _setup(sc: Scenario):
    """A run on sc: its engine, start token, k, random stream and statistics so far (none)."""
    pair = sc.tables
    stats = RoundStats(histogram=np.zeros(sc.k + 1, dtype=np.int64), tokens=0, drafted=0)
    return (_Engine(apply_rule(sc.rule, pair.P, pair.Q)), sc.ctx, sc.k,
            np.random.default_rng(sc.seed), stats)


def simulate(sc: Scenario, *, n: int, n_tokens: int = 2) -> SimResult:
    """n independent decodes from sc.ctx, each running rounds until n_tokens are emitted.
    Past the time budget (core.interrupt.budget) it stops after the chunks done: res.n
    counts the decodes run, res.asked the n asked for."""
    eng, ctx, k, rng, counts = _setup(sc)
    n, m = check_n(n, N_MAX), check_n(n_tokens, N_TOKENS_MAX, "n_tokens")
    V = eng.V
    if V**m > JOINT_MAX_CELLS:
        raise ValueError(f"a joint of V^n_tokens = {V**m:,} cells is over the cap "
                         f"{JOINT_MAX_CELLS:,}; lower n_tokens")
    joint = np.zeros(V**m, dtype=np.int64)
    chunk = max(1, CHUNK_CELLS // (k + 1))
    for start in range(0, n, chunk):
        if not interrupt.goes_on(start > 0):  # the decodes of the chunks done are counted
            break
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
    return SimResult(**vars(counts), joint=joint.reshape((V,) * m), n=int(joint.sum()))


@dataclass(frozen=True, kw_only=True, eq=False)
class DecodeStats(RoundStats):
    """long_decode(): what a server would log over long generations."""

    tokens_per_call_var: float  # variance of a round's tokens

    @property
    def tokens_per_call_se(self) -> float:
        """Standard error of tokens per call, treating rounds as independent."""
        return float(np.sqrt(self.tokens_per_call_var / self.rounds))


def long_decode(sc: Scenario, *, n_rounds: int = 20_000, chains: int = 100) -> DecodeStats:
    """Long generations from sc.ctx, `chains` of them side by side, n_rounds rounds in all.

    Each chain feeds every round's last token into the next round, as a server does;
    tokens per target call is then the long-run average over those rounds. Past the time
    budget (core.interrupt.budget) it stops with the rounds run (stats.rounds).
    """
    eng, ctx, k, rng, stats = _setup(sc)
    n_rounds = check_n(n_rounds, 10_000_000, "n_rounds")
    chains = check_n(chains, 100_000, "chains")
    chains = min(chains, n_rounds)
    c = np.full(chains, ctx, dtype=np.int64)
    sum_sq = 0
    for _ in range(n_rounds // chains):
        if not interrupt.goes_on(stats.rounds > 0):  # the budget is spent: the rounds run
            break
        _, L, J, c = eng.round(c, k, rng)
        stats = stats.tally(J, L)
        sum_sq += int((L * L).sum())
    mean = stats.tokens_per_call
    var = max(0.0, sum_sq / stats.rounds - mean * mean)
    return DecodeStats(**vars(stats), tokens_per_call_var=var)
