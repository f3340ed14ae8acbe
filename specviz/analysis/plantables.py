"""A plan as tables (rows of dicts, for CSV, JSON and the CLI) and as a one-paragraph verdict."""

from __future__ import annotations

import math

import numpy as np

from .acceptance import summary
from .drafting import DRAFT_KINDS, HEAD_NAMES, layer_count, tree_note
from .plandeploy import costs_sentence, deploy_json, past_measured, where
from .planner import Plan
from .shape import dtype_bytes


def _f(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def batch_rows(p: Plan) -> list[dict]:
    """One row per batch size: the best k and what it buys, per user and per GPU."""
    out = []
    best = p.best_user()
    for j, b in enumerate(p.batches):
        k, spec = int(p.best_k[j]), best[j]
        out.append({
            "batch": int(b), "best_k": k or None,
            "speedup": _f(p.best_speedup[j]),
            "user_tok_s_plain": float(p.plain_user[j]),
            "user_tok_s_spec": _f(spec),
            "gpu_tok_s_plain": float(p.plain_user[j] * b / p.gpus),
            "gpu_tok_s_spec": _f(spec * b / p.gpus),
            "draft_cost_c": float(p.cost[j]),
            "break_even_alpha": _f(p.break_even_alpha[j]),
        })
    return out


def _shape_row(role: str, m, dtype: str, kv_dtype: str, resident: int, source: str) -> dict:
    attn = ("-" if not m.layers else "MLA" if m.mla else "GQA" if m.kv_heads < m.heads
            else "MHA")  # (Medusa's heads: no layer, no attention)
    return {"role": role, "model": m.name, "params": m.params, "active_params": m.active_params,
            "resident_params": resident, "dtype": dtype,
            "weight_gib": resident * dtype_bytes(dtype) / 2**30,
            "kv_kib_per_token": m.kv_bytes_per_token(kv_dtype) / 2**10, "attention": attn,
            "source": source or "config.json as entered"}


def model_rows(p: Plan) -> list[dict]:
    """Each model as read: parameters (total and active per token), the bytes of the weights
    it adds to memory at the chosen type, its KV cache per token of context, and where the
    shape came from. An n-gram drafter has no row of numbers, only its lookup cost."""
    s, d = p.setup, p.setup.draft
    rows = [_shape_row("target", s.target, s.target_dtype, s.kv_dtype, s.target.params,
                       s.target.source)]
    if d.shape is None:
        rows.append({"role": "draft", "model": d.name, "params": 0, "active_params": 0,
                     "resident_params": 0, "dtype": "-", "weight_gib": 0.0,
                     "kv_kib_per_token": 0.0, "attention": "-",
                     "source": f"a lookup of {d.lookup_s * 1e3:.3g} ms per round"})
    else:
        rows.append(_shape_row(f"draft ({DRAFT_KINDS[d.kind]})", d.shape, s.draft_dtype,
                               s.kv_dtype, d.resident_params, d.source))
    return rows


def model_line(row: dict) -> str:
    """One model_rows row as a sentence."""
    if row["params"] == 0:
        return f"Draft: {row['model']}, {row['source']}."
    active = (f", {row['active_params'] / 1e9:.2f} B active per token"
              if row["active_params"] != row["params"] else "")
    own = row["resident_params"]
    shared = (f" ({own / 1e9:.3f} B of its own: the LM head is the target's)"
              if own != row["params"] else "")
    role = row["role"][0].upper() + row["role"][1:]
    return (f"{role}: {row['model']}, {row['params'] / 1e9:.3f} B parameters{active}{shared}; "
            f"{row['weight_gib']:.2f} GiB of weights in {row['dtype']}; "
            + (f"{row['kv_kib_per_token']:.1f} KiB of KV cache per token "
               f"({row['attention']}); " if row["attention"] != "-" else "no KV cache; ")
            + f"from {row['source']}.")


def frontier_rows(p: Plan) -> list[dict]:
    """Long form: k (0 = no speculation), batch, tokens/s per user and per GPU."""
    rows = [{"k": 0, "batch": int(b), "user_tok_s": float(u), "gpu_tok_s": float(u * b / p.gpus),
             "speedup": 1.0} for b, u in zip(p.batches, p.plain_user, strict=True)]
    for i, k in enumerate(p.ks):
        for j, b in enumerate(p.batches):
            u = p.per_user[i, j]
            if math.isfinite(u):
                rows.append({"k": int(k), "batch": int(b), "user_tok_s": float(u),
                             "gpu_tok_s": float(u * b / p.gpus),
                             "speedup": float(p.speedup[i, j])})
    return rows


def k_rows(p: Plan) -> list[dict]:
    """Per k: tokens per call (predicted from the per-position rates), and whether that is
    past the measured draft length."""
    rep = p.acceptance
    return [{"k": int(k), "tokens_per_call": float(p.tokens_per_call[i]),
             "extrapolated": rep.extrapolates(int(k)),
             "speedup_at_batch_1": _f(p.speedup[i, 0])} for i, k in enumerate(p.ks)]


def segments(p: Plan) -> list[tuple[int, int, int, float, float]]:
    """Runs of batch sizes with one best k while speculation wins:
    (first B, last B, k, speedup at first B, speedup at last B)."""
    out: list[tuple[int, int, int, float, float]] = []
    for j, b in enumerate(p.batches):
        s = p.best_speedup[j]
        if not (s >= 1.0):
            break
        k = int(p.best_k[j])
        if out and out[-1][2] == k:
            out[-1] = (out[-1][0], int(b), k, out[-1][3], float(s))
        else:
            out.append((int(b), int(b), k, float(s), float(s)))
    return out


def _span(a: int, b: int) -> str:
    return f"batch {a}" if a == b else ("batch <= " + str(b) if a == 1 else f"batch {a}-{b}")


def verdict_parts(p: Plan) -> list[str]:
    """The verdict as sentences, the decision first: which k at which batch and where to
    switch speculation off; then throughput, memory, the draft's cost and the acceptance
    (a tree's note is the page's and the CLI's own)."""
    s, cap = p.setup, p.capacity
    segs = segments(p)
    drafts = (f"{s.draft.name} ({s.draft_dtype}) as draft" if s.draft.kind == "model" else
              f"{s.draft.name} drafting" if s.draft.shape is None else
              f"{s.draft.shape.name} ({s.draft_dtype}) drafting" if s.draft.kind == "medusa"
              else
              f"{HEAD_NAMES[s.draft.kind]} ({layer_count(s.draft.shape.layers)}, "
              f"{s.draft_dtype}) drafting")
    on = s.accel.name if s.tp == 1 else f"{s.tp} x {s.accel.name} (tensor parallelism {s.tp})"
    head = (f"{s.target.name} ({s.target_dtype}) with {drafts} on {on}, context "
            f"{s.context_len:,}, KV cache {s.kv_dtype}: ")
    if not segs:
        first = p.best_speedup[0]
        why = ("the draft does not fit next to the target" if cap.batch_with_draft < 1 else
               f"even at batch 1 the best k gives {first:.2f}x")
        return [head + f"turn speculation off; {why}.", *_tail(p, past=False)]
    parts = []
    for i, (a, b, k, sa, sb) in enumerate(segs):
        trend = "falling" if sb < sa else "rising"
        gain = f"{sa:.2f}x" if a == b or abs(sa - sb) < 0.05 else f"{sa:.2f}x {trend} to {sb:.2f}x"
        use = f"use k = {k}" if s.draft.tree is None else "use the tree"
        parts.append(("at " if i == 0 else "") + f"{_span(a, b)} {use} for {gain}")
    text = head + "; ".join(parts) + "; "
    last = segs[-1][1]
    if p.loses_from is not None and p.loses_from <= cap.batch_with_draft:
        text += (f"above {last} turn speculation off (at batch {p.loses_from} the best k "
                 f"gives {p.best_speedup[p.loses_from - 1]:.2f}x).")
    elif cap.batch_with_draft < p.batches[-1]:
        text += (f"above {cap.batch_with_draft} the draft no longer fits in memory next to "
                 f"the target (the target alone holds {cap.batch_target_only:,} sequences).")
    else:
        text += f"speculation pays at every batch priced (up to {last})."
    if note := past_measured(p, [k for _, _, k, _, _ in segs]):
        text += " " + note
    return [text, *_tail(p, past=note is not None)]


def verdict(p: Plan) -> str:
    """The verdict as one paragraph (the CLI's and the JSON's), a tree's note last."""
    return " ".join(verdict_parts(p) + [tree_note(p.setup.draft) or ""]).strip()


def peak_gpu(p: Plan) -> tuple[float, int, float, int]:
    """(best tokens/s per GPU with speculation, at batch; without, at batch)."""
    gpu = np.nan_to_num(p.per_user * p.batches[None, :], nan=0.0) / p.gpus  # (K, B)
    i, j = np.unravel_index(int(np.argmax(gpu)), gpu.shape)
    plain = p.plain_user * p.batches / p.gpus
    jp = int(np.argmax(plain))
    return float(gpu[i, j]), int(p.batches[j]), float(plain[jp]), int(p.batches[jp])


def _tail(p: Plan, *, past: bool) -> list[str]:
    """Throughput, memory and c, where each model runs, the fixed costs, the acceptance; how
    k past the measured one is extrapolated (past: the decision said it already)."""
    cap, rep = p.capacity, p.acceptance
    spec, bs, plain, bp = peak_gpu(p)
    out = [f"Most tokens/s per GPU: {spec:,.0f} with speculation (batch {bs}), {plain:,.0f} "
           f"without (batch {bp}).",
           f"Memory holds {cap.batch_with_draft:,} sequences with the draft and "
           f"{cap.batch_target_only:,} without; the draft costs c = {p.cost[0]:.3f} of a "
           "target pass at batch 1.", where(p), costs_sentence(p), summary(rep)]
    if p.ks[-1] > rep.k and not past:
        out.append(f"Tokens per call beyond the measured k = {rep.k} are extrapolated with a "
                   f"conditional rate of {rep.tail:.3f} per extra position.")
    return out


def to_json(p: Plan) -> dict:
    """Everything behind the page and the CLI, as plain JSON-able values."""
    return {"verdict": verdict(p), "acceptance": p.acceptance.rows,
            "alpha": p.acceptance.alpha, "alpha_ci": (list(p.acceptance.alpha_ci)
                                                        if p.acceptance.alpha_ci else None),
            "iid_p_value": p.acceptance.p_value, "shape": p.acceptance.shape,
            "by_k": k_rows(p), "by_batch": batch_rows(p),
            "capacity": {"with_draft": p.capacity.batch_with_draft,
                         "target_only": p.capacity.batch_target_only},
            "loses_from": p.loses_from, "models": model_rows(p),
            "best_k_at_1": int(np.asarray(p.best_k)[0]), **deploy_json(p)}
