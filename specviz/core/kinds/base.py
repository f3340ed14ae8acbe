"""What every verification kind is, and the parts of a round the kinds share.

A kind (chain, block, tree) is one object whose parts every engine calls:
  play(pair, prefix, k, rule, draws, light, betas)  the scalar round, into a frozen trace
  round(eng, ctx, k, rng)                           the vectorised round (core.montecarlo)
  joint(rt, ctx, k, n), tables(rt, k, long_run)     its exact laws (core.exact)
  drafted(rule, k), columns(rule, k)                tokens one round scores; uniforms a
                                                    position reads of a shared stream
  scored(rule, k), takes_proposal                   rows the target's one call a round
                                                    scores; whether a proposal can draft
A rule names its kind (Rule.kind); specviz.core.kinds.kind_of(rule) is the object.
"""

from __future__ import annotations

import numpy as np

from ..sampling import draw_row
from ..trace import Emitted, RoundTrace, frozen
from ..verify import draft_row, reads_target_to_draft, target_row


# ------------------------------------------------------------------ the scalar round
def draft_chain(pair, prefix, k, rule, draws):
    """Steps 1 and 2: x_1..x_n from q serially (or the pair's proposal), with the rows they
    used, n <= k: fewer when the proposal is shorter or the pair stops drafting (its stop:
    why, else ""); then the target told its n + 1 prefixes (one call)."""
    proposal = pair.propose(prefix, k)
    n = k if proposal is None else min(k, len(proposal))
    cur = list(prefix)
    drafts, q_rows, qs_rows, p_rows, stopped = [], [], [], {}, ""
    for i in range(n):
        if proposal is None:  # a draft-side stop: read before x_(i+1) is drawn
            stopped = pair.stop(prefix, drafts) or ""
            if stopped:
                break
        if proposal is not None:  # deterministic: q is one-hot at the proposed token
            x = int(proposal[i])
            q = qs = np.zeros(pair.V)
            q[x] = 1.0
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
    pair.score(prefix, [drafts[:i] for i in range(len(drafts) + 1)])
    return proposal is not None, drafts, q_rows, qs_rows, p_rows, stopped


def ending(pair, rule, prefix, kept, draws, rejection):
    """The kept drafts, then the round's last token, drawn with draws.final: from the
    rejection law, or, all kept, the bonus at prefix + kept from the law to follow (the
    pair's p, or warp(p)). -> (emitted, the uniform, the row the last token came from)"""
    cur, n = prefix + list(kept), len(kept)
    emitted, u = [Emitted(x, "accepted", i + 1) for i, x in enumerate(kept)], draws.final(n)
    if rejection is not None:
        return emitted + [Emitted(draw_row(rejection, u), "resampled", n + 1)], u, rejection
    p = pair.p(cur)
    row = target_row(rule, p)
    x = pair.draw_p(cur, u) if row is p else draw_row(row, u)
    return emitted + [Emitted(x, "bonus", n + 1)], u, row


def make_trace(pair, rule, prefix, k, positions, emitted, final_u, rejected_at, row, context,
               flushed=(), tree=(), proposed=False, weights=(), stopped="") -> RoundTrace:
    """A played round, frozen: its last token came from `row` at `context`, the rejection
    law when rejected_at is set, else the bonus row."""
    ended = rejected_at is not None
    return RoundTrace(
        rule=rule.name, ctx=prefix[-1], k=k, vocab=pair.names, positions=tuple(positions),
        rejected_at=rejected_at, rejection_row=frozen(row) if ended else None,
        rejection_context=context if ended else None,
        bonus_row=None if ended else frozen(row), bonus_context=None if ended else context,
        final_u=final_u, emitted=tuple(emitted), flushed=tuple(flushed), tree=tree,
        proposed=proposed, weights=tuple(float(x) for x in weights), stopped=stopped,
    )


class Line:
    """What the kinds that draft one line of k tokens share (chain, block)."""

    takes_proposal = True  # a pair's proposal (prompt lookup) may stand for the drafts

    def drafted(self, rule, k: int) -> int:
        return int(k)

    def scored(self, rule, k: int) -> int:
        """Rows the target's one call a round scores: the k + 1 prefixes."""
        return int(k) + 1


# ------------------------------------------------------------------ vectorised rounds
SLICE_CELLS = 1 << 20  # entries of one (decodes, V) slice of rows in a vectorised round


def slices(n: int, V: int):
    """Slices of n decodes whose (decodes, V) rows stay within SLICE_CELLS."""
    step = max(1, SLICE_CELLS // max(1, V))
    return (slice(a, min(n, a + step)) for a in range(0, n, step))


# ------------------------------------------------------------------ exact laws
def joint_from_rounds(pieces, ctx: int, n: int) -> np.ndarray:
    """The first n tokens of a stream of rounds, from each start's round pieces (A, E):
    A[i] (V^i,) = P(the round keeps these i drafts first, and emits more), E[L] (V^L,) =
    P(the round emits exactly these L tokens); missing entries are zero. With G_m[c] the
    law of the next m tokens from a round start at c:
      G_m[c] = A_m + E_m + sum_(L < m) E_L[c] (x) G_(m-L)[last token of E_L]   (V,)*n"""
    V = len(pieces)

    def at(seq, i):
        return seq[i] if i < len(seq) and seq[i] is not None else 0.0

    G = [np.ones((V, 1))]  # G[0]: nothing left to emit
    for m in range(1, n + 1):
        rows = []
        for c in range(V):
            A, E = pieces[c]
            g = np.zeros(V**m) + at(A, m) + at(E, m)
            for L in range(1, min(m, len(E))):
                if E[L] is None:
                    continue
                head = E[L].reshape(V**(L - 1), V)  # (prefix, last token)
                g += (head[:, :, None] * G[m - L][None, :, :]).ravel()
            rows.append(g)
        G.append(np.stack(rows))
    return G[n][ctx].reshape((V,) * n)
