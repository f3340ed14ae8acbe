"""Token trees (shapes: core.kinds.treeshape), verified top-down by multi-step speculative
sampling (SpecInfer, Miao et al. 2023, arXiv 2305.09781) or, for siblings drawn without
replacement, recursive rejection sampling (Jeon et al. 2024, arXiv 2402.14160).

At a node with m children, against its target row p_1 = p(.|prefix):
  for j = 1..m: x_j ~ q_j; keep it with min(1, p_j(x_j) / q_j(x_j)) and descend into
  child j; else p_(j+1) = norm(max(0, p_j - q_j)).
  If all m fail, one token from p_(m+1); a kept leaf ends with the bonus from p.
q_j = q for i.i.d. siblings; without replacement q_j = q with x_1..x_(j-1) removed and
renormalised, and the ratio and residual use that q_j. The broken variants: 'first'
reuses p_2 = norm(max(0, p - q)) for every later sibling; 'as_iid' drafts without
replacement but divides by q and subtracts q as if the siblings were i.i.d.
SpecInfer's m candidates a position (rule multi_draft) is the i.i.d. tree with m children
everywhere (treeshape.Uniform), drafted lazily: each sibling just before its coin, along
the path the round walks; other trees are drafted whole before the first coin.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..draws import Draws
from ..pair import ModelPair
from ..rule import ratio, residual
from ..ruledefs import Rule, RuleTables
from ..sampling import DRAW_FLAT_MAX, BucketSampler, block_cdf, draw_row, draw_rows
from ..trace import Position, RoundDigest, RoundTrace, Try, frozen
from .base import SLICE_CELLS, ending, joint_from_rounds, make_trace, slices
from .treelaw import (
    reads_tokens,
    round_pieces,
    round_tables,
    sibling_after,
    sibling_draft,
    sibling_seen,
)
from .treeshape import rule_shape

MODES = ("iid", "wor", "first", "as_iid")  # sibling draws and their verification


class Tree:
    name = "tree"
    takes_proposal = False  # siblings are drawn from q: a proposal is one chain

    def play(self, pair: ModelPair, prefix: list[int], k: int, rule: Rule, draws: Draws,
             light: bool = False, betas: bool = False) -> RoundTrace | RoundDigest:
        """Verified from the root: at each node the siblings are tried in turn against p_j;
        the kept one's subtree goes on."""
        shape, mode = rule_shape(rule, k), rule.tree
        tokens = {} if shape.lazy else _draft_tree(pair, prefix, shape, mode, draws)
        node, cur, positions, end = (), list(prefix), [], None
        while shape.children(node) and end is None:
            p, q, keep = pair.p(cur), pair.q(cur), np.asarray if light else _PerRow(frozen)
            tries, end = _siblings(pair, prefix, tokens, shape, mode, draws, node, p, q, keep)
            t = tries[-1]
            positions.append(Position(
                i=len(node) + 1, context=cur[-1], token=t.token, p_row=keep(p),
                q_row=keep(q), p=float(p[t.token]), q=t.q,
                threshold=t.threshold, u=t.u, accepted=t.accepted, tries=tuple(tries)))
            if t.accepted:
                node, cur = node + (len(tries) - 1,), cur + [t.token]
        emitted, final_u, row = ending(pair, rule, prefix, cur[len(prefix):], draws, end)
        if light:
            return RoundDigest(prefix[-1], len(positions), tuple(emitted), len(emitted) - 1)
        return make_trace(pair, rule, prefix, len(positions), positions, emitted, final_u,
                          None if end is None else len(positions), row, cur[-1],
                          tree=tuple(sorted(tokens.items(), key=lambda pt: (len(pt[0]), pt[0]))))

    def round(self, eng, ctx: np.ndarray, k: int, rng: np.random.Generator):
        """The shape and, for siblings that do not read the earlier tokens, the siblings'
        tables are built on the call's first round (eng.memo) and read by the others."""
        rule, key = eng.rt.rule, ("tree", int(k))
        if key not in eng.memo:
            shape = rule_shape(rule, k)
            eng.memo[key] = shape, sibling_tables(eng.rt.P, eng.rt.Qs, shape.width, rule.tree)
        shape, tabled = eng.memo[key]
        return tree_round(eng.rt.P, eng.rt.Qs, shape, rule.tree, eng.bonus, ctx, rng,
                          tabled=tabled)

    def joint(self, rt: RuleTables, ctx: int, k: int, n: int) -> np.ndarray:
        shape, mode = rule_shape(rt.rule, k), rt.rule.tree
        return joint_from_rounds([round_pieces(rt.P, rt.Qs, shape, mode, c, n)
                                  for c in range(rt.V)], ctx, n)

    def tables(self, rt: RuleTables, k: int, long_run: bool) -> tuple[np.ndarray, ...]:
        shape = rule_shape(rt.rule, k)
        D, N = round_tables(rt.P, rt.Qs, shape, rt.rule.tree)
        return np.pad(D, ((0, 0), (0, k - shape.depth))), N  # a tree shallower than k

    def drafted(self, rule: Rule, k: int) -> int:
        """Every node of a tree drafted whole; m a position along a lazy one's path."""
        return rule_shape(rule, k).drafted

    def scored(self, rule: Rule, k: int) -> int:
        """Rows the target's one call a round scores: the context and every node of a tree
        drafted whole; a lazy one reads p a node at a time, one row a call."""
        shape = rule_shape(rule, k)
        return 1 if shape.lazy else shape.nodes + 1

    def columns(self, rule: Rule, k: int) -> int:
        """A column per sibling: the widest node's."""
        return rule_shape(rule, k).width


