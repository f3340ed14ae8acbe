"""Token trees: a drafted tree of candidates, verified top-down by multi-step speculative
sampling (SpecInfer, Miao et al. 2023, arXiv 2305.09781) or, for siblings drawn without
replacement, recursive rejection sampling (Jeon et al. 2024, arXiv 2402.14160).

A tree shape is a set of paths of sibling indices closed under prefixes, in the style of
Medusa's choices: (0,) is the first candidate after the context, (0, 1) the second child
of it. At a node with m children, against its target row p_1 = p(.|prefix):
  for j = 1..m: x_j ~ q_j; keep it with min(1, p_j(x_j) / q_j(x_j)) and descend into
  child j; else p_(j+1) = norm(max(0, p_j - q_j)).
  If all m fail, one token from p_(m+1); a kept leaf ends with the bonus from p.
q_j = q for i.i.d. siblings; without replacement q_j = q with x_1..x_(j-1) removed and
renormalised, and the ratio and residual use that q_j. The broken variants: 'first'
reuses p_2 = norm(max(0, p - q)) for every later sibling; 'as_iid' drafts without
replacement but divides by q and subtracts q as if the siblings were i.i.d.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .rule import ratio, residual
from .sampling import draw_rows

MODES = ("iid", "wor", "first", "as_iid")  # sibling draws and their verification


@dataclass(frozen=True)
class TreeShape:
    """A tree of drafted positions as paths of sibling indices (closed under prefixes)."""

    name: str
    paths: tuple[tuple[int, ...], ...]
    source: str = ""

    def __post_init__(self) -> None:
        have = set(self.paths)
        for p in self.paths:
            if not p or p[:-1] and p[:-1] not in have or any(i < 0 for i in p):
                raise ValueError(f"tree {self.name!r}: path {p} has no parent in the tree")
            if p[-1] and p[:-1] + (p[-1] - 1,) not in have:
                raise ValueError(f"tree {self.name!r}: sibling indices of {p} skip one")

    @classmethod
    def from_branching(cls, name: str, branching: tuple[int, ...], source: str = ""):
        """Every node at depth d has branching[d] children: 3-2-1 has 3 + 6 + 6 nodes."""
        level, paths = [()], []
        for b in branching:
            level = [p + (j,) for p in level for j in range(b)]
            paths += level
        return cls(name, tuple(paths), source)

    def children(self, node: tuple[int, ...]) -> int:
        """How many candidates are drafted after `node` (() is the context)."""
        return self._counts.get(node, 0)

    @cached_property
    def _counts(self) -> dict[tuple[int, ...], int]:
        out: dict[tuple[int, ...], int] = {}
        for p in self.paths:
            out[p[:-1]] = out.get(p[:-1], 0) + 1
        return out

    @property
    def nodes(self) -> int:
        """Drafted tokens: the target verifies them all in one pass (plus the context)."""
        return len(self.paths)

    @property
    def depth(self) -> int:
        return max(len(p) for p in self.paths)

    @property
    def width(self) -> int:
        """The most siblings drafted after any one node."""
        return max(self._counts.values())

    def cut(self, k: int) -> TreeShape:
        """The tree down to depth k (the round's draft length)."""
        return TreeShape(f"{self.name}, depth {k}", tuple(p for p in self.paths if len(p) <= k),
                         self.source)


TREE_NODES_MAX = 4_096  # drafted nodes one round's tree may hold
PATHS_NODES_MAX = 256  # nodes of a tree given as a list of paths (a user's, in the app)
PATHS_DEPTH_MAX = 64  # its depth (the engine's most drafts per round)
PATHS_TEXT_MAX = 4_000  # characters of such a list
Paths = tuple[tuple[int, ...], ...]


def _show(path) -> str:
    return "[" + ", ".join(map(str, path)) + "]"


def parse_paths(text: str) -> Paths:
    """A tree as text: a list of paths in the style of Medusa's choices, [[0], [1], [0, 0]],
    or its branching per depth, 3-2-1 (3 children at the root, 2 under each, 1 under those).
    ValueError with a reason a reader can act on."""
    t = str(text).strip()
    if len(t) > PATHS_TEXT_MAX:
        raise ValueError(f"the tree is over {PATHS_TEXT_MAX:,} characters")
    if re.fullmatch(r"\d+(\s*-\s*\d+)*", t):
        branching = [int(b) for b in t.split("-")]
        if len(branching) > PATHS_DEPTH_MAX or not all(branching):
            raise ValueError(f"a branching needs 1..{PATHS_DEPTH_MAX} levels of at least one "
                             "child each")
        nodes = sum(int(np.prod(branching[:d + 1], dtype=float)) for d in range(len(branching)))
        if nodes > PATHS_NODES_MAX:
            raise ValueError(f"the tree {t} has {nodes:,} nodes; the cap is {PATHS_NODES_MAX}")
        return TreeShape.from_branching(t, tuple(branching)).paths
    try:
        raw = json.loads(re.sub(r",\s*]", "]", t.replace("(", "[").replace(")", "]")))
    except (json.JSONDecodeError, RecursionError):
        raise ValueError("not a list of paths like [[0], [1], [0, 0]] nor a branching like "
                         "3-2-1") from None
    if not isinstance(raw, list) or not raw:
        raise ValueError("the tree must be a non-empty list of paths like [[0], [1], [0, 0]]")
    return check_paths(raw)


def check_paths(raw) -> Paths:
    """Paths of sibling indices checked one by one: lists of integers >= 0, each once, each
    with its parent and its earlier siblings in the list; at most PATHS_NODES_MAX nodes."""
    if len(raw) > PATHS_NODES_MAX:
        raise ValueError(f"the tree has {len(raw):,} paths; the cap is {PATHS_NODES_MAX}")
    paths: list[tuple[int, ...]] = []
    for n, p in enumerate(raw, start=1):
        ok = isinstance(p, (list, tuple)) and all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in p)
        if not ok or not p:
            raise ValueError(f"path {n} is not a non-empty list of sibling indices 0, 1, ...")
        if len(p) > PATHS_DEPTH_MAX:
            raise ValueError(f"path {n} is {len(p)} deep; the cap is {PATHS_DEPTH_MAX}")
        paths.append(tuple(p))
    have = set(paths)
    if len(have) < len(paths):
        twice = next(p for i, p in enumerate(paths) if p in paths[:i])
        raise ValueError(f"path {_show(twice)} appears twice")
    for p in paths:
        if len(p) > 1 and p[:-1] not in have:
            raise ValueError(f"path {_show(p)} has no parent {_show(p[:-1])} in the list")
        if p[-1] and p[:-1] + (p[-1] - 1,) not in have:
            raise ValueError(f"path {_show(p)} comes without its earlier sibling "
                             f"{_show(p[:-1] + (p[-1] - 1,))}")
    return tuple(sorted(paths, key=lambda p: (len(p), p)))


