"""Sampling warps: the warp itself against hand-worked rows, the exact rule against the
warped target, and the broken variants' biases. Oracles are written out by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import warp_mask
from scenarios import sc
from support import random_tables

from specviz import default_tables, exact_joint, simulate, target_joint, tv
from specviz.analysis.stats import tv_threshold
from specviz.core.pair import TablePair
from specviz.core.round import play_rounds
from specviz.core.rules import RULES, get_rule, target_of
from specviz.core.scenario import Scenario
from specviz.core.warp import Warp, WarpedPair, keep_mask, warp_rows, warp_tables

T = default_tables()
ROW = np.array([0.1, 0.4, 0.0, 0.3, 0.2])
WARP_RULES = [n for n, r in RULES.items() if "warp_draft" in r.prm]


def test_top_k_top_p_min_p_by_hand():
    assert keep_mask(ROW, Warp(top_k=2)).tolist() == [False, True, False, True, False]
    # top-p 0.75: ahead of b nothing, of d 0.4, of e 0.7 (< 0.75, kept), of a 0.9
    assert keep_mask(ROW, Warp(top_p=0.75)).tolist() == [False, True, False, True, True]
    # min-p 0.5: keep p >= 0.2
    assert keep_mask(ROW, Warp(min_p=0.5)).tolist() == [False, True, False, True, True]
    np.testing.assert_allclose(warp_rows(ROW, Warp(top_k=2)), [0, 4 / 7, 0, 3 / 7, 0])
    np.testing.assert_allclose(warp_rows(ROW, Warp(top_p=0.75), renormalise=False),
                               [0, 0.4, 0, 0.3, 0.2])


def test_top_p_stops_at_the_exact_boundary():
    """A token whose mass ahead is exactly top_p is cut (the servers sort ascending and drop
    cumulative mass <= 1 - top_p): of (0.5, 0.25, 0.25) top-p 0.5 keeps the first alone."""
    row = np.array([0.5, 0.25, 0.25])
    assert keep_mask(row, Warp(top_p=0.5)).tolist() == [True, False, False]
    assert keep_mask(row, Warp(top_p=0.75)).tolist() == [True, True, False]
    np.testing.assert_array_equal(warp_rows(row, Warp(top_p=0.5)), [1.0, 0.0, 0.0])


def test_top_p_reads_the_row_top_k_left():
    """transformers and vLLM apply top-p to the row renormalised after top-k: (0.4, 0.35,
    0.25) under top-k 2 is (0.533, 0.467), whose first token already reaches top-p 0.5.
    (Top-p over the whole row, then cut to top-k, gave (0.533, 0.467, 0).)"""
    row = np.array([0.4, 0.35, 0.25])
    np.testing.assert_array_equal(warp_rows(row, Warp(top_k=2, top_p=0.5)), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(warp_rows(row, Warp(top_k=2, top_p=0.6)), [0.4 / 0.75,
                                                                         0.35 / 0.75, 0.0])
    np.testing.assert_array_equal(warp_rows(row, Warp(top_k=3, top_p=0.5)),
                                  warp_rows(row, Warp(top_p=0.5)))


GRID_T = (0.4, 1.0, 2.5)
GRID_TOP_K = (0, 1, 2, 4)
GRID_TOP_P = (0.3, 0.6, 0.85, 1.0)
GRID_MIN_P = (0.0, 0.15, 0.4)


def test_the_warp_is_the_oracles_over_a_grid_of_settings_row_by_row():
    """warp_rows over a whole table against the oracle's warp (tests/oracle.py, written from
    the description), each row alone, at every temperature x top-k x top-p x min-p of the
    grid: top-p and min-p read the tempered row (the untempered one keeps other tokens at
    T != 1), and min-p's reference is each row's own maximum (not the table's)."""
    rng = np.random.default_rng(44)
    table = rng.dirichlet(np.full(7, 0.6), size=9)  # (9, 7): peaked and flat rows
    table[rng.random(table.shape) < 0.2] = 0.0
    table[np.arange(9), rng.integers(0, 7, 9)] += 0.05  # every row keeps some mass
    table /= table.sum(axis=1, keepdims=True)
    for T_, k, top_p, min_p in itertools.product(GRID_T, GRID_TOP_K, GRID_TOP_P, GRID_MIN_P):
        got = warp_rows(table, Warp(temperature=T_, top_k=k, top_p=top_p, min_p=min_p))
        for i, row in enumerate(table):
            masked = warp_mask(row.tolist(), T_, k, top_p, min_p)
            want = np.array(masked) / sum(masked)
            np.testing.assert_allclose(got[i], want, rtol=1e-9, atol=1e-15, err_msg=(
                f"row {i}, T = {T_}, top-k = {k}, top-p = {top_p}, min-p = {min_p}"))


def test_temperature_by_hand_and_ties():
    T2 = ROW ** 2 / (ROW ** 2).sum()  # T = 0.5 squares the row
    np.testing.assert_allclose(warp_rows(ROW, Warp(temperature=0.5)), T2, rtol=1e-12)
    tie = np.array([0.25, 0.25, 0.25, 0.25])
    assert keep_mask(tie, Warp(top_k=1)).tolist() == [True, False, False, False]
    assert warp_rows(ROW, Warp()) is ROW  # the identity warp changes nothing


def test_a_row_warped_again_is_warped_afresh():
    """Warps of one small row, asked in turn (a row warped before is remembered): each the
    by-hand law of its own warp and renormalisation, whatever was done to an earlier
    answer, and a larger table (not remembered) the same row by row."""
    row = np.array([0.5, 0.3, 0.2])
    one, two = Warp(top_k=1), Warp(top_k=2)
    for _ in range(2):
        first = warp_rows(row, one)
        np.testing.assert_allclose(first, [1.0, 0.0, 0.0])
        first[:] = 7.0  # the caller's own copy
        np.testing.assert_allclose(warp_rows(row, two), [0.625, 0.375, 0.0])
        np.testing.assert_allclose(warp_rows(row, one, renormalise=False), [0.5, 0.0, 0.0])
        np.testing.assert_allclose(warp_rows(row[None], one), [[1.0, 0.0, 0.0]])
    big = np.tile(np.r_[row, np.zeros(2045)], (2, 1))
    np.testing.assert_allclose(warp_rows(big, two)[:, :3], [[0.625, 0.375, 0.0]] * 2)


def test_bad_warps_are_refused():
    for bad in (dict(temperature=0), dict(top_k=-1), dict(top_p=0), dict(min_p=1.5)):
        with pytest.raises(ValueError):
            Warp(**bad)


def test_a_warp_is_a_warp_rules_parameters_and_back():
    w = Warp(0.7, 3, 0.8, 0.05, draft=False)
    rule = get_rule("warped").with_params(**w.params())
    assert rule.prm == {"temperature": 0.7, "top_k": 3, "top_p": 0.8, "min_p": 0.05,
                        "warp_draft": 0}
    assert Warp.from_params(rule.prm) == w
    assert Warp.from_params(w.params(draft=True)) == Warp(0.7, 3, 0.8, 0.05, draft=True)
    assert Warp(draft=True).params(draft=False)["warp_draft"] == 0


@pytest.mark.parametrize("seed", range(3))
def test_warped_rule_equals_warped_target_with_and_without_a_warped_draft(seed):
    P, Q = random_tables(np.random.default_rng(70 + seed), V=5)
    for draft in (0, 1):
        rule = get_rule("warped").with_params(warp_draft=draft, top_k=3, min_p=0.05)
        Pw = warp_rows(P, Warp(0.8, 3, 0.9, 0.05))
        for k in (1, 3, 6):
            np.testing.assert_allclose(exact_joint(sc(P, Q, 1, k, rule=rule), n_tokens=2),
                                       target_joint(Pw, 1, n_tokens=2), rtol=0, atol=1e-12)


def test_the_warped_rule_is_the_standard_rule_on_warped_tables():
    """One engine: 'warped' on raw tables is 'correct' on warp_tables(P, Q)."""
    w = Warp(0.8, 0, 0.9, 0.0, draft=True)
    Pw, Qw = warp_tables(T.P, T.Q, w)
    rule = get_rule("warped").with_params(warp_draft=1)
    np.testing.assert_allclose(exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=3),
                               exact_joint(sc(Pw, Qw, 0, 4, rule="correct"),
                                           n_tokens=3), atol=1e-12)