TREE = Tree()


# ------------------------------------------------------------------ the scalar round
def _draw_sibling(pair, prefix, tokens: dict, path: tuple[int, ...], mode, draws,
                  q=None, blocks=None, tail=None) -> None:
    """Sibling path[-1] after node path[:-1], into tokens, drawn from its q_j (q, or q
    without the earlier siblings; blocks: a _PerRow(block_cdf) for long rows). One whose
    node or earlier sibling does not exist, or that has no token left to draw (without
    replacement, past the draft's support), does not exist either. tail: the tokens to the
    node, where the caller holds them."""
    node, j = path[:-1], path[-1]
    if node and node not in tokens or j and node + (j - 1,) not in tokens:
        return
    tail = _tokens_to(tokens, node) if tail is None else tail
    if q is None:
        q = pair.q(prefix + tail)
    qj = sibling_draft(q, [tokens[node + (i,)] for i in range(j)], mode)
    if qj is q:  # the draft's own row: the pair draws it, as a chain's drafts (block sums kept)
        tokens[path] = pair.draw_q(prefix + tail, draws.draft(len(node), j))
    elif qj.sum() > 0:
        cdf = blocks(qj) if blocks is not None and len(qj) > DRAW_FLAT_MAX else None
        tokens[path] = draw_row(qj, draws.draft(len(node), j), cdf)


def _draft_tree(pair, prefix, shape, mode, draws) -> dict:
    """Steps 1 and 2 for a tree drafted whole: every node's siblings, level by level, the
    draft told before each level the nodes whose q it reads (one draft call a level); then
    one target call scores the context and every node. {path: token}"""
    tokens: dict[tuple[int, ...], int] = {}
    levels: dict[int, list[tuple[int, ...]]] = {}
    for path in sorted(shape.paths, key=lambda p: (len(p), p)):
        levels.setdefault(len(path), []).append(path)
    blocks = _PerRow(block_cdf)
    tails: dict[tuple[int, ...], list[int]] = {(): []}  # a drafted node -> the tokens to it
    for depth in range(1, shape.depth + 1):
        level = levels.get(depth, [])
        nodes = [node for node in dict.fromkeys(p[:-1] for p in level) if node in tails]
        pair.score(prefix, [tails[node] for node in nodes], which="q")
        rows = {node: pair.q(prefix + tails[node]) for node in nodes}
        for path in level:  # (one under a node not drafted is skipped by _draw_sibling)
            node = path[:-1]
            _draw_sibling(pair, prefix, tokens, path, mode, draws, rows.get(node), blocks,
                          tails.get(node))
            if path in tokens:
                tails[path] = tails[node] + [tokens[path]]
    pair.score(prefix, [()] + [tails[path] for path in tokens])
    return tokens


def _tokens_to(tokens: dict, node: tuple[int, ...]) -> list[int]:
    """The drafted tokens along the path to node (() : none)."""
    return [tokens[node[:d + 1]] for d in range(len(node))]