def rule_shape(rule, k: int) -> TreeShape:
    """The tree a tree rule drafts at draft length k: its explicit paths cut to depth k, or
    its preset 'shape' (core.rules.Rule)."""
    if rule.paths:
        shape = TreeShape(f"{len(rule.paths)} paths", tuple(rule.paths))
        return shape.cut(int(k))
    return preset(rule.prm["shape"], k)


@dataclass(frozen=True)
class Preset:
    """A tree by its branching: head[d] children at depth d, then one (a chain) below."""

    name: str
    head: tuple[int, ...]
    source: str


PRESETS: tuple[Preset, ...] = (
    Preset("chain", (1,), "Leviathan et al. 2022: one draft per level"),
    Preset("3-2-1", (3, 2, 1), "a wide-then-narrow tree, the shape EAGLE-2 (Li et al. 2024, "
           "arXiv 2406.16858) grows where the draft is unsure"),
    Preset("2-2-2", (2, 2, 2), "a binary tree three levels deep (SpecInfer's token trees, "
           "Miao et al. 2023)"),
    Preset("2-3", (2, 3), "Medusa's illustration (Cai et al. 2024, arXiv 2401.10774): the "
           "top-2 of one head times the top-3 of the next"),
    Preset("4-1", (4,), "four candidates for the first token, then a chain under each"),
)


def preset(index: int, k: int) -> TreeShape:
    """Preset `index` down to depth k (levels past its head have one child per node)."""
    if not 0 <= int(index) < len(PRESETS):
        raise ValueError(f"tree preset must be 0..{len(PRESETS) - 1}; got {index!r}")
    pr = PRESETS[int(index)]
    branching = tuple(pr.head[d] if d < len(pr.head) else 1 for d in range(int(k)))
    nodes = sum(int(np.prod(branching[:d + 1])) for d in range(len(branching)))
    if nodes > TREE_NODES_MAX:
        raise ValueError(f"tree {pr.name!r} at depth {k} has {nodes:,} nodes; the cap is "
                         f"{TREE_NODES_MAX:,}")
    return TreeShape.from_branching(f"{pr.name}, depth {k}", branching, pr.source)


