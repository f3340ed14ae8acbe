"""Whether a draft model pays on given hardware: pass prices, memory, a k x batch sweep, a verdict.

A round at batch B drafts k tokens (k serial draft passes of one token per sequence) and
verifies them in one target pass of k + 1 tokens per sequence, each pass priced by the
roofline (roofline.pass_times: max(bytes / bandwidth, MACs / peak), weights once per pass,
KV cache per sequence, routed experts by those the batch touches). With E_k = 1 + sum_(i<=k)
r_i tokens per round (the measured per-position rates, acceptance.AcceptanceReport):
    per user  = E_k / (k t_draft(1, B) + t_target(k + 1, B))      tokens/s
    per GPU   = B x per user;  without speculation 1 / t_target(1, B) and B / t_target(1, B)
    speedup   = per user with / per user without (Leviathan et al. 2022, Thm 3.8, with
                c = t_draft(1, B) / t_target(1, B) priced, not chosen)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import theory
from .acceptance import AcceptanceReport
from .pasted import show
from .roofline import DTYPE_BYTES, Accelerator, ModelShape, pass_times

BATCH_SWEEP_MAX = 1_024  # largest batch the sweep prices
K_PLAN_MAX = 16  # longest draft the planner prices
CONTEXT_MAX = 10_000_000  # longest context priced (tokens per sequence)
MEM_FRACTION = 0.9  # share of device memory for weights and KV cache (vLLM's default)


class PlanError(ValueError):
    """A setup that cannot run (it does not fit); the message says what would."""


@dataclass(frozen=True)
class Setup:
    """Everything the planner prices: models, types, accelerator, context."""

    target: ModelShape
    draft: ModelShape
    accel: Accelerator
    context_len: int  # tokens of context each sequence holds in its KV cache
    target_dtype: str = "bf16"
    draft_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    mem_fraction: float = MEM_FRACTION


@dataclass(frozen=True)
class Capacity:
    """How many sequences fit at context context_len next to the weights."""

    usable_bytes: float  # memory x mem_fraction
    target_weight_bytes: float
    kv_per_seq_target: float  # bytes of KV cache per sequence, target
    batch_with_draft: int  # largest B with both models (0: the draft does not fit)
    batch_target_only: int  # largest B without the draft


@dataclass(frozen=True)
class Plan:
    setup: Setup
    acceptance: AcceptanceReport
    capacity: Capacity
    ks: np.ndarray  # (K,) 1..k_max
    batches: np.ndarray  # (B,) 1..swept
    tokens_per_call: np.ndarray  # (K,) E_k
    per_user: np.ndarray  # (K, B) tokens/s per sequence with speculation (nan: no room)
    plain_user: np.ndarray  # (B,) without
    speedup: np.ndarray  # (K, B)
    cost: np.ndarray  # (B,) c = t_draft(1, B) / t_target(1, B)
    best_k: np.ndarray  # (B,) argmax speedup (0 where speculation cannot run)
    best_speedup: np.ndarray  # (B,)
    break_even_alpha: np.ndarray  # (B,) i.i.d. alpha at which the best k just breaks even
    loses_from: int | None  # smallest B at which the best k is slower than no speculation


def _bytes(n: float, dtype: str) -> float:
    return n * DTYPE_BYTES[dtype]


def capacity(s: Setup) -> Capacity:
    """B_max = floor((memory x fraction - weights) / KV bytes per sequence at context_len),
    with both models' weights and caches, and for the target alone."""
    usable = s.accel.memory_bytes * s.mem_fraction
    wt, wd = _bytes(s.target.params, s.target_dtype), _bytes(s.draft.params, s.draft_dtype)
    kt = s.target.kv_bytes_per_token(s.kv_dtype) * s.context_len
    kd = s.draft.kv_bytes_per_token(s.kv_dtype) * s.context_len
    both = math.floor((usable - wt - wd) / (kt + kd)) if kt + kd > 0 else 0
    alone = math.floor((usable - wt) / kt) if kt > 0 else 0
    return Capacity(usable, wt, kt, max(both, 0), max(alone, 0))


