"""/llm's rounds: one seeded stream of rounds on the real pair, played a round at a time.

A round of Gemma 3 270M costs most of a second here, so /llm does not replay rounds 0..rnd
from the seed at every new round as /round does. A Stream keeps the pair (its KV caches),
the generator and the prefix it has reached, and plays the next round on them through the
one engine (core.round.play_rounds, drawing on from the stream's generator; each round
narrated as it is played, views.narration). Those are the draws and the model calls that
play_rounds from the seed makes in one call, so a link reopens the same round; a stream
the server has let go is played again from the seed, the same calls in the same order.

Only the last KEPT_TRACES rounds keep their rows and frames (a row is V = 262,144 floats);
a round further back is played again from the seed when asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..core import interrupt
from ..core.draws import RngDraws
from ..core.pair import ModelPair
from ..core.scenario import Scenario
from ..core.trace import RoundDigest, RoundTrace
from .narration import play_narrated
from .transcript import RoundTranscript, transcript_of

KEPT_TRACES = 3  # rounds that keep their frames: this one, the one before (prev), one more
ROUNDS_MAX = 40  # rounds a stream may play (the URL's rnd is held there, with a note)


def digest(tr: RoundTrace | RoundDigest) -> RoundDigest:
    """What running totals need of a round, without its rows."""
    if isinstance(tr, RoundDigest):
        return tr
    return RoundDigest(tr.ctx, tr.k, tr.emitted, tr.accepted)


def trace_bytes(tr: RoundTrace | RoundDigest) -> int:
    """Bytes of the rows a round keeps, each row once (a token tree's siblings share rows);
    its frames' share is small beside them."""
    if isinstance(tr, RoundDigest):
        return 0
    rows = [r for p in tr.positions for r in (p.p_row, p.q_row)]
    rows += [r for p in tr.positions for t in p.tries
             for r in (t.against, t.drawn_from, t.after) if r is not None]
    rows += [r for r in (tr.rejection_row, tr.bonus_row) if r is not None]
    return sum(r.nbytes for r in {id(r): r for r in rows}.values())


class Stream:
    """Rounds chained from a prompt on one seeded stream of draws, played on demand.

    pair: what the rounds are played on (the real pair, maybe under a warp); settle: called
    after each round (the real pair's LLMPair.settle, which lets its kept rows go); owner:
    the pair that holds the memory (nbytes, shared: its caches, its trimmed head), if not
    pair itself."""

    def __init__(self, pair: ModelPair, prompt: Sequence[int], *, k: int, seed: int,
                 rule: str, settle=None, owner=None) -> None:
        self.pair, self.k, self.rule, self.settle = pair, int(k), rule, settle
        self.owner = pair if owner is None else owner
        self.prompt = tuple(pair.check_prefix(list(prompt)))
        self.draws = RngDraws(np.random.default_rng(seed))
        self.prefix = list(self.prompt)
        self.rounds: list[RoundTrace | RoundDigest] = []
        self.lock = threading.Lock()

    @property
    def played(self) -> int:
        return len(self.rounds)

    @property
    def nbytes(self) -> int:
        """Bytes the stream holds of its own: its rounds' rows and its pair's caches."""
        return sum(trace_bytes(r) for r in self.rounds[-KEPT_TRACES:]) + \
            int(getattr(self.owner, "nbytes", 0))

    @property
    def shared(self) -> dict:
        """What its pair holds that other streams' may hold too (a trimmed head)."""
        return dict(getattr(self.owner, "shared", {}))

    def kept(self, rnd: int) -> bool:
        """Whether round rnd (and the one before it, for stepping back) has its frames."""
        return all(0 <= i < self.played and isinstance(self.rounds[i], RoundTrace)
                   for i in range(max(0, rnd - 1), rnd + 1))

    def extend(self, rnd: int) -> int:
        """Play on until round rnd is played, or the request's time budget is spent
        (core.interrupt.overdue) with at least one new round; returns the last round played."""
        rnd = min(int(rnd), ROUNDS_MAX)
        with self.lock:
            start = self.played
            while self.played <= rnd:
                if self.played > start and interrupt.overdue():
                    break
                (tr,) = play_narrated(Scenario.on(self.pair, self.prefix, k=self.k, rule=self.rule),
                                      n_rounds=1, draws=self.draws)
                if self.settle is not None:
                    self.settle()
                self.rounds.append(tr)
                self.prefix += tr.tokens
                if self.played > KEPT_TRACES:
                    self.rounds[-KEPT_TRACES - 1] = digest(self.rounds[-KEPT_TRACES - 1])
            return min(rnd, self.played - 1)

    def transcript(self, rnd: int) -> RoundTranscript:
        """The transcript at round rnd, which must be kept (kept(rnd))."""
        if not self.kept(rnd):
            raise ValueError(f"round {rnd} is not kept by this stream")
        return transcript_of(self.rounds[: rnd + 1], self.prompt)


def rounds_note(asked: int, reached: int) -> str | None:
    """What the page says when round `asked` is not shown: held at ROUNDS_MAX, or the
    request's time ran out first."""
    if reached >= asked:
        return None
    if asked > ROUNDS_MAX and reached == ROUNDS_MAX:
        return (f"Round {asked:,} is past the {ROUNDS_MAX} rounds one stream of the real model "
                f"plays here: held at round {ROUNDS_MAX}.")
    return (f"Round {asked:,} was not reached in the time one request may take (about a "
            f"second a round on this machine): showing round {reached:,}. Step on to play "
            "further; the rounds played so far are kept.")