class _PerRow:
    """make(row) once per row object: a node's frames hold one frozen copy of each row (p_1
    is p, q_j is q for i.i.d. siblings, a failure's p_(j+1) is the next sibling's p_j),
    and i.i.d. siblings drawn from one q share its block sums."""

    def __init__(self, make) -> None:
        self.make = make
        self._held: dict[int, tuple[np.ndarray, object]] = {}  # id -> (row, what it made)

    def __call__(self, row: np.ndarray):
        if id(row) not in self._held:  # the row itself is held too, so its id stays its own
            self._held[id(row)] = (row, self.make(row))
        return self._held[id(row)][1]


def _siblings(pair, prefix, tokens, shape, mode, draws, node, p, q, keep=frozen):
    """The siblings after node tried in turn, each against p_j (drawn now if the tree is
    drafted lazily): (tries, None) once one is kept, else (tries, p_(m+1)). keep: how a
    row is frozen into the frames. Only the drafted token's ratio is read, and p_(j+1)
    made only when the sibling fails (each a pass over V)."""
    p_j, tries, taken, blocks = p, [], [], _PerRow(block_cdf)
    for j in range(shape.children(node)):
        if shape.lazy:
            _draw_sibling(pair, prefix, tokens, node + (j,), mode, draws, q, blocks)
        if node + (j,) not in tokens:
            break
        x = tokens[node + (j,)]
        qj = sibling_draft(q, taken, mode)
        a = float(ratio(p_j[x], sibling_seen(q, qj, mode)[x]))  # A_j(x)
        u = draws.coin(len(node), j)
        nxt = None if u < a else sibling_after(p, p_j, q, qj, mode)
        tries.append(Try(x, float(qj[x]), min(1.0, a), u, u < a, keep(p_j), keep(qj),
                         None if nxt is None else keep(nxt)))
        if nxt is None:
            return tries, None
        p_j, taken = nxt, taken + [x]
    return tries, p_j


# ------------------------------------------------------------------ vectorised round
def tree_round(P, Q, shape, mode: str, bonus, ctx: np.ndarray, rng: np.random.Generator,
               tabled: SiblingTables | None = None):
    """One tree-verified round per context in ctx (n,), level by level: the decodes still
    going draw one uniform row per level, (2 w + 1, n) for the widest node w there: sibling
    j's draft and coin, then the last token's. Each decode tries its node's siblings in
    turn against its own p_j; the kept ones go on into that child, a leaf ends with the
    bonus (bonus(c, u) draws from P[c]). tabled: sibling_tables(P, Q, shape.width, mode),
    the same round read from tables. Returns (X (depth+1, n), L, J, next)."""
    n = len(ctx)
    counts, child = shape.skeleton
    X = np.zeros((shape.depth + 1, n), dtype=np.int64)
    J = np.zeros(n, dtype=np.int64)
    idx, c, key = np.arange(n), np.asarray(ctx), np.zeros(n, dtype=np.int64)
    for d in range(shape.depth + 1):
        m = counts[key]  # (live,) siblings after each decode's node
        w = int(m.max())
        if w == 0:  # every decode left stands at a leaf: the bonus
            X[d, idx], J[idx] = bonus(c, rng.random(len(idx))), d
            break
        U = rng.random((2 * w + 1, len(idx)))
        kept, token = np.full(len(idx), -1), np.empty(len(idx), dtype=np.int64)
        for s in slices(len(idx), P.shape[1]):
            kept[s], token[s] = (_level(P[c[s]], Q[c[s]], m[s], mode, U[:, s]) if tabled is None
                                 else _level_tabled(tabled, c[s], m[s], U[:, s]))
        leaf = np.flatnonzero(m == 0)
        token[leaf] = bonus(c[leaf], U[2 * w, leaf])
        X[d, idx] = token
        J[idx[kept < 0]] = d
        on = kept >= 0
        idx, c, key = idx[on], token[on], child[key[on], kept[on]]
        if not len(idx):
            break
    return X, J + 1, J, X[J, np.arange(n)]


