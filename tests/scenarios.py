"""Scenarios for tests: sc(P, Q, ctx, k, rule=..., seed=...) is Scenario.of with the
engines' old positional order."""

from __future__ import annotations

from support import tiered

from specviz.core.scenario import Scenario

# The development tier's rules in a sweep over the registry (the rest run in the full tier,
# marked fuzz): one for each way the engines branch on a rule. The chain (correct), a
# one-hot draft (one_hot), a rejection that skips the draft (sampler_match), a warp (warped),
# block verification, a tree (SpecInfer's multi-draft: the token trees' modes have their own
# tests in test_tree.py, and cost 3-5 s a case here), drafts kept unverified (continue), an
# inclusive coin, a draft table of its own (topk_q) and a broken acceptance test (greedy).
DEV_RULES = ("correct", "one_hot", "sampler_match", "warped", "block", "multi_draft",
             "continue", "inclusive_coin", "topk_q", "greedy")


def rule_sweep(rules, *more: list, dev: tuple[str, ...] = DEV_RULES) -> list:
    """Params for a sweep over rules (times the values in each of `more`, outermost
    first): the development tier keeps the cases whose rule is in `dev`, on the first
    value of each of `more`."""
    cases = [(rule,) for rule in rules]
    for values in more:
        cases = [(*case, v) for case in cases for v in values]
    firsts = tuple(values[0] for values in more)
    return tiered(cases, keep=lambda _, case: case[0] in dev and case[1:] == firsts)


def sc(P, Q, ctx=0, k=4, **kw) -> Scenario:
    """Scenario.of(P, Q, ctx=ctx, k=k, **kw): the tables validated once."""
    return Scenario.of(P, Q, ctx=ctx, k=k, **kw)
