"""Dynamic draft length: policies that choose k each round, run on one shared random stream.

Every policy decodes the same long text position by position from common random numbers:
the uniform that drafts position t, the coin that checks it, and the uniform of a
rejection or bonus token at t are the same for every policy. A uniform is reused only
after the draft it drove was thrown away unverified, so it never informed a decision
and each policy stays exact (Leviathan et al. 2022, Algorithm 1, with k varying).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rule import ratio, residual
from .sampling import draw
from .tables import K_MAX, check_ctx, validate_pair

POLICIES = ("constant", "heuristic", "confidence", "oracle")
POLICY_LABELS = {
    "constant": "constant k",
    "heuristic": "+2 after a full accept, -1 otherwise",
    "confidence": "stop drafting when max q < threshold",
    "oracle": "oracle: drafts exactly what will be kept",
}
TOKENS_MAX = 200_000


@dataclass
class PolicyRun:
    policy: str
    tokens: int = 0
    target_calls: int = 0  # rounds
    draft_calls: int = 0  # drafted tokens
    accepted: int = 0
    ks: list[int] = field(default_factory=list)  # k used in each round
    text: list[int] = field(default_factory=list)  # emitted tokens

    def speedup(self, c: float) -> float:
        """Tokens per unit of time, against plain decoding's one token per target call:
        tokens / (target calls + c draft calls)."""
        return self.tokens / (self.target_calls + c * self.draft_calls)

    @property
    def tokens_per_call(self) -> float:
        return self.tokens / self.target_calls


class _Stream:
    """Common random numbers indexed by output position t: draft, coin, final."""

    def __init__(self, seed: int, size: int) -> None:
        rng = np.random.default_rng(seed)
        self.U = rng.random((size, 3)).T  # (3, positions); position t's draws do not depend on size

    def draft(self, t: int) -> float:
        return float(self.U[0, t])

    def coin(self, t: int) -> float:
        return float(self.U[1, t])

    def final(self, t: int) -> float:
        return float(self.U[2, t])


def run_policy(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    policy: str = "constant",
    k: int = 4,
    n_tokens: int = 2_000,
    seed: int = 0,
    k_max: int = 16,
    threshold: float = 0.3,
) -> PolicyRun:
    """Decode n_tokens from ctx with the correct rule, k chosen per round by `policy`.

    constant: k every round. heuristic: start at k, then k + 2 after a round that kept
    every draft and max(1, k - 1) otherwise, capped at k_max. confidence: draft while the
    draft's top probability max_x q(x | last) is at least threshold, at least 1 and at most
    k_max. oracle: looks ahead on the stream and drafts exactly the tokens that will be
    kept (none if the first would be rejected); the token after them is the one the
    standard rule would emit there: the residual's if the next draft would have failed,
    the bonus from p if k_max were all kept. Its text is that of k = k_max; only the
    draft calls differ, which makes it a bound on what any policy can save.
    """
    P, Q = validate_pair(P, Q)
    ctx = check_ctx(ctx, P.shape[0])
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")
    if not 1 <= k <= K_MAX or not 1 <= k_max <= K_MAX:
        raise ValueError(f"k and k_max must be in 1..{K_MAX}; got k = {k}, k_max = {k_max}")
    if not 1 <= n_tokens <= TOKENS_MAX:
        raise ValueError(f"n_tokens must be 1..{TOKENS_MAX:,}; got {n_tokens}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1]; got {threshold}")
    A = ratio(P, Q)  # (V, V) keep iff u < A[c, x]
    R = residual(P, Q)  # (V, V)
    top = Q.max(axis=1)  # (V,) the draft's confidence at each context
    stream = _Stream(seed, n_tokens + k_max + 2)
    run = PolicyRun(policy)
    c, t, k_now = ctx, 0, k
    while t < n_tokens:
        # how many to draft this round
        if policy == "confidence":
            k_now, z = 0, c
            while k_now < k_max and (k_now == 0 or top[z] >= threshold):
                z = draw(Q[z], stream.draft(t + k_now))
                k_now += 1
        elif policy == "oracle":
            k_now, z, doomed = 0, c, False
            while k_now < k_max:  # look ahead: would the next draft be kept?
                x = draw(Q[z], stream.draft(t + k_now))
                if not stream.coin(t + k_now) < A[z, x]:
                    doomed = True  # it would be rejected: its residual token comes next
                    break
                z, k_now = x, k_now + 1
        # the round itself: draft, verify, then a rejection or bonus token
        accepted, z = 0, c
        for i in range(k_now):
            x = draw(Q[z], stream.draft(t + i))
            if stream.coin(t + i) < A[z, x]:
                run.text.append(x)
                accepted, z = accepted + 1, x
            else:
                run.text.append(draw(R[z], stream.final(t + i)))
                break
        else:
            if policy == "oracle" and doomed:  # the draft it skipped would have failed
                run.text.append(draw(R[z], stream.final(t + k_now)))
            else:
                run.text.append(draw(P[z], stream.final(t + k_now)))  # bonus
        emitted = accepted + 1
        run.ks.append(k_now)
        run.tokens += emitted
        run.target_calls += 1
        run.draft_calls += k_now
        run.accepted += accepted
        t += emitted
        c = run.text[-1]
        if policy == "heuristic":
            k_now = min(k_max, k_now + 2) if accepted == k_now else max(1, k_now - 1)
    return run


def run_policies(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int = 4,
    n_tokens: int = 2_000,
    seed: int = 0,
    k_max: int = 16,
    threshold: float = 0.3,
    policies: tuple[str, ...] = POLICIES,
) -> dict[str, PolicyRun]:
    """Every policy on the same stream."""
    return {p: run_policy(P, Q, ctx, p, k, n_tokens, seed, k_max, threshold) for p in policies}