@pytest.mark.parametrize("name", [n for n in WARP_RULES if not RULES[n].lossless])
def test_each_broken_warp_is_biased_against_the_warped_target(name):
    target = target_joint(target_of(name, T.P, T.Q), 0, n_tokens=2)
    assert tv(exact_joint(sc(T.P, T.Q, 0, 4, rule=name), n_tokens=2), target) > 0.01
    # and with no warp at all it is the standard rule: the bias is the warp's
    plain = get_rule(name).with_params(temperature=1.0, top_p=1.0)
    assert tv(exact_joint(sc(T.P, T.Q, 0, 4, rule=plain), n_tokens=2), target_joint(T.P, 0,
                                                                                n_tokens=2)) < 1e-12


def test_scalar_round_on_a_warped_pair_follows_the_warped_target():
    w = Warp(0.7, 0, 0.85, 0.0, draft=True)
    pair = WarpedPair(TablePair(T.P, T.Q), w)
    n = 4_000
    counts = np.zeros((6, 6))
    for d in range(n):
        toks = [t for tr in play_rounds(Scenario.on(pair, 0, k=3, seed=d),
                                        n_rounds=2) for t in tr.tokens]
        counts[toks[0], toks[1]] += 1
    Pw, Qw = warp_tables(T.P, T.Q, w)
    target = target_joint(Pw, 0, n_tokens=2)
    assert tv(counts / n, target) <= tv_threshold(target, n)
    # negative control: the unwarped target's law is refused by the same test
    raw = target_joint(T.P, 0, n_tokens=2)
    assert tv(counts / n, raw) > tv_threshold(raw, n)


