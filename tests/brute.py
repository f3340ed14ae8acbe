"""An independent, slow reference for exact laws: explicit recursion over every path of a round.

It reads the rule's raw tables (what the draft samples, the coin's threshold, the rejection
law) cell by cell and re-derives everything else itself: the coin's pass probability by
enumerating its grid, the rejection token that avoids the draft, SpecInfer's residual chain.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from specviz.core.rules import get_rule


def _residual(p, q):
    d = [max(0.0, a - b) for a, b in zip(p, q, strict=True)]
    s = sum(d)
    return [x / s for x in d] if s > 1e-12 else list(p)


def _pass_prob(rule, a):
    """P(the coin passes threshold a), by enumerating the grid for an inclusive coin."""
    if not rule.inclusive:
        return min(1.0, max(0.0, a))
    G = 2 ** int(rule.prm["u_bits"])
    return sum(1 for j in range(G) if j / G <= a) / G


def brute_joint(P, Q, ctx, k, n_tokens, rule):
    """dict: tuple of the first n_tokens emitted -> probability."""
    r = get_rule(rule)
    prm = r.prm
    V = P.shape[0]
    Qs = r.draft_table(P, Q, prm)
    target = r.target_table(P, Q, prm)  # the bonus token's law: p, or warp(p)
    multi = "m" in prm  # SpecInfer's m candidates a position, enumerated by position below
    if r.kind == "chain":
        A = r.accept_table(P, Q, prm)
        R = r.reject_table(P, Q, prm)
    law = defaultdict(float)

    def emit(prefix, prob, then):
        if len(prefix) >= n_tokens:
            law[tuple(prefix[:n_tokens])] += prob
        else:
            then()

    def new_round(c, prefix, prob):
        if r.kind == "block":
            return emit(prefix, prob, lambda: block(c, prefix, prob))
        if r.kind == "tree" and not multi:
            return emit(prefix, prob, lambda: tree(c, prefix, prob))
        emit(prefix, prob, lambda: position(c, 1, prefix, prob))

    def tree(c, prefix, prob):
        from specviz.core.kinds.treeshape import preset

        if r.paths:  # an explicit tree: a node's children are the listed paths under it
            def children(path):
                return sum(1 for p in r.paths if len(p) <= k and p[:-1] == tuple(path))
        else:
            children = preset(prm["shape"], k).children
        for seq, pr in tree_outcomes(P, Q, c, children, r.tree).items():
            new_round(seq[-1], prefix + list(seq), prob * pr)

    def block(c, prefix, prob):
        for seq, pr in block_outcomes(P, Qs, c, k).items():
            new_round(seq[-1], prefix + list(seq), prob * pr)

    def kept(x, i, prefix, prob):
        if i == k:  # bonus from p at x, then a new round
            for y in range(V):
                if target[x, y] > 0:
                    new_round(y, prefix + [x, y], prob * target[x, y])
        else:
            position(x, i + 1, prefix + [x], prob)

    def position(c, i, prefix, prob):
        if multi:
            return multi_try(c, i, prefix, prob, list(P[c]), int(prm["m"]))
        for x in range(V):
            qx = Qs[c, x]
            if qx == 0:
                continue
            keep = _pass_prob(r, A[c, x])
            if keep > 0:
                kept(x, i, prefix + [], prob * qx * keep)
            if keep < 1:
                for y in range(V):
                    w = R[c, y]
                    if r.rejection_skips_draft:
                        w = 0.0 if y == x else R[c, y] / (1.0 - R[c, x])
                    if w == 0:
                        continue
                    p = prob * qx * (1 - keep) * w
                    if r.keep_unverified and i < k:
                        unverified(x, k - i, prefix + [y], p)
                    else:
                        new_round(y, prefix + [y], p)

    def multi_try(c, i, prefix, prob, p_j, tries_left):
        if tries_left == 0:  # every candidate failed: emit from the last residual
            for y in range(V):
                if p_j[y] > 0:
                    new_round(y, prefix + [y], prob * p_j[y])
            return
        for x in range(V):
            qx = Qs[c, x]
            if qx == 0:
                continue
            keep = min(1.0, p_j[x] / qx)
            if keep > 0:
                kept(x, i, prefix, prob * qx * keep)
        fail = 1.0 - sum(min(p_j[x], Qs[c, x]) for x in range(V))
        if fail > 0:
            multi_try(c, i, prefix, prob * fail, _residual(p_j, Qs[c]), tries_left - 1)

    def unverified(z, s, prefix, prob):
        # s later drafts, a q-chain from z, emitted without a check; then a new round
        if s == 0:
            return new_round(prefix[-1], prefix, prob)
        if len(prefix) >= n_tokens:
            law[tuple(prefix[:n_tokens])] += prob
            return
        for w in range(V):
            if Qs[z, w] > 0:
                unverified(w, s - 1, prefix + [w], prob * Qs[z, w])

    new_round(ctx, [], 1.0)
    return dict(law)


def block_outcomes(P, Q, c0, k):
    """Block verification, literally: every drafted block, the weights w_i and stopping
    chances h_i computed from their definitions, every outcome of the coins drawn from the
    end backwards; dict: tokens the round emits -> probability."""
    V = P.shape[0]
    out = defaultdict(float)
    for xs in itertools.product(range(V), repeat=k):
        ctxs = [c0, *xs]  # ctxs[i]: the newest token after i drafts
        q_block = 1.0
        for i, x in enumerate(xs):
            q_block *= Q[ctxs[i], x]
        if q_block == 0:
            continue
        w = [1.0]
        for i, x in enumerate(xs):
            w.append(min(1.0, w[i] * P[ctxs[i], x] / Q[ctxs[i], x]))
        leftover = [sum(max(0.0, w[i] * P[ctxs[i], y] - Q[ctxs[i], y]) for y in range(V))
                    for i in range(k + 1)]
        h = [1.0] + [leftover[i] / (leftover[i] + (1 - w[i])) if leftover[i] > 0 else 0.0
                     for i in range(1, k)] + [w[k]]
        not_yet = 1.0  # every coin after position i failed
        for i in range(k, -1, -1):
            stop = not_yet * h[i]
            not_yet *= 1 - h[i]
            if stop <= 0:
                continue
            for y in range(V):
                if i == k:
                    law = P[ctxs[k], y]
                else:
                    law = max(0.0, w[i] * P[ctxs[i], y] - Q[ctxs[i], y]) / leftover[i]
                if law > 0:
                    out[(*xs[:i], y)] += q_block * stop * law
    return dict(out)


def tree_outcomes(P, Q, c0, children, mode):
    """A token tree, literally: at each node of the kept path every sibling's token and
    coin, from the method's description. children(path) = siblings drafted after path.
    mode: 'iid' (SpecInfer), 'wor' (recursive rejection sampling), 'first' (every residual
    from the node's p), 'as_iid' (distinct siblings, i.i.d. arithmetic).
    dict: tokens the round emits -> probability."""
    V = P.shape[0]
    out = defaultdict(float)

    def node(path, c, emitted, prob):
        m = children(path)
        if m == 0:  # a kept leaf: the bonus from p
            for y in range(V):
                if P[c, y] > 0:
                    out[(*emitted, y)] += prob * P[c, y]
            return
        sibling(path, c, emitted, prob, 0, list(P[c]), [])

    def sibling(path, c, emitted, prob, j, target, taken):
        q = list(Q[c])
        if mode in ("wor", "as_iid"):  # without replacement: the earlier ones removed
            q = [0.0 if x in taken else q[x] for x in range(V)]
            s = sum(q)
            q = [v / s for v in q] if s > 0 else q
        if j == children(path) or sum(q) == 0:  # every sibling failed
            for y in range(V):
                if target[y] > 0:
                    out[(*emitted, y)] += prob * target[y]
            return
        divide = list(Q[c]) if mode == "as_iid" else q
        for x in range(V):
            if q[x] == 0:
                continue
            keep = min(1.0, target[x] / divide[x]) if divide[x] > 0 else 1.0
            if keep > 0:
                node(path + (j,), x, (*emitted, x), prob * q[x] * keep)
            if keep < 1:
                base = list(P[c]) if mode == "first" else target
                nxt = _residual(base, list(Q[c]) if mode == "first" else divide)
                sibling(path, c, emitted, prob * q[x] * (1 - keep), j + 1, nxt, taken + [x])

    node((), c0, (), 1.0)
    return dict(out)


def brute_array(P, Q, ctx, k, n_tokens, rule):
    out = np.zeros((P.shape[0],) * n_tokens)
    for key, v in brute_joint(P, Q, ctx, k, n_tokens, rule).items():
        out[key] += v
    return out
