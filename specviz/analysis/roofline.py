"""Roofline arithmetic: MACs and bytes of one transformer forward pass, and its time.

Why speculative decoding pays: a decode step reads every weight to emit one token, so it is
memory-bound; scoring k + 1 positions in one pass reads the same bytes for (k + 1)x the
MACs, and stays about as fast until the MACs per byte reach the accelerator's ridge.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from . import parallel
from .accelerators import ACCELERATORS, Accelerator, find_gpu  # noqa: F401 (their home)
from .modelcfg import preset
from .pasted import at_least
from .shape import FP8_COMPUTE, ModelShape, dtype_bytes

COUNTS = ("full", "tutorial")
TUTORIAL_LABEL = "tutorial count (no 3rd SwiGLU matrix, no LM head, no KV read)"
FULL_LABEL = "full count"
MAX_FREE_TOKENS = 4096  # search limit of free_tokens
FREE_TOLERANCE = 0.01  # "about as cheap": within 1 % of a one-token pass


def compute_type(dtype: str) -> str:
    """The type a pass over weights in `dtype` computes in: fp8 and int8 their own
    (FP8_COMPUTE), every other type bf16."""
    return dtype if dtype in FP8_COMPUTE else "bf16"


@dataclass(frozen=True)
class PassCost:
    """Work and traffic of one forward pass."""

    macs: float  # multiply-accumulates
    weight_bytes: float  # bytes of weights read (once per pass)
    kv_bytes: float  # bytes of KV cache read
    bytes: float  # weight_bytes + kv_bytes
    macs_per_byte: float  # arithmetic intensity
    label: str


# --------------------------------------------------------------------------- validation


def _shape(shape: ModelShape | str) -> ModelShape:
    return preset(shape) if isinstance(shape, str) else shape


# --------------------------------------------------------------------------- costs


def pass_cost(
    shape: ModelShape | str,
    tokens: int = 1,
    context_len: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    count: str = "full",
    kv_cache: bool = True,
) -> PassCost:
    """MACs and bytes of one forward pass over `tokens` new positions per sequence.

    count="full": per layer and token 2 d^2 + 2 d kv_dim (q, o, k, v) + 3 d ffn (SwiGLU)
    + 2 context_len d (attention scores and values), plus vocab d for the LM head; with kv_cache the
    bytes include reading K and V: 2 * layers * context_len * kv_dim * dtype bytes * batch.
    count="tutorial": per layer and token 4 d^2 + 2 d ffn + 2 context_len d, no LM head, no KV read.
    MACs scale with tokens * batch; weights are read once per pass (ModelShape.weight_bytes:
    routed experts only as far as the tokens * batch tokens touch them, an untied input
    embedding only its tokens * batch rows); the tutorial count reads params * dtype bytes.
    """
    s = _shape(shape)
    tokens = at_least(tokens, 1, "tokens", "new positions per sequence")
    context_len = at_least(context_len, 0, "context_len", "context length in tokens")
    batch = at_least(batch, 1, "batch", "sequences per pass")
    if count not in COUNTS:
        raise ValueError(f"unknown count {count!r}; choose one of {list(COUNTS)}")
    d = s.d_model
    if count == "tutorial":  # the tutorial reads every parameter, the embedding table too
        weight_bytes = float(s.params * dtype_bytes(dtype))
        macs = float(s.layers * (4 * d * d + 2 * d * s.ffn + 2 * context_len * d)
                     * tokens * batch)
        kv_bytes = 0.0
        label = TUTORIAL_LABEL
    else:
        macs, weight_bytes, kv_bytes = map(float, _full_count(
            s, tokens, batch, context_len=context_len, dtype=dtype, kv_dtype=None,
            kv_cache=kv_cache))
        label = FULL_LABEL
    total = weight_bytes + kv_bytes
    return PassCost(macs, weight_bytes, kv_bytes, total, macs / total, label)


def _full_count(s: ModelShape, tokens: ArrayLike, batch: ArrayLike, *, context_len: int,
                dtype: str, kv_dtype: str | None, kv_cache: bool) -> tuple[np.ndarray, ...]:
    """(MACs, weight bytes, KV bytes) of the full count, broadcast over tokens per sequence t
    and batch sizes B: MACs = macs_per_token(context_len) (t B), weights = weight_bytes(t B),
    KV = kv_bytes_per_token context_len B (0 without the KV read)."""
    t, b = np.broadcast_arrays(np.asarray(tokens, dtype=float), np.asarray(batch, dtype=float))
    n = t * b  # tokens in the pass
    macs = float(s.macs_per_token(context_len)) * n
    weights = np.asarray(s.weight_bytes(n, dtype), dtype=float)
    kv = s.kv_bytes_per_token(kv_dtype or dtype) * context_len * b if kv_cache else 0.0 * b
    return macs, weights, kv


def seconds(macs: ArrayLike, nbytes: ArrayLike, accel: Accelerator,
            compute: str = "bf16") -> np.ndarray:
    """Roofline time of a pass: max(macs / peak, bytes / bandwidth), elementwise."""
    return np.maximum(np.divide(macs, accel.peak_for(compute)),
                      np.divide(nbytes, accel.bandwidth_bytes_per_s))


def pass_time(cost: PassCost, accel: Accelerator) -> float:
    """Roofline time of a pass in seconds (seconds of its MACs and bytes at the bf16 peak;
    pass_times prices other compute types)."""
    return float(seconds(cost.macs, cost.bytes, accel))


def pass_times(
    shape: ModelShape | str,
    accel: Accelerator,
    tokens: ArrayLike,
    batch: ArrayLike,
    *,
    context_len: int,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    compute: str = "bf16",
    kv_cache: bool = True,
    tp: int = 1,
) -> np.ndarray:
    """pass_time(pass_cost(...)) of the full count, broadcast over arrays of tokens per
    sequence and batch sizes (_full_count's MACs and bytes, priced by seconds), on one of tp
    devices the model is split across: MACs / tp, the weights it holds (parallel.held_whole
    beside params / tp), its share of the KV cache (parallel.kv_share)."""
    s = _shape(shape)
    macs, weights, kv = _full_count(s, tokens, batch, context_len=context_len, dtype=dtype,
                                    kv_dtype=kv_dtype, kv_cache=kv_cache)
    if tp > 1:
        weights = weights / tp + parallel.held_whole(s, tp) * dtype_bytes(dtype)
        macs, kv = macs / tp, kv * parallel.kv_share(s, tp)
    return seconds(macs, weights + kv, accel, compute)


def _timer(shape: ModelShape | str, accel: Accelerator | str, context_len: int, dtype: str,
           kv_cache: bool = True):
    """tokens, batch -> pass_time(pass_cost(...)) of one setup, the full count."""
    a = ACCELERATORS[find_gpu(accel)] if isinstance(accel, str) else accel
    return lambda tokens, batch: pass_time(
        pass_cost(shape, tokens, context_len, dtype, batch, "full", kv_cache), a)


def free_tokens(
    shape: ModelShape | str,
    accel: Accelerator | str,
    context_len: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
) -> int:
    """Largest tokens per sequence T in 1..4096 with pass_time(T) <= 1.01 * pass_time(1), of
    the full count with the KV read.

    How many positions a verify pass can score for about the price of one decode step.
    pass_time is non-decreasing in T, so this is a bisection.
    """
    t = _timer(shape, accel, context_len, dtype)
    # T = 1..MAX_FREE_TOKENS with t(T) <= limit form a prefix: its length is the answer
    return bisect.bisect_right(range(1, MAX_FREE_TOKENS + 1),
                               t(1, batch) * (1.0 + FREE_TOLERANCE), key=lambda n: t(n, batch))


def verify_cost_ratio(
    shape: ModelShape | str,
    accel: Accelerator | str,
    k: int,
    context_len: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    kv_cache: bool = True,
) -> float:
    """pass_time(k + 1 tokens per sequence) / pass_time(1 token per sequence), same batch.

    What a verify pass costs relative to a plain decode step: about 1 while memory-bound,
    up to k + 1 once the batch already makes the pass compute-bound. The KV-cache read grows
    with the batch too, so with kv_cache at a long context the pass may never become
    compute-bound.
    """
    t = _timer(shape, accel, context_len, dtype, kv_cache)
    k = at_least(k, 1, "k", "drafted tokens per round")
    return t(k + 1, batch) / t(1, batch)
