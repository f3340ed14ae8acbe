"""Three engines, one law: the scalar round (specviz.core.round), the vectorised Monte
Carlo (specviz.core.montecarlo) and the exact DP (specviz.core.exact) agree for every rule
of the registry, on the default tables and on a character bigram text model (whose rows
form a table). The pass line is stats.tv_threshold, derived from n; a negative control
shows the same check refuses a law that is not the engine's.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import rule_sweep, sc

from specviz.analysis.stats import tv, tv_threshold
from specviz.core.draws import RngDraws
from specviz.core.exact import exact_joint
from specviz.core.montecarlo import simulate
from specviz.core.pair import TablePair
from specviz.core.round import play
from specviz.core.rules import RULES, get_rule
from specviz.core.tables import default_tables
from specviz.text.ngram import train
from specviz.text.pair import TextDecoder

N_SCALAR = 6_000  # scalar decodes per rule
N_VECTOR = 200_000  # vectorised decodes per rule
K = 3
TEXT = "abracadabra, a cab; a bad cab. " * 8


def scalar_joint(pair, ctx: int, k: int, rule: str, n: int, seed: int) -> np.ndarray:
    """The empirical law of the first two emitted tokens, by the scalar round. (V, V)"""
    draws, r = RngDraws(np.random.default_rng(seed)), get_rule(rule)
    counts = np.zeros((pair.V, pair.V))
    for _ in range(n):
        got: list[int] = []
        while len(got) < 2:
            got += play(pair, [ctx] + got, k, r, draws, light=True).tokens
        counts[got[0], got[1]] += 1
    return counts / n


def _bigram():
    """A char bigram target and unigram draft: p(. | prefix) reads only the last token."""
    dec = TextDecoder(train(TEXT, "char", 2), 2, 1)
    pair = dec.pair("ngram")
    P = np.stack([pair.p([c]) for c in range(pair.V)])  # (V, V)
    Q = np.stack([pair.q([c]) for c in range(pair.V)])
    return pair, P, Q, dec.encode("a")[0]


@pytest.fixture(scope="module")
def bigram():
    return _bigram()


@pytest.mark.parametrize("rule", rule_sweep(RULES))
def test_tables_three_engines_agree(rule):
    T = default_tables()
    exact = exact_joint(sc(T.P, T.Q, 0, K, rule=rule), n_tokens=2)
    scalar = scalar_joint(TablePair(T.P, T.Q), 0, K, rule, N_SCALAR, seed=1)
    vector = simulate(sc(T.P, T.Q, 0, K, rule=rule, seed=2), n=N_VECTOR, n_tokens=2).law
    assert tv(scalar, exact) <= tv_threshold(exact, N_SCALAR)
    assert tv(vector, exact) <= tv_threshold(exact, N_VECTOR)


@pytest.mark.parametrize("rule", rule_sweep(RULES, dev=("correct", "block", "multi_draft")))
def test_text_bigram_three_engines_agree(rule, bigram):  # the kinds on a text pair
    pair, P, Q, ctx = bigram
    exact = exact_joint(sc(P, Q, ctx, K, rule=rule), n_tokens=2)
    scalar = scalar_joint(pair, ctx, K, rule, N_SCALAR, seed=3)
    vector = simulate(sc(P, Q, ctx, K, rule=rule, seed=4), n=N_VECTOR, n_tokens=2).law
    assert tv(scalar, exact) <= tv_threshold(exact, N_SCALAR)
    assert tv(vector, exact) <= tv_threshold(exact, N_VECTOR)


def test_negative_control_another_rules_law_is_refused(bigram):
    """The scalar engine under 'correct' does not pass for greedy's exact law."""
    T = default_tables()
    scalar = scalar_joint(TablePair(T.P, T.Q), 0, K, "correct", N_SCALAR, seed=5)
    wrong = exact_joint(sc(T.P, T.Q, 0, K, rule="greedy"), n_tokens=2)
    assert tv(scalar, wrong) > tv_threshold(wrong, N_SCALAR)
    pair, P, Q, ctx = bigram
    scalar = scalar_joint(pair, ctx, K, "correct", N_SCALAR, seed=6)
    wrong = exact_joint(sc(P, Q, ctx, K, rule="no_resample"), n_tokens=2)
    assert tv(scalar, wrong) > tv_threshold(wrong, N_SCALAR)


@pytest.mark.parametrize("rule", [n for n, r in RULES.items() if r.kind == "chain"]
                         + ["multi_draft"])
def test_large_vocabulary_monte_carlo_is_exact(rule):
    """Above SMALL_V the vectorised engine draws by a guide table, and chain rules lazily
    (no drafts after a decode's first rejection): its law is still the exact one. Multi-draft,
    a tree of m candidates a position, runs here at large V too (the other block and tree
    rounds are tested in test_block/test_tree)."""
    from support import random_tables

    from specviz.core.montecarlo import SMALL_V

    V = SMALL_V + 16
    P, Q = random_tables(np.random.default_rng(80), V, zero_frac=0.5)
    exact = exact_joint(sc(P, Q, 3, K, rule=rule), n_tokens=2)
    n = 400_000
    vector = simulate(sc(P, Q, 3, K, rule=rule, seed=7), n=n, n_tokens=2).law
    assert tv(vector, exact) <= tv_threshold(exact, n)
