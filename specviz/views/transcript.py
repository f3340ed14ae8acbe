"""The transcript of /round and /text: rounds 0..rnd of one seeded stream, running totals.

Only the rounds the page shows keep their frames, so a cached transcript stays small
however deep the round index is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.kinds.treeshape import Paths
from ..core.roundstats import RoundStats
from ..core.rules import drafted, with_tree
from ..core.scenario import Scenario
from ..core.trace import RoundDigest, RoundTrace
from .demos import Row
from .narration import Narrated, play_narrated
from .work import heavy

RND_MAX = 999  # last round of a seeded transcript the app replays
# Rows one /round request may replay on the toy tables: a round scores drafted + k + 1 rows
# (core.rules.drafted; 2k + 1 for a chain, a tree's nodes + k + 1), ~35 us a row traced on
# 2 busy cores (benchmarks/bench_budget.py): about 5 s. Rounds 0..999 of a chain at k = 32
# fit; a 256-node tree does not.
ROUND_ROWS_MAX = 150_000


TRANSCRIPT_SHOWN = 12  # earlier rounds listed under the animation (totals cover them all)


def transcript_totals(traces: Sequence[RoundTrace | RoundDigest]) -> RoundStats:
    """Running totals over a run of rounds (one target call per round): the rounds by drafts
    kept (k: the most any round drafted), the tokens emitted and the drafts proposed."""
    kept = np.array([t.accepted for t in traces], dtype=np.int64)  # (rounds,)
    k = max((t.k for t in traces), default=0)
    return RoundStats(histogram=np.bincount(kept, minlength=k + 1),
                      tokens=sum(len(t.emitted) for t in traces),
                      drafted=sum(t.k for t in traces))


def totals_metrics(t: RoundStats) -> list[tuple[str, str]]:
    """(label, value) pairs for the running totals ("–" before the first round)."""
    def num(x: float) -> str:
        return "–" if math.isnan(x) else f"{x:.3f}"

    return [("rounds (target calls)", f"{t.rounds}"), ("tokens emitted", f"{t.tokens}"),
            ("tokens per target call", num(t.tokens_per_call)),
            ("acceptance (kept / drafted)", num(t.draft_acceptance_rate))]


@dataclass(frozen=True)
class RoundTranscript:
    """Round rnd of a seeded run from a prompt, the few rounds before it, running totals."""

    rnd: int  # index of the current round (0 = the first)
    current: Narrated  # round rnd
    earlier: tuple[Narrated | RoundDigest, ...]  # rounds first..rnd-1 (at most `shown`)
    first: int  # round index of earlier[0]
    before: RoundStats  # rounds 0..rnd-1
    through: RoundStats  # rounds 0..rnd
    context: tuple[int, ...]  # the prefix round rnd starts from: prompt + earlier output
    prompt_len: int

    @property
    def previous(self) -> Narrated | RoundDigest | None:
        """The round before the current one (None for round 0)."""
        return self.earlier[-1] if self.earlier else None


@heavy
def round_transcript(sc: Scenario, *, rnd: int, shown: int = TRANSCRIPT_SHOWN,
                     traced: int | None = None) -> RoundTranscript:
    """Rounds 0..rnd of play_rounds from the scenario's prefix (the prompt) on its seeded
    stream, narrated. Only the last `traced` rounds (default: the shown ones) keep their
    rows and frames, so a cached copy stays small whatever rnd is."""
    rounds = play_narrated(sc, n_rounds=int(rnd) + 1,
                           traced=int(shown) + 1 if traced is None else int(traced))
    return transcript_of(rounds, sc.prefix, shown=shown)


def transcript_of(rounds: Sequence[Narrated | RoundDigest], prompt: Sequence[int], *,
                  shown: int = TRANSCRIPT_SHOWN) -> RoundTranscript:
    """The transcript at the last of rounds (rounds 0..rnd, chained from the prompt's ids;
    the last one narrated)."""
    rnd = len(rounds) - 1
    context = list(prompt)
    for r in rounds[:-1]:
        context += r.tokens
    first = max(0, rnd - int(shown))
    return RoundTranscript(
        rnd=rnd, current=rounds[-1], earlier=tuple(rounds[first:-1]), first=first,
        before=transcript_totals(rounds[:-1]), through=transcript_totals(rounds),
        context=tuple(context), prompt_len=len(prompt),
    )


def round_cap(k: int, rnd: int, rule: str = "correct", tree: Paths = (),
              rnd_max: int = RND_MAX, *, row_cost: float = 1.0, budget: float = ROUND_ROWS_MAX,
              model: str = "") -> tuple[int, str | None]:
    """The round index held where replaying rounds 0..rnd would cost more than budget, and
    the note that says so: a round scores drafted + k + 1 rows (core.rules.drafted), each
    row_cost (a toy table's row 1; /text's, textpage.round_cap, in row entries)."""
    drafts = drafted(with_tree(rule, tree), k)
    rows = drafts + int(k) + 1
    cap = max(0, min(int(rnd_max), int(budget // (rows * row_cost)) - 1))
    if rnd <= cap:
        return int(rnd), None
    return cap, (f"Round {rnd:,} is past what one request may replay{model} at k = {k} with "
                 f"{drafts:,} drafted tokens a round ({rows:,} rows scored): held at round "
                 f"{cap:,}.")


TRANSCRIPT_COLUMNS = ("round", "context", "emitted", "origins", "flushed", "accepted",
                      "drafted", "tokens")


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
