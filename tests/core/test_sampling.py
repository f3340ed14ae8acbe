"""The vectorised samplers draw exactly the token the scalar inverse CDF draws, for the same
uniform: at random uniforms, at every interval edge, and for rows with zeros."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.core.sampling import DRAW_BLOCK, BucketSampler, GuideSampler, block_cdf, draw, draw_row


def _rows(rng, R: int, V: int) -> np.ndarray:
    W = rng.dirichlet(np.full(V, 0.5), size=R)
    W[rng.random(W.shape) < 0.3] = 0.0
    W[:, rng.integers(0, V)] += 1e-3  # every row keeps some mass
    return W / W.sum(axis=1, keepdims=True)


def _uniforms(rng, W: np.ndarray, n: int):
    """Random rows and uniforms, a quarter of them exactly on an interval's edge."""
    R, V = W.shape
    rows = rng.integers(0, R, n)
    u = rng.random(n)
    cdf = np.cumsum(W, axis=1)
    cdf /= cdf[:, -1:]
    edge = np.arange(n // 4)
    u[edge] = cdf[rows[edge], rng.integers(0, V, len(edge))]
    return rows, np.minimum(u, np.nextafter(1.0, 0.0))


@pytest.mark.parametrize("V", [2, 3, 6, 17, 64])
def test_bucket_sampler_is_the_inverse_cdf(V):
    rng = np.random.default_rng(V)
    W = _rows(rng, 9, V)
    rows, u = _uniforms(rng, W, 20_000)
    want = np.array([draw(W[r], x) for r, x in zip(rows, u, strict=True)])
    np.testing.assert_array_equal(BucketSampler(W)(rows, u), want)


@pytest.mark.parametrize("V", [65, 300])
def test_guide_sampler_is_the_inverse_cdf(V):
    rng = np.random.default_rng(V)
    W = _rows(rng, 5, V)
    rows, u = _uniforms(rng, W, 5_000)
    want = np.array([draw(W[r], x) for r, x in zip(rows, u, strict=True)])
    np.testing.assert_array_equal(GuideSampler(W)(rows, u), want)


def _inverse_cdf(w, u: float) -> int:
    """The smallest x whose running mass (over the row's total) passes u, and never a token
    past the last one with mass (u = 1 included): the definition, token by token."""
    total, run = float(sum(w)), 0.0
    last = max(i for i, m in enumerate(w) if m > 0)
    for x, m in enumerate(w):
        run += m
        if run / total > u:
            return min(x, last)
    return last


@pytest.mark.parametrize("V", [1, 2, 5, 17])
def test_draw_is_the_inverse_cdf(V):
    """draw at random uniforms, on interval edges, at 0, just under 1 and at 1, on rows with
    zeros (leading and trailing ones included)."""
    rng = np.random.default_rng(100 + V)
    W = _rows(rng, 12, V)
    W[0, : V // 2] = 0.0  # leading zeros
    W[1, V // 2 + 1:] = 0.0  # trailing zeros
    W[:2, V // 2] = 1.0
    rows, u = _uniforms(rng, W, 4_000)
    ends = [0.0, np.nextafter(1.0, 0.0), 1.0]
    rows = np.concatenate([rows, np.repeat(np.arange(len(W)), len(ends))])
    u = np.concatenate([u, np.tile(ends, len(W))])
    got = [draw(W[r], x) for r, x in zip(rows, u, strict=True)]
    assert got == [_inverse_cdf(W[r], x) for r, x in zip(rows, u, strict=True)]


def test_no_token_of_zero_mass_is_drawn():
    W = np.array([[0.0, 0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]])
    rows = np.repeat([0, 1], 5_000)
    u = np.concatenate([np.linspace(0, 1, 5_000, endpoint=False)] * 2)
    x = BucketSampler(W)(rows, u)
    assert set(x[:5_000]) == {1, 3} and set(x[5_000:]) == {4}


@pytest.mark.parametrize("V", [2, 6, 40])
def test_unnormalised_buckets_draw_the_token_of_draw_rows(V):
    """normalise=False: x = #{cumsum(w) <= u sum(w)}, at most the last token of mass, for
    uniforms on interval edges and at the ends of the buckets too; (b, n) uniforms too."""
    rng = np.random.default_rng(V)
    W = _rows(rng, 7, V) * rng.uniform(0.5, 2.0, (7, 1))  # rows not summing to 1
    rows, u = _uniforms(rng, W, 8_000)
    sampler = BucketSampler(W, normalise=False)
    G = 1 << sampler.shift
    ends = np.nextafter(rng.integers(1, G + 1, 2_000) / G, 0.0)
    rows, u = np.concatenate([rows, rng.integers(0, 7, 2_000)]), np.concatenate([u, ends])

    def token(w, x):
        cdf = np.cumsum(w)
        return min(int(np.sum(cdf <= x * cdf[-1])), int(np.flatnonzero(w > 0)[-1]))

    want = np.array([token(W[r], x) for r, x in zip(rows, u, strict=True)])
    np.testing.assert_array_equal(sampler(rows, u), want)
    half = len(rows) // 2
    two = sampler(rows[:half], np.stack([u[:half], u[half:2 * half]]))
    np.testing.assert_array_equal(two[1], [token(W[r], x) for r, x in
                                           zip(rows[:half], u[half:2 * half], strict=True)])


@pytest.mark.parametrize("V", [DRAW_BLOCK - 3, 4 * DRAW_BLOCK, 4 * DRAW_BLOCK + 1, 300_001,
                               262_144])
def test_block_cdf_is_the_mass_up_to_each_block_end(V):
    """block_cdf(w)[b] = sum of w[: (b + 1) B] (B = DRAW_BLOCK, the last block ragged or
    whole), and draw_row by blocks draws draw's token at random uniforms (at a block's own
    edge rounding may move it by one: draw_row's docstring)."""
    rng = np.random.default_rng(V)
    w = rng.dirichlet(np.full(V, 0.3))
    w[rng.random(V) < 0.3] = 0.0
    w /= w.sum()
    ends = np.arange(DRAW_BLOCK, V + DRAW_BLOCK, DRAW_BLOCK).clip(max=V)
    want = np.cumsum(w, dtype=np.longdouble)[ends - 1].astype(np.float64)
    np.testing.assert_allclose(block_cdf(w), want, rtol=0, atol=V * 1e-16)
    us = np.concatenate([rng.random(300), [0.0, np.nextafter(1.0, 0)]])
    assert [draw_row(w, u) for u in us] == [draw(w, u) for u in us]
