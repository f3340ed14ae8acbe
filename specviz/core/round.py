"""One round of speculative decoding against a model pair, played once into a frozen trace.

The round (Leviathan et al. 2022, Algorithm 1; Chen et al. 2023, Algorithm 2): draft
x_1..x_k serially, each from q at its prefix (or take a deterministic proposal); one target
call gives p at all k + 1 prefixes; keep x_i while its coin passes, u_i < min(1, p/q) for
the standard rule; the first rejection emits one token from the rule's rejection law
(norm(max(0, p - q)) for the standard rule) and ends the round; if all are kept, a bonus
token comes from p at the last prefix. Multi-candidate rules (SpecInfer) try m drafts per
position in turn. The rule is read from the registry, one position's rows at a time.

The trace (core.trace) holds every draw (drafts, coins, the last token), so the app
animates a round by moving an index through trace.steps; it never draws again. Uniforms
are taken in this order: one per drafted token, one coin per verified position, one for
the last token.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import interrupt
from . import tree as trees
from .block import block_weights, correction_row
from .draws import Draws, RngDraws
from .pair import ModelPair
from .rule import overlap, ratio
from .rules import Rule, coin_passes, get_rule, keep_prob
from .sampling import draw_row
from .steps import Step, steps_block, steps_multi, steps_single, steps_tree
from .tables import check_k
from .trace import Emitted, Position, RoundDigest, RoundTrace, Try, frozen
from .verify import (
    draft_row,
    multi_chain,
    reads_target_to_draft,
    rejection_depends_on_draft,
    rejection_row,
    target_row,
    threshold,
)

ROUNDS_MAX = 10_000  # rounds one transcript may chain


def play_round(pair: ModelPair, prefix: int | Sequence[int], k: int, *,
               rng: np.random.Generator, rule: str | Rule = "correct") -> RoundTrace:
    """Play one round from prefix (tokens, newest last; a single token id is one token)."""
    return play(pair, pair.check_prefix(prefix), check_k(k), get_rule(rule), RngDraws(rng))


def play_rounds(pair: ModelPair, prefix: int | Sequence[int], k: int, *, n_rounds: int,
                seed: int = 0, rule: str | Rule = "correct",
                traced: int | None = None,
                draws: Draws | None = None) -> tuple[RoundTrace | RoundDigest, ...]:
    """A transcript: n_rounds rounds chained from prefix on one seeded stream.

    With traced = m only the last m rounds carry their rows and frames (RoundTrace); the
    earlier ones are RoundDigest, played with the same draws at a fraction of the cost.
    draws: a stream to go on drawing from (a transcript extended a few rounds at a time,
    prefix the one it reached); None starts one from seed.
    """
    prefix = pair.check_prefix(prefix)
    k, r = check_k(k), get_rule(rule)
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, (int, np.integer)) \
            or not 1 <= n_rounds <= ROUNDS_MAX:
        raise ValueError(f"n_rounds must be an integer 1..{ROUNDS_MAX:,}; got {n_rounds!r}")
    draws = RngDraws(np.random.default_rng(seed)) if draws is None else draws
    first_traced = 0 if traced is None else max(0, int(n_rounds) - int(traced))
    out = []
    for i in range(int(n_rounds)):
        interrupt.check()
        tr = play(pair, prefix, k, r, draws, light=i < first_traced)
        out.append(tr)
        prefix = prefix + list(tr.tokens)
    return tuple(out)


def play(pair: ModelPair, prefix: list[int], k: int, rule: Rule, draws: Draws,
         light: bool = False, betas: bool = False) -> RoundTrace | RoundDigest:
    """One round from a checked prefix. light=True stops once the tokens are known (same
    draws, no frames); betas=True adds sum_x min(p, q) at each verified position."""
    if rule.kind == "multi":
        return _play_multi(pair, prefix, k, rule, draws, light)
    if rule.kind == "block":
        return _play_block(pair, prefix, k, rule, draws, light)
    if rule.kind == "tree":
        return _play_tree(pair, prefix, k, rule, draws, light)
    return _play_single(pair, prefix, k, rule, draws, light, betas)


def _one_hot(V: int, x: int) -> np.ndarray:
    q = np.zeros(V)
    q[x] = 1.0
    return q


def _draft(pair, prefix, k, rule, draws):
    """Step 1: x_1..x_n from q serially (or the pair's proposal), with the rows they used."""
    proposal = pair.propose(prefix, k)
    n = k if proposal is None else min(k, len(proposal))
    cur = list(prefix)
    drafts, q_rows, qs_rows, p_rows = [], [], [], {}
    for i in range(n):
        if proposal is not None:  # deterministic: q is one-hot at the proposed token
            x = int(proposal[i])
            q = qs = _one_hot(pair.V, x)
        elif reads_target_to_draft(rule):
            q, p_rows[i] = pair.q(cur), pair.p(cur)
            qs = draft_row(rule, p_rows[i], q)
            x = draw_row(qs, draws.draft(i))
        else:
            q = qs = pair.q(cur)
            x = pair.draw_q(cur, draws.draft(i))
        drafts.append(x)
        q_rows.append(q)
        qs_rows.append(qs)
        cur.append(x)
    return proposal is not None, drafts, q_rows, qs_rows, p_rows


def _play_single(pair, prefix, k, rule, draws, light, betas):
    proposed, drafts, q_rows, qs_rows, p_rows = _draft(pair, prefix, k, rule, draws)
    n = len(drafts)
    pair.score(prefix, drafts)  # step 2: one target call for all n + 1 prefixes

    def p_at(i: int) -> np.ndarray:  # the target's row at position i's prefix
        if i not in p_rows:
            p_rows[i] = pair.p(prefix + drafts[:i])
        return p_rows[i]

    # 2-3. one target call scores every prefix; verify in order until the first rejection
    coins, A = [], []
    rejected_at = None
    for i in range(n):
        A.append(threshold(rule, p_at(i), q_rows[i], drafts[i]))
        coins.append(draws.coin(i))
        if not coin_passes(rule, coins[i], A[i]):
            rejected_at = i + 1
            break
    # 3-4. one more token: from the rejection law, or the bonus from p at the last prefix
    n_acc = n if rejected_at is None else rejected_at - 1
    final_u = draws.final(n_acc)
    emitted = [Emitted(drafts[i], "accepted", i + 1) for i in range(n_acc)]
    flushed: tuple[int, ...] = ()
    rejection = bonus = None
    if rejected_at is None:
        bonus = prefix + drafts
        emitted.append(Emitted(_draw_bonus(pair, rule, bonus, final_u), "bonus", n + 1))
    else:
        i = rejected_at - 1
        rejection = _rejection(pair, prefix + drafts[:i], rule, drafts[i], p_at(i),
                               q_rows[i], proposed)
        emitted.append(Emitted(draw_row(rejection, final_u), "resampled", rejected_at))
        later = range(rejected_at, n)
        if rule.keep_unverified:
            emitted += [Emitted(drafts[j], "unverified", j + 1) for j in later]
        else:
            flushed = tuple(j + 1 for j in later)
    if light:
        beta = tuple(float(overlap(p_at(i), qs_rows[i])) for i in range(len(coins))) \
            if betas else ()
        return RoundDigest(prefix[-1], n, tuple(emitted), n_acc, beta)
    last = [prefix[-1]] + drafts  # the newest token at each position's prefix
    positions = tuple(
        Position(
            i=i + 1, context=last[i], token=x, p_row=frozen(p_at(i)),
            q_row=frozen(qs_rows[i]), p=float(p_at(i)[x]), q=float(qs_rows[i][x]),
            ratio=float(ratio(p_at(i)[x], q_rows[i][x])),
            threshold=float(keep_prob(rule, np.asarray(
                A[i] if i < len(A) else threshold(rule, p_at(i), q_rows[i], x)))),
            u=coins[i] if i < len(coins) else None,
            accepted=bool(coin_passes(rule, coins[i], A[i])) if i < len(coins) else None,
        )
        for i, x in enumerate(drafts)
    )
    row = target_row(rule, pair.p(bonus)) if rejection is None else rejection
    trace = _trace(pair, rule, prefix, n, positions, emitted, final_u, rejected_at, row,
                   last[n if rejected_at is None else rejected_at - 1], flushed)
    return _with_steps(trace, steps_single(pair, rule, prefix, trace, proposed))


def _draw_bonus(pair, rule, prefix, u: float) -> int:
    """The bonus token from the law to follow at prefix (the pair's p, or warp(p))."""
    p = pair.p(prefix)
    row = target_row(rule, p)
    return pair.draw_p(prefix, u) if row is p else draw_row(row, u)


def _trace(pair, rule, prefix, k, positions, emitted, final_u, rejected_at, row, context,
           flushed=(), tree=()) -> RoundTrace:
    """A played round, frozen: its last token came from `row` at `context`, the rejection
    law when rejected_at is set, else the bonus row."""
    ended = rejected_at is not None
    return RoundTrace(
        rule=rule.name, ctx=prefix[-1], k=k, vocab=pair.names, positions=tuple(positions),
        rejected_at=rejected_at, rejection_row=frozen(row) if ended else None,
        rejection_context=context if ended else None,
        bonus_row=None if ended else frozen(row), bonus_context=None if ended else context,
        final_u=final_u, emitted=tuple(emitted), flushed=tuple(flushed), steps=(), tree=tree,
    )


def _with_steps(trace: RoundTrace, steps: tuple[Step, ...]) -> RoundTrace:
    object.__setattr__(trace, "steps", steps)
    return trace


def _rejection(pair, prefix, rule, x, p, q, proposed) -> np.ndarray:
    """The rejection law at prefix, cached by what the models read of it."""
    key = (rule.name, rule.values, pair.key(prefix), proposed,
           x if rejection_depends_on_draft(rule, proposed) else None)
    return pair.rejections.get(key, lambda: rejection_row(rule, p, q, x))


def _play_multi(pair, prefix, k, rule, draws, light):
    """m candidates per position from q, tried in turn against p_j; the kept one carries
    the path on (its children in the token tree); if all fail, one token from p_(m+1)."""
    m = int(rule.prm["m"])
    cur, positions, emitted = list(prefix), [], []
    rejected_at = None
    for i in range(k):
        p, q = pair.p(cur), pair.q(cur)
        qs = draft_row(rule, p, q)
        chain, after = multi_chain(p, qs, m)
        tries = []
        for j, A_j in enumerate(chain):
            x = draw_row(qs, draws.draft(i, j))
            u = draws.coin(i, j)
            tries.append(Try(x, float(qs[x]), float(min(1.0, A_j[x])), u, bool(u < A_j[x])))
            if tries[-1].accepted:
                break
        t = tries[-1]
        positions.append(Position(
            i=i + 1, context=cur[-1], token=t.token, p_row=frozen(p), q_row=frozen(qs),
            p=float(p[t.token]), q=t.q, ratio=float(ratio(p[t.token], t.q)),
            threshold=t.threshold, u=t.u, accepted=t.accepted, tries=tuple(tries)))
        if not t.accepted:
            rejected_at, rejection = i + 1, after
            break
        emitted.append(Emitted(t.token, "accepted", i + 1))
        cur.append(t.token)
    final_u = draws.final(len(emitted))
    if rejected_at is None:
        emitted.append(Emitted(pair.draw_p(cur, final_u), "bonus", k + 1))
    else:
        emitted.append(Emitted(draw_row(rejection, final_u), "resampled", rejected_at))
    if light:
        return RoundDigest(prefix[-1], k, tuple(emitted), len(emitted) - 1)
    trace = _trace(pair, rule, prefix, k, positions, emitted, final_u, rejected_at,
                   pair.p(cur) if rejected_at is None else rejection, cur[-1])
    return _with_steps(trace, steps_multi(pair, rule, prefix, trace, m))


def _play_block(pair, prefix, k, rule, draws, light):
    """Block verification (specviz.core.block): weights w_i forward, all k coins drawn,
    tau = the last i whose coin passes h_i; x_1..x_tau kept, then one token from
    norm(max(0, w_tau p - q)) or, with tau = k, the bonus from p."""
    proposed, drafts, _, qs_rows, _ = _draft(pair, prefix, k, rule, draws)
    n = len(drafts)
    pair.score(prefix, drafts)
    p_rows = [pair.p(prefix + drafts[:i]) for i in range(n + 1)]
    w, h = block_weights(p_rows, qs_rows, drafts)
    coins = [draws.coin(i - 1) for i in range(n, 0, -1)][::-1]  # eta_1..eta_n, drawn k..1
    tau = max((i for i in range(1, n + 1) if coins[i - 1] < h[i]), default=0)
    final_u = draws.final(tau)
    emitted = [Emitted(drafts[i], "accepted", i + 1) for i in range(tau)]
    row = None
    if tau == n:
        emitted.append(Emitted(pair.draw_p(prefix + drafts, final_u), "bonus", n + 1))
    else:
        row = correction_row(w[tau], p_rows[tau], qs_rows[tau])
        emitted.append(Emitted(draw_row(row, final_u), "resampled", tau + 1))
    if light:
        return RoundDigest(prefix[-1], n, tuple(emitted), tau)
    last = [prefix[-1]] + drafts
    positions = tuple(Position(
        i=i + 1, context=last[i], token=x, p_row=frozen(p_rows[i]), q_row=frozen(qs_rows[i]),
        p=float(p_rows[i][x]), q=float(qs_rows[i][x]),
        ratio=float(ratio(p_rows[i][x], qs_rows[i][x])), threshold=float(h[i + 1]),
        u=coins[i], accepted=i < tau) for i, x in enumerate(drafts))
    trace = _trace(pair, rule, prefix, n, positions, emitted, final_u,
                   None if tau == n else tau + 1, p_rows[n] if row is None else row, last[tau],
                   range(tau + 2, n + 1))
    return _with_steps(trace, steps_block(pair, rule, prefix, trace, w, proposed))


def _draft_tree(pair, prefix, shape, mode, draws) -> dict:
    """Step 1 for a tree: every node's siblings, level by level, each drawn from its q_j
    (q, or q without the earlier siblings). A sibling left no token to draw (without
    replacement, past the draft's support) does not exist, nor do the ones after it and
    their subtrees. {path: token}"""
    tokens: dict[tuple[int, ...], int] = {}
    for path in sorted(shape.paths, key=lambda p: (len(p), p)):
        node = path[:-1]
        if node and node not in tokens or path[-1] and node + (path[-1] - 1,) not in tokens:
            continue
        q = pair.q(prefix + [tokens[node[:d + 1]] for d in range(len(node))])
        taken = [tokens[node + (j,)] for j in range(path[-1])]
        qj = trees.sibling_draft(q, taken, mode)
        if qj.sum() > 0:
            tokens[path] = draw_row(qj, draws.draft(len(node), path[-1]))
    return tokens


def _play_tree(pair, prefix, k, rule, draws, light):
    """A token tree (specviz.core.tree): drafted whole, then verified from the root: at each
    node the siblings are tried in turn against p_j; the kept one's subtree goes on."""
    shape, mode = trees.rule_shape(rule, k), rule.tree
    tokens = _draft_tree(pair, prefix, shape, mode, draws)
    node, cur, positions, emitted = (), list(prefix), [], []
    end = None
    while shape.children(node):
        p, q = pair.p(cur), pair.q(cur)
        p_j, tries, taken = p, [], []
        for j in range(shape.children(node)):
            if node + (j,) not in tokens:
                break
            x = tokens[node + (j,)]
            qj = trees.sibling_draft(q, taken, mode)
            A, nxt = trees.sibling_step(p, p_j, q, qj, mode)
            u = draws.coin(len(node), j)
            tries.append(Try(x, float(qj[x]), float(min(1.0, A[x])), u, bool(u < A[x]),
                             frozen(p_j), frozen(qj), frozen(nxt)))
            if tries[-1].accepted:
                break
            p_j, taken = nxt, taken + [x]
        t = tries[-1]
        positions.append(Position(
            i=len(node) + 1, context=cur[-1], token=t.token, p_row=frozen(p),
            q_row=frozen(q), p=float(p[t.token]), q=t.q, ratio=float(ratio(p[t.token], t.q)),
            threshold=t.threshold, u=t.u, accepted=t.accepted, tries=tuple(tries)))
        if not t.accepted:
            end = p_j
            break
        node = node + (len(tries) - 1,)
        emitted.append(Emitted(t.token, "accepted", len(node)))
        cur.append(t.token)
    final_u = draws.final(len(emitted))
    if end is None:
        emitted.append(Emitted(pair.draw_p(cur, final_u), "bonus", len(emitted) + 1))
    else:
        emitted.append(Emitted(draw_row(end, final_u), "resampled", len(emitted) + 1))
    if light:
        return RoundDigest(prefix[-1], len(positions), tuple(emitted), len(emitted) - 1)
    pruned = len(tokens) - sum(len(p.tries) for p in positions)
    trace = _trace(pair, rule, prefix, len(positions), positions, emitted, final_u,
                   None if end is None else len(positions),
                   pair.p(cur) if end is None else end, cur[-1],
                   tree=tuple(sorted(tokens.items(), key=lambda pt: (len(pt[0]), pt[0]))))
    return _with_steps(trace, steps_tree(pair, rule, prefix, trace, shape, tokens, pruned))
