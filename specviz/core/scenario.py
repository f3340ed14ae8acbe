"""One scenario: a model pair, the prefix a decode starts from, k, the rule, the seed, the tree.

Validated once where it is made and passed whole, as nanoGPT passes its config: the
engines (montecarlo, exact, dynamic, round) and the views read their settings from it.
It is frozen and hashable; `key` is what caches key on (the pair's fingerprint, not its
tables). sc.replace(k=3) checks its fields again, never the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np

from .kinds.treeshape import Paths
from .pair import ModelPair, TablePair
from .rules import Rule, with_tree
from .tables import check_ctx, check_k

F = TypeVar("F", bound=Callable)


@dataclass(frozen=True, eq=False)
class Scenario:
    """pair: the two models; prefix: the tokens a decode starts from (newest last; a table
    pair reads only the last, `ctx`); k drafted tokens a round; the rule (a tree rule drafts
    `tree` when given); seed of the random stream. Made by Scenario.on (any pair) or
    Scenario.of (tables), which check and normalise every field."""

    pair: ModelPair
    prefix: tuple[int, ...]
    k: int
    rule: Rule
    seed: int
    tree: Paths

    def __post_init__(self) -> None:
        if not (isinstance(self.pair, ModelPair) and isinstance(self.prefix, tuple)
                and isinstance(self.rule, Rule) and isinstance(self.tree, tuple)):
            raise TypeError("make a scenario with Scenario.on (a model pair) or Scenario.of "
                            "(tables)")

    @classmethod
    def on(cls, pair: ModelPair, prefix: int | Sequence[int], *, k: int = 4,
           rule: str | Rule = "correct", seed: int = 0,
           tree: Sequence[Sequence[int]] = ()) -> Scenario:
        """A scenario on any model pair from prefix (a token id is a one-token prefix)."""
        tree = tuple(tuple(int(i) for i in p) for p in tree)
        return cls(pair, tuple(pair.check_prefix(prefix)), check_k(k), with_tree(rule, tree),
                   _check_seed(seed), tree)

    @classmethod
    def of(cls, P: np.ndarray, Q: np.ndarray, *, ctx: int, k: int = 4,
           rule: str | Rule = "correct", seed: int = 0, tree: Sequence[Sequence[int]] = (),
           vocab: Sequence[str] | None = None) -> Scenario:
        """A scenario on the tables P (target) and Q (draft), V x V, from the token ctx."""
        pair = TablePair(P, Q, vocab)
        return cls.on(pair, check_ctx(ctx, pair.V), k=k, rule=rule, seed=seed, tree=tree)

    def replace(self, **changes) -> Scenario:
        """The same scenario with some fields changed, checked as Scenario.on checks them
        (the pair's tables are not validated again)."""
        return Scenario.on(**{f.name: getattr(self, f.name) for f in fields(self)} | changes)

    @property
    def ctx(self) -> int:
        """The newest token of the prefix: all a table pair reads."""
        return self.prefix[-1]

    @property
    def tables(self) -> TablePair:
        """The pair as V x V tables: what the vectorised and exact engines run on."""
        if not isinstance(self.pair, TablePair):
            raise ValueError("the vectorised and exact engines run on a pair of tables; "
                             f"got {type(self.pair).__name__}")
        return self.pair

    @property
    def key(self) -> tuple:
        """What identifies the scenario (caches key on it): the pair by its fingerprint."""
        return self.cache_key()

    def cache_key(self, ignores: frozenset[str] = frozenset()) -> tuple:
        """key less the fields a function never reads (its `ignores`, IGNORABLE): "draft"
        keys the pair by its target alone."""
        r = self.rule
        pair = self.pair.target_fingerprint if "draft" in ignores else self.pair.fingerprint
        return (pair, self.prefix, None if "k" in ignores else self.k, r.name,
                tuple(sorted(r.prm.items())), r.paths, None if "seed" in ignores else self.seed,
                self.tree)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Scenario{self.key!r}"


IGNORABLE = frozenset({"k", "seed", "draft"})  # fields a function of a scenario may not read


def ignores(*names: str) -> Callable[[F], F]:
    """Mark a function of a scenario that never reads these of its fields (it sets k
    itself, draws nothing, or builds its own drafts from the target): caches key it on
    sc.cache_key(fn.ignores), so a change of those fields finds the result kept."""
    if not set(names) <= IGNORABLE:
        raise ValueError(f"only {sorted(IGNORABLE)} can be ignored; got {names}")

    def mark(fn: F) -> F:
        fn.ignores = frozenset(names)
        return fn
    return mark


def ignored(fn: Callable) -> frozenset[str]:
    """The fields fn marks as unread (ignores), read through any wrappers (__wrapped__), so a
    wrapper that does not copy the mark cannot drop it; empty for an unmarked function."""
    while fn is not None:
        if "ignores" in getattr(fn, "__dict__", {}):
            return fn.ignores
        fn = getattr(fn, "__wrapped__", None)
    return frozenset()


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    return int(seed)
