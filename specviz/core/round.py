"""One round of speculative decoding against a model pair, played once into a frozen trace.

The rule's kind plays it (specviz.core.kinds): a chain of drafts verified token by token
(Leviathan et al. 2022, Algorithm 1), a block verified jointly, or a token tree whose
siblings are tried in turn (SpecInfer's m candidates a position among them).

The trace (core.trace) holds every draw (drafts, coins, the last token), so the app
animates a round (views.narration) without drawing again. Uniforms are taken in this
order: one per drafted token, one coin per verified position, one for the last token.
"""

from __future__ import annotations

import numpy as np

from . import interrupt
from .draws import Draws, RngDraws
from .kinds import kind_of
from .pair import ModelPair
from .rules import Rule
from .scenario import Scenario
from .tables import check_n
from .trace import RoundDigest, RoundTrace

ROUNDS_MAX = 10_000  # rounds one transcript may chain


def play_round(sc: Scenario, *, rng: np.random.Generator | None = None) -> RoundTrace:
    """Play one round from sc.prefix, drawing from rng (None: a stream seeded sc.seed)."""
    rng = np.random.default_rng(sc.seed) if rng is None else rng
    return play(sc.pair, list(sc.prefix), sc.k, sc.rule, RngDraws(rng))


def play_rounds(sc: Scenario, *, n_rounds: int, traced: int | None = None,
                draws: Draws | None = None) -> tuple[RoundTrace | RoundDigest, ...]:
    """A transcript: n_rounds rounds chained from sc.prefix on one stream seeded sc.seed.

    With traced = m only the last m rounds carry their rows and frames (RoundTrace); the
    earlier ones are RoundDigest, played with the same draws at a fraction of the cost.
    draws: a stream to go on drawing from (a transcript extended a few rounds at a time,
    prefix the one it reached); None starts one from sc.seed.
    """
    pair, prefix, k, r = sc.pair, list(sc.prefix), sc.k, sc.rule
    n_rounds = check_n(n_rounds, ROUNDS_MAX, "n_rounds")
    draws = RngDraws(np.random.default_rng(sc.seed)) if draws is None else draws
    first_traced = 0 if traced is None else max(0, n_rounds - int(traced))
    out = []
    for i in range(n_rounds):
        interrupt.check()
        tr = play(pair, prefix, k, r, draws, light=i < first_traced)
        out.append(tr)
        prefix = prefix + list(tr.tokens)
    return tuple(out)


def play(pair: ModelPair, prefix: list[int], k: int, rule: Rule, draws: Draws,
         light: bool = False, betas: bool = False) -> RoundTrace | RoundDigest:
    """One round from a checked prefix. light=True stops once the tokens are known (same
    draws, no frames); betas=True adds sum_x min(p, q) at each verified position."""
    return kind_of(rule).play(pair, prefix, k, rule, draws, light, betas)
