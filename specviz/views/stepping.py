"""Stepping through a played round: which frame is on screen, and what it has shown.

A round is played and narrated once (views.narration); stepping only moves an index into
its steps, and a View says what a viewer has been shown by that index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.roundstats import RoundStats
from ..core.rules import get_rule
from .narration import Narrated, prob
from .transcript import RND_MAX, RoundTranscript


@dataclass(frozen=True)
class View:
    """What a viewer has been shown by a step of a round."""

    kind: str  # the step's kind
    drafted: int  # drafts revealed so far, 0..k
    verified: int  # the position of the last coin shown, 0..k
    focus: int | None  # 1-based position the bars and the coin are about
    scored: bool  # the target has been called: p is known at every prefix
    final: bool  # the rejection draw or the bonus token has been shown
    settled: bool  # the later drafts have been flushed (or emitted unchecked)
    done: bool  # the last step: the round's output is complete
    sibling: int | None = None  # token tree: the try at depth `verified` last shown
    coined: frozenset[int] = frozenset()  # positions whose (last) coin has been shown
    decided: frozenset[int] = frozenset()  # positions known kept or not: a coin shown at
    # i decides i, and a kept i decides 1..i too (block verification's backward coins)


def step_label(trace: Narrated, step: int) -> str:
    """The step's kind as the counter names it: a round that drafted nothing has no bonus,
    its one token is plain decoding."""
    kind = trace.steps[step].kind
    return "plain decoding" if kind == "bonus" and trace.k == 0 else kind


def last_step(trace: Narrated) -> int:
    """Index of the round's last step."""
    return len(trace.steps) - 1


def clamp_step(trace: Narrated, step: int) -> tuple[int, str | None]:
    """step moved into 0..last_step(trace), with a note for the user when it had to move."""
    last = last_step(trace)
    if step < 0:
        return 0, f"Step {step} is before the first step; showing step 0."
    if step > last:
        return last, (f"Step {step} is past the end of this round (steps 0..{last}); "
                      f"showing the last step, {last}.")
    return int(step), None


def view(trace: Narrated, step: int) -> View:
    """Replay trace.steps[0..step] and report what is on screen at that step."""
    if not 0 <= step <= last_step(trace):
        raise ValueError(f"step must be in 0..{last_step(trace)}; got {step}")
    drafted = verified = 0
    focus = None
    final = settled = scored = False
    coined: set[int] = set()
    decided: set[int] = set()
    sibling = None
    for frame in trace.steps[: step + 1]:
        if frame.kind == "draft":
            drafted, focus = frame.position, frame.position
        elif frame.kind == "score":
            scored = True
        elif frame.kind == "verify":
            verified, focus, scored = frame.position, frame.position, True
            pos, sibling = trace.positions[verified - 1], frame.sibling
            if sibling is not None and sibling + 1 < len(pos.tries):
                continue  # an earlier sibling: the node is not decided yet
            coined.add(verified)
            decided.update(range(1, verified + 1) if pos.accepted else (verified,))
        elif frame.kind in ("residual", "bonus"):
            final = True
        elif frame.kind in ("flush", "unverified"):
            settled = True
    cur = trace.steps[step]
    return View(cur.kind, drafted, verified, focus, scored, final, settled, cur.kind == "done",
                sibling, frozenset(coined), frozenset(decided))


def coin_at(trace: Narrated, v: View) -> tuple[int, float, float, bool] | None:
    """(token, threshold, u, kept) of the coin in focus, the sibling's in a token tree;
    None before it is shown."""
    if v.focus is None or v.verified < v.focus:
        return None
    pos = trace.positions[v.focus - 1]
    if v.sibling is not None and v.focus == v.verified:
        t = pos.tries[v.sibling]
        return t.token, t.threshold, t.u, t.accepted
    return pos.token, pos.threshold, float(pos.u), bool(pos.accepted)


@dataclass(frozen=True)
class SiblingResidual:
    """A token tree's residual after the sibling in focus: what the next one is tried
    against when it failed (or the last token's law), what it was checked against if kept."""

    depth: int
    sibling: int  # 0-based
    token: int  # the sibling's token
    kept: bool
    label: str  # p_j, named for the chart
    row: np.ndarray  # (V,) that residual
    p_row: np.ndarray  # (V,) p at the node
    q_row: np.ndarray  # (V,) q_j, the row the sibling was drawn from


