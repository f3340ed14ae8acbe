"""Roofline arithmetic: MACs and bytes of one transformer forward pass, and its time.

Why speculative decoding pays: a decode step reads every weight to emit one token, so it is
memory-bound; scoring k + 1 positions in one pass reads the same bytes for (k + 1)x the
MACs, and stays about as fast until the MACs per byte reach the accelerator's ridge.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}

COUNTS = ("full", "tutorial")
TUTORIAL_LABEL = "tutorial count (no 3rd SwiGLU matrix, no LM head, no KV read)"
FULL_LABEL = "full count"
MAX_FREE_TOKENS = 4096  # search limit of free_tokens
FREE_TOLERANCE = 0.01  # "about as cheap": within 1 % of a one-token pass


@dataclass(frozen=True)
class ModelShape:
    """A Llama-style decoder: SwiGLU MLP, RMSNorm, grouped-query attention, untied LM head."""

    name: str
    layers: int
    d_model: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) per token: kv_heads * head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def params(self) -> int:
        """Exact parameter count.

        Per layer: q, o (d^2 each), k, v (d * kv_dim each), MLP 3 d ffn (gate, up, down),
        2 RMSNorm vectors of d. Plus embedding vocab * d, LM head vocab * d, final norm d.
        """
        d = self.d_model
        per_layer = 2 * d * d + 2 * d * self.kv_dim + 3 * d * self.ffn + 2 * d
        return self.layers * per_layer + 2 * self.vocab * d + d


PRESETS: dict[str, ModelShape] = {
    "Llama-2-7B": ModelShape("Llama-2-7B", 32, 4096, 11008, 32, 32, 32000),
    "Llama-2-13B": ModelShape("Llama-2-13B", 40, 5120, 13824, 40, 40, 32000),
    "Llama-2-70B": ModelShape("Llama-2-70B", 80, 8192, 28672, 64, 8, 32000),
}


@dataclass(frozen=True)
class Accelerator:
    """An accelerator as the roofline sees it: peak dense MACs/s and memory bandwidth."""

    name: str
    peak_macs_per_s: float  # dense fp16/bf16 tensor-core MACs/s (= FLOP/s / 2)
    bandwidth_bytes_per_s: float  # HBM bytes/s
    source: str

    @property
    def ridge(self) -> float:
        """MACs per byte above which a pass is compute-bound: peak / bandwidth."""
        return self.peak_macs_per_s / self.bandwidth_bytes_per_s


ACCELERATORS: dict[str, Accelerator] = {
    "A100 SXM 80GB": Accelerator(
        "A100 SXM 80GB",
        312e12 / 2,
        2.039e12,
        "NVIDIA A100 Tensor Core GPU datasheet: 312 TFLOPS dense FP16/BF16, 2,039 GB/s HBM2e",
    ),
    "H100 SXM": Accelerator(
        "H100 SXM",
        989e12 / 2,
        3.35e12,
        "NVIDIA H100 Tensor Core GPU datasheet: 989 TFLOPS dense BF16, 3.35 TB/s HBM3",
    ),
    "H200 SXM": Accelerator(
        "H200 SXM",
        989e12 / 2,
        4.8e12,
        "NVIDIA H200 Tensor Core GPU datasheet: 989 TFLOPS dense BF16, 4.8 TB/s HBM3e",
    ),
}


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


def get_preset(name: str) -> ModelShape:
    """PRESETS[name], with an error that lists the valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}") from None


def _shape(shape: ModelShape | str) -> ModelShape:
    return get_preset(shape) if isinstance(shape, str) else shape


def _int_at_least(x: int, lo: int, name: str, what: str) -> int:
    ok = isinstance(x, numbers.Real) and not isinstance(x, bool)
    if not ok or not math.isfinite(x) or x != int(x) or x < lo:
        raise ValueError(f"{name} ({what}) must be an integer >= {lo}; got {x!r}")
    return int(x)


