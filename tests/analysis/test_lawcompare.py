"""lawcompare: counts against a target and known laws (the comparison core of issue 41).

Oracles are exact draws (rng.multinomial from a stated law), never the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from specviz.analysis.lawcompare import (
    BIASED,
    INCONCLUSIVE,
    LOSSLESS,
    TV_SHARE,
    UNLIKE,
    Match,
    _nearest,
    check,
    compare,
    detectable_tv,
    mean_and_error,
)

RNG_SEED = 41


def _laws():
    rng = np.random.default_rng(RNG_SEED)
    t = rng.dirichlet(np.ones(6))
    bent = t.copy()
    bent[0], bent[1] = bent[0] + 0.6 * bent[1], 0.4 * bent[1]  # TV = 0.6 t[1] from t
    other = np.roll(t, 1)
    return t, bent, other


def _fail_rate(keys, level, runs, rng):
    t, _, _ = _laws()
    joint = np.outer(t, t)
    target = {"a": t, "b": joint, "c": t}
    fails = 0
    for _ in range(runs):
        obs = {"a": rng.multinomial(2000, t), "b": rng.multinomial(2000, joint.ravel())
               .reshape(6, 6), "c": rng.multinomial(500, t)}
        fails += compare({k: obs[k] for k in keys}, {k: target[k] for k in keys},
                         level=level).verdict != LOSSLESS
    return fails / runs


@pytest.mark.parametrize("keys", [("a",), ("a", "b", "c")])
def test_a_lossless_sampler_fails_about_as_often_as_the_level_says(keys):
    """Exact draws audited 400 times at level 0.2: the rate is at most the level (plus 4
    binomial standard errors); with one statistic it is at least the chi-square's share of
    it (the TV test at delta is conservative: McDiarmid), less 4 standard errors. Three
    statistics (two independent) each at 0.2 would fail about half the time: Bonferroni."""
    runs, level = 400, 0.2
    rate = _fail_rate(keys, level, runs, np.random.default_rng(RNG_SEED))
    se = math.sqrt(level * (1 - level) / runs)
    assert rate <= level + 4 * se
    if len(keys) == 1:
        assert rate >= (1 - TV_SHARE) * level - 4 * se


def test_biased_counts_are_caught_and_named():
    t, bent, other = _laws()
    rng = np.random.default_rng(1)
    obs = {"a": rng.multinomial(20_000, bent)}
    c = compare(obs, {"a": t}, {"correct": {"a": t}, "bent": {"a": bent}, "other": {"a": other}})
    assert c.verdict == BIASED and c.like == ("bent",) and c.behaves_like == "like bent"
    assert c.checks[0].tv > c.checks[0].threshold and c.checks[0].p_value < c.checks[0].alpha


def test_a_law_unlike_every_known_one_is_said_so():
    t, bent, other = _laws()
    mix = 0.5 * (t + other)  # neither the target nor a known law
    obs = {"a": np.random.default_rng(2).multinomial(20_000, mix)}
    c = compare(obs, {"a": t}, {"bent": {"a": bent}, "other": {"a": other}})
    assert c.verdict == BIASED and c.like == ()
    assert c.behaves_like.startswith(UNLIKE) and "(the closest, " in c.behaves_like


def test_two_known_laws_alike_here_are_not_told_apart():
    t, bent, _ = _laws()
    obs = {"a": np.random.default_rng(3).multinomial(20_000, bent)}
    c = compare(obs, {"a": t}, {"bent": {"a": bent}, "twin": {"a": bent.copy()}})
    assert set(c.like) == {"bent", "twin"} and "not told apart" in c.behaves_like


def test_a_run_too_small_to_see_a_known_bias_says_so():
    """n = 30: the known bias (TV 0.6 t[1]) is below what 30 draws catch, so an exact
    sample is 'too small to tell', not lossless; at n = 200,000 it is lossless."""
    t, bent, _ = _laws()
    rng = np.random.default_rng(4)
    known = {"correct": {"a": t}, "bent": {"a": bent}}
    small = compare({"a": rng.multinomial(30, t)}, {"a": t}, known)
    assert small.verdict == INCONCLUSIVE and small.unseen == ("bent",)
    assert small.detectable > tv(bent, t)
    big = compare({"a": rng.multinomial(200_000, t)}, {"a": t}, known)
    assert big.verdict == LOSSLESS and big.unseen == () and big.like == ("correct",)


def tv(a, b):
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def test_resolution_without_known_laws():
    t, _, _ = _laws()
    obs = {"a": np.random.default_rng(5).multinomial(100, t)}
    assert compare(obs, {"a": t}).verdict == LOSSLESS
    assert compare(obs, {"a": t}, resolution=0.05).verdict == INCONCLUSIVE


def test_only_output_statistics_decide_lossless():
    """A statistic outside `output` (tokens per round) that differs does not make a lossless
    sampler biased; it picks the known law."""
    t, _, _ = _laws()
    rng = np.random.default_rng(6)
    slow, fast = np.array([0.7, 0.3]), np.array([0.3, 0.7])
    obs = {"a": rng.multinomial(20_000, t), "len": rng.multinomial(20_000, slow)}
    known = {"fast": {"a": t, "len": fast}, "slow": {"a": t, "len": slow}}
    c = compare(obs, {"a": t, "len": fast}, known, output=["a"])
    assert c.verdict == LOSSLESS and c.like == ("slow",)
    negative = compare(obs, {"a": t, "len": fast}, known)  # every key decides: biased
    assert negative.verdict == BIASED


def test_detectable_tv_is_caught_at_its_power():
    """A law at exactly the detectable TV is caught by the TV test in >= 95% of 200 runs."""
    t = np.full(4, 0.25)
    n, delta = 2000, 1e-3
    b = detectable_tv(t, n, delta=delta)
    bent = t + np.array([b, -b, 0.0, 0.0])
    rng = np.random.default_rng(7)
    caught = sum(check(rng.multinomial(n, bent), t, alpha=1e-9, delta=delta).tv >
                 check(rng.multinomial(n, t), t, alpha=1e-9, delta=delta).threshold
                 for _ in range(200))
    assert caught >= 0.95 * 200


def test_the_nearest_law_needs_a_likelihood_ratio_of_one_over_the_level():
    def m(name, loglik, consistent=True):
        return Match(name, consistent, loglik, 0.0, 0.1)
    assert _nearest([m("a", -10.0), m("b", -20.0)], 0.01) == ("a",)  # ratio e^10 > 100
    assert _nearest([m("a", -10.0), m("b", -12.0)], 0.01) == ("a", "b")  # e^2 < 100
    assert _nearest([m("a", -10.0, False), m("b", -12.0)], 0.01) == ("b",)
    assert _nearest([m("a", -10.0, False)], 0.01) == ()


def test_bad_input_is_a_clear_error():
    t, _, _ = _laws()
    with pytest.raises(ValueError, match="missing: b"):
        compare({"a": [1] * 6}, {"a": t, "b": t})
    with pytest.raises(ValueError, match="level"):
        compare({"a": [1] * 6}, {"a": t}, level=1.5)
    with pytest.raises(ValueError, match="same shape"):
        compare({"a": [1] * 5}, {"a": t})


def test_mean_and_error():
    mean, se = mean_and_error([1, 1, 2], [1, 2, 3])
    assert mean == pytest.approx(2.25)
    assert se == pytest.approx(math.sqrt((0.25 * 1.5625 + 0.25 * 0.0625 + 0.5 * 0.5625) / 4))
