"""Dynamic draft length: policies that choose k each round, run on one shared random stream.

Each round is the one round of specviz.core.round under any rule of the registry. Every
policy decodes the same long text position by position from common random numbers:
the uniform that drafts position t, the coin that checks it, and the uniform of a
rejection or bonus token at t are the same for every policy. A uniform is reused only
after the draft it drove was thrown away unverified, so it never informed a decision
and each policy stays exact (Leviathan et al. 2022, Algorithm 1, with k varying).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .draws import StreamDraws
from .kinds import kind_of
from .pair import TablePair
from .round import play
from .roundstats import RoundStats
from .scenario import Scenario
from .stop import Confident
from .tables import K_MAX, check_n

POLICIES = ("constant", "heuristic", "confidence", "oracle")
POLICY_LABELS = {
    "constant": "constant k",
    "heuristic": "+2 after a full accept, -1 otherwise",
    "confidence": "stop drafting when max q < threshold",
    "oracle": "oracle: drafts exactly what will be kept",
}
TOKENS_MAX = 200_000


@dataclass(frozen=True, kw_only=True, eq=False)
class PolicyRun(RoundStats):
    """A policy's decode: its rounds (drafted: the k each chose, summed), the ks, the text."""

    ks: list[int]  # k used in each round
    text: list[int]  # emitted tokens

    def speedup(self, c: float) -> float:
        """Tokens per unit of time, against plain decoding's one token per target call:
        tokens / (target calls + c draft calls)."""
        return self.tokens / (self.rounds + c * self.drafted)


def _stream(seed: int, size: int, m: int) -> StreamDraws:
    """Common random numbers for output positions 0..size-1: draft, coin, final columns
    (m tries per position); position t's draws do not depend on size."""
    return StreamDraws(np.random.default_rng(seed).random((size, 2 * m + 1)), m)


def _check(sc: Scenario, policy, k_max, length, threshold) -> TablePair:
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")
    check_n(k_max, K_MAX, "k_max")
    check_n(length, TOKENS_MAX, "length")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1]; got {threshold}")
    return sc.tables


def run_policy(sc: Scenario, *, policy: str = "constant", length: int = 2_000,
               k_max: int = 16, threshold: float = 0.3) -> PolicyRun:
    """Decode `length` tokens from sc.ctx under sc.rule, k chosen per round by `policy`.

    constant: k = sc.k every round. heuristic: start at k, then k + 2 after a round that kept
    every draft and max(1, k - 1) otherwise, capped at k_max. confidence: draft while the
    draft's top probability max_x q(x | last) is at least threshold, at least 1 and at most
    k_max. oracle: looks ahead on the stream and drafts exactly the tokens the round at
    k = k_max will emit as drafts; its text is that of k = k_max, only the draft calls
    differ, which makes it a bound on what any policy can save.
    """
    pair, k, r = _check(sc, policy, k_max, length, threshold), sc.k, sc.rule
    draws = _stream(sc.seed, length + k_max + 2, kind_of(r).columns(r, max(k, k_max)))
    ks: list[int] = []
    text: list[int] = []
    kept = np.zeros(max(k, k_max) + 1, dtype=np.int64)  # rounds by drafts kept
    c, k_now = sc.ctx, k_max if policy == "confidence" else k
    played = Confident(pair, threshold) if policy == "confidence" else pair  # stops itself
    while draws.start < length:
        d = play(played, [c], k_max if policy == "oracle" else k_now, r, draws, light=True)
        drafted = d.k if policy != "oracle" else sum(
            1 for e in d.emitted if e.origin in ("accepted", "unverified"))
        text += d.tokens
        ks.append(drafted)
        kept[d.accepted] += 1
        draws.start += len(d.emitted)
        c = d.next_ctx
        if policy == "heuristic":
            k_now = min(k_max, k_now + 2) if d.accepted == k_now else max(1, k_now - 1)
    return PolicyRun(histogram=kept, tokens=len(text), drafted=sum(ks), ks=ks, text=text)


def run_policies(sc: Scenario, *, length: int = 2_000, k_max: int = 16, threshold: float = 0.3,
                 policies: tuple[str, ...] = POLICIES) -> dict[str, PolicyRun]:
    """Every policy on the same stream."""
    return {p: run_policy(sc, policy=p, length=length, k_max=k_max, threshold=threshold)
            for p in policies}
