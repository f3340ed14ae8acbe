"""The toy models: explicit V x V next-token tables, and their validation.

Row c of a table is the next-token distribution after token c (a bigram model),
so P[c] is the target's p(.|c) and Q[c] the draft's q(.|c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VOCAB: tuple[str, ...] = ("a", "b", "c", "d", "e", "f")
K_MAX = 64  # most drafted tokens per round the engine accepts
N_MAX = 100_000_000  # most Monte Carlo decodes in one call (run in bounded chunks)
V_MAX = 4096  # largest vocabulary a table may have
ROW_SUM_ATOL = 1e-6  # a row must sum to 1 within this; rows accepted are then renormalised
ROW_ROUNDING = 1e-13  # a row closer than this to 1 is float rounding, and is left as it is

# Row 'a' is the from-scratch tutorial's published row. It was published to 4 places, and its
# walkthrough (0.8532 for 'e', the residual) was computed from more precise values; we store
# 6 places chosen so that rounding to 4 gives the published row exactly AND the walkthrough
# comes out as published: min(1, p/q) at 'e' = 0.8532, residual = [.1673 .6457 .1838 .0032 0 0].
# (From the 4-place row by hand one gets 0.8531 and a residual that differs by ~5e-4.)
# Target p(.|c): rows b..f are ours.
_P = np.array(
    [
        [0.094262, 0.309998, 0.090802, 0.001529, 0.382140, 0.121269],  # a (published)
        [0.30, 0.05, 0.25, 0.10, 0.05, 0.25],  # b
        [0.05, 0.40, 0.05, 0.30, 0.15, 0.05],  # c
        [0.45, 0.05, 0.00, 0.10, 0.20, 0.20],  # d: p(c|d) = 0, never accepted
        [0.10, 0.10, 0.40, 0.10, 0.05, 0.25],  # e
        [0.25, 0.15, 0.10, 0.30, 0.15, 0.05],  # f
    ]
)
# Draft q(.|c): a middling draft, sum_x min(p, q) = 0.70 .. 0.75 on rows b..f.
_Q = np.array(
    [
        [0.0823, 0.26383, 0.07766, 0.0013, 0.44789, 0.12702],  # a (published)
        [0.20, 0.15, 0.35, 0.05, 0.15, 0.10],  # b
        [0.15, 0.25, 0.05, 0.20, 0.25, 0.10],  # c
        [0.30, 0.10, 0.10, 0.05, 0.30, 0.15],  # d
        [0.20, 0.05, 0.25, 0.20, 0.10, 0.20],  # e
        [0.15, 0.25, 0.20, 0.15, 0.15, 0.10],  # f
    ]
)


@dataclass(frozen=True)
class Tables:
    """A target/draft pair over one vocabulary: P, Q are (V, V) row-stochastic."""

    P: np.ndarray  # (V, V) target p(next | current)
    Q: np.ndarray  # (V, V) draft q(next | current)
    vocab: tuple[str, ...]  # (V,) token names

    @property
    def V(self) -> int:
        return len(self.vocab)


def default_tables() -> Tables:
    """The default pair over a..f (fresh copies, safe to modify)."""
    return Tables(P=_P.copy(), Q=_Q.copy(), vocab=VOCAB)


def token_name(vocab: tuple[str, ...], x: int) -> str:
    return vocab[x] if 0 <= x < len(vocab) else str(x)


def validate_table(
    M: object, name: str = "P", vocab: tuple[str, ...] | None = None
) -> np.ndarray:
    """Check that M is a square, finite, non-negative table whose rows each sum to 1.

    Returns M as a float64 array, with every row that sums to 1 only within ROW_SUM_ATOL
    divided by its sum (renormalised_rows names them), so that each row is a distribution
    for every engine and statistic downstream; raises ValueError naming the first problem.
    """
    try:
        A = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a table of numbers ({exc})") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square V x V table; got shape {A.shape}")
    V = A.shape[0]
    if V < 2:
        raise ValueError(f"{name} needs at least 2 tokens; got V = {V}")
    if V > V_MAX:
        raise ValueError(f"{name} has V = {V} tokens; the cap is {V_MAX}")
    bad = ~np.isfinite(A)
    if bad.any():
        r, x = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} has a NaN or inf at row {_row(vocab, r)}, column {_row(vocab, x)}"
        )
    if (A < 0).any():
        r, x = np.argwhere(A < 0)[0]
        raise ValueError(
            f"{name} has a negative entry {A[r, x]:g} at row {_row(vocab, r)}, "
            f"column {_row(vocab, x)}; probabilities are >= 0"
        )
    with np.errstate(over="ignore"):  # 1e308 + 1e308 is inf: reported below as a bad sum
        sums = A.sum(axis=1)  # (V,)
    off = np.abs(sums - 1.0) > ROW_SUM_ATOL
    if off.any():
        r = int(np.argmax(off))
        raise ValueError(
            f"row {_row(vocab, r)} of {name} sums to {sums[r]:.6g}, not 1 "
            f"(tolerance {ROW_SUM_ATOL:g}); fix it or normalise the rows explicitly"
        )
    rescale = np.abs(sums - 1.0) > ROW_ROUNDING  # (V,)
    return np.where(rescale[:, None], A / np.where(rescale, sums, 1.0)[:, None], A)


def renormalised_rows(M: object) -> list[int]:
    """The rows of a valid table that validate_table divides by their sum."""
    sums = np.asarray(M, dtype=np.float64).sum(axis=1)
    return [int(r) for r in np.flatnonzero(np.abs(sums - 1.0) > ROW_ROUNDING)]


def renormalisation_note(
    tables: dict[str, object], vocab: tuple[str, ...] | None = None
) -> str | None:
    """What validate_table rescaled in valid tables {name: table}, in a sentence (or None)."""
    parts = []
    for name, M in tables.items():
        rows = renormalised_rows(M)
        if rows:
            sums = np.asarray(M, dtype=np.float64).sum(axis=1)
            parts.append(f"{name} row{'s' if len(rows) > 1 else ''} " + ", ".join(
                f"{_row(vocab, r)} (sum {sums[r]:.9g})" for r in rows))
    if not parts:
        return None
    return ("Rows summing to 1 only within the tolerance "
            f"{ROW_SUM_ATOL:g} were divided by their sums: " + "; ".join(parts) + ".")


def validate_pair(
    P: object, Q: object, vocab: tuple[str, ...] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a target/draft pair: each a valid table, and both the same shape."""
    P = validate_table(P, "P (target)", vocab)
    Q = validate_table(Q, "Q (draft)", vocab)
    if P.shape != Q.shape:
        raise ValueError(f"P and Q must have the same shape; got {P.shape} and {Q.shape}")
    return P, Q


