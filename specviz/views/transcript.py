"""The /round page's transcript: rounds 0..rnd of one seeded stream, and running totals.

Only the rounds the page shows keep their frames, so a cached transcript stays small
however deep the round index is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.round import ORIGINS, RoundTrace, play_rounds

RND_MAX = 999  # last round of a seeded transcript the app replays

Row = dict[str, object]

TRANSCRIPT_SHOWN = 12  # earlier rounds listed under the animation (totals cover them all)


@dataclass(frozen=True)
class Totals:
    """Running totals over a run of rounds (one target call per round)."""

    rounds: int
    tokens: int  # emitted tokens, every origin
    drafted: int  # k per round
    accepted: int  # drafts kept by a coin
    by_origin: dict[str, int]  # origin -> emitted tokens of that origin
    tokens_per_call: float  # tokens / rounds (nan before the first round)
    acceptance_rate: float  # accepted / drafted (nan before the first round)


def transcript_totals(traces: Sequence[RoundTrace]) -> Totals:
    """Tokens per target call = emitted / rounds; acceptance = accepted / drafted."""
    rounds = len(traces)
    tokens = sum(len(t.emitted) for t in traces)
    drafted = sum(t.k for t in traces)
    accepted = sum(t.accepted for t in traces)
    by_origin = {o: sum(1 for t in traces for e in t.emitted if e.origin == o) for o in ORIGINS}
    return Totals(
        rounds, tokens, drafted, accepted, by_origin,
        tokens / rounds if rounds else float("nan"),
        accepted / drafted if drafted else float("nan"),
    )


@dataclass(frozen=True)
class RoundTranscript:
    """Round rnd of a seeded transcript, the few rounds before it, and running totals."""

    rnd: int  # index of the current round (0 = the first)
    current: RoundTrace  # round rnd
    earlier: tuple[RoundTrace, ...]  # rounds first..rnd-1 (at most `shown`), oldest first
    first: int  # round index of earlier[0]
    before: Totals  # rounds 0..rnd-1
    through: Totals  # rounds 0..rnd

    @property
    def previous(self) -> RoundTrace | None:
        """The round before the current one (None for round 0)."""
        return self.earlier[-1] if self.earlier else None


def round_transcript(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    rnd: int,
    seed: int = 0,
    rule: str = "correct",
    vocab: Sequence[str] | None = None,
    shown: int = TRANSCRIPT_SHOWN,
) -> RoundTranscript:
    """Rounds 0..rnd of play_rounds on one seeded stream; keeps only what the page shows,
    so a cached copy stays small whatever rnd is."""
    traces = play_rounds(P, Q, ctx, k, int(rnd) + 1, seed, rule,
                         tuple(vocab) if vocab else None, traced=int(shown) + 1)
    first = max(0, int(rnd) - int(shown))
    return RoundTranscript(
        rnd=int(rnd), current=traces[-1], earlier=traces[first:-1], first=first,
        before=transcript_totals(traces[:-1]), through=transcript_totals(traces),
    )


def transcript_rows(tr: RoundTranscript, include_current: bool) -> list[Row]:
    """One row per listed round (for a CSV): its context, tokens, origins, kept drafts."""
    traces = tr.earlier + ((tr.current,) if include_current else ())
    return [
        {"round": tr.first + i, "context": t.name(t.ctx),
         "emitted": " ".join(t.name(e.token) for e in t.emitted),
         "origins": " ".join(e.origin for e in t.emitted),
         "flushed": " ".join(t.name(t.positions[j - 1].token) for j in t.flushed),
         "accepted": t.accepted, "drafted": t.k, "tokens": len(t.emitted)}
        for i, t in enumerate(traces)
    ]
