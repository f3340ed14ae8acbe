"""Scenarios for tests: sc(P, Q, ctx, k, rule=..., seed=...) is Scenario.of with the
engines' old positional order."""

from __future__ import annotations

from specviz.core.scenario import Scenario


def sc(P, Q, ctx=0, k=4, **kw) -> Scenario:
    """Scenario.of(P, Q, ctx=ctx, k=k, **kw): the tables validated once."""
    return Scenario.of(P, Q, ctx=ctx, k=k, **kw)
