"""Every table's columns as the pages show them: row key -> (header, number format).

A format is a printf pattern (one per column, so a column's numbers line up), CHECK for a
checkbox, or None for text; a third entry, where there is one, is the column's width in px
(for text the grid would otherwise size from its first rows only). Only the columns named
here are shown, in this order; the rows keep their other keys, and a table's CSV download
has them all. Each set fits a 1440 px wide screen with the sidebar open (about 980 px of
table) without scrolling sideways.
"""

from __future__ import annotations

Columns = dict[str, tuple]  # key -> (header, format) or (header, format, width)
CHECK = "check"

# /acceptance and /draft-length: the measured sweep (unmarked = measured), then the exact
# and closed-form curve
_SWEEP_X: Columns = {"alpha": ("alpha (mix weight)", "%.2f"), "T": ("draft temperature T", "%.2f"),
                     "k": ("k", "%d")}
SWEEP: Columns = {
    **_SWEEP_X, "cost": ("round cost 1 + k c", "%.2f"),
    "acceptance": ("acceptance", "%.4f"), "acceptance_exact": ("acceptance (exact)", "%.4f"),
    "tokens_per_call": ("tokens / call", "%.3f"), "tokens_per_call_se": ("± one s.e.", "%.3f"),
    "tokens_per_call_exact": ("tokens / call (exact)", "%.3f"),
    "speedup": ("speedup", "%.3fx"), "speedup_exact": ("speedup (exact)", "%.3fx"),
}
CURVE: Columns = {
    **_SWEEP_X, "alpha_eff": ("alpha (exact)", "%.4f"),
    "acceptance_exact": ("acceptance (exact)", "%.4f"),
    "acceptance_theory": ("acceptance (theory)", "%.4f"),
    "tokens_per_call_exact": ("tokens / call (exact)", "%.3f"),
    "tokens_theory": ("tokens / call (theory)", "%.3f"),
    "speedup_exact": ("speedup (exact)", "%.3fx"), "speedup_theory": ("speedup (theory)", "%.3fx"),
}

# /exactness (the floor and the threshold are the same for every rule: shown as metrics)
EXACTNESS: Columns = {
    "rule": ("rule", None), "lossless": ("lossless rule", CHECK),
    "against": ("compared with", None),  # the law the rule promises: p, or warp(p)
    "mc_tv": ("Monte Carlo TV", "%.5f"), "exact_tv": ("exact TV", "%.5f"),
    "verdict": ("verdict (TV and chi-square)", None), "p_value": ("chi-square p", "%.4f"),
    "acceptance_rate": ("acceptance", "%.4f"), "tokens_per_call": ("tokens / call", "%.3f"),
}

# /cost
COST: Columns = {"c": ("draft cost c", "%.2f"), "speedup": ("speedup", "%.4fx")}

# /roofline: the accelerators (their sources are cited under the table) and the passes
ACCELERATORS: Columns = {
    "accelerator": ("accelerator", None), "peak_tflops": ("dense BF16 (TFLOP/s)", "%.1f"),
    "fp8_tflops": ("dense FP8 (TFLOP/s)", "%.1f"), "bandwidth_tb_s": ("bandwidth (TB/s)", "%.3f"),
    "memory_gib": ("memory (GiB)", "%.1f"),
    "ridge": ("ridge (MACs/byte)", "%.1f"),
    "free_tokens": ("free tokens (this model)", "%d"),
}
ROOFLINE: Columns = {
    "tokens": ("tokens in the pass", "%d"), "bytes": ("bytes read", "%.4e"),
    "macs_tutorial": ("MACs, tutorial", "%.4e"),
    "mpb_tutorial": ("MACs/byte (tutorial)", "%.3f"),
    "macs_full": ("MACs, full", "%.4e"), "mpb_full": ("MACs/byte (full)", "%.3f"),
    "mpb_full_kv": ("MACs/byte (full + KV)", "%.3f"),
    "time_ratio": ("time (x one-token pass)", "%.3f"),
}

