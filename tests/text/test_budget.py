"""One click's work on /text is bounded: the check at the issue's worst URL
(/text?level=word&order=4&k=32&rule=typical&T=10) took 131-170 s; n is now derived from the
model's cost (textpage.exact_n) and the replayable round from it too (round_cap)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from specviz.core.scenario import Scenario
from specviz.text.corpus import user_corpus
from specviz.text.ngram import train
from specviz.views import textpage


@pytest.fixture(scope="module")
def counts():
    """Word counts with V = 20,000 and ~400 k tokens (Zipf-like, so n-grams repeat): the
    scale of the stdlib's docstrings at word level (V ~ 15,000), or larger."""
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(20_000)]
    ranks = np.minimum(rng.zipf(1.2, 400_000), len(vocab)) - 1
    text = " ".join(vocab[r] for r in ranks) + " " + " ".join(vocab)
    return train(user_corpus(text).text, "word", 5)


def test_the_worst_check_stays_within_seconds(counts):
    dec = textpage.TextDecoder(counts, 4, 1, 1.0, 10.0)
    ids, _ = textpage.encode_prompt(dec, "w1 w2 w3")
    rules = ("correct", "no_resample", "greedy", "typical")
    n, note = textpage.exact_n(dec, 32, rules)
    assert textpage.EXACT_N_MIN <= n < textpage.EXACT_N
    assert note is not None
    t0 = time.perf_counter()
    rows = textpage.page_exactness(Scenario.on(dec.pair("ngram"), ids, k=32, seed=0), rules=rules,
                                   n=n)
    dt = time.perf_counter() - t0
    assert [r["rule"] for r in rows] == list(rules) and all(r["n"] == n for r in rows)
    assert dt < 15, f"{dt:.1f} s (about 5 s on a quiet 2-core machine)"


def test_rounds_past_the_budget_are_held(counts):
    dec = textpage.TextDecoder(counts, 4, 1)
    rnd, note = textpage.round_cap(dec, 32, 999, 999)
    assert rnd < 999 and note and "held at round" in note
    assert (rnd + 1) * textpage.round_work(dec, 32) <= textpage.TEXT_WORK_MAX
    assert textpage.round_cap(dec, 1, 5, 999) == (5, None)


def test_a_tree_is_priced_by_its_nodes_on_text(counts):
    """A round of a tree rule scores its nodes + k + 1 rows, not 2k + 1: the check's n and
    the replayable round shrink with the tree (a 256-node tree took 59.9 s to check)."""
    from specviz.core.kinds.treeshape import parse_paths

    dec = textpage.TextDecoder(counts, 4, 1)
    tree = parse_paths("16-15")
    chain, row = textpage.round_work(dec, 32), dec.V * 5 + textpage.ROW_ENTRIES_MIN
    assert chain == 65 * row
    assert textpage.round_work(dec, 32, "tree_iid", tree) == (256 + 33) * row
    assert textpage.round_work(dec, 32, "multi_draft") == (3 * 32 + 33) * row
    rules = textpage.checked_rules("tree_iid")
    n, _ = textpage.exact_n(dec, 32, rules, tree)
    assert n < textpage.exact_n(dec, 32, rules)[0]
    assert n == textpage.EXACT_N_MIN or n * (3 * chain + textpage.round_work(
        dec, 32, "tree_iid", tree)) <= textpage.TEXT_WORK_MAX
    rnd, note = textpage.round_cap(dec, 32, 999, 999, "tree_iid", tree)
    assert (rnd + 1) * textpage.round_work(dec, 32, "tree_iid", tree) <= textpage.TEXT_WORK_MAX
    assert rnd < textpage.round_cap(dec, 32, 999, 999)[0] and "256 drafted" in note
