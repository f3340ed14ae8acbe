"""Categorical draws shared by every sampler.

Scalar draws (one round at a time) use the inverse CDF: the smallest x with cdf(x) > u.
Vectorised draws use Walker's alias method (Vose's construction): u V picks a bucket j,
the fractional part of u V picks j itself or its alias. Both are exact up to rounding,
and neither ever draws a token of zero probability.
"""

from __future__ import annotations

import numpy as np


def draw(w: np.ndarray, u: float) -> int:
    """One token from the (V,) law w with the uniform u, by inverse CDF."""
    cdf = np.cumsum(w)
    cdf /= cdf[-1]  # ends at exactly 1
    x = int(np.searchsorted(cdf, u, side="right"))
    last = len(w) - 1 - int(np.argmax(w[::-1] > 0))  # last token of positive mass
    return min(x, last)


DRAW_FLAT_MAX = 4_096  # up to this V a row draw is `draw` itself (one cumulative sum)
DRAW_BLOCK = 256  # above it, the inverse CDF goes by blocks of this many tokens


def block_cdf(w: np.ndarray, block: int = DRAW_BLOCK) -> np.ndarray:
    """The mass up to the end of each block of `block` tokens: cumsum of block sums."""
    nb = -(-len(w) // block)
    wb = np.zeros(nb * block)
    wb[: len(w)] = w
    return np.cumsum(wb.reshape(nb, block).sum(axis=1))  # (nb,)


def draw_row(w: np.ndarray, u: float, blocks: np.ndarray | None = None,
             block: int = DRAW_BLOCK) -> int:
    """One token from the (V,) law w with the uniform u, by inverse CDF.

    Small V: exactly `draw`. Large V: the same inverse CDF in two steps (block sums, then
    a cumulative sum inside the chosen block; blocks = block_cdf(w) when known), since a
    cumulative sum over the whole row costs more than the rest of a position's work. The
    token can differ from `draw`'s only where rounding moves an interval's edge past u.
    """
    V = len(w)
    if V <= DRAW_FLAT_MAX:
        return draw(w, u)
    c = block_cdf(w, block) if blocks is None else blocks
    t = u * c[-1]
    b = min(int(np.searchsorted(c, t, side="right")), len(c) - 1)
    inner = np.cumsum(w[b * block: (b + 1) * block]) + (c[b - 1] if b else 0.0)
    x = b * block + min(int(np.searchsorted(inner, t, side="right")), len(inner) - 1)
    return x if w[x] > 0 else draw(w, u)  # an edge case of rounding: the flat way


def alias_tables(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias tables for each row of W. (R, V) -> keep (R, V) float, alias (R, V) int."""
    R, V = W.shape
    keep = np.ones((R, V))
    alias = np.tile(np.arange(V), (R, 1))
    for r in range(R):
        w = W[r] / W[r].sum() * V  # scaled so the mean bucket holds 1
        small = [j for j in range(V) if w[j] < 1.0]
        large = [j for j in range(V) if w[j] >= 1.0]
        while small and large:
            s, g = small.pop(), large.pop()
            keep[r, s], alias[r, s] = w[s], g
            w[g] -= 1.0 - w[s]
            (small if w[g] < 1.0 else large).append(g)
        # leftovers hold 1 up to rounding and keep themselves (keep = 1 set above)
        zero = W[r] <= 0
        keep[r, zero] = 0.0  # a token of no mass never keeps its bucket ...
        stray = zero & (alias[r] == np.arange(V))
        alias[r, stray] = int(np.argmax(W[r]))  # ... and never is its own alias
        alias[r, zero[alias[r]]] = int(np.argmax(W[r]))
    return keep, alias


class RowSampler:
    """x_i ~ W[rows_i] for many rows at once, by the alias method. W: (R, V)."""

    def __init__(self, W: np.ndarray) -> None:
        self.R, self.V = W.shape
        keep, alias = alias_tables(W)
        self.keep = keep.ravel()  # (R*V,)
        self.alias = alias.ravel()  # (R*V,)

    def __call__(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """rows: (n,) int, u: (n,) in [0, 1) -> (n,) tokens."""
        t = u * self.V
        j = t.astype(np.int64)  # bucket, 0..V-1
        np.minimum(j, self.V - 1, out=j)  # u V can round up to V
        t -= j  # fractional part: a fresh uniform in [0, 1)
        idx = rows * self.V + j
        return np.where(t < self.keep[idx], j, self.alias[idx])


class InverseCDF:
    """Vectorised inverse-CDF draws over rows of W, with the option of skipping one token."""

    def __init__(self, W: np.ndarray) -> None:
        self.R, self.V = W.shape
        self.W = W
        cdf = np.cumsum(W, axis=1)
        self.cdf = cdf / cdf[:, -1:]  # (R, V), ends at exactly 1
        self.flat = (self.cdf + np.arange(self.R)[:, None]).ravel()  # row r spans [r, r + 1)
        self.last = W.shape[1] - 1 - np.argmax(W[:, ::-1] > 0, axis=1)  # (R,)

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
        self.guide = np.stack([np.searchsorted(row, grid, side="right") for row in self.cdf])
        self.flat = self.cdf.ravel()  # (R*V,)

    def __call__(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """rows: (n,) int, u: (n,) in [0, 1) -> (n,) tokens."""
        j = np.minimum((u * self.V).astype(np.int64), self.V - 1)
        base = rows * self.V
        x = self.guide[rows, j]  # (n,) never past the answer
        todo = np.flatnonzero(self.flat[base + x] <= u)
        while len(todo):  # step right until cdf(x) > u; the last cdf is 1 > u
            x[todo] += 1
            todo = todo[self.flat[base[todo] + x[todo]] <= u[todo]]
        return x


def draw_rows(W: np.ndarray, u: np.ndarray) -> np.ndarray:
    """x_i ~ W[i] / sum W[i] by inverse CDF, one row per uniform; never a token of zero
    mass. W: (n, V) non-negative, each row with mass; u: (n,) -> (n,) tokens."""
    cdf = np.cumsum(W, axis=1)
    x = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
    last = W.shape[1] - 1 - np.argmax(W[:, ::-1] > 0, axis=1)
    return np.minimum(x, last)
