"""The scenario: checked once where it is made, passed whole, keyed by the pair's fingerprint."""

from __future__ import annotations

import numpy as np
import pytest

import specviz.core.pair as pair_module
from specviz import exact_joint, round_law, simulate
from specviz.core.pair import TablePair
from specviz.core.rules import RULES
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables, mix_draft

T = default_tables()


def test_made_once_then_engines_validate_nothing(monkeypatch):
    calls = []
    real = pair_module.validate_pair
    monkeypatch.setattr(pair_module, "validate_pair", lambda *a: calls.append(1) or real(*a))
    sc = Scenario.of(T.P, T.Q, ctx=2, k=3, rule="block", seed=5)
    assert len(calls) == 1
    simulate(sc, n=200)
    exact_joint(sc)
    round_law(sc.replace(k=2, rule="correct"), long_run=True)
    assert len(calls) == 1  # replace and the engines do not check the tables again


def test_fields_are_checked_and_normalised():
    sc = Scenario.of(T.P, T.Q, ctx=np.int64(2), k=np.int64(3), rule="correct", vocab=T.vocab)
    assert (sc.prefix, sc.ctx, sc.k, sc.rule, sc.seed, sc.tree) == ((2,), 2, 3,
                                                                     RULES["correct"], 0, ())
    assert type(sc.k) is int and type(sc.ctx) is int
    for bad, match in (({"ctx": 6}, "ctx must be a token index"), ({"ctx": 0, "k": 0}, "k "),
                       ({"ctx": 0, "rule": "lax"}, "valid rules"),
                       ({"ctx": 0, "seed": -1}, "seed")):
        with pytest.raises(ValueError, match=match):
            Scenario.of(T.P, T.Q, **bad)
    with pytest.raises(ValueError, match="valid rules"):
        sc.replace(rule="lax")
    with pytest.raises(TypeError, match="Scenario.on"):
        Scenario(sc.pair, [2], 3, RULES["correct"], 0, ())  # a list is no checked prefix


def test_the_tree_reaches_every_tree_rule_and_no_other():
    sc = Scenario.of(T.P, T.Q, ctx=0, tree=[[0], [0, 0], [1]])
    assert sc.rule.paths == ()  # the correct rule drafts no tree
    assert set(sc.replace(rule="tree_iid").rule.paths) == {(0,), (0, 0), (1,)}
    assert Scenario.of(T.P, T.Q, ctx=0, rule="tree_iid").rule.paths == ()


def test_equal_and_hashed_by_content_not_identity():
    a = Scenario.of(T.P, T.Q, ctx=1, k=3, seed=2)
    b = Scenario.of(T.P.copy(), T.Q.copy(), ctx=1, k=3, seed=2)
    assert a is not b and a == b and hash(a) == hash(b) and len({a, b}) == 1
    others = [a.replace(k=4), a.replace(seed=3), a.replace(prefix=(2,)), a.replace(rule="greedy"),
              a.replace(rule="lenient").replace(rule=RULES["lenient"].with_params(l=0.5)),
              a.replace(tree=((0,), (1,))),
              a.replace(pair=TablePair(T.P, mix_draft(T.P, 0.5)))]
    assert len({a, *others}) == len(others) + 1
    assert a.replace(pair=TablePair(T.P, T.Q, tuple("uvwxyz"))) != a  # names are the pair's


def test_any_model_pair_and_the_tables_only_where_they_exist():
    pair = TablePair(T.P, T.Q)
    sc = Scenario.on(pair, [0, 3, 1], k=2)
    assert sc.prefix == (0, 3, 1) and sc.ctx == 1 and sc.pair is pair and sc.tables is pair
    with pytest.raises(ValueError, match="at least one token"):
        Scenario.on(pair, [])


def test_the_fingerprints_stay_what_caches_were_keyed_on():
    """sha256 of P's bytes (then Q's), then the names joined by \\x1f: the digests of the
    default pair, pinned so a refactor cannot move every cache key."""
    T = default_tables()
    pair = TablePair(T.P, T.Q, T.vocab)
    assert (pair.fingerprint, pair.target_fingerprint) == ("d48afbff1c7182ba22ed",
                                                            "7a24801867d498fd1b79")
