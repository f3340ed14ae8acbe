"""Bad input gets a ValueError a user can act on."""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import sc

from specviz import (
    K_MAX,
    N_MAX,
    RULES,
    default_tables,
    exact_joint,
    long_decode,
    mix_draft,
    normalise_rows,
    play_round,
    round_law,
    simulate,
    target_joint,
    temper,
    validate_pair,
    validate_table,
)
from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario

T = default_tables()
RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    "M, match",
    [
        (np.ones((2, 3)) / 3, "square"),
        (np.ones(4) / 4, "square"),
        ([[0.5, np.nan], [0.5, 0.5]], "NaN or inf"),
        ([[0.5, np.inf], [0.5, 0.5]], "NaN or inf"),
        ([[1.5, -0.5], [0.5, 0.5]], "negative"),
        ([[0.5, 0.5], [0.5, 0.4]], r"row 1 of P sums to 0.9"),
        ([[0.0, 0.0], [0.5, 0.5]], r"row 0 of P sums to 0"),
        ([["a", "b"], [0.5, 0.5]], "numbers"),
        (np.ones((1, 1)), "at least 2"),
        (np.zeros((0, 0)), "at least 2"),
    ],
)
def test_invalid_tables(M, match):
    with pytest.raises(ValueError, match=match):
        validate_table(M, "P")


def test_row_named_by_token():
    P = T.P.copy()
    P[2, 0] += 0.1
    with pytest.raises(ValueError, match=r"row 'c' of P \(target\) sums to 1.1"):
        validate_pair(P, T.Q, T.vocab)


def test_shapes_must_match():
    with pytest.raises(ValueError, match="same shape"):
        validate_pair(T.P, np.eye(3))


def test_nothing_is_renormalised_silently():
    P = T.P * 1.01
    with pytest.raises(ValueError, match="normalise"):
        simulate(sc(P, T.Q, 0, 4), n=10)
    np.testing.assert_allclose(normalise_rows(P), T.P)


@pytest.mark.parametrize("ctx", [-1, 6, 2.0, "a", None, True])
def test_ctx_out_of_range(ctx):
    """A token id out of range names ctx; anything else is not a prefix at all."""
    token = isinstance(ctx, int) and not isinstance(ctx, bool)
    with pytest.raises(ValueError, match="ctx must be a token index" if token
                       else "prefix must be a token id or a sequence"):
        play_round(Scenario.on(TablePair(T.P, T.Q), ctx, k=4), rng=RNG)
    with pytest.raises(ValueError, match="ctx"):
        exact_joint(sc(T.P, T.Q, ctx, 4))


@pytest.mark.parametrize("k", [0, -1, K_MAX + 1, 2.5, "4"])
def test_k_range(k):
    for fn in (lambda: simulate(sc(T.P, T.Q, 0, k), n=10), lambda: exact_joint(sc(T.P, T.Q, 0, k)),
               lambda: round_law(sc(T.P, T.Q, 0, k)),
               lambda: play_round(Scenario.on(TablePair(T.P, T.Q), 0, k=k), rng=RNG)):
        with pytest.raises(ValueError, match=f"1..{K_MAX}"):
            fn()


@pytest.mark.parametrize("n", [0, -5, N_MAX + 1, 1.5])
def test_n_range(n):
    with pytest.raises(ValueError, match="n must be an integer"):
        simulate(sc(T.P, T.Q, 0, 4), n=n)


def test_unknown_rule_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid rules: correct, ") as info:
        simulate(sc(T.P, T.Q, 0, 4, rule="lax"), n=10)
    assert all(name in str(info.value) for name in RULES)
    with pytest.raises(ValueError, match="valid rules"):
        exact_joint(sc(T.P, T.Q, 0, 4, rule=""))


@pytest.mark.parametrize("alpha", [-0.1, 1.1, np.nan, "0.5"])
def test_alpha_range(alpha):
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        mix_draft(T.P, alpha)


@pytest.mark.parametrize("t", [0, -1, np.nan, np.inf])
def test_temperature_positive(t):
    with pytest.raises(ValueError, match="T must be"):
        temper(T.P, t)


def test_caps_on_exact_and_n_tokens():
    big = np.full((200, 200), 1 / 200)
    with pytest.raises(ValueError, match="cap"):
        exact_joint(sc(big, big, 0, 8), n_tokens=3)
    with pytest.raises(ValueError, match="n_tokens"):
        target_joint(T.P, 0, n_tokens=0)
    with pytest.raises(ValueError, match="n_rounds"):
        long_decode(sc(T.P, T.Q, 0, 4), n_rounds=0)


def test_knobs():
    np.testing.assert_allclose(temper(T.P, 1.0), T.P, atol=1e-15)
    np.testing.assert_allclose(mix_draft(T.P, 1.0), T.P)
    hot, cold = temper(T.P, 5.0), temper(T.P, 0.2)
    assert (hot.max(axis=1) < T.P.max(axis=1)).all() and (cold.max(axis=1) > T.P.max(axis=1)).all()
    assert (temper(T.P, 0.5)[T.P == 0] == 0).all()
