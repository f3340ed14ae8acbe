"""The animation's frames of a played round: kinds in order, captions in plain numbers.

Kinds: start | draft | score | verify | residual | flush | unverified | bonus | done
(score: the one target call that gives p at every prefix, before the first coin). The pair
words the parts that depend on what the models are (a table's row, an n-gram's prefix).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One frame of the animation."""

    kind: str  # start | draft | score | verify | residual | flush | unverified | bonus | done
    position: int | None  # 1-based draft position the frame is about, if any
    caption: str
    sibling: int | None = None  # token tree: the 0-based try at that depth a verify frame is


def _done(pair, emitted) -> Step:
    text = " ".join(pair.name(e.token) for e in emitted)
    return Step("done", None, f"Round emits {len(emitted)} token(s) for one target call: "
                f"{text}.")


def _verify(pair, pos) -> Step:
    verdict = "kept" if pos.accepted else "rejected"
    return Step("verify", pos.i, f"Check '{pair.name(pos.token)}': p = {pos.p:.4f}, "
                f"q = {pos.q:.4f}, keep if u < {pos.threshold:.4f}; u = {pos.u:.4f}, "
                f"{verdict}.")


def _opening(pair, prefix, tr, proposed: bool, note: str = "") -> list[Step]:
    """The start frame, then one frame per drafted token."""
    return [Step("start", None, pair.describe_start(prefix, len(tr.positions), proposed) + note)
            ] + [Step("draft", pos.i, pair.describe_draft(pos.i, pos.token, pos.context, pos.q,
                                                          proposed)) for pos in tr.positions]


def steps_single(pair, rule, prefix, tr, proposed: bool) -> tuple[Step, ...]:
    """Frames of a one-draft-per-position round."""
    name, n = pair.name, len(tr.positions)
    steps = _opening(pair, prefix, tr, proposed)
    if any(pos.verified for pos in tr.positions):
        steps.append(Step("score", n, f"One target call scores all {n} draft(s) at once: it "
                          f"gives p at each of the {n + 1} prefixes, the key to the speedup."))
    steps += [_verify(pair, pos) for pos in tr.positions if pos.verified]
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
    else:
        steps.append(Step("bonus", n + 1, pair.describe_bonus(n, tr.emitted[-1].token,
                                                               tr.bonus_context)))
    return tuple(steps + [_done(pair, tr.emitted)])


def steps_block(pair, rule, prefix, tr, w, proposed: bool) -> tuple[Step, ...]:
    """Frames of a block-verified round: the drafts, the block's weights, the coins from
    the end backwards until one passes, then the correction (or bonus) and the flush."""
    name, n = pair.name, len(tr.positions)
    steps = _opening(pair, prefix, tr, proposed, " The block is verified jointly.")
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
                          f"keep the block up to here if u < h = {pos.threshold:.4f}; "
                          f"u = {pos.u:.4f}, {verdict}."))
    if tr.rejected_at is not None:
        res = tr.emitted[-1]
        steps.append(Step("residual", tr.rejected_at, f"Kept {tau} draft(s): "
                          f"'{name(res.token)}' drawn from norm(max(0, w p - q)) with "
                          f"w = {w[tau]:.4f}."))
        if tr.flushed:
            steps.append(Step("flush", tr.flushed[0], f"The {len(tr.flushed)} later "
                              "draft(s) are thrown away."))
    else:
        steps.append(Step("bonus", n + 1, pair.describe_bonus(n, tr.emitted[-1].token,
                                                               tr.bonus_context)))
    return tuple(steps + [_done(pair, tr.emitted)])


def steps_tree(pair, rule, prefix, tr, shape, tokens, pruned: int) -> tuple[Step, ...]:
    """Frames of a token-tree round: the drafted tree level by level, each node on the
    kept path with its siblings tried in turn, the last token, and the pruned branches."""
    name = pair.name
    steps = [Step("start", None, f"Context '{name(prefix[-1])}'. A tree of "
                  f"{len(tokens)} drafted tokens ({shape.name}), verified in one target "
                  "pass.")]
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
        steps += _sibling_steps(pair, pos, shape.children(node))
        node = node + (len(pos.tries) - 1,)
    if tr.rejected_at is not None:
        steps.append(Step("residual", tr.rejected_at, f"Every sibling failed at depth "
                          f"{tr.rejected_at}: '{name(tr.emitted[-1].token)}' drawn from "
                          f"{rule.reject_law}."))
    else:
        steps.append(Step("bonus", tr.k + 1, f"A leaf was kept: bonus token "
                          f"'{name(tr.emitted[-1].token)}' from p."))
    if pruned:
        steps.append(Step("flush", None, f"The {pruned} drafted token(s) off the kept path "
                          "are pruned."))
    return tuple(steps + [_done(pair, tr.emitted)])


def _sibling_steps(pair, pos, m: int) -> list[Step]:
    """One verify frame per sibling tried at the node at depth pos.i, in turn: sibling j is
    checked against p_j (p_1 = p) and, failing, leaves p_(j+1) for the next."""
    out = []
    for j, t in enumerate(pos.tries):
        against = "p" if j == 0 else f"p_{j + 1}, the residual the earlier siblings left"
        verdict = "kept, the path goes on from it" if t.accepted else (
            f"no; sibling {j + 2} is tried against p_{j + 2}" if j + 1 < len(pos.tries) else
            f"no; every sibling failed, the last token comes from p_{j + 2}")
        out.append(Step("verify", pos.i, f"Depth {pos.i}, sibling {j + 1} of {m}: "
                        f"'{pair.name(t.token)}' (q = {t.q:.4f}) against {against}: keep if "
                        f"u < {t.threshold:.4f}; u = {t.u:.4f}, {verdict}.", sibling=j))
    return out
