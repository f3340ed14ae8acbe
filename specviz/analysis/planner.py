"""Whether a draft model pays on given hardware: pass prices, memory, a k x batch sweep, a verdict.

A round at batch B drafts k tokens (k serial draft passes of one token per sequence; a
tree's `steps` passes of topk tokens; n-gram lookup's one lookup) and verifies them in one
target pass of k + 1 tokens per sequence (a tree's verify_tokens), each pass priced by the
roofline (roofline.pass_times: max(bytes / bandwidth, MACs / peak), weights once per pass,
KV cache per sequence, routed experts by those the batch touches) plus a fixed overhead per
pass (launch, sampling, scheduling: an option). With E_k = 1 + sum_(i<=k) r_i tokens per
round (the measured per-position rates, acceptance.AcceptanceReport):
    per user  = E_k / (t_drafts(k, B) + t_target(k + 1, B))      tokens/s
    per GPU   = B x per user;  without speculation 1 / t_target(1, B) and B / t_target(1, B)
    speedup   = per user with / per user without (Leviathan et al. 2022, Thm 3.8, with
                c = t_draft(1, B) / t_target(1, B) priced, not chosen)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import parallel, theory
from .acceptance import AcceptanceReport
from .deploy import (  # noqa: F401 (Setup, Capacity, capacity, PlanError: the planner's names)
    MEM_FRACTION,
    RESERVE_GIB,
    Capacity,
    PlanError,
    Setup,
    capacity,
    check,
    fit_message,
)
from .pasted import show
from .record import Acceptance
from .roofline import compute_type, pass_times
from .shape import ModelShape

BATCH_SWEEP_MAX = 1_024  # largest batch the sweep prices
K_PLAN_MAX = 16  # longest draft the planner prices
CONTEXT_MAX = 10_000_000  # longest context priced (tokens per sequence)
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

    @property
    def gpus(self) -> int:
        """Devices one copy of the deployment runs on (the target's tp): tokens/s per GPU
        are a copy's divided by it."""
        return self.setup.tp

    def best_user(self) -> np.ndarray:
        """Tokens/s per user at each batch's best k (nan where speculation cannot run). (B,)"""
        rows = np.searchsorted(self.ks, np.maximum(self.best_k, self.ks[0]))
        u = self.per_user[rows, np.arange(len(self.batches))]
        return np.where(self.best_k > 0, u, np.nan)


def _times(s: Setup, model: ModelShape, dtype: str, tokens, batch, tp: int) -> np.ndarray:
    """A pass's time on one of tp devices: its roofline time with the fixed costs
    (Overheads.pass_time) and its collectives (parallel.collectives_s)."""
    roof = pass_times(model, s.accel, tokens, batch, context_len=s.context_len, dtype=dtype,
                      kv_dtype=s.kv_dtype, compute=compute_type(dtype), tp=tp)
    n = np.asarray(tokens, dtype=float) * np.asarray(batch, dtype=float)
    return (s.costs.pass_time(roof, model.layers)
            + parallel.collectives_s(model, n, s.split(tp)))


def pass_parts(s: Setup, *, tokens: int = 1, batch: int = 1, draft: bool = False) -> dict:
    """One pass of the target (or a draft step) over `tokens` a sequence at `batch`, in
    seconds: its roofline time on one device, its launch costs beyond it, its collectives,
    the fixed extra given, their total (what round_times prices)."""
    m, dtype, tp, extra = ((s.draft.shape, s.draft_dtype, s.dtp, s.draft_overhead_s) if draft
                           else (s.target, s.target_dtype, s.tp, s.target_overhead_s))
    roof = float(pass_times(m, s.accel, tokens, batch, context_len=s.context_len, dtype=dtype,
                            kv_dtype=s.kv_dtype, compute=compute_type(dtype), tp=tp))
    launch = float(s.costs.pass_time(roof, m.layers)) - roof
    coll = float(parallel.collectives_s(m, tokens * batch, s.split(tp)))
    return {"roofline_s": roof, "launch_s": launch, "collectives_s": coll, "extra_s": extra,
            "total_s": roof + launch + coll + extra}


def target_times(s: Setup, tokens, batch) -> np.ndarray:
    """The target's pass over `tokens` a sequence at `batch`, with its fixed extra."""
    return _times(s, s.target, s.target_dtype, tokens, batch, s.tp) + s.target_overhead_s


def round_times(s: Setup, ks: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
    """(t_target(1, B), a draft step's time (B,), the drafts' time per round (K, B), the
    verify pass (K, B)), fixed costs included: k draft steps of one token for a chain,
    `steps` of topk tokens for a tree (verifying verify_tokens), one pass of Medusa's heads
    (its tree's), one lookup for n-gram drafting; and a round's own work (Overheads.round_s;
    a tree's tree_s, and level_s a level but for Medusa's fixed tree) with the drafts."""
    d, t = s.draft, s.draft.tree
    t1 = target_times(s, 1, B)  # (B,)
    verify = ks[:, None] + 1 if t is None else np.full((len(ks), 1), t.verify_tokens)
    tk = target_times(s, verify, B[None, :])  # (K, B)
    per_round = s.costs.round_s if t is None else s.costs.tree_s
    if d.shape is None:  # n-gram lookup: no draft passes
        step = np.full(len(B), d.lookup_s, dtype=float)
        return t1, step, np.broadcast_to(step + per_round, tk.shape), tk
    width = 1 if t is None else t.topk
    step = _times(s, d.shape, s.draft_dtype, width, B, s.dtp) + s.draft_overhead_s  # (B,)
    if d.kind == "medusa":  # all its heads in one pass a round; a fixed tree: no levels
        return t1, step, np.broadcast_to(step + s.costs.tree_s, tk.shape), tk
    if t is None:
        return t1, step, ks[:, None] * step[None, :] + per_round, tk
    levels = np.full((len(ks), 1), t.steps)  # a tree's levels: each re-ranks and grows its mask
    return t1, step, levels * (step[None, :] + s.costs.level_s) + per_round, tk


def _break_even(t1: np.ndarray, drafts: np.ndarray, tk: np.ndarray,
                ks: np.ndarray) -> np.ndarray:
    """Per batch, the i.i.d. alpha where max_k E(alpha, k) t1 / (t_drafts(k) + t_(k+1)) = 1,
    by bisection (the left side rises with alpha); nan where even alpha = 1 loses."""
    def gain(alpha: np.ndarray) -> np.ndarray:  # (B,)
        e = np.asarray(theory.expected_tokens(alpha[None, :], ks[:, None]))  # (K, B)
        return theory.round_speedup(e, t1=t1, drafts=drafts, verify=tk).max(axis=0)

    lo, hi = np.zeros_like(t1), np.ones_like(t1)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        up = gain(mid) < 1.0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return np.where(gain(np.ones_like(t1)) >= 1.0, 0.5 * (lo + hi), np.nan)


def plan(setup: Setup, report: AcceptanceReport, *, k_max: int = 8) -> Plan:
    """Price every k in 1..k_max (a tree: its depth alone) at every batch 1..B_max (capped);
    PlanError if nothing fits."""
    if not 1 <= k_max <= K_PLAN_MAX:
        raise PlanError(f"k_max must be in 1..{K_PLAN_MAX}; got {k_max}")
    if not 1 <= setup.context_len <= CONTEXT_MAX:
        raise PlanError(f"the context must be 1..{CONTEXT_MAX:,} tokens; got "
                        f"{show(setup.context_len)}")
    check(setup)
    cap = capacity(setup)
    if cap.batch_target_only < 1:
        raise PlanError(fit_message(setup, cap))
    top = min(cap.batch_target_only, BATCH_SWEEP_MAX)
    B = np.arange(1, top + 1)  # (B,)
    tree = setup.draft.tree
    ks = np.arange(1, k_max + 1) if tree is None else np.array([tree.steps])  # (K,)
    t1, step, drafts, tk = round_times(setup, ks, B)
    E = np.array([report.tokens_per_call(int(k)) for k in ks])  # (K,)
    per_user = E[:, None] / (drafts + tk)  # (K, B)
    room = B <= cap.batch_with_draft  # (B,)
    per_user = np.where(room[None, :], per_user, np.nan)
    plain = 1.0 / t1
    speedup = theory.round_speedup(E[:, None], t1=t1, drafts=drafts, verify=tk)  # (K, B)
    speedup = np.where(room[None, :], speedup, np.nan)
    best = np.where(room, ks[np.argmax(np.nan_to_num(speedup, nan=-1.0), axis=0)], 0)
    best_s = np.where(room, np.nanmax(np.where(room, speedup, 0.0), axis=0), np.nan)
    losing = np.flatnonzero(best_s < 1.0)  # nan (no room for the draft) is not losing
    loses_from = int(B[losing[0]]) if len(losing) else None
    even = _break_even(t1, drafts, tk, ks) if tree is None else np.full(len(B), np.nan)
    return Plan(setup, report, cap, ks, B, E, per_user, plain, speedup, step / t1, best,
                best_s, even, loses_from)


@dataclass(frozen=True)
class Measured:
    """Pass times measured on the user's server at batch 1, in seconds (0 = not measured):
    a decode step, a verify pass at the plan's draft length, a draft step (or c instead)."""

    target_s: float = 0.0
    verify_s: float = 0.0
    draft_s: float = 0.0
    c: float = 0.0
    k: int = 0  # the draft length verify_s was measured at (0: the plan's best k)


@dataclass(frozen=True)
class MeasuredHere:
    """Acceptance and pass times measured together on one machine (the real model's
    decodes): a source of both the plan's acceptance and its measured costs."""

    source: str  # what was measured, in words
    acceptance: Acceptance
    measured: Measured


def measured_rows(p: Plan, m: Measured, k: int) -> list[dict]:
    """Batch 1 at draft length k, the roofline's prices beside the measured ones: speedup =
    E_k t_1 / (t_drafts + t_verify) either way. A time not measured is the roofline's ratio
    times the measured decode step, and says so."""
    s, ks = p.setup, np.array([k])
    t1, step, drafts, tk = (float(np.ravel(x)[0]) for x in round_times(s, ks, np.array([1])))
    tree = s.draft.tree
    n_steps = (1 if s.draft.shape is None or s.draft.kind == "medusa" else k if tree is None
               else tree.steps)  # draft passes
    E = float(p.acceptance.tokens_per_call(int(p.ks[0] if s.draft.tree else k)))
    mt = m.target_s
    mv = m.verify_s or tk / t1 * mt
    md = m.draft_s or (m.c * mt if m.c else step / t1 * mt)
    how = {"verify": "measured" if m.verify_s else "roofline ratio x measured step",
           "draft": "measured" if m.draft_s else ("from c" if m.c else
                                                  "roofline ratio x measured step")}
    rows = [("target pass, 1 token (ms)", t1 * 1e3, mt * 1e3, "measured"),
            ("verify pass (ms)", tk * 1e3, mv * 1e3, how["verify"]),
            ("draft step (ms)", step * 1e3, md * 1e3, how["draft"]),
            ("c = draft step / target pass", step / t1, md / mt, how["draft"]),
            ("tokens per round E_k", E, E, "measured acceptance"),
            ("speedup at batch 1", float(theory.round_speedup(E, t1=t1, drafts=drafts, verify=tk)),
             float(theory.round_speedup(E, t1=mt, drafts=n_steps * md, verify=mv)), "")]
    return [{"quantity": q, "roofline": r, "measured": v, "how": h} for q, r, v, h in rows]