def test_a_warped_pair_is_its_base_pair_but_for_the_rows():
    base = TablePair(T.P, T.Q)
    same = ("key", "propose", "name", "check_prefix")  # its words: views.narration.wording
    for m in same:  # each answers with its own name, unlike ModelPair's defaults
        setattr(base, m, lambda *args, m=m: m)
    w = Warp(0.5, 0, 0.9, 0.0)
    pair = WarpedPair(base, w)
    assert [getattr(pair, m)(0) for m in same] == list(same)
    np.testing.assert_array_equal(pair.p([2]), warp_rows(T.P[2], w))
    np.testing.assert_array_equal(pair.q([2]), T.Q[2])  # the draft is not warped


def test_monte_carlo_warped_rule_at_the_floor():
    n = 300_000
    rule = get_rule("warped").with_params(top_k=4, warp_draft=1)
    target = target_joint(target_of(rule, T.P, T.Q), 0, n_tokens=2)
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=8), n=n, n_tokens=2)
    assert tv(sim.law, target) <= tv_threshold(target, n)


def test_text_pair_under_a_warp_is_exact_round_by_round():
    """/text: an n-gram pair under top-p and temperature, the scalar round against the
    warped rows' exact law (a bigram's rows form a table)."""
    from specviz.core.exact import exact_joint
    from specviz.text.ngram import train
    from specviz.text.pair import TextDecoder
    from specviz.views.textpage import warped

    dec = TextDecoder(train("abracadabra, a cab; a bad cab. " * 8, "char", 2), 2, 1)
    w = Warp(0.8, 0, 0.9, 0.0, draft=True)
    pair = warped(dec.pair("ngram"), w)
    assert warped(dec.pair("ngram"), Warp()) is not pair and "|" in pair.fingerprint
    V, ctx = pair.V, dec.encode("a")[0]
    P = np.stack([pair.p([c]) for c in range(V)])
    Q = np.stack([pair.q([c]) for c in range(V)])
    np.testing.assert_allclose(P, warp_rows(np.stack([dec.pair("ngram").p([c])
                                                      for c in range(V)]), w))
    n = 3_000
    counts = np.zeros((V, V))
    for d in range(n):
        toks = [t for tr in play_rounds(Scenario.on(pair, ctx, k=3, seed=d),
                                        n_rounds=2) for t in tr.tokens]
        counts[toks[0], toks[1]] += 1
    exact = exact_joint(sc(P, Q, ctx, 3, rule="correct"), n_tokens=2)
    np.testing.assert_allclose(exact, target_joint(P, ctx, n_tokens=2), atol=1e-12)
    assert tv(counts / n, exact) <= tv_threshold(exact, n)


