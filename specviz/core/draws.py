"""Where a round's uniforms come from.

A round asks for them by role and position: draft(i, j) drafts try j at position i
(0-based), coin(i, j) checks it, final(i) draws the token that ends the round at
position i. RngDraws hands out a generator's next uniform on each call, so a round uses
one per drafted token, then one coin per verified position, then one for the last token.
StreamDraws reads common random numbers indexed by output position (specviz.core.dynamic),
so several draft-length policies decoding one text see the same draws.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Draws(Protocol):
    def draft(self, i: int, j: int = 0) -> float: ...

    def coin(self, i: int, j: int = 0) -> float: ...

    def final(self, i: int) -> float: ...


class RngDraws:
    """The generator's next uniform, whatever is asked."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def draft(self, i: int, j: int = 0) -> float:
        return float(self.rng.random())

    coin = final = draft


class StreamDraws:
    """U[t, col] for output position t = start + i: columns draft_0..draft_(m-1),
    coin_0..coin_(m-1), final (m = tries per position: 1 for a chain, a tree's widest node)."""

    def __init__(self, U: np.ndarray, m: int = 1) -> None:
        self.U, self.m, self.start = U, m, 0  # U: (positions, 2m + 1)

    def draft(self, i: int, j: int = 0) -> float:
        return float(self.U[self.start + i, j])

    def coin(self, i: int, j: int = 0) -> float:
        return float(self.U[self.start + i, self.m + j])

    def final(self, i: int) -> float:
        return float(self.U[self.start + i, 2 * self.m])