def _level(p: np.ndarray, q: np.ndarray, m: np.ndarray, mode: str, U: np.ndarray):
    """One node per decode, rows p, q (n, V) and m (n,) siblings: (the kept sibling or -1,
    the kept token, or the one drawn from p_(m+1) when every sibling failed). Decodes at a
    leaf (m = 0) are left to the caller."""
    reads = reads_tokens(mode)
    p_j, taken = p.copy(), np.zeros(q.shape if reads else (0, 0), dtype=bool)
    alive = m > 0
    kept, token = np.full(len(m), -1), np.zeros(len(m), dtype=np.int64)
    for j in range((U.shape[0] - 1) // 2):
        qj = _rows_without(q, taken) if reads else q
        rows = np.flatnonzero(alive & (m > j) & (qj.sum(axis=1) > 0 if reads else True))
        if not len(rows):  # none left to try now, so none later
            break
        x = draw_rows(qj[rows], U[2 * j, rows])
        seen = sibling_seen(q, qj, mode)
        ok = U[2 * j + 1, rows] < ratio(p_j[rows, x], seen[rows, x])
        kept[rows[ok]], token[rows[ok]], alive[rows[ok]] = j, x[ok], False
        fail = rows[~ok]
        p_j[fail] = residual(p[fail] if mode == "first" else p_j[fail], seen[fail])
        if reads:
            taken[fail, x[~ok]] = True
    rest = np.flatnonzero(alive)  # every sibling failed, or none was left to draw
    token[rest] = draw_rows(p_j[rest], U[-1, rest])
    return kept, token


def _rows_without(q: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """q with the taken tokens removed, renormalised where mass is left. (n, V)"""
    w = np.where(taken, 0.0, q)
    s = w.sum(axis=1, keepdims=True)
    return np.where(s > 0, w / np.where(s > 0, s, 1.0), 0.0)


SIBLING_CELLS_MAX = 1 << 21  # entries of one (width + 1, V, max(V, 2^14 / V)) table: 16 MB


class SiblingTables(NamedTuple):
    """Siblings that do not read the earlier tokens, tabled by (j, context c)."""

    A: np.ndarray  # (width V V,) A_j[c, x] = p_j(x|c) / q(x|c) at (j V + c) V + x
    draft: BucketSampler  # x ~ q(.|c), the same token as draw_rows(q(.|c), u)
    last: BucketSampler  # row j V + c: y ~ p_(j+1)(.|c), the same token as draw_rows's


def sibling_tables(P, Q, width: int, mode: str) -> SiblingTables | None:
    """For i.i.d. siblings the j-th try depends on the context alone: p_1 = p,
    p_(j+1) = norm(max(0, p_j - q)) ('first': norm(max(0, p - q))), A_j = p_j / q, for
    j = 1..width (p_(width+1) for the token after every sibling failed). None for siblings
    drawn without replacement, or where a table, (width + 1) V^2 thresholds or sums, or
    buckets (BucketSampler: about 2^14 a context), is over SIBLING_CELLS_MAX."""
    if reads_tokens(mode) or (width + 1) * max(P.size, 1 << 14) > SIBLING_CELLS_MAX:
        return None
    p_j = [np.asarray(P, dtype=np.float64)]
    for _ in range(width):
        p_j.append(sibling_after(P, p_j[-1], Q, Q, mode))
    T = np.stack(p_j)  # (width + 1, V, V)
    return SiblingTables(ratio(T[:-1], Q).ravel(), BucketSampler(Q, normalise=False),
                         BucketSampler(T.reshape(-1, T.shape[2]), normalise=False))


def _level_tabled(tab: SiblingTables, c: np.ndarray, m: np.ndarray, U: np.ndarray):
    """_level for i.i.d. siblings, read from tab: the j-th draft x ~ q(.|c) is kept if
    u < A_j[c, x] and no earlier one was; if none of the m is, y ~ p_(m+1)(.|c). c, m (n,)
    A block of siblings at a time, its (block, n) arrays within SLICE_CELLS."""
    n, V = len(c), tab.draft.V
    d = np.arange(n)
    kept, token = np.full(n, -1), np.zeros(n, dtype=np.int64)
    w, step = int(m.max(initial=0)), max(1, SLICE_CELLS // max(1, n))
    for a in range(0, w, step):
        b = min(w, a + step)
        j = np.arange(a, b)[:, None]  # (b - a, 1)
        x = tab.draft(c, U[2 * a:2 * b:2])  # (b - a, n) the drafts
        ok = (m > j) & (U[2 * a + 1:2 * b:2] < tab.A[(j * V + c) * V + x])  # (b - a, n)
        first = ok.argmax(axis=0)  # (n,) the first kept in the block
        hit = np.flatnonzero((kept < 0) & ok[first, d])
        kept[hit], token[hit] = a + first[hit], x[first[hit], hit]
    rest = np.flatnonzero((kept < 0) & (m > 0))
    token[rest] = tab.last(m[rest] * V + c[rest], U[-1, rest])
    return kept, token
