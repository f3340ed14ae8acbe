"""Decoding the real model, with and without speculation, timed as it runs.

speculate() chains rounds of the one engine (core.round.play_round) on an LLMPair; plain()
decodes the target alone, one position per call, drawing each token from p by the same
inverse CDF (T = 0: its argmax, greedy). Both run the prompt's prefill first, off the clock
(warm), so a decode's time and passes are those of decoding alone, and stop at max_new
tokens or, unless told not to (a measurement: runs of equal length), at the end-of-text
token. summarise() turns a speculative run and a plain one into what the method's cost
model needs, measured here: the target's pass time at 1 and at k + 1 positions (a token
tree's: at the rows its pass scores, its nodes + 1), the draft's time per drafted token,
so c, tokens per target call, acceptance by position, tokens per second either way, and
the time each spent outside its passes (the round engine: rows, draws).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core import interrupt
from ..core.round import play_round
from ..core.roundstats import RoundStats
from ..core.sampling import draw_row
from ..core.scenario import Scenario
from ..core.tables import check_k, check_n
from ..core.trace import RoundTrace
from .pair import LLMPair, softmax, warm
from .runner import CONTEXT_MAX, Runner

NEW_MAX = 512  # tokens one decode may generate


@dataclass(frozen=True)
class Tally:
    """What one played round counts for the cost model."""

    k: int  # drafts in the round's chain (a proposal may hold fewer than asked for)
    drafted: int  # tokens the round drafted: k, or a token tree's nodes
    accepted: int
    emitted: int

    @classmethod
    def of(cls, tr: RoundTrace) -> Tally:
        return cls(tr.k, len(tr.tree) or tr.k, tr.accepted, len(tr.emitted))


@dataclass(frozen=True)
class Run:
    tokens: tuple[int, ...]  # generated, prompt not included (cut at max_new)
    seconds: float  # wall clock of the decode, after the prompt's prefill
    target_passes: tuple[tuple[int, int, float], ...]  # (positions, heads, s) per call
    draft_passes: tuple[tuple[int, int, float], ...]
    rounds: tuple[RoundTrace, ...] = ()  # the played rounds, when kept (keep_rounds)
    tallies: tuple[Tally, ...] = ()  # every round's counts
    made: int = 0  # tokens generated in `seconds` (the last round may pass max_new)
    prefill_s: float = 0.0  # the prompt's prefill, off the clock

    @property
    def rate(self) -> float:
        """Tokens per second."""
        return self.made / self.seconds

    @property
    def outside_s(self) -> float:
        """Seconds of the decode outside the passes (the round engine, rows, draws)."""
        return self.seconds - sum(s for _, _, s in self.target_passes + self.draft_passes)


def check_new(max_new: object, prompt_len: int) -> int:
    """Tokens to generate: 1..NEW_MAX, with room for them after the prompt."""
    max_new = check_n(max_new, NEW_MAX, "max_new")
    if prompt_len + max_new + 64 + 1 > CONTEXT_MAX:
        raise ValueError(f"the prompt ({prompt_len} tokens) and max_new ({max_new}) leave no "
                         f"room in the {CONTEXT_MAX}-token context")
    return max_new


def speculate(pair: LLMPair, prompt: Sequence[int], *, k: int, seed: int = 0,
              rule: str = "correct", max_new: int = 64, stop_at_eos: bool = True,
              keep_rounds: bool = True) -> Run:
    """Rounds from prompt until max_new tokens (the last round may pass it; cut) or, when
    stop_at_eos, EOS. keep_rounds: keep each round's trace (its rows: megabytes a round),
    else its tally only."""
    k, max_new = check_k(k), check_new(max_new, len(prompt))
    rng = np.random.default_rng(seed)
    prefill = pair.warm(prompt)
    prefix, rounds, tallies, out = list(prompt), [], [], []
    t_n, d_n = len(pair.target.passes), len(pair.draft_passes)
    t0 = time.perf_counter()
    while len(out) < max_new:
        interrupt.check(deadline=False)  # the session has gone: stop
        tr = play_round(Scenario.on(pair, prefix, k=k, rule=rule), rng=rng)
        tallies.append(Tally.of(tr))
        if keep_rounds:
            rounds.append(tr)
        out += tr.tokens
        prefix += tr.tokens
        if stop_at_eos and pair.model.cfg.eos in tr.tokens:
            out = out[: out.index(pair.model.cfg.eos) + 1]
            break
    seconds = time.perf_counter() - t0
    drafts = pair.draft_passes[d_n:]
    return Run(tuple(out[:max_new]), seconds, tuple(pair.target.passes)[t_n:], drafts,
               tuple(rounds), tuple(tallies), len(out), prefill)


def plain(runner: Runner, prompt: Sequence[int], *, T: float, seed: int = 0,
          max_new: int = 64, stop_at_eos: bool = True) -> Run:
    """The target alone: one call per token, x ~ softmax(z / T) by inverse CDF; T = 0:
    x = argmax z (greedy)."""
    rng = np.random.default_rng(seed)
    if T == 0:
        return alone(runner, prompt, max_new=max_new, stop_at_eos=stop_at_eos,
                     pick=lambda seq, z: int(np.argmax(z)))
    return alone(runner, prompt, max_new=max_new, stop_at_eos=stop_at_eos,
                 pick=lambda seq, z: draw_row(softmax(z, T), rng.random()))


def alone(runner: Runner, prompt: Sequence[int], *, max_new: int,
          pick: Callable[[list[int], np.ndarray], int], stop_at_eos: bool = True) -> Run:
    """The target alone, one position per call: x = pick(prefix, its logits z there)."""
    max_new = check_new(max_new, len(prompt))
    seq, out = [int(t) for t in prompt], []
    prefill = warm(runner, seq)
    n0 = len(runner.passes)
    t0 = time.perf_counter()
    while len(out) < max_new:
        interrupt.check(deadline=False)  # the session has gone: stop
        x = pick(seq, runner.logits(seq, [len(seq)])[0])
        seq.append(x)
        out.append(x)
        if stop_at_eos and x == runner.w.cfg.eos:
            break
    return Run(tuple(out), time.perf_counter() - t0, tuple(runner.passes)[n0:], (),
               made=len(out), prefill_s=prefill)


@dataclass(frozen=True)
class Summary:
    k: int
    rounds: int
    tokens: int
    target_1_s: float  # median target pass at one position (the plain decode's)
    target_k1_s: float | None  # median verification pass over k + 1 positions (a tree's)
    verify_rows: float | None  # rows those passes scored: k + 1, or a tree's nodes + 1
    drafted_per_round: float  # tokens a round drafted: k, or a tree's nodes
    draft_s: float | None  # draft seconds per drafted token (None: lookup, no passes)
    c: float | None  # draft_s / target_1_s
    tokens_per_call: float
    accepted_at: tuple[int, ...]  # rounds whose draft i was accepted, i = 1..k
    drafted_at: tuple[int, ...]  # rounds that drafted a position i
    spec_tps: float  # tokens per second, speculative
    plain_tps: float  # tokens per second, the target alone
    outside_round_s: float = 0.0  # speculative: seconds a round outside its passes
    outside_token_s: float = 0.0  # the target alone: seconds a token outside its pass
    made: tuple[int, int] = (0, 0)  # tokens each decode generated (speculative, alone)

    @property
    def speedup(self) -> float:
        return self.spec_tps / self.plain_tps


def summarise(spec: Run, alone: Run, *, k: int, scored: int | None = None) -> Summary:
    """What the two runs measured (spec: speculate(), alone: plain()). scored: the most
    rows a round's verification pass scores (kinds' scored; default k + 1): a chain's
    passes are those of exactly k + 1 rows, a tree's every pass of more than one row
    (siblings drawn alike are one node, so a pass may score fewer)."""
    scored = k + 1 if scored is None else int(scored)
    ones = [s for n, h, s in alone.target_passes if n == 1 and h == 1]
    verify = [(h, s) for n, h, s in spec.target_passes
              if (h == k + 1 if scored == k + 1 else 1 < h <= scored)]
    k1 = [s for _, s in verify]
    rounds = spec.tallies
    drafted = sum(t.drafted for t in rounds)
    draft_s = sum(s for _, _, s in spec.draft_passes) / drafted \
        if spec.draft_passes and drafted else None  # (a stop may leave nothing drafted)
    t1 = float(np.median(ones)) if ones else float("nan")
    kept = np.bincount([t.accepted for t in rounds], minlength=k + 1)  # (k+1,)
    stats = RoundStats(histogram=kept, tokens=sum(t.emitted for t in rounds), drafted=drafted)
    dra = [sum(1 for t in rounds if t.k > i) for i in range(k)]
    return Summary(
        k=k, rounds=len(rounds), tokens=len(spec.tokens), target_1_s=t1,
        target_k1_s=float(np.median(k1)) if k1 else None, draft_s=draft_s,
        verify_rows=float(np.median([h for h, _ in verify])) if verify else None,
        drafted_per_round=drafted / max(1, len(rounds)),
        c=None if draft_s is None else draft_s / t1,
        tokens_per_call=stats.tokens_per_call,
        accepted_at=tuple(int(a) for a in stats.accepted_at), drafted_at=tuple(dra),
        spec_tps=spec.rate, plain_tps=alone.rate,
        outside_round_s=spec.outside_s / max(1, len(rounds)),
        outside_token_s=alone.outside_s / max(1, alone.made), made=(spec.made, alone.made))
