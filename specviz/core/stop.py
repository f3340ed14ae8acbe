"""Draft-side stops: a round drafts only as far as the draft is sure of itself.

A pair's stop(prefix, drafts) (core.pair) is asked before each draft a chain or block round
draws; the round drafts n <= k tokens and the target scores n + 1 prefixes. Why it stays
exact: the decision to draw x_(i+1) is a function of the drafts x_1..x_i (and rows computed
from them), so k is a stopping time of the drafts; given x_1..x_i the round goes on exactly
as a round of fixed k would, and each emitted token still follows p (Leviathan et al. 2022,
Algorithm 1 with k varying). What breaks it is looking ahead: at the draft about to be
drawn, or at a coin (a stop that skips the drafts the target would reject replaces each
rejection's residual draw by a bonus from p; tests/core/test_stop.py catches one).

Confident(pair, threshold) is the confidence stop of core.dynamic: after the first draft,
go on while max_x q(x | prefix + x_1..x_i) >= threshold. Medusa's heads (llm.medusa) stop
on their own confidence, known before any draft of the round is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .pair import ModelPair


def unsure(q: np.ndarray, threshold: float) -> float | None:
    """max_x q(x) when it is below threshold (the draft is unsure: stop), else None."""
    top = float(np.max(q))
    return top if top < threshold else None


class Confident(ModelPair):
    """pair, drafting at least one token a round, then while the draft's top probability at
    the newest token is >= threshold; everything else is pair's own."""

    def __init__(self, pair: ModelPair, threshold: float) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1]; got {threshold}")
        self.base, self.threshold = pair, float(threshold)
        self.V, self.names = pair.V, pair.names
        for same in ("p", "q", "key", "propose", "score", "name", "check_prefix", "draw_p",
                     "draw_q"):  # left as they are
            setattr(self, same, getattr(pair, same))

    @property
    def fingerprint(self) -> str:
        return getattr(self.base, "fingerprint", str(id(self.base)))

    def stop(self, prefix: Sequence[int], drafts: Sequence[int]) -> str | None:
        if not drafts:
            return None
        top = unsure(self.q(list(prefix) + list(drafts)), self.threshold)
        return None if top is None else f"max q {top:.2f} < {self.threshold:g}"
