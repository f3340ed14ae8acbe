"""The animation's frames of a played round, each captioned in plain numbers.

Kinds: start | draft | score | verify | residual | flush | unverified | bonus | done
(score: the one target call that gives p at every prefix, before the first coin). A round
is narrated once, where it is played (play_narrated): its frames ride with it (Narrated),
and stepping only moves an index into them. The words that depend on what the models are
(a table's row, an n-gram's prefix, the real model's text) are the pair's Wording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import singledispatch

from ..core.draws import Draws
from ..core.kinds.treeshape import rule_shape
from ..core.pair import ModelPair
from ..core.round import play_rounds
from ..core.rules import Rule, get_rule
from ..core.scenario import Scenario
from ..core.trace import RoundDigest, RoundTrace
from ..core.warp import WarpedPair
from ..llm.lossless import GreedyPair
from ..llm.pair import LLMPair
from ..text.pair import TextPair

SMALL = 0.01  # a probability under this prints to 3 significant digits, not 4 decimals


def prob(x: float) -> str:
    """A probability as the captions and chips print it: 4 decimals (0.3100, as the
    tutorial's tables), under SMALL 3 significant digits (0.00457, 3.12e-05), so that
    min(1, p/q) can be read off two small ones; exactly 0 as 0."""
    x = float(x)
    if x == 0:
        return "0"
    return f"{x:.4f}" if abs(x) >= SMALL else f"{x:.3g}"


@dataclass(frozen=True)
class Step:
    """One frame of the animation."""

    kind: str  # start | draft | score | verify | residual | flush | unverified | bonus | done
    position: int | None  # 1-based draft position the frame is about, if any
    caption: str
    sibling: int | None = None  # token tree: the 0-based try at that depth a verify frame is


@dataclass(frozen=True)
class Narrated(RoundTrace):
    """A played round with its frames: what the animated pages step through."""

    steps: tuple[Step, ...] = ()
    sources: tuple[str, ...] = ()  # what drafted each position, where a pair says (Medusa)


# ----------------------------------------------------------------------------- words
class Wording:
    """A pair's words in the captions; this default, a table's, names the context by its
    last token (the table's row)."""

    def __init__(self, pair: ModelPair) -> None:
        self.pair, self.name = pair, pair.name

    def start(self, prefix: Sequence[int], n_drafts: int, proposed: bool) -> str:
        return f"Context '{self.name(prefix[-1])}'. The draft will guess {n_drafts} tokens."

    def source(self, i: int) -> str | None:
        """What drafted position i, where the pair tells them apart (None: the one draft)."""
        return None

    def stopped(self, n_drafts: int, why: str) -> str:
        """A round whose draft stopped short of k (core.stop): after how many, and why."""
        return f" The draft stops after {n_drafts} token(s): {why}." if why else ""

    def draft(self, i: int, token: int, context: int, q: float, proposed: bool) -> str:
        return (f"Draft {i}: '{self.name(token)}' drawn from q(.|'{self.name(context)}'), "
                f"q = {prob(q)}.")

    def bonus(self, n_drafts: int, token: int, last: int) -> str:
        """The round's last token when no draft was rejected; a round that drafted nothing
        (prompt lookup without a match) has no bonus: its one token is plain decoding."""
        if not n_drafts:
            return (f"Nothing drafted, so this is plain decoding: one target call, one "
                    f"token from p: '{self.name(token)}'.")
        return (f"All {n_drafts} kept: bonus token '{self.name(token)}' from "
                f"p(.|'{self.name(last)}') at no extra target call.")


class TextWording(Wording):
    """An n-gram pair's: the context as the text's tail, the draft by its order, or prompt
    lookup's match."""

    def start(self, prefix: Sequence[int], n_drafts: int, proposed: bool) -> str:
        dec = self.pair.dec
        if not proposed:
            return (f"Context '{dec.tail(prefix)}'. The {dec.draft_order}-gram draft will "
                    f"guess {n_drafts} tokens.")
        what = (f"Prompt lookup found a match and copies the {n_drafts} token(s) that "
                "followed it" if n_drafts else
                "Prompt lookup found no earlier match: nothing is drafted")
        return f"Context '{dec.tail(prefix)}'. {what}."

    def draft(self, i: int, token: int, context: int, q: float, proposed: bool) -> str:
        src = "the text after the match (q = 1)" if proposed else f"q(.|…'{self.name(context)}')"
        return f"Draft {i}: '{self.name(token)}' from {src}, q = {prob(q)}."

    def bonus(self, n_drafts: int, token: int, last: int) -> str:
        if not n_drafts:
            return super().bonus(n_drafts, token, last)
        return (f"All {n_drafts} kept: bonus token '{self.name(token)}' from p at the last "
                "prefix, at no extra target call.")


class LLMWording(Wording):
    """The real model's: the context as text, the draft by its label."""

    def source(self, i: int) -> str | None:
        return f"head {i}" if self.pair.spec.kind == "medusa" else None

    def start(self, prefix: Sequence[int], n_drafts: int, proposed: bool) -> str:
        tail, spec = self.pair.tail(prefix), self.pair.spec
        if spec.kind == "medusa":
            heads = f"heads 1..{n_drafts}" if n_drafts > 1 else "head 1" if n_drafts else "heads"
            return (f"Context '{tail}'. The target drafts for itself: its Medusa {heads} "
                    f"read the hidden state its last pass left at the token "
                    f"before '{self.name(prefix[-1])}' and head i guesses the token i + 1 "
                    "ahead of it.")
        if not proposed:
            return f"Context '{tail}'. The {spec.label} draft will guess {n_drafts} tokens."
        what = (f"prompt lookup copies the {n_drafts} token(s) that followed an earlier "
                "match" if n_drafts else "prompt lookup found no earlier match: nothing is "
                "drafted")
        return f"Context '{tail}': {what}."

    def draft(self, i: int, token: int, context: int, q: float, proposed: bool) -> str:
        src = ("the text after the match" if proposed else f"head {i}'s q" if
               self.pair.spec.kind == "medusa" else f"q of the {self.pair.spec.label} draft")
        return f"Draft {i}: '{self.name(token)}' from {src}, q = {prob(q)}."


class GreedyWording(LLMWording):
    """The real model at T = 0: p and q one-hot at their argmax, so a draft is kept exactly
    when it is the target's argmax."""

    def start(self, prefix: Sequence[int], n_drafts: int, proposed: bool) -> str:
        return (super().start(prefix, n_drafts, proposed) + " Greedy (T = 0): a draft is "
                "kept exactly when it is the target's argmax.")

    def draft(self, i: int, token: int, context: int, q: float, proposed: bool) -> str:
        if proposed:
            return super().draft(i, token, context, q, proposed)
        who = f"head {i}'s" if self.pair.spec.kind == "medusa" else \
            f"the {self.pair.spec.label} draft's"
        return f"Draft {i}: '{self.name(token)}', {who} argmax (q = 1 there)."


@singledispatch
def wording(pair: ModelPair) -> Wording:
    """The words of a pair's captions, by the pair's type (a table's by default)."""
    return Wording(pair)


wording.register(TextPair, TextWording)
wording.register(LLMPair, LLMWording)
wording.register(GreedyPair, GreedyWording)


@wording.register
def _warped(pair: WarpedPair) -> Wording:  # a warp changes the rows, not the words
    return wording(pair.base)


# ----------------------------------------------------------------------------- rounds
def play_narrated(sc: Scenario, *, n_rounds: int, traced: int | None = None,
                  draws: Draws | None = None) -> tuple[Narrated | RoundDigest, ...]:
    """core.round.play_rounds, each traced round narrated as it is played."""
    rounds = play_rounds(sc, n_rounds=n_rounds, traced=traced, draws=draws)
    prefix, out = list(sc.prefix), []
    for tr in rounds:
        out.append(tr if isinstance(tr, RoundDigest) else
                   narrate(tr, pair=sc.pair, rule=sc.rule, prefix=prefix, k=sc.k))
        prefix = prefix + list(tr.tokens)
    return tuple(out)


def narrate(trace: RoundTrace, *, pair: ModelPair, rule: str | Rule, prefix: Sequence[int],
            k: int) -> Narrated:
    """The round with its frames, in the words of the pair it was played on; rule, prefix
    and k as it was played (a token tree's shape is the rule's at k)."""
    r = get_rule(rule)
    frames = {"block": _block, "tree": _tree}.get(r.kind, _chain)
    words = wording(pair)
    steps = frames(words, r, list(prefix), trace, int(k))
    sources = tuple(words.source(p.i) for p in trace.positions)
    return Narrated(**{f.name: getattr(trace, f.name) for f in fields(RoundTrace)},
                    steps=steps, sources=() if None in sources else sources)


def _done(words, emitted) -> Step:
    text = " ".join(words.name(e.token) for e in emitted)
    return Step("done", None, f"Round emits {len(emitted)} token(s) for one target call: "
                f"{text}.")


def _closing(words, tr, steps: list[Step]) -> tuple[Step, ...]:
    """A chain's last frames: the bonus when every draft was kept, then the round's output."""
    if tr.rejected_at is None:
        n = len(tr.positions)
        steps.append(Step("bonus", n + 1, words.bonus(n, tr.emitted[-1].token,
                                                      tr.bonus_context)))
    return tuple(steps + [_done(words, tr.emitted)])


def _opening(words, prefix, tr, note: str = "") -> list[Step]:
    """The start frame, then one frame per drafted token."""
    return [Step("start", None, words.start(prefix, len(tr.positions), tr.proposed)
                 + words.stopped(len(tr.positions), tr.stopped) + note)
            ] + [Step("draft", pos.i, words.draft(pos.i, pos.token, pos.context, pos.q,
                                                  tr.proposed)) for pos in tr.positions]


def _chain(words, rule, prefix, tr, k) -> tuple[Step, ...]:
    """Frames of a one-draft-per-position round."""
    name, n = words.name, len(tr.positions)
    steps = _opening(words, prefix, tr)
    if any(pos.verified for pos in tr.positions):
        steps.append(Step("score", n, f"One target call scores all {n} draft(s) at once: it "
                          f"gives p at each of the {n + 1} prefixes, the key to the speedup."))
    steps += [Step("verify", pos.i, f"Check '{name(pos.token)}': p = {prob(pos.p)}, q = "
                   f"{prob(pos.q)}, keep if u < {prob(pos.threshold)}; u = {prob(pos.u)}, "
                   f"{'kept' if pos.accepted else 'rejected'}.")
              for pos in tr.positions if pos.verified]
    if tr.rejected_at is not None:
        res = next(e for e in tr.emitted if e.origin == "resampled")
        steps.append(Step("residual", tr.rejected_at, f"Rejected at position "
                          f"{tr.rejected_at}: '{name(res.token)}' drawn from "
                          f"{rule.reject_law} instead."))
        if rule.keep_unverified and tr.rejected_at < n:
            steps.append(Step("unverified", tr.rejected_at + 1, f"Rule '{rule.name}': the "
                              f"{n - tr.rejected_at} later drafts are emitted without a "
                              "check."))
        elif tr.flushed:
            steps.append(Step("flush", tr.flushed[0], f"The {len(tr.flushed)} later draft(s) "
                              "were conditioned on the rejected token, so they are thrown "
                              "away."))
    return _closing(words, tr, steps)


def _block(words, rule, prefix, tr, k) -> tuple[Step, ...]:
    """Frames of a block-verified round: the drafts, the block's weights, the coins from
    the end backwards until one passes, then the correction (or bonus) and the flush."""
    name, n, w = words.name, len(tr.positions), tr.weights
    steps = _opening(words, prefix, tr, " The block is verified jointly.")
    if n:
        steps.append(Step("score", n, f"One target call scores all {n} draft(s) at once: "
                          f"p at each of the {n + 1} prefixes gives the block's weights "
                          f"w1..w{n} and the chances h that the coins are checked against, "
                          "from the last position backwards."))
    tau = tr.accepted
    for pos in reversed(tr.positions[tau - 1 if tau else 0:]):
        verdict = (f"passes: the block keeps x1..x{pos.i}" if pos.i == tau else
                   "fails; try the position before")
        steps.append(Step("verify", pos.i, f"Position {pos.i}: weight w = {w[pos.i]:.4f}, "
                          f"keep the block up to here if u < h = {prob(pos.threshold)}; "
                          f"u = {prob(pos.u)}, {verdict}."))
    if tr.rejected_at is not None:
        res = tr.emitted[-1]
        steps.append(Step("residual", tr.rejected_at, f"Kept {tau} draft(s): "
                          f"'{name(res.token)}' drawn from norm(max(0, w p - q)) with "
                          f"w = {w[tau]:.4f}."))
        if tr.flushed:
            steps.append(Step("flush", tr.flushed[0], f"The {len(tr.flushed)} later "
                              "draft(s) are thrown away."))
    return _closing(words, tr, steps)


def _tree(words, rule, prefix, tr, k) -> tuple[Step, ...]:
    """Frames of a token-tree round: the drafted tree level by level, each node on the
    kept path with its siblings tried in turn, the last token, and the pruned branches."""
    name, shape, tokens = words.name, rule_shape(rule, k), dict(tr.tree)
    steps = [Step("start", None, f"Context '{name(prefix[-1])}'. " + _tree_size(shape, tokens)
                  + ", verified in one target pass.")]
    depth = max((len(p) for p in tokens), default=0)
    for d in range(1, len(tr.positions) + 1):  # the last frame also shows the deeper levels
        upto = depth if d == len(tr.positions) else d
        levels = [" ".join(name(t) for p, t in sorted(tokens.items()) if len(p) == e)
                  for e in range(d, upto + 1)]
        steps.append(Step("draft", d, f"Level {d}{f'..{upto}' if upto > d else ''}: " +
                          "; ".join(levels) + "."))
    steps.append(Step("score", len(tr.positions), f"One target call scores all "
                      f"{len(tokens)} tree node(s) at once, each node seeing only its own "
                      "path: it gives p after the context and after every node, the key to "
                      "the speedup."))
    node: tuple[int, ...] = ()
    for pos in tr.positions:
        steps += _sibling_steps(words, pos, shape.children(node))
        node = node + (len(pos.tries) - 1,)
    if tr.rejected_at is not None:
        steps.append(Step("residual", tr.rejected_at, f"Every sibling failed at depth "
                          f"{tr.rejected_at}: '{name(tr.emitted[-1].token)}' drawn from "
                          f"{rule.reject_law}."))
    else:
        steps.append(Step("bonus", tr.k + 1, f"A leaf was kept: bonus token "
                          f"'{name(tr.emitted[-1].token)}' from p."))
    pruned = len(tokens) - sum(len(p.tries) for p in tr.positions)
    if pruned > 0:
        steps.append(Step("flush", None, f"The {pruned} drafted token(s) off the kept path "
                          "are pruned."))
    return tuple(steps + [_done(words, tr.emitted)])


def _tree_size(shape, tokens: dict) -> str:
    """How big the drafted tree is; a lazy one (m i.i.d. candidates after every node) draws
    only the nodes the verification reaches, which leaves the output's law unchanged."""
    if getattr(shape, "lazy", False):
        return (f"A tree of {shape.width} candidates after every node, depth {shape.depth}: "
                f"only the nodes the coins reach can change the output, so only those are "
                f"drawn ({len(tokens)} this round)")
    return f"A tree of {len(tokens)} drafted tokens ({shape.name})"


def _sibling_steps(words, pos, m: int) -> list[Step]:
    """One verify frame per sibling tried at the node at depth pos.i, in turn: sibling j is
    checked against p_j (p_1 = p) and, failing, leaves p_(j+1) for the next."""
    out = []
    for j, t in enumerate(pos.tries):
        against = "p" if j == 0 else f"p_{j + 1}, the residual the earlier siblings left"
        verdict = "kept, the path goes on from it" if t.accepted else (
            f"no; sibling {j + 2} is tried against p_{j + 2}" if j + 1 < len(pos.tries) else
            f"no; every sibling failed, the last token comes from p_{j + 2}")
        out.append(Step("verify", pos.i, f"Depth {pos.i}, sibling {j + 1} of {m}: "
                        f"'{words.name(t.token)}' (q = {prob(t.q)}) against {against}: keep if "
                        f"u < {prob(t.threshold)}; u = {prob(t.u)}, {verdict}.", sibling=j))
    return out
