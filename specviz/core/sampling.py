"""Categorical draws shared by every sampler.

Every draw is the inverse CDF: the smallest x with cdf(x) > u. Scalar draws (one round at
a time) search the row; vectorised draws read a table of buckets first (BucketSampler for
small vocabularies, GuideSampler for large ones). None ever draws a token of zero
probability.
"""

from __future__ import annotations

import numpy as np


def draw(w: np.ndarray, u: float) -> int:
    """One token from the (V,) law w with the uniform u, by inverse CDF."""
    cdf = w.cumsum()
    cdf /= cdf[-1]  # ends at exactly 1
    x = int(cdf.searchsorted(u, side="right"))
    if x < len(w) and w[x] > 0:  # then no later token has mass before it: x <= last_mass(w)
        return x
    return min(x, int(last_mass(w)))


DRAW_FLAT_MAX = 4_096  # up to this V a row draw is `draw` itself (one cumulative sum)
DRAW_BLOCK = 256  # above it, the inverse CDF goes by blocks of this many tokens


def block_cdf(w: np.ndarray) -> np.ndarray:
    """The mass up to the end of each block of DRAW_BLOCK tokens: cumsum of block sums."""
    nb = -(-len(w) // DRAW_BLOCK)
    if len(w) < nb * DRAW_BLOCK:  # a ragged last block: padded with zeros (whole: w itself)
        w = np.concatenate([w, np.zeros(nb * DRAW_BLOCK - len(w))])
    return np.cumsum(np.reshape(w, (nb, DRAW_BLOCK)).sum(axis=1))  # (nb,)


def draw_row(w: np.ndarray, u: float, blocks: np.ndarray | None = None) -> int:
    """One token from the (V,) law w with the uniform u, by inverse CDF.

    Small V: exactly `draw`. Large V: the same inverse CDF in two steps (block sums, then
    a cumulative sum inside the chosen block; blocks = block_cdf(w) when known), since a
    cumulative sum over the whole row costs more than the rest of a position's work. The
    token can differ from `draw`'s only where rounding moves an interval's edge past u.
    """
    V = len(w)
    if V <= DRAW_FLAT_MAX:
        return draw(w, u)
    c = block_cdf(w) if blocks is None else blocks
    t = u * c[-1]
    b = min(int(np.searchsorted(c, t, side="right")), len(c) - 1)
    inner = np.cumsum(w[b * DRAW_BLOCK: (b + 1) * DRAW_BLOCK]) + (c[b - 1] if b else 0.0)
    x = b * DRAW_BLOCK + min(int(np.searchsorted(inner, t, side="right")), len(inner) - 1)
    return x if w[x] > 0 else draw(w, u)  # an edge case of rounding: the flat way


class BucketSampler:
    """x ~ W[rows_i] by the inverse CDF, read from a table of G = 2^s equal buckets per row
    (the cutpoint method of Chen & Asau 1974, with buckets fine enough that nearly every
    one lies inside a single token's interval). floor(u G) is exact for a power of two, so
    a bucket wholly inside token x's interval [cdf(x-1), cdf(x)) gives x for every u in
    it; the few buckets holding an interval's edge are marked -1 and those draws count
    cdf <= u directly. The same token as `draw` for every u; with normalise=False, cdf is
    left unnormalised and the token is draw_rows's, #{cdf <= u cdf[-1]}. W: (R, V)"""

    def __init__(self, W: np.ndarray, cells: int = 1 << 14, *, normalise: bool = True) -> None:
        self.R, self.V = W.shape
        self.shift = max(6, int(cells // self.V).bit_length() - 1)  # G = 2^shift
        G = 1 << self.shift
        cdf = np.cumsum(W, axis=1)
        self.cdf = cdf / cdf[:, -1:] if normalise else cdf  # (R, V)
        last = last_mass(W)  # (R,) last token with mass
        start = np.arange(G) / G  # (G,) bucket starts, exact
        table = np.empty((self.R, G), dtype=np.int64)
        for r in range(self.R):
            tot = self.cdf[r, -1]  # u tot only grows with u, rounded too
            lo = np.searchsorted(self.cdf[r], start * tot, side="right")  # token at the start
            hi = np.searchsorted(self.cdf[r], (start + 1.0 / G) * tot, side="right")  # at end
            table[r] = np.where(hi > lo, -1, np.minimum(lo, last[r]))
        self.table = table.ravel()  # (R*G,)
        self.last = last

    def __call__(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """rows: (n,) int, u: (n,) or (b, n) in [0, 1) -> u's shape of tokens."""
        x = self.table[(rows << self.shift) + (u * (1 << self.shift)).astype(np.int64)]
        edge = np.nonzero(x < 0)
        if len(edge[0]):  # an interval's edge inside the bucket: count cdf <= u tot exactly
            r = np.broadcast_to(rows, x.shape)[edge]
            x[edge] = draw_summed(self.cdf[r], self.last[r], u[edge])
        return x


class InverseCDF:
    """Vectorised inverse-CDF draws over rows of W, with the option of skipping one token."""

    def __init__(self, W: np.ndarray) -> None:
        self.R, self.V = W.shape
        self.W = W
        cdf = np.cumsum(W, axis=1)
        self.cdf = cdf / cdf[:, -1:]  # (R, V), ends at exactly 1
        self.flat = (self.cdf + np.arange(self.R)[:, None]).ravel()  # row r spans [r, r + 1)
        self.last = last_mass(W)  # (R,)

    def __call__(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        x = np.searchsorted(self.flat, rows + u, side="right") - rows * self.V
        return np.minimum(x, self.last[rows])

    def skipping(self, rows: np.ndarray, skip: np.ndarray, u: np.ndarray) -> np.ndarray:
        """x ~ W[row] given x != skip: u is spread over the mass outside skip's interval."""
        w = self.W[rows, skip]  # (n,) mass of the skipped token
        before = self.cdf[rows, skip] - w  # where its interval starts
        v = u * (1.0 - w)  # uniform on [0, 1 - w)
        v = np.where(v < before, v, v + w)  # jump over [before, before + w)
        x = self(rows, np.minimum(v, np.nextafter(1.0, 0.0)))
        bad = np.flatnonzero(x == skip)  # only by rounding at an interval's edge
        if len(bad):  # fall back to the most likely other token, which has mass
            alt = self.W[rows[bad]].copy()
            alt[np.arange(len(bad)), skip[bad]] = -1.0
            x[bad] = alt.argmax(axis=1)
        return x


class GuideSampler:
    """Vectorised inverse CDF with a guide table (the cutpoint method of Chen & Asau 1974).

    G[r, j] = the first token whose cdf exceeds j / V, so a draw starts at G[r, floor(u V)]
    and steps right while cdf <= u: about two comparisons per draw, and a set-up of one
    binary search per row rather than alias tables built in a Python loop. W: (R, V)
    """

    def __init__(self, W: np.ndarray) -> None:
        self.R, self.V = W.shape
        cdf = np.cumsum(W, axis=1)
        self.cdf = cdf / cdf[:, -1:]  # (R, V), ends at exactly 1
        grid = np.arange(self.V) / self.V  # (V,) bucket starts
        self.flat = self.cdf.ravel()  # (R*V,)
        self.guide_flat = np.stack([np.searchsorted(row, grid, side="right")
                                    for row in self.cdf]).ravel()  # (R*V,)

    def __call__(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """rows: (n,) int, u: (n,) in [0, 1) -> (n,) tokens."""
        base = rows * self.V  # (n,) where each row's first entry is
        j = np.minimum((u * self.V).astype(np.int64), self.V - 1)
        x = self.guide_flat[base + j]  # (n,) never past the answer
        todo = np.flatnonzero(self.flat[base + x] <= u)
        while len(todo):  # step right until cdf(x) > u; the last cdf is 1 > u
            x[todo] += 1
            todo = todo[self.flat[base[todo] + x[todo]] <= u[todo]]
        return x


def draw_rows(W: np.ndarray, u: np.ndarray) -> np.ndarray:
    """x_i ~ W[i] / sum W[i] by inverse CDF, one row per uniform; never a token of zero
    mass. W: (n, V) non-negative, each row with mass; u: (n,) -> (n,) tokens."""
    return draw_summed(np.cumsum(W, axis=1), last_mass(W), u)


DRAW_COLUMNS_MAX = 32  # up to this V, draw_summed counts cdf <= t a column at a time


def draw_summed(cdf: np.ndarray, last: np.ndarray, u: np.ndarray) -> np.ndarray:
    """draw_rows from rows summed ahead: x = #{cdf <= u cdf[-1]}, at most the row's last
    token of positive mass. cdf (n, V) = cumsum of W, last (n,) = last_mass(W), u (n,) or
    (b, n) for b draws from each row -> u's shape. Small V: the same count, column by
    column (V passes over u's shape, no (..., V) array)."""
    t = u * cdf[:, -1]  # u's shape
    if cdf.shape[1] > DRAW_COLUMNS_MAX:
        return np.minimum((cdf <= t[..., None]).sum(axis=-1), last)
    x = np.zeros(t.shape, dtype=np.int64)
    for col in cdf.T:
        x += col <= t
    return np.minimum(x, last)


def last_mass(W: np.ndarray) -> np.ndarray:
    """The last token of positive mass of each row of W. (...,)"""
    return W.shape[-1] - 1 - np.argmax(W[..., ::-1] > 0, axis=-1)