def _argmax_chain(P: np.ndarray, ctx: int, n: int) -> np.ndarray:
    """The law of the target's greedy text: one-hot at argmax p, n tokens on. (V,)*n"""
    law, c, at = np.zeros((P.shape[0],) * n), ctx, []
    for _ in range(n):
        c = int(np.argmax(P[c]))
        at.append(c)
    law[tuple(at)] = 1.0
    return law


@pytest.mark.parametrize("warp", [{"top_k": 1}, {"top_p": 0.01}, {"min_p": 1.0}])
@pytest.mark.parametrize("draft", [0, 1])
def test_an_unnormalised_one_token_mask_still_emits_a_law(warp, draft):
    """warp_unnormalised when the warp keeps one token (the default rows have no ties): the
    masked row has mass only on argmax p, so the ratio keeps argmax p or nothing, and every
    correction, renormalised as a sampler does, is argmax p: the rule writes the target's
    greedy text, which is the warped target. The exact law summed to 0.618 here."""
    rule = get_rule("warp_unnormalised").with_params(
        **{"temperature": 1.0, "top_p": 1.0, **warp, "warp_draft": draft})
    greedy = _argmax_chain(T.P, 0, 2)
    np.testing.assert_array_equal(target_joint(target_of(rule, T.P, T.Q), 0, n_tokens=2),
                                  greedy)
    exact = exact_joint(sc(T.P, T.Q, 0, 4, rule=rule), n_tokens=2)
    np.testing.assert_allclose(exact, greedy, rtol=0, atol=1e-12)
    n = 20_000
    sim = simulate(sc(T.P, T.Q, 0, 4, rule=rule, seed=4), n=n, n_tokens=2)
    assert tv(sim.law, exact) <= tv_threshold(exact, n)


def test_alpha_of_a_renormalised_row_is_at_most_one():
    """top-k = V keeps every token but renormalises: row 'a' then sums to 1 + 2^-52, and
    alpha of the draft q = p came out 1 + 2^-52 at context 'e' (theory refused it)."""
    from specviz.analysis import theory
    from specviz.core.exact import round_law
    from specviz.core.rule import overlap

    Pw = warp_rows(T.P, Warp(top_k=6))
    assert Pw[0].sum() > 1.0  # the rounding this test is about is there
    assert (overlap(Pw, Pw) <= 1.0).all()
    for ctx in range(6):
        alpha = round_law(sc(Pw, Pw, ctx, 4), long_run=True).alpha
        assert alpha == pytest.approx(1.0, abs=1e-15) and alpha <= 1.0
        assert theory.draft_acceptance_rate(alpha, 4) == pytest.approx(1.0)


def test_a_warped_pair_still_scores_the_round_in_one_call():
    """A pair whose target scores a block (score) keeps doing so under a warp: the round
    calls score once, with the k + 1 prefixes of its drafts, before any p is read."""
    from specviz.core.round import play_round

    calls = []

    class Blocked(TablePair):
        def score(self, prefix, tails, *, which="p"):
            calls.append((tuple(prefix), tuple(tuple(t) for t in tails), which))

    T = default_tables()
    pair = WarpedPair(Blocked(T.P, T.Q), Warp(temperature=0.7, top_k=3))
    play_round(Scenario.on(pair, 0, k=4), rng=np.random.default_rng(0))
    assert len(calls) == 1 and calls[0][0] == (0,) and calls[0][2] == "p"
    tails = calls[0][1]
    assert [len(t) for t in tails] == [0, 1, 2, 3, 4] and tails[-1][:3] == tails[3]