# /rules: every rule (long-run acceptance), then this run's counts and the parameters
GALLERY: Columns = {
    "family": ("family", None), "rule": ("rule", None, 140), "exact_tv": ("exact TV", "%.5f"),
    "mc_tv": ("Monte Carlo TV", "%.5f"), "verdict": ("verdict at this n", None),
    "n_to_resolve": ("n to resolve", None),
    "acceptance_long_run": ("long-run acceptance", "%.4f"),
    "tokens_per_call_long_run": ("long-run tokens/call", "%.3f"),
}
GALLERY_RUN: Columns = {
    "rule": ("rule", None, 150), "params": ("parameters", None),
    "p_value": ("chi-square p-value", "%.4f"),
    "acceptance": ("acceptance (this run)", "%.4f"),
    "tokens_per_call": ("tokens / call (this run)", "%.3f"),
    "long_run": ("long-run values", None),
}

# /plan
PLAN_BY_BATCH: Columns = {
    "batch": ("batch B", "%d"), "best_k": ("best k", "%d"), "speedup": ("speedup", "%.3fx"),
    "user_tok_s_plain": ("tok/s per user, plain", "%.1f"),
    "user_tok_s_spec": ("tok/s per user, best k", "%.1f"),
    "gpu_tok_s_plain": ("tok/s per GPU, plain", "%.0f"),
    "gpu_tok_s_spec": ("tok/s per GPU, best k", "%.0f"),
    "draft_cost_c": ("draft cost c", "%.3f"),
    "break_even_alpha": ("break-even alpha", "%.3f"),
}
PLAN_MEASURED: Columns = {
    "quantity": ("at batch 1", None), "roofline": ("roofline", "%.3f"),
    "measured": ("measured", "%.3f"), "how": ("measured how", None),
}
PLAN_BY_K: Columns = {
    "k": ("k", "%d"), "tokens_per_call": ("tokens / call", "%.3f"),
    "extrapolated": ("past the measured k", CHECK),
    "speedup_at_batch_1": ("speedup at B = 1", "%.3fx"),
}


def policy_columns(c: float) -> Columns:
    """/draft-length's dynamic policies: counts, then the speedup at the sidebar's c."""
    return {
        "policy": ("policy", None), "label": ("rule of thumb", None), "tokens": ("tokens", "%d"),
        "target_calls": ("target calls", "%d"), "draft_calls": ("draft calls", "%d"),
        "accepted": ("drafts kept", "%d"), "mean_k": ("mean k", "%.2f"),
        "tokens_per_call": ("tokens / target call", "%.3f"),
        "speedup": (f"speedup at c = {c:g}", "%.3fx"),
    }


def production_columns(rounds: int) -> Columns:
    """/rules' production metrics: measured over `rounds` rounds (the header says how many),
    beside the exact long run and the i.i.d. theory."""
    return {
        "metric": ("metric", None), "measured": (f"measured ({rounds:,} rounds)", "%.4f"),
        "exact": ("exact (long run)", "%.4f"), "theory": ("i.i.d. theory at alpha", "%.4f"),
    }


ALL: dict[str, Columns] = {
    "SWEEP": SWEEP, "CURVE": CURVE, "EXACTNESS": EXACTNESS, "COST": COST,
    "ACCELERATORS": ACCELERATORS, "ROOFLINE": ROOFLINE, "GALLERY": GALLERY,
    "GALLERY_RUN": GALLERY_RUN, "PLAN_BY_BATCH": PLAN_BY_BATCH, "PLAN_BY_K": PLAN_BY_K,
    "PLAN_MEASURED": PLAN_MEASURED,
}

# /audit: each output statistic of each pair against the target
AUDIT: Columns = {
    "statistic": ("statistic", None, 260), "n": ("n", "%d"), "tv": ("TV", "%.4f"),
    "floor": ("sampling floor", "%.4f"), "line": ("pass line", "%.4f"),
    "p": ("chi-square p", "%.3g"), "passed": ("passes", CHECK),
}