# ------------------------------------------------------------------ one node's siblings
def sibling_draft(q: np.ndarray, taken: list[int], mode: str) -> np.ndarray:
    """The law the j-th sibling is drawn from: q, or q without the earlier ones. (V,)"""
    if mode in ("iid", "first") or not taken:
        return q
    qj = np.array(q, dtype=np.float64)
    qj[taken] = 0.0
    s = qj.sum()
    return qj / s if s > 0 else qj


def sibling_step(p_node, p_j, q, qj, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(threshold row A_j, p_(j+1)) for the j-th sibling drawn from qj.

    Correct: A_j = p_j / qj, p_(j+1) = norm(max(0, p_j - qj)); 'as_iid' reads q for qj;
    'first' makes every p_(j+1) = norm(max(0, p_node - q))."""
    seen = q if mode == "as_iid" else qj
    if mode == "first":
        return ratio(p_j, seen), residual(p_node, q)
    return ratio(p_j, seen), residual(p_j, seen)


def node_outcomes(p: np.ndarray, q: np.ndarray, m: int, mode: str):
    """Every way a node's m siblings can go: (probability, kept sibling j or None, its token
    or None, the law of the token emitted if all fail or None). Exact enumeration; without
    replacement over the sequences of failed tokens, at most OUTCOMES_MAX of them."""
    if _reads_tokens(mode):
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
        if j == m:
            out.append((mass, None, None, p_j))
            return
        qj = sibling_draft(q, taken, mode)
        if qj.sum() <= 0:  # no token left to draft: the node ends here
            out.append((mass, None, None, p_j))
            return
        A, nxt = sibling_step(p, p_j, q, qj, mode)
        keep = np.minimum(A, 1.0) * qj  # (V,) drafted and kept
        for x in np.flatnonzero(keep > 0):
            out.append((mass * keep[x], j, int(x), None))
        fail = qj * (1.0 - np.minimum(A, 1.0))  # (V,) drafted and rejected
        if not _reads_tokens(mode):  # later siblings do not depend on which token failed
            if fail.sum() > 0:
                go(j + 1, nxt, taken, mass * fail.sum())
            return
        for x in np.flatnonzero(fail > 0):
            go(j + 1, nxt, taken + [int(x)], mass * fail[x])

    go(0, np.asarray(p, dtype=np.float64), [], 1.0)
    return out


def _reads_tokens(mode: str) -> bool:
    """Whether later siblings depend on the earlier tokens (drawn without replacement)."""
    return mode in ("wor", "as_iid")


# ------------------------------------------------------------------ exact laws
def round_tables(P: np.ndarray, Q: np.ndarray, shape: TreeShape,
                 mode: str) -> tuple[np.ndarray, np.ndarray]:
    """D[c, j] = P(the round from c keeps j drafts), N[c, c'] = P(it ends on c').

    By dynamic programming over the tree, the subtree below a kept token x being drafted
    from x alone: D_v[c] = sum over the node's outcomes of mass (shift D_child[x] by one,
    or e_0 if all fail), N_v[c] = sum of mass (N_child[x], or the law after all fail);
    a leaf ends with the bonus, D = e_0, N = p(.|c). (V, depth+1), (V, V)"""
    V, depth = P.shape[0], shape.depth
    memo: dict = {}

    def sub(node, c):
        key = (node, c)
        if key not in memo:
            D, N = np.zeros(depth + 1), np.zeros(V)
            m = shape.children(node)
            if m == 0:
                D[0], N = 1.0, P[c].copy()
            for mass, j, x, law in _outcomes(P, Q, c, m, mode) if m else ():
                if j is None:
                    D[0] += mass
                    N += mass * law
                else:
                    Dc, Nc = sub(node + (j,), x)
                    D[1:] += mass * Dc[:-1]
                    N += mass * Nc
            memo[key] = (D, N)
        return memo[key]

    rows = [sub((), c) for c in range(V)]
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


_OUTCOMES: dict = {}
OUTCOMES_MAX = 100_000  # orders of failed siblings one node's exact law may enumerate


def _outcomes(P, Q, c: int, m: int, mode: str):
    """node_outcomes merged: one entry per kept (sibling, token), and one for 'every sibling
    failed' whose law is the mixture of the laws left, weighted by their chances."""
    key = (id(P), id(Q), c, m, mode)
    if key not in _OUTCOMES:
        if len(_OUTCOMES) > 4096:
            _OUTCOMES.clear()
        kept: dict[tuple[int, int], float] = {}
        fail, law = 0.0, np.zeros(P.shape[1])
        for mass, j, x, end in node_outcomes(P[c], Q[c], m, mode):
            if j is None:
                fail, law = fail + mass, law + mass * end
            else:
                kept[(j, x)] = kept.get((j, x), 0.0) + mass
        out = [(mass, j, x, None) for (j, x), mass in kept.items()]
        if fail > 0:
            out.append((fail, None, None, law / fail))
        _OUTCOMES[key] = (P, Q, out)
    return _OUTCOMES[key][2]


