"""The rules gallery's data (specviz.gallery): exact and Monte Carlo audits of every rule,
the verdicts (never "consistent" for a biased rule), parameters, production metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenarios import sc
from support import random_tables

from specviz.analysis import audit as A
from specviz.analysis import theory
from specviz.core.rules import FAMILIES, RULES
from specviz.core.tables import default_tables
from specviz.views import gallery as G


@pytest.fixture(scope="module")
def pair():
    return default_tables()


@pytest.fixture(scope="module")
def gal(pair):
    """The page's default: every rule at n = GALLERY_N, k = 4, context 'a', seed 0."""
    return G.gallery(sc(pair.P, pair.Q, 0, 4, seed=0), n=G.GALLERY_N)


def _result(gal: G.Gallery, name: str) -> G.RuleResult:
    return next(r for r in gal.results if r.rule.name == name)


def test_every_rule_is_in_the_gallery_once(gal):
    assert [r.rule.name for r in gal.results] == list(RULES)
    assert gal.n == G.GALLERY_N and gal.floor < gal.threshold


@pytest.mark.parametrize("name", [n for n, r in RULES.items() if r.lossless])
def test_lossless_rules_are_exact_and_at_the_floor(gal, name):
    r = _result(gal, name)
    assert r.exact_tv < 1e-12
    assert r.audit.mc_tv <= r.audit.threshold and r.verdict == A.CONSISTENT
    assert r.n_resolve is None


@pytest.mark.parametrize("name", [n for n, r in RULES.items() if not r.lossless])
def test_lossy_and_broken_rules_are_biased_and_caught(gal, name):
    r = _result(gal, name)
    assert r.exact_tv > 1e-3
    assert r.audit.mc_tv > r.audit.threshold and r.verdict == A.CAUGHT
    assert r.n_resolve is not None and r.n_resolve <= gal.n
    # the Monte Carlo TV sits near the bias: within a few sampling floors
    assert abs(r.audit.mc_tv - r.exact_tv) < 3 * r.audit.floor


def test_lossless_rules_are_exact_on_random_tables_with_zeros():
    P, Q = random_tables(np.random.default_rng(5), 5, zero_frac=0.35)
    g = G.gallery(sc(P, Q, 2, 3, seed=1),
                  n=2_000, names=[n for n, r in RULES.items() if r.lossless])
    for r in g.results:
        assert r.exact_tv < 1e-12, r.rule.name


def test_a_bias_too_small_for_n_is_not_called_exact(pair):
    """lenient at l = 0.999 and a 24-bit inclusive coin are biased, but 200,000 decodes
    cannot see it: the verdict says so, with the n that would."""
    g = G.gallery(sc(pair.P, pair.Q, 0, 4, seed=0), n=G.GALLERY_N,
                  params={"lenient": {"l": 0.999}, "inclusive_coin": {"u_bits": 24}},
                  names=("lenient", "inclusive_coin"))
    for r in g.results:
        assert r.exact_tv > 1e-12 and r.audit.mc_tv <= g.threshold
        assert r.verdict == A.UNRESOLVED != A.CONSISTENT
    lenient, coin = _result(g, "lenient"), _result(g, "inclusive_coin")
    assert lenient.n_resolve > g.n
    assert coin.n_resolve is None  # beyond the search limit
    rows = {r["rule"]: r for r in G.gallery_rows(g)}
    assert rows["lenient"]["n_to_resolve"] == f"{lenient.n_resolve:,}"
    assert rows["inclusive_coin"]["n_to_resolve"].startswith("more than")


def test_the_continue_rule_is_unresolved_at_small_n_and_caught_at_the_default(pair, gal):
    small = G.gallery(sc(pair.P, pair.Q, 0, 4, seed=0), n=2_000, names=("continue",))
    r = _result(small, "continue")
    assert r.n_resolve > 2_000 and r.verdict == A.UNRESOLVED
    assert _result(gal, "continue").verdict == A.CAUGHT


def test_configure_checks_rules_and_parameters():
    rules = G.configure({"multi_draft": {"m": 5}, "lenient": {"l": 0.25}})
    by = {r.name: r for r in rules}
    assert by["multi_draft"].prm["m"] == 5 and by["lenient"].prm["l"] == 0.25
    assert by["typical"].prm == RULES["typical"].prm
    with pytest.raises(ValueError, match="unknown rules"):
        G.configure({"nope": {}})
    with pytest.raises(ValueError, match="no parameter"):
        G.configure({"lenient": {"m": 2}})
    with pytest.raises(ValueError, match="in \\[0.01, 1\\]"):
        G.configure({"lenient": {"l": 3.0}})


