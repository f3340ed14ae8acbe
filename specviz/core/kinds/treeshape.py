"""Token tree shapes: which candidates a tree rule drafts after each node.

A shape is a set of paths of sibling indices closed under prefixes, in the style of
Medusa's choices: (0,) is the first candidate after the context, (0, 1) the second child
of it. TreeShape lists its paths and is drafted whole; Uniform is SpecInfer's m candidates
at every level, m + m^2 + ... + m^k nodes, drafted lazily along the path the round walks.
Both give the engines a skeleton: integer keys for the nodes whose subtrees differ (a
Uniform tree has one per depth), each key's child count and its children's keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

TREE_NODES_MAX = 4_096  # drafted nodes one round's tree may hold


@dataclass(frozen=True)
class TreeShape:
    """A tree of drafted positions as paths of sibling indices (closed under prefixes, each
    with its earlier siblings: as check_paths returns them, or a preset's branching)."""

    name: str
    paths: tuple[tuple[int, ...], ...]
    source: str = ""

    @classmethod
    def from_branching(cls, name: str, branching: tuple[int, ...], source: str = "", *,
                       cap: int = TREE_NODES_MAX):
        """Every node at depth d has branching[d] children: 3-2-1 has 3 + 6 + 6 nodes (a
        ValueError past cap nodes)."""
        nodes = sum(int(np.prod(branching[:d + 1], dtype=float)) for d in range(len(branching)))
        if nodes > cap:
            raise ValueError(f"the tree {name} has {nodes:,} nodes; the cap is {cap:,}")
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

    lazy = False  # drafted whole, before the first coin
    drafted = nodes  # tokens one round drafts, each scored by the target

    @cached_property
    def skeleton(self) -> tuple[np.ndarray, np.ndarray]:
        """(children (K,), child (K, width)): key 0 is the root, the others the paths in
        order; child[key, j] is the key of sibling j below it (-1: none)."""
        nodes = [()] + sorted(self.paths, key=lambda p: (len(p), p))
        at = {p: i for i, p in enumerate(nodes)}
        child = np.full((len(nodes), self.width), -1, dtype=np.int64)
        for p in self.paths:
            child[at[p[:-1]], p[-1]] = at[p]
        return np.array([self.children(p) for p in nodes], dtype=np.int64), child

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
        return TreeShape.from_branching(t, tuple(branching), cap=PATHS_NODES_MAX).paths
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


@dataclass(frozen=True)
class Uniform:
    """width candidates after every node down to depth k (SpecInfer's multi-step sampling):
    only the kept candidate's children are ever read, so they are drafted along the path."""

    name: str
    width: int
    depth: int
    lazy = True

    def children(self, node: tuple[int, ...]) -> int:
        return self.width if len(node) < self.depth else 0

    @property
    def drafted(self) -> int:
        """Tokens one round drafts at most: width at each of its depth positions."""
        return self.width * self.depth

    @cached_property
    def skeleton(self) -> tuple[np.ndarray, np.ndarray]:
        """One key per depth: every node at a depth has the same subtree."""
        counts = np.array([self.width] * self.depth + [0], dtype=np.int64)
        return counts, np.tile(np.arange(1, self.depth + 2)[:, None], (1, self.width))


def rule_shape(rule, k: int) -> TreeShape | Uniform:
    """The tree a tree rule drafts at draft length k: its explicit paths cut to depth k, m
    candidates a position for a rule with parameter 'm', or its preset 'shape'."""
    if rule.paths:
        return TreeShape(f"{len(rule.paths)} paths", tuple(rule.paths)).cut(int(k))
    if "m" in rule.prm:
        m = int(rule.prm["m"])
        return Uniform(f"{m} candidates a position, depth {k}", m, int(k))
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
    return TreeShape.from_branching(f"{pr.name}, depth {k}", branching, pr.source)
