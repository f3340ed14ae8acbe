"""What a played round holds: every draw and verification of one round, frozen.

A RoundTrace records the drafts (Position), each candidate tried at a multi-draft or tree
position (Try) and the emitted tokens (Emitted), so the app animates a round without
drawing again (views.narration gives it its frames). A RoundDigest keeps only what running
totals need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only float64 row (a trace never changes once played): the row itself when it
    is one already and owns its memory (a model pair's cached rows: nothing writes them
    again), else a copy."""
    if isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.owndata \
            and not a.flags.writeable:
        return a
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Try:
    """One candidate of a multi-draft position, checked against p_j (SpecInfer)."""

    token: int
    q: float
    threshold: float  # min(1, p_j(x) / q(x))
    u: float
    accepted: bool
    against: np.ndarray | None = None  # (V,) token tree: p_j, the row it is checked against
    drawn_from: np.ndarray | None = None  # (V,) token tree: q_j, the row it was drawn from
    after: np.ndarray | None = None  # (V,) token tree: p_(j+1), what a failure leaves


@dataclass(frozen=True)
class Position:
    """Draft position i (1-based): the drafted token and its verification."""

    i: int
    context: int  # the newest token of the prefix both models condition on here
    token: int  # drafted x_i
    p_row: np.ndarray  # (V,) target p(.|prefix)
    q_row: np.ndarray  # (V,) what the draft sampled from at prefix
    p: float  # p(x_i)
    q: float  # q(x_i)
    threshold: float  # the rule's chance of keeping x_i, min(1, p/q) for the standard rule
    u: float | None  # the coin, None when the position is never verified
    accepted: bool | None  # None when never verified
    tries: tuple[Try, ...] = ()  # multi-draft: every candidate tried here, in order

    @property
    def verified(self) -> bool:
        return self.accepted is not None


@dataclass(frozen=True)
class Emitted:
    token: int
    origin: str  # accepted | resampled | bonus | unverified
    position: int  # the 1-based position it stands in within the round


class _Output:
    """What every played round tells: the tokens it emitted, and where the next starts."""

    emitted: tuple[Emitted, ...]

    @property
    def next_ctx(self) -> int:
        return self.emitted[-1].token

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(e.token for e in self.emitted)


@dataclass(frozen=True)
class RoundTrace(_Output):
    rule: str
    ctx: int  # the newest token of the prefix the round starts from
    k: int  # tokens drafted (a proposal may hold fewer than asked for)
    vocab: tuple[str, ...]
    positions: tuple[Position, ...]  # all drafts, verified or not
    rejected_at: int | None  # 1-based position of the first rejection, None if all kept
    rejection_row: np.ndarray | None  # (V,) the law the rejection token came from
    rejection_context: int | None
    bonus_row: np.ndarray | None  # (V,) p at the last prefix, when all were kept
    bonus_context: int | None
    final_u: float  # the uniform behind the rejection or bonus draw
    emitted: tuple[Emitted, ...]
    flushed: tuple[int, ...]  # 1-based positions of drafts thrown away
    tree: tuple[tuple[tuple[int, ...], int], ...] = ()  # a token tree: (path, token), drafted
    proposed: bool = False  # the drafts are the pair's proposal (prompt lookup), not from q
    weights: tuple[float, ...] = ()  # block verification: w_0..w_k along the block
    stopped: str = ""  # why the draft stopped short of k (the pair's stop), "" if it did not

    @property
    def accepted(self) -> int:
        return sum(1 for p in self.positions if p.accepted)

    def name(self, x: int) -> str:
        return self.vocab[x] if 0 <= x < len(self.vocab) else str(x)


@dataclass(frozen=True)
class RoundDigest(_Output):
    """What a round emitted, without rows or frames: enough for running totals."""

    ctx: int
    k: int  # tokens drafted
    emitted: tuple[Emitted, ...]
    accepted: int
    beta: tuple[float, ...] = ()  # sum_x min(p, q) at each verified position, when asked