def _fit_message(s: Setup, cap: Capacity) -> str:
    gb = 1e9
    need = cap.target_weight_bytes + cap.kv_per_seq_target
    lines = [f"{s.target.name} in {s.target_dtype} needs {cap.target_weight_bytes / gb:.1f} GB "
             f"of weights plus {cap.kv_per_seq_target / gb:.2f} GB of KV cache per sequence at "
             f"context {s.context_len:,}; {s.accel.name} offers {cap.usable_bytes / gb:.1f} GB "
             f"({s.mem_fraction:.0%} of {s.accel.memory_bytes / gb:.0f} GB)."]
    fits = [d for d in ("fp8", "int4") if DTYPE_BYTES[d] < DTYPE_BYTES[s.target_dtype]
            and _bytes(s.target.params, d) + cap.kv_per_seq_target < cap.usable_bytes]
    if fits:
        lines.append(f"It fits with {' or '.join(fits)} weights.")
    lines.append(f"Or choose an accelerator with more than {need / s.mem_fraction / gb:.0f} GB.")
    return " ".join(lines)


def _times(s: Setup, model: ModelShape, dtype: str, tokens, batch) -> np.ndarray:
    compute = dtype if dtype in ("fp8", "int8") else "bf16"
    return pass_times(model, s.accel, tokens, batch, context_len=s.context_len, dtype=dtype,
                      kv_dtype=s.kv_dtype, compute=compute)


def _break_even(t1: np.ndarray, td: np.ndarray, tk: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Per batch, the i.i.d. alpha where max_k E(alpha, k) t1 / (k td + t_(k+1)) = 1, by
    bisection (the left side rises with alpha); nan where even alpha = 1 loses."""
    def gain(alpha: np.ndarray) -> np.ndarray:  # (B,)
        e = np.asarray(theory.expected_tokens(alpha[None, :], ks[:, None]))  # (K, B)
        return (e * t1 / (ks[:, None] * td + tk)).max(axis=0)

    lo, hi = np.zeros_like(t1), np.ones_like(t1)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        up = gain(mid) < 1.0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return np.where(gain(np.ones_like(t1)) >= 1.0, 0.5 * (lo + hi), np.nan)


def plan(setup: Setup, report: AcceptanceReport, *, k_max: int = 8) -> Plan:
    """Price every k in 1..k_max at every batch 1..B_max (capped); PlanError if nothing fits."""
    if not 1 <= k_max <= K_PLAN_MAX:
        raise PlanError(f"k_max must be in 1..{K_PLAN_MAX}; got {k_max}")
    if not 1 <= setup.context_len <= CONTEXT_MAX:
        raise PlanError(f"the context must be 1..{CONTEXT_MAX:,} tokens; got "
                        f"{show(setup.context_len)}")
    cap = capacity(setup)
    if cap.batch_target_only < 1:
        raise PlanError(_fit_message(setup, cap))
    top = min(cap.batch_target_only, BATCH_SWEEP_MAX)
    B = np.arange(1, top + 1)  # (B,)
    ks = np.arange(1, k_max + 1)  # (K,)
    t1 = _times(setup, setup.target, setup.target_dtype, 1, B)  # (B,)
    td = _times(setup, setup.draft, setup.draft_dtype, 1, B)  # (B,)
    tk = _times(setup, setup.target, setup.target_dtype, ks[:, None] + 1, B[None, :])  # (K, B)
    E = np.array([report.tokens_per_call(int(k)) for k in ks])  # (K,)
    per_user = E[:, None] / (ks[:, None] * td + tk)  # (K, B)
    room = B <= cap.batch_with_draft  # (B,)
    per_user = np.where(room[None, :], per_user, np.nan)
    plain = 1.0 / t1
    speedup = per_user / plain
    best = np.where(room, np.argmax(np.nan_to_num(speedup, nan=-1.0), axis=0) + 1, 0)
    best_s = np.where(room, np.nanmax(np.where(room, speedup, 0.0), axis=0), np.nan)
    losing = np.flatnonzero(best_s < 1.0)  # nan (no room for the draft) is not losing
    loses_from = int(B[losing[0]]) if len(losing) else None
    return Plan(setup, report, cap, ks, B, E, per_user, plain, speedup, td / t1, best, best_s,
                _break_even(t1, td, tk, ks), loses_from)