def _dtype_bytes(dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {list(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


# --------------------------------------------------------------------------- costs


def pass_cost(
    shape: ModelShape | str,
    tokens: int = 1,
    ctx: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    count: str = "full",
    kv_cache: bool = True,
) -> PassCost:
    """MACs and bytes of one forward pass over `tokens` new positions per sequence.

    count="full": per layer and token 2 d^2 + 2 d kv_dim (q, o, k, v) + 3 d ffn (SwiGLU)
    + 2 ctx d (attention scores and values), plus vocab d for the LM head; with kv_cache the
    bytes include reading K and V: 2 * layers * ctx * kv_dim * dtype bytes * batch.
    count="tutorial": per layer and token 4 d^2 + 2 d ffn + 2 ctx d, no LM head, no KV read.
    MACs scale with tokens * batch; weights (params * dtype bytes) are read once per pass.
    """
    s = _shape(shape)
    tokens = _int_at_least(tokens, 1, "tokens", "new positions per sequence")
    ctx = _int_at_least(ctx, 0, "ctx", "context length in tokens")
    batch = _int_at_least(batch, 1, "batch", "sequences per pass")
    nbytes = _dtype_bytes(dtype)
    if count not in COUNTS:
        raise ValueError(f"unknown count {count!r}; choose one of {list(COUNTS)}")
    d = s.d_model
    weight_bytes = float(s.params * nbytes)
    if count == "tutorial":
        per_token = s.layers * (4 * d * d + 2 * d * s.ffn + 2 * ctx * d)
        kv_bytes = 0.0
        label = TUTORIAL_LABEL
    else:
        per_layer = 2 * d * d + 2 * d * s.kv_dim + 3 * d * s.ffn + 2 * ctx * d
        per_token = s.layers * per_layer + s.vocab * d
        kv_bytes = float(2 * s.layers * ctx * s.kv_dim * nbytes * batch) if kv_cache else 0.0
        label = FULL_LABEL
    macs = float(per_token * tokens * batch)
    total = weight_bytes + kv_bytes
    return PassCost(macs, weight_bytes, kv_bytes, total, macs / total, label)


def pass_time(cost: PassCost, accel: Accelerator) -> float:
    """Roofline time of a pass in seconds: max(macs / peak, bytes / bandwidth)."""
    return max(cost.macs / accel.peak_macs_per_s, cost.bytes / accel.bandwidth_bytes_per_s)


def _accel(accel: Accelerator | str) -> Accelerator:
    if isinstance(accel, str):
        if accel not in ACCELERATORS:
            raise ValueError(f"unknown accelerator {accel!r}; choose one of {sorted(ACCELERATORS)}")
        return ACCELERATORS[accel]
    return accel


def free_tokens(
    shape: ModelShape | str,
    accel: Accelerator | str,
    ctx: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    count: str = "full",
    kv_cache: bool = True,
) -> int:
    """Largest tokens per sequence T in 1..4096 with pass_time(T) <= 1.01 * pass_time(1).

    How many positions a verify pass can score for about the price of one decode step.
    pass_time is non-decreasing in T, so this is a bisection.
    """
    a = _accel(accel)

    def t(tokens: int) -> float:
        return pass_time(pass_cost(shape, tokens, ctx, dtype, batch, count, kv_cache), a)

    limit = t(1) * (1.0 + FREE_TOLERANCE)
    if t(MAX_FREE_TOKENS) <= limit:
        return MAX_FREE_TOKENS
    lo, hi = 1, MAX_FREE_TOKENS  # t(lo) <= limit < t(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t(mid) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def verify_cost_ratio(
    shape: ModelShape | str,
    accel: Accelerator | str,
    k: int,
    ctx: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    count: str = "full",
    kv_cache: bool = True,
) -> float:
    """pass_time(k + 1 tokens per sequence) / pass_time(1 token per sequence), same batch.

    What a verify pass costs relative to a plain decode step: about 1 while memory-bound,
    up to k + 1 once the batch already makes the pass compute-bound. The KV-cache read grows
    with the batch too, so with kv_cache at long ctx the pass may never become compute-bound.
    """
    a = _accel(accel)
    k = _int_at_least(k, 1, "k", "drafted tokens per round")
    verify = pass_time(pass_cost(shape, k + 1, ctx, dtype, batch, count, kv_cache), a)
    decode = pass_time(pass_cost(shape, 1, ctx, dtype, batch, count, kv_cache), a)
    return verify / decode


def batch_speedup(
    shape: ModelShape | str,
    accel: Accelerator | str,
    alpha: float,
    k: int,
    c: float,
    batches: Sequence[int],
    ctx: int = 512,
    dtype: str = "fp16",
    count: str = "full",
    kv_cache: bool = True,
) -> np.ndarray:
    """Speculative speedup at each batch size B, with the verify pass priced by the roofline.

    S(B) = E[tokens] t_1(B) / (t_(k+1)(B) + k c t_1(B)), E[tokens] = (1 - alpha^(k+1)) /
    (1 - alpha) (Leviathan et al. 2022, eq. 1), t_T(B) the roofline time of a pass over B
    sequences with T new positions each, and c the draft's cost per token as a fraction of a
    plain decode step at the same batch. While the pass is memory-bound t_(k+1) ~ t_1 and
    S(B) is Thm 3.8's speedup; once B (k + 1) tokens make it compute-bound, the k extra
    positions are paid in full and S(B) falls, below 1 for large B. (len(batches),)
    """
    from .theory import expected_tokens

    a = _accel(accel)
    k = _int_at_least(k, 1, "k", "drafted tokens per round")
    tokens = float(expected_tokens(alpha, k))
    out = []
    for B in batches:
        t1 = pass_time(pass_cost(shape, 1, ctx, dtype, B, count, kv_cache), a)
        tk = pass_time(pass_cost(shape, k + 1, ctx, dtype, B, count, kv_cache), a)
        out.append(tokens * t1 / (tk + k * c * t1))
    return np.asarray(out)


__all__ = [
    "ACCELERATORS",
    "batch_speedup",
    "Accelerator",
    "DTYPE_BYTES",
    "ModelShape",
    "PRESETS",
    "PassCost",
    "free_tokens",
    "get_preset",
    "pass_cost",
    "pass_time",
    "verify_cost_ratio",
]