def _row(vocab: tuple[str, ...] | None, r: int) -> str:
    r = int(r)
    return f"'{vocab[r]}'" if vocab is not None and r < len(vocab) else str(r)


def check_ctx(ctx: object, V: int) -> int:
    """A context token index in 0..V-1."""
    if isinstance(ctx, bool) or not isinstance(ctx, (int, np.integer)) or not 0 <= ctx < V:
        raise ValueError(f"ctx must be a token index 0..{V - 1}; got {ctx!r}")
    return int(ctx)


def check_k(k: object) -> int:
    """Draft length k in 1..K_MAX."""
    return check_n(k, K_MAX, "k (drafted tokens per round)")


def check_n(n: object, cap: int = N_MAX, what: str = "n") -> int:
    """A count of decodes in 1..cap."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= cap:
        raise ValueError(f"{what} must be an integer 1..{cap:,}; got {n!r}")
    return int(n)


def normalise_rows(M: object) -> np.ndarray:
    """Explicit helper: divide each row by its sum. Rows must be finite, >= 0 and not all zero."""
    A = np.asarray(M, dtype=np.float64)
    if A.ndim != 2 or not np.isfinite(A).all() or (A < 0).any():
        raise ValueError("normalise_rows needs a finite, non-negative 2-D table")
    sums = A.sum(axis=1, keepdims=True)  # (V, 1)
    if (sums <= 0).any():
        r = int(np.argmax(sums[:, 0] <= 0))
        raise ValueError(f"row {r} is all zeros; it cannot be normalised")
    return A / sums


T_MIN, T_MAX = 0.05, 10.0  # temperatures a model may be run at


def check_temperature(T: object, name: str = "T") -> float:
    """A temperature in [T_MIN, T_MAX]."""
    if isinstance(T, bool) or not isinstance(T, (int, float, np.floating, np.integer)) \
            or not math.isfinite(T) or not T_MIN <= T <= T_MAX:
        raise ValueError(f"temperature {name} must be a number in [{T_MIN:g}, {T_MAX:g}]; "
                         f"got {T!r}")
    return float(T)


def temper_rows(A: np.ndarray, T: float) -> np.ndarray:
    """A^(1/T) / sum A^(1/T) over the last axis (zeros stay zero); T = 1 returns A itself."""
    if T == 1.0:
        return A
    logs = np.where(A > 0, np.log(np.where(A > 0, A, 1.0)), -np.inf) / T  # (..., V)
    logs -= logs.max(axis=-1, keepdims=True)  # stable softmax
    W = np.exp(logs)  # zeros stay zero
    return W / W.sum(axis=-1, keepdims=True)


def temper(P: object, T: float) -> np.ndarray:
    """temper(P, T)[c] = P[c]^(1/T) / sum_x P[c, x]^(1/T); T -> 0 is greedy, T -> inf uniform."""
    T = check_temperature(T)
    return temper_rows(validate_table(P, "table"), T).copy()


def junk_table(P: object) -> np.ndarray:
    """A deliberately bad draft: each row gives p's probabilities in reversed rank order.

    The most likely target token gets the least likely token's probability, and so on,
    so sum_x min(p, junk) is small but the support is the same size.
    """
    A = validate_table(P, "table")
    order = np.argsort(A, axis=1, kind="stable")  # (V, V) ascending ranks
    J = np.empty_like(A)
    rows = np.arange(A.shape[0])[:, None]
    J[rows, order] = A[rows, order[:, ::-1]]  # smallest p gets largest mass
    return J


def mix_draft(P: object, alpha: float, junk: object | None = None) -> np.ndarray:
    """Draft of quality alpha: Q = alpha P + (1 - alpha) J; alpha = 1 copies the target.

    J defaults to junk_table(P).
    """
    if not isinstance(alpha, (int, float, np.floating, np.integer)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"draft quality alpha must be in [0, 1]; got {alpha!r}")
    A = validate_table(P, "P (target)")
    J = junk_table(A) if junk is None else validate_table(junk, "junk table")
    if J.shape != A.shape:
        raise ValueError(f"junk table must have the shape of P {A.shape}; got {J.shape}")
    return alpha * A + (1.0 - alpha) * J