def sibling_residual(trace: Narrated, v: View) -> SiblingResidual | None:
    """The residual bars of a token tree's verify frame (None off those frames)."""
    if v.sibling is None or v.final or v.kind != "verify":
        return None
    pos = trace.positions[v.verified - 1]
    j, t = v.sibling, pos.tries[v.sibling]
    if t.accepted:
        label, row = f"p_{j + 1}, it was checked against", t.against
    elif j + 1 < len(pos.tries):
        label, row = f"p_{j + 2}, the next sibling's", t.after
    else:
        label, row = f"p_{j + 2}, the last token's law", t.after
    return SiblingResidual(pos.i, j, t.token, t.accepted, label, row, pos.p_row, t.drawn_from)


def advance(trace: Narrated, step: int, rnd: int) -> tuple[int, int]:
    """(step, rnd) one frame on: the next step, or step 0 of the next round after the last."""
    if step < last_step(trace):
        return step + 1, rnd
    return (0, rnd + 1) if rnd < RND_MAX else (step, rnd)


def retreat(step: int, rnd: int, previous: Narrated | None) -> tuple[int, int]:
    """(step, rnd) one frame back: the step before, or the last step of the previous round."""
    if step > 0:
        return step - 1, rnd
    if rnd > 0 and previous is not None:
        return last_step(previous), rnd - 1
    return step, rnd


def round_after(rnd: int) -> int:
    """The next round's index (stays at RND_MAX)."""
    return min(rnd + 1, RND_MAX)


@dataclass(frozen=True)
class Chip:
    """One token of the round as a viewer sees it at a step: the page's chips and the
    export's markers both draw these."""

    slot: int  # 0 = the context, i = draft position i, k + 1 = the bonus
    final: bool  # the redrawn or bonus token (drawn on a row of its own in the export)
    status: str  # context | pending | drafted | accepted | rejected | resampled | bonus |
    #              plain | flushed | unverified
    name: str  # the token's name (or x_i before it is drafted); not escaped
    lines: tuple[str, ...]  # the numbers shown with it (q, then p and u once checked)
    coin: bool = False  # its coin has been shown


def _draft_status(trace: Narrated, v: View, i: int, accepted: bool | None) -> str:
    """Its verdict from the step that decides it; struck through once thrown away."""
    if v.settled and i in trace.flushed:
        return "flushed"
    if i in v.decided:
        return "accepted" if accepted else "rejected"
    if v.settled and trace.rejected_at is not None and i > trace.rejected_at:
        return "unverified"
    return "drafted"


def chips(trace: Narrated, step: int) -> list[Chip]:
    """The context, each draft slot (pending until drafted, then its verdict once its coin
    is shown), the redrawn or bonus token once drawn (with why the draft stopped short,
    core.stop). A round that drafted nothing emits its one token by plain decoding."""
    v = view(trace, step)
    out = [Chip(0, False, "context", trace.name(trace.ctx), ())]
    resampled = next((e for e in trace.emitted if e.origin == "resampled"), None)
    bonus = next((e for e in trace.emitted if e.origin == "bonus"), None)
    for pos in trace.positions:
        i = pos.i
        if i > v.drafted:
            out.append(Chip(i, False, "pending", f"x{i}", ("?",)))
            continue
        src = trace.sources[i - 1] if i <= len(getattr(trace, "sources", ())) else f"x{i}"
        lines = [f"{src}  q={prob(pos.q)}"]
        if i in v.coined:
            lines.append(f"p={prob(pos.p)}  u={prob(pos.u)}")
        elif i in v.decided:
            lines.append(f"p={prob(pos.p)}  kept with the block")
        status = _draft_status(trace, v, i, pos.accepted)
        out.append(Chip(i, False, status, trace.name(pos.token), tuple(lines),
                        i in v.coined))
        if v.final and resampled is not None and i == trace.rejected_at:
            law = get_rule(trace.rule).reject_law
            out.append(Chip(i, True, "resampled", trace.name(resampled.token),
                            (f"from {law}",)))
    if v.final and bonus is not None:
        status, line = ("bonus", "from p, free") if trace.k else ("plain", "from p: no drafts")
        why = trace.stopped.split(" (")[0]  # the draft's stop, short
        out.append(Chip(trace.k + 1, True, status, trace.name(bonus.token),
                        (line, f"stopped: {why}") if why else (line,)))
    return out


def totals_at(tr: RoundTranscript, step: int) -> RoundStats:
    """Running totals at this step: the current round counts once its last frame is shown."""
    return tr.through if view(tr.current, step).done else tr.before