def round_pieces(P, Q, shape: TreeShape, mode: str, ctx: int, n: int):
    """The first round from ctx up to n tokens: A[i] (V^i,) = P(x_1..x_i are its first i
    kept drafts), E[L] (V^L,) = P(it emits exactly these L tokens), as block.round_pieces."""
    V = P.shape[0]
    A = [np.ones(1)] + [np.zeros(V**i) for i in range(1, n + 1)]
    E = [None] + [np.zeros(V**i) for i in range(1, n + 1)]

    def visit(node, c, code, d, mass):
        if d == n:
            return
        m = shape.children(node)
        if m == 0:
            E[d + 1][code * V + np.arange(V)] += mass * P[c]
            return
        for pm, j, x, law in _outcomes(P, Q, c, m, mode):
            if j is None:
                E[d + 1][code * V + np.arange(V)] += mass * pm * law
            else:
                A[d + 1][code * V + x] += mass * pm
                visit(node + (j,), x, code * V + x, d + 1, mass * pm)

    visit((), ctx, 0, 0, 1.0)
    return A, E


# ------------------------------------------------------------------ vectorised round
def tree_round(P, Q, shape: TreeShape, mode: str, bonus, ctx: np.ndarray,
               rng: np.random.Generator):
    """One tree-verified round per context in ctx (n,), node by node: every decode at a node
    drafts its siblings in turn and is checked against its own p_j, the kept ones go on
    into that child. bonus(c, u) draws from P[c]. Returns (X (depth+1, n), L, J, next)."""
    n = len(ctx)
    X = np.zeros((shape.depth + 1, n), dtype=np.int64)
    J = np.zeros(n, dtype=np.int64)

    def visit(node, idx, c, d):
        if not len(idx):
            return
        m = shape.children(node)
        if m == 0:
            X[d, idx], J[idx] = bonus(c, rng.random(len(idx))), d
            return
        p, q = P[c], Q[c]  # (n_here, V)
        p_j, taken = p.copy(), np.zeros_like(q, dtype=bool)
        alive = np.ones(len(idx), dtype=bool)
        for j in range(m):
            qj = _rows_without(q, taken) if _reads_tokens(mode) else q
            can = alive & (qj.sum(axis=1) > 0)
            rows = np.flatnonzero(can)
            x = draw_rows(qj[rows], rng.random(len(rows)))
            seen = q if mode in ("as_iid", "first") else qj
            A = ratio(p_j[rows, x], seen[rows, x])
            ok = rng.random(len(rows)) < A
            kept = rows[ok]
            X[d, idx[kept]] = x[ok]
            visit(node + (j,), idx[kept], x[ok], d + 1)
            alive[kept] = False
            fail = rows[~ok]
            p_j[fail] = residual(p[fail] if mode == "first" else p_j[fail], seen[fail])
            taken[fail, x[~ok]] = True
        rest = np.flatnonzero(alive)
        X[d, idx[rest]] = draw_rows(p_j[rest], rng.random(len(rest)))
        J[idx[rest]] = d

    visit((), np.arange(n), np.asarray(ctx), 0)
    L = J + 1
    return X, L, J, X[J, np.arange(n)]


def _rows_without(q: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """q with the taken tokens removed, renormalised where mass is left. (n, V)"""
    w = np.where(taken, 0.0, q)
    s = w.sum(axis=1, keepdims=True)
    return np.where(s > 0, w / np.where(s > 0, s, 1.0), 0.0)
