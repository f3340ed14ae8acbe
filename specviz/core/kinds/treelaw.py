"""A token tree's node and its law: the law each sibling is drawn from, its threshold and
the residual after it (kinds.tree's rules), every way a node's siblings can go, and the
exact law of a tree round by dynamic programming over the tree's skeleton.
"""

from __future__ import annotations

import numpy as np

from ..rule import ratio, residual


# ------------------------------------------------------------------ one node's siblings
def sibling_draft(q: np.ndarray, taken: list[int], mode: str) -> np.ndarray:
    """The law the j-th sibling is drawn from: q, or q without the earlier ones. (V,)"""
    if mode in ("iid", "first") or not taken:
        return q
    qj = np.array(q, dtype=np.float64)
    qj[taken] = 0.0
    s = qj.sum()
    return qj / s if s > 0 else qj


def sibling_seen(q, qj, mode: str) -> np.ndarray:
    """The row the ratio A_j = p_j / seen divides by: qj, or q for 'as_iid'. (V,)"""
    return q if mode == "as_iid" else qj


def sibling_after(p_node, p_j, q, qj, mode: str) -> np.ndarray:
    """p_(j+1), what the j-th sibling's failure leaves: norm(max(0, p_j - seen)), or for
    'first' norm(max(0, p_node - q)). (V,)"""
    if mode == "first":
        return residual(p_node, q)
    return residual(p_j, sibling_seen(q, qj, mode))


def node_outcomes(p: np.ndarray, q: np.ndarray, m: int, mode: str):
    """Every way a node's m siblings can go: (probability, kept sibling j or None, its token
    or None, the law of the token emitted if all fail or None). Exact enumeration; without
    replacement over the sequences of failed tokens, at most OUTCOMES_MAX of them."""
    if reads_tokens(mode):
        n, count, seqs = int(np.count_nonzero(q)), 1, 1
        for j in range(min(m, n)):
            count *= n - j
            seqs += count
        if seqs > OUTCOMES_MAX:
            raise ValueError(f"the exact law of {m} siblings drawn without replacement from "
                             f"{n} tokens follows {seqs:,} orders of failed siblings; the cap "
                             f"is {OUTCOMES_MAX:,} (fewer siblings per node, or a smaller V)")
    out = []

    def go(j, p_j, taken, mass):
        qj = sibling_draft(q, taken, mode)
        if j == m or qj.sum() <= 0:  # every sibling tried, or no token left to draft
            out.append((mass, None, None, p_j))
            return
        A = ratio(p_j, sibling_seen(q, qj, mode))  # (V,) the threshold row A_j
        nxt = sibling_after(p, p_j, q, qj, mode)
        keep = np.minimum(A, 1.0) * qj  # (V,) drafted and kept
        for x in np.flatnonzero(keep > 0):
            out.append((mass * keep[x], j, int(x), None))
        fail = qj * (1.0 - np.minimum(A, 1.0))  # (V,) drafted and rejected
        if not reads_tokens(mode):  # later siblings do not depend on which token failed
            if fail.sum() > 0:
                go(j + 1, nxt, taken, mass * fail.sum())
            return
        for x in np.flatnonzero(fail > 0):
            go(j + 1, nxt, taken + [int(x)], mass * fail[x])

    go(0, np.asarray(p, dtype=np.float64), [], 1.0)
    return out


def reads_tokens(mode: str) -> bool:
    """Whether later siblings depend on the earlier tokens (drawn without replacement)."""
    return mode in ("wor", "as_iid")


# ------------------------------------------------------------------ exact laws
def round_tables(P: np.ndarray, Q: np.ndarray, shape,
                 mode: str) -> tuple[np.ndarray, np.ndarray]:
    """D[c, j] = P(the round from c keeps j drafts), N[c, c'] = P(it ends on c').

    By dynamic programming over the tree's skeleton, the subtree below a kept token x being
    drafted from x alone: D_v[c] = sum over the node's outcomes of mass (shift D_child[x] by
    one, or e_0 if all fail), N_v[c] = sum of mass (N_child[x], or the law after all fail);
    a leaf ends with the bonus, D = e_0, N = p(.|c). (V, depth+1), (V, V)"""
    V, depth = P.shape[0], shape.depth
    counts, child = shape.skeleton
    memo: dict = {}

    def sub(key, c):
        if (key, c) not in memo:
            D, N = np.zeros(depth + 1), np.zeros(V)
            m = int(counts[key])
            if m == 0:
                D[0], N = 1.0, P[c].copy()
            for mass, below, x, law in _outcomes(P, Q, c, m, mode, child[key]) if m else ():
                if below is None:
                    D[0] += mass
                    N += mass * law
                else:
                    Dc, Nc = sub(below, x)
                    D[1:] += mass * Dc[:-1]
                    N += mass * Nc
            memo[(key, c)] = (D, N)
        return memo[(key, c)]

    rows = [sub(0, c) for c in range(V)]
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


_OUTCOMES: dict = {}
OUTCOMES_MAX = 100_000  # orders of failed siblings one node's exact law may enumerate


def _outcomes(P, Q, c: int, m: int, mode: str, below: np.ndarray):
    """node_outcomes merged: one entry per kept (child, token), siblings whose subtrees are
    the same (one skeleton key, below[j]) as one child, and one entry for 'every sibling
    failed' whose law is the mixture of the laws left, weighted by their chances:
    (mass, the child's key or None, token or None, law or None)."""
    key = (id(P), id(Q), c, m, mode)
    if key not in _OUTCOMES:
        if len(_OUTCOMES) > 4096:
            _OUTCOMES.clear()
        by_sibling: dict[tuple[int, int], float] = {}
        fail, law = 0.0, np.zeros(P.shape[1])
        for mass, j, x, end in node_outcomes(P[c], Q[c], m, mode):
            if j is None:
                fail, law = fail + mass, law + mass * end
            else:
                by_sibling[(j, x)] = by_sibling.get((j, x), 0.0) + mass
        _OUTCOMES[key] = (P, Q, by_sibling, [(fail, None, None, law / fail)] if fail else [])
    kept: dict[tuple[int, int], float] = {}
    for (j, x), mass in _OUTCOMES[key][2].items():
        kept[(int(below[j]), x)] = kept.get((int(below[j]), x), 0.0) + mass
    return [(mass, child, x, None) for (child, x), mass in kept.items()] + _OUTCOMES[key][3]


def round_pieces(P, Q, shape, mode: str, ctx: int, n: int):
    """The first round from ctx up to n tokens: A[i] (V^i,) = P(x_1..x_i are its first i
    kept drafts), E[L] (V^L,) = P(it emits exactly these L tokens), as block.round_pieces."""
    V = P.shape[0]
    counts, child = shape.skeleton
    A = [np.ones(1)] + [np.zeros(V**i) for i in range(1, n + 1)]
    E = [None] + [np.zeros(V**i) for i in range(1, n + 1)]

    def visit(key, c, code, d, mass):
        if d == n:
            return
        m = int(counts[key])
        if m == 0:
            E[d + 1][code * V + np.arange(V)] += mass * P[c]
            return
        for pm, below, x, law in _outcomes(P, Q, c, m, mode, child[key]):
            if below is None:
                E[d + 1][code * V + np.arange(V)] += mass * pm * law
            else:
                A[d + 1][code * V + x] += mass * pm
                visit(below, x, code * V + x, d + 1, mass * pm)

    visit(0, ctx, 0, 0, 1.0)
    return A, E