def test_a_parameter_change_reruns_only_that_rule_and_results_do_not_depend_on_reuse(pair):
    a = G.gallery(sc(pair.P, pair.Q, 0, 3, seed=7), n=3_000)
    b = G.gallery(sc(pair.P, pair.Q, 0, 3, seed=7), n=3_000, params={"lenient": {"l": 0.8}})
    assert _result(b, "correct") is _result(a, "correct")  # reused
    assert _result(b, "lenient").exact_tv < _result(a, "lenient").exact_tv  # closer to exact
    G._MEMO.clear()
    c = G.gallery(sc(pair.P, pair.Q, 0, 3, seed=7), n=3_000, params={"lenient": {"l": 0.8}})
    assert [r.audit for r in c.results] == [r.audit for r in b.results]
    solo = G.gallery(sc(pair.P, pair.Q, 0, 3, seed=7), n=3_000, names=("greedy",))
    assert _result(solo, "greedy").audit == _result(c, "greedy").audit  # threads do not matter


def test_gallery_rows(gal):
    rows = G.gallery_rows(gal)
    assert len(rows) == len(RULES) == 22
    fams = [r["family"] for r in rows]
    assert fams == sorted(fams, key=FAMILIES.index)
    assert rows[0]["rule"] == "correct" and rows[0]["exact_tv"] == 0.0
    for r in rows:
        assert r["exact_here"] == (r["exact_tv"] == 0.0)
        assert r["source"] and 0.0 <= r["acceptance_long_run"] <= 1.0
        assert 1.0 <= r["tokens_per_call_long_run"] <= 5.0
    assert {r["rule"]: r["params"] for r in rows}["typical"] == "eps = 0.09, delta = 0.3"


def test_rule_notes_and_param_specs(gal):
    notes = {n["rule"]: n for n in G.rule_notes(gal)}
    assert "min(1, p/q)" in notes["correct"]["description"]
    assert "Medusa" in notes["typical"]["source"]
    assert [q["name"] for q in notes["typical"]["params"]] == ["eps", "delta"]
    specs = {(s["rule"], s["name"]) for s in G.param_specs()}
    assert specs == {("multi_draft", "m"), ("typical", "eps"), ("typical", "delta"),
                     ("lenient", "l"), ("topk_q", "top_k"), ("inclusive_coin", "u_bits"),
                     *((r, "shape") for r in ("tree_iid", "tree_wor", "tree_first_residual",
                                              "tree_wor_as_iid"))}


# ----------------------------------------------------------------- production metrics
def test_production_metrics_one_candidate_spec_infer_is_the_standard_rule(pair):
    a = G.production(sc(pair.P, pair.Q, 0, 4, rule="correct", seed=3), params=None, n_rounds=4_000)
    b = G.production(sc(pair.P, pair.Q, 0, 4, rule="multi_draft", seed=3),
                     params={"multi_draft": {"m": 1}}, n_rounds=4_000)
    for ra, rb in zip(a.rows, b.rows, strict=True):
        assert rb["exact"] == pytest.approx(ra["exact"], abs=1e-12)
    more = G.production(sc(pair.P, pair.Q, 0, 4, rule="multi_draft", seed=3),
                        params={"multi_draft": {"m": 4}}, n_rounds=4_000)
    assert more.rows[1]["exact"] > b.rows[1]["exact"]  # more candidates, more kept


def test_production_metrics_match_the_closed_forms_on_identical_rows():
    """Every context has the same p and q, so acceptance is i.i.d. with alpha = sum min(p, q)
    and the exact values equal the theory (Leviathan et al. 2022, Sec. 3.3)."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    P, Q = np.tile(p, (3, 1)), np.tile(q, (3, 1))
    rep = G.production(sc(P, Q, 0, 5, rule="correct", seed=0), params=None, n_rounds=20_000)
    alpha = float(np.minimum(p, q).sum())
    assert rep.alpha == pytest.approx(alpha)
    for row in rep.rows:
        assert row["exact"] == pytest.approx(row["theory"], abs=1e-12)
        if not math.isnan(row["measured"]):
            assert row["measured"] == pytest.approx(row["exact"], rel=0.03)
    np.testing.assert_allclose(rep.per_position["exact"], alpha ** np.arange(1, 6), atol=1e-12)
    np.testing.assert_allclose(rep.histogram["exact"], theory.acceptance_histogram(alpha, 5),
                               atol=1e-12)


def test_production_rows_are_long_form(pair):
    rep = G.production(sc(pair.P, pair.Q, 0, 3, rule="greedy", seed=0), params=None, n_rounds=2_000)
    rows = G.production_rows(rep)
    assert len(rows) == len(rep.rows) + 3 + 4
    hist = [r for r in rows if r["metric"].startswith("acceptance histogram")]
    assert sum(r["exact"] for r in hist) == pytest.approx(1.0)
    assert sum(r["measured"] for r in hist) == pytest.approx(1.0)
