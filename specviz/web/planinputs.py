"""/plan's controls for what drafts and what passes cost: the drafter, its tree, fixed
overheads and measured pass times, bound to their URL fields."""

from __future__ import annotations

import streamlit as st

from ..analysis import drafting, planner
from ..views import plan as pv
from ..views.plan import DraftInputs
from . import guard, ui

TREE, COSTS, ACCEL = ("head, tree and lookup", "measured costs (batch 1, ms; 0 = not given)",
                      "edit the accelerator (0 keeps the preset's number)")  # folds' labels


def draft_inputs() -> DraftInputs:
    """Draw the drafting controls; the inputs for views.plan."""
    kind = ui.bind("plan_dkind", st.selectbox, "what drafts",
                   format_func=drafting.DRAFT_KINDS.get)
    box, field, opened = ui.folded_fields(TREE)  # number boxes: drawn once opened
    with box:
        if opened:
            st.caption("A head with a pasted draft config.json is priced from that config; "
                       "without one, from the target's width and this many layers.")
        layers = field("plan_hlayers", st.number_input, "head layers")
        topk = field("plan_topk", st.number_input, "tree topk (SGLang)")
        steps = field("plan_steps", st.number_input, "tree steps (0 = a chain of k)")
        tokens = field("plan_dtokens", st.number_input, "tree tokens verified (0 = steps + 1)")
        lookup = field("plan_lookup_ms", st.number_input, "n-gram lookup per round (ms)",
                       format="%.3f")
    box, field, _ = ui.folded_fields(COSTS)
    with box:
        t_oh, d_oh, mt, mv, md = (float(field(key, st.number_input, label, format="%.3f"))
                                  for key, label in (
            ("plan_t_oh_ms", "fixed time per target pass"),
            ("plan_d_oh_ms", "fixed time per draft pass"),
            ("plan_m_target_ms", "measured decode step"),
            ("plan_m_verify_ms", "measured verify pass"),
            ("plan_m_draft_ms", "measured draft step")))
        mc = float(field("plan_m_c", st.number_input, "or measured c"))
    measured = planner.Measured(mt / 1e3, mv / 1e3, md / 1e3, mc)
    return DraftInputs(kind, int(layers), int(topk), int(steps), int(tokens), float(lookup),
                       t_oh, d_oh, measured)


def accelerator_inputs() -> tuple:
    """Draw the accelerator and its overrides; (the Accelerator, its preset name)."""
    gpu = ui.bind("plan_gpu", st.selectbox, "accelerator")
    box, field, _ = ui.folded_fields(ACCEL)
    with box:
        mem = field("plan_mem_gb", st.number_input, "memory (GB)")
        bw = field("plan_bw_tbs", st.number_input, "bandwidth (TB/s)")
        tf = field("plan_tflops", st.number_input, "dense bf16 TFLOP/s")
        tf8 = field("plan_fp8_tflops", st.number_input, "dense fp8 TFLOP/s")
    return pv.accelerator(gpu, mem_gb=mem, bw_tbs=bw, tflops=tf, fp8_tflops=tf8), gpu


def here_input():
    """The "measured here on this machine" source: a measurement of this server's /measured
    page, whose acceptance and pass times replace the metrics and the measured costs (the
    MeasuredHere, or None)."""
    from . import measuredhere

    found = measuredhere.sources()
    wanted = ui.url_settings()[0].plan_here
    if wanted and wanted not in found:
        st.caption(guard.plain(f"'{wanted}' is not measured on this server (yet): measure "
                               "it on /measured; the metrics above are used."))
    label = ui.bind("plan_here", st.selectbox, "or measured here on this machine (the real "
                    "model on /measured)", options=("", *found),
                    format_func=lambda o: o or "not used: the metrics above")
    return found.get(label)
