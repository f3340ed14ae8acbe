"""Sampling warps: temperature, top-k, top-p and min-p applied to a next-token row.

A server samples from warp(p), not from p, so warp(p) is the law the output must follow;
speculative decoding stays exact when it verifies against warp(p) and divides by the row
the draft really sampled from (warp(q) if the draft is warped too, else q). In order:
  temperature T:  r(x) = p(x)^(1/T) / sum_y p(y)^(1/T)
  top-k:          keep the k most likely tokens (ties: the lower index first)
  top-p:          keep the most likely tokens, in that order, until their mass reaches top_p
                  of the row top-k left (renormalised), as transformers and vLLM do
  min-p:          keep x with r(x) >= min_p max_y r(y)
then renormalise what is kept. WarpedPair applies a warp to a model pair's rows for the
scalar round; warp_tables to a pair of tables for the exact and vectorised engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .pair import ModelPair
from .tables import temper_rows


@dataclass(frozen=True)
class Warp:
    """The sampling parameters of one request; the defaults change nothing."""

    temperature: float = 1.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0
    min_p: float = 0.0
    draft: bool = False  # the draft samples from the warped q too

    def __post_init__(self) -> None:
        if not (np.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a number > 0; got {self.temperature!r}")
        if isinstance(self.top_k, bool) or int(self.top_k) != self.top_k or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0 = off); got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1]; got {self.top_p!r}")
        if not 0.0 <= self.min_p <= 1.0:
            raise ValueError(f"min_p must be in [0, 1]; got {self.min_p!r}")

    @property
    def identity(self) -> bool:
        return (self.temperature == 1.0 and self.top_k == 0 and self.top_p == 1.0
                and self.min_p == 0.0)

    @classmethod
    def from_params(cls, prm: dict[str, float]) -> Warp:
        """From a rule's parameters temperature, top_k, top_p, min_p, warp_draft."""
        return cls(float(prm["temperature"]), int(prm["top_k"]), float(prm["top_p"]),
                   float(prm["min_p"]), bool(prm.get("warp_draft", 0)))

    def params(self, *, draft: bool | None = None) -> dict[str, float]:
        """The warp as a warp rule's parameters (from_params reads them back); warp_draft is
        draft where given, else the warp's own."""
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p,
                "min_p": self.min_p, "warp_draft": int(self.draft if draft is None else draft)}

    @property
    def text(self) -> str:
        parts = [f"T = {self.temperature:g}"]
        parts += [f"top-k = {self.top_k}"] if self.top_k else []
        parts += [f"top-p = {self.top_p:g}"] if self.top_p < 1 else []
        parts += [f"min-p = {self.min_p:g}"] if self.min_p > 0 else []
        return ", ".join(parts) + (" (draft warped too)" if self.draft else "")


def keep_mask(M: np.ndarray, warp: Warp) -> np.ndarray:
    """Which tokens each (tempered) row keeps under top-k, top-p and min-p. (..., V) bool"""
    M = np.asarray(M, dtype=np.float64)
    V = M.shape[-1]
    order = np.argsort(-M, axis=-1, kind="stable")  # most likely first, lower index on ties
    ranked = np.take_along_axis(M, order, axis=-1)  # (..., V)
    keep_ranked = ranked > 0
    if warp.top_k:
        keep_ranked &= np.arange(V) < warp.top_k
    if warp.top_p < 1.0:  # on the row top-k left: its mass, not the whole row's, is 1
        kept = np.where(keep_ranked, ranked, 0.0)
        before = np.cumsum(kept, axis=-1) - kept  # mass strictly ahead of each token
        keep_ranked &= before < warp.top_p * kept.sum(axis=-1, keepdims=True)
    if warp.min_p > 0.0:
        keep_ranked &= ranked >= warp.min_p * ranked[..., :1]
    keep = np.zeros_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return keep


def warp_rows(M: np.ndarray, warp: Warp, renormalise: bool = True) -> np.ndarray:
    """warp(M) row by row (..., V); renormalise=False leaves the kept mass as it is (a bug).
    Small M (at most MEMO_ENTRIES numbers) is warped once per process and handed out as a
    copy: a scalar round warps the same few rows at every position (the coin's row, the
    residual's, the bonus', the draft's: about 14 warps a round of k = 4 under a warp rule)."""
    M = np.asarray(M, dtype=np.float64)
    if warp.identity:
        return M
    if M.size <= MEMO_ENTRIES:
        return _warp_memo(M.shape, M.tobytes(), warp, renormalise).copy()
    return _warp(M, warp, renormalise)


MEMO_ENTRIES = 2048  # numbers in a table warp_rows keeps (a row of a 2048-token vocabulary)


@lru_cache(maxsize=1024)  # at most 1024 tables of 2048 numbers: 32 MiB with their keys
def _warp_memo(shape: tuple[int, ...], raw: bytes, warp: Warp, renormalise: bool) -> np.ndarray:
    out = _warp(np.frombuffer(raw, dtype=np.float64).reshape(shape), warp, renormalise)
    out.setflags(write=False)
    return out


def _warp(M: np.ndarray, warp: Warp, renormalise: bool) -> np.ndarray:
    """warp_rows without the memo. M: (..., V) f64"""
    R = temper_rows(M, warp.temperature)  # M itself at temperature 1
    kept = np.where(keep_mask(R, warp), R, 0.0)  # (..., V)
    return kept / kept.sum(axis=-1, keepdims=True) if renormalise else kept


def warp_tables(P: np.ndarray, Q: np.ndarray, warp: Warp) -> tuple[np.ndarray, np.ndarray]:
    """(warp(P), warp(Q) if warp.draft else Q): the tables a warped request decodes with."""
    return warp_rows(P, warp), (warp_rows(Q, warp) if warp.draft else np.asarray(Q, float))


class WarpedPair(ModelPair):
    """A pair whose target rows are warp(p), and draft rows warp(q) when warp.draft."""

    def __init__(self, pair: ModelPair, warp: Warp) -> None:
        self.base, self.warp = pair, warp
        self.V, self.names = pair.V, pair.names
        for same in ("key", "propose", "stop", "score", "name", "check_prefix"):  # left as they are
            setattr(self, same, getattr(pair, same))

    def p(self, prefix: Sequence[int]) -> np.ndarray:
        return warp_rows(self.base.p(prefix), self.warp)

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        q = self.base.q(prefix)
        return warp_rows(q, self.warp) if self.warp.draft else q

    @property
    def fingerprint(self) -> str:
        """The base pair's, with the warp: identifies the warped pair for caches."""
        return f"{getattr(self.base, 'fingerprint', id(self.base))}|{self.warp!r}"
