"""Round statistics: how many drafts each round kept, and every metric read from that.

h_j = the rounds that kept exactly j drafts, j = 0..k: counts over a run (int), or the law
P(J = j) of one round (float, summing to 1). With the tokens emitted and the drafts
proposed beside it (one target call per round; accepted = sum_j j h_j):

  tokens per call        = tokens / rounds        (E[tokens per call], Leviathan et al. 2022)
  mean acceptance length = 1 + accepted / rounds  (vLLM's name)
  draft acceptance rate  = accepted / drafted     (vLLM's name; not alpha)
  per-position rate      = a_i / rounds, with a_i = sum_{j >= i} h_j the rounds that kept
                           draft i (vLLM: accepted at position i / drafts)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


def quotient(num: float, den: float) -> float:
    """num / den as a float; nan when den is 0 (nothing counted yet)."""
    return float(num / den) if den else float("nan")


def accepted_at(histogram: np.ndarray) -> np.ndarray:
    """a_i = sum_{j >= i} h_j: the rounds that kept draft i, i = 1..k. (k+1,) -> (k,)"""
    return histogram[::-1].cumsum()[::-1][1:]


class Rates:
    """vLLM's two rates, for any record of rounds, drafts accepted and drafts proposed."""

    rounds: float
    accepted: float
    drafted: float

    @property
    def mean_acceptance_length(self) -> float:
        """1 + accepted / rounds (SGLang's accept length; nan before the first round)."""
        return 1.0 + quotient(self.accepted, self.rounds)

    @property
    def draft_acceptance_rate(self) -> float:
        """accepted / drafted: later positions are tried less often, so this is not alpha
        (nan when nothing was drafted)."""
        return quotient(self.accepted, self.drafted)


@dataclass(frozen=True, kw_only=True, eq=False)
class RoundStats(Rates):
    """Rounds by the drafts they kept, with the tokens they emitted and the drafts they
    proposed; counted (an int histogram over a run) or exact (the law of one round)."""

    histogram: np.ndarray  # (k+1,) rounds keeping exactly j drafts, or P(J = j)
    tokens: float  # tokens emitted over the rounds (exact: E[tokens of a round])
    drafted: float  # drafts proposed over the rounds (exact: E[drafts of a round])

    def __eq__(self, other: object) -> bool:
        """Field by field, arrays by value (this record and every one extending it)."""
        if type(other) is not type(self):
            return NotImplemented
        pairs = ((getattr(self, f.name), getattr(other, f.name)) for f in fields(self))
        return all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
                   for a, b in pairs)

    @classmethod
    def of(cls, stats: RoundStats) -> RoundStats:
        """The statistics of a richer record (a subclass's other fields dropped)."""
        return cls(histogram=stats.histogram, tokens=stats.tokens, drafted=stats.drafted)

    def tally(self, J: np.ndarray, L: np.ndarray) -> RoundStats:
        """These rounds and n more, each drafting k: J (n,) drafts kept, L (n,) tokens."""
        return RoundStats(histogram=self.histogram + np.bincount(J, minlength=self.k + 1),
                          tokens=self.tokens + int(L.sum()), drafted=self.drafted + self.k * len(J))

    @property
    def k(self) -> int:
        """The most drafts a round could keep."""
        return len(self.histogram) - 1

    @property
    def rounds(self) -> float:
        """Target calls: one per round (exact: 1)."""
        return self.histogram.sum().item()

    @property
    def accepted(self) -> float:
        """Drafts kept, sum_j j h_j."""
        return (self.histogram @ np.arange(self.k + 1)).item()

    @property
    def drafted_per_round(self) -> float:
        """drafted / rounds: the mean k."""
        return quotient(self.drafted, self.rounds)

    @property
    def shares(self) -> np.ndarray:
        """(k+1,) the share of rounds keeping exactly j drafts."""
        return self.histogram / self.rounds

    @property
    def accepted_at(self) -> np.ndarray:
        """(k,) the rounds that kept draft i, i = 1..k (counts, or probabilities)."""
        return accepted_at(self.histogram)

    @property
    def per_position(self) -> np.ndarray:
        """(k,) P(position i accepted) = a_i / rounds, i = 1..k."""
        return self.accepted_at / self.rounds

    @property
    def tokens_per_call(self) -> float:
        """tokens / rounds (nan before the first round)."""
        return quotient(self.tokens, self.rounds)
