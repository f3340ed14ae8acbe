"""An independent, slow reference for exact laws: explicit recursion over every path of a round.

It shares nothing with specviz.exact but the rule's three tables, read cell by cell.
"""

from __future__ import annotations

from collections import defaultdict

from specviz.rules import apply_rule


def brute_joint(P, Q, ctx, k, n_tokens, rule):
    """dict: tuple of the first n_tokens emitted -> probability."""
    rt = apply_rule(rule, P, Q)
    V = P.shape[0]
    law = defaultdict(float)

    def new_round(c, prefix, prob):
        if len(prefix) >= n_tokens:
            law[tuple(prefix[:n_tokens])] += prob
            return
        position(c, 1, prefix, prob)

    def position(c, i, prefix, prob):
        # draft x at context c, position i of k
        for x in range(V):
            qx = rt.Qs[c, x]
            if qx == 0:
                continue
            keep = min(1.0, max(0.0, rt.A[c, x]))
            if keep > 0:
                if i == k:
                    for y in range(V):  # bonus
                        if rt.P[x, y] > 0:
                            new_round(y, prefix + [x, y], prob * qx * keep * rt.P[x, y])
                else:
                    position(x, i + 1, prefix + [x], prob * qx * keep)
            if keep < 1:
                for y in range(V):  # rejection token from R at context c
                    if rt.R[c, y] == 0:
                        continue
                    p = prob * qx * (1 - keep) * rt.R[c, y]
                    if rt.rule.keep_unverified and i < k:
                        unverified(x, k - i, prefix + [y], p)
                    else:
                        new_round(y, prefix + [y], p)

    def unverified(z, s, prefix, prob):
        # s later drafts, a q-chain from z, emitted without a check; then a new round
        if s == 0 or len(prefix) >= n_tokens:
            if len(prefix) >= n_tokens:
                law[tuple(prefix[:n_tokens])] += prob
            else:
                new_round(prefix[-1], prefix, prob)
            return
        for w in range(V):
            if rt.Qs[z, w] > 0:
                unverified(w, s - 1, prefix + [w], prob * rt.Qs[z, w])

    new_round(ctx, [], 1.0)
    return dict(law)
