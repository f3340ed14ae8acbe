"""/plan's controls for what drafts and what passes cost: the drafter, its tree, fixed
overheads and measured pass times, bound to their URL fields."""

from __future__ import annotations

import streamlit as st

from ..analysis import drafting, planner
from ..views import plan as pv
from ..views.plan import DraftInputs
from . import guard, ui


def _ms(key: str, label: str) -> float:
    return float(ui.bind(key, st.number_input, label, min_value=0.0, step=0.1, format="%.3f"))


def draft_inputs() -> tuple[DraftInputs, dict]:
    """Draw the drafting controls; (the inputs for views.plan, the fields to write back)."""
    kind = ui.bind("plan_dkind", st.selectbox, "what drafts", tuple(drafting.DRAFT_KINDS),
                   format_func=drafting.DRAFT_KINDS.get)
    with st.expander("head, tree and lookup"):
        st.caption("A head with a pasted draft config.json is priced from that config; "
                   "without one, from the target's width and this many layers.")
        layers = ui.bind("plan_hlayers", st.number_input, "head layers", min_value=1,
                         max_value=drafting.HEAD_LAYERS_MAX)
        topk = ui.bind("plan_topk", st.number_input, "tree topk (SGLang)", min_value=1,
                       max_value=64)
        steps = ui.bind("plan_steps", st.number_input, "tree steps (0 = a chain of k)",
                        min_value=0, max_value=64)
        tokens = ui.bind("plan_dtokens", st.number_input, "tree tokens verified (0 = steps "
                         "+ 1)", min_value=0, max_value=drafting.TREE_MAX)
        lookup = ui.bind("plan_lookup_ms", st.number_input, "n-gram lookup per round (ms)",
                         min_value=0.001, max_value=1000.0, step=0.05, format="%.3f")
    with st.expander("measured costs (batch 1, ms; 0 = not given)"):
        t_oh, d_oh = _ms("plan_t_oh_ms", "fixed time per target pass"), \
            _ms("plan_d_oh_ms", "fixed time per draft pass")
        mt, mv = _ms("plan_m_target_ms", "measured decode step"), \
            _ms("plan_m_verify_ms", "measured verify pass")
        md = _ms("plan_m_draft_ms", "measured draft step")
        mc = float(ui.bind("plan_m_c", st.number_input, "or measured c", min_value=0.0,
                           max_value=100.0, step=0.01))
    values = dict(plan_dkind=kind, plan_hlayers=int(layers), plan_topk=int(topk),
                  plan_steps=int(steps), plan_dtokens=int(tokens),
                  plan_lookup_ms=float(lookup), plan_t_oh_ms=t_oh, plan_d_oh_ms=d_oh,
                  plan_m_target_ms=mt, plan_m_verify_ms=mv, plan_m_draft_ms=md, plan_m_c=mc)
    measured = planner.Measured(mt / 1e3, mv / 1e3, md / 1e3, mc)
    return DraftInputs(kind, int(layers), int(topk), int(steps), int(tokens), float(lookup),
                       t_oh, d_oh, measured), values


def accelerator_inputs() -> tuple:
    """Draw the accelerator and its overrides; (the Accelerator, its preset name, fields)."""
    gpu = ui.bind("plan_gpu", st.selectbox, "accelerator", tuple(pv.ACCELERATORS))
    with st.expander("edit the accelerator (0 keeps the preset's number)"):
        mem = ui.bind("plan_mem_gb", st.number_input, "memory (GB)", min_value=0.0)
        bw = ui.bind("plan_bw_tbs", st.number_input, "bandwidth (TB/s)", min_value=0.0)
        tf = ui.bind("plan_tflops", st.number_input, "dense bf16 TFLOP/s", min_value=0.0)
        tf8 = ui.bind("plan_fp8_tflops", st.number_input, "dense fp8 TFLOP/s", min_value=0.0)
    accel = pv.accelerator(gpu, mem_gb=mem, bw_tbs=bw, tflops=tf, fp8_tflops=tf8)
    return accel, gpu, dict(plan_gpu=gpu, plan_mem_gb=float(mem), plan_bw_tbs=float(bw),
                            plan_tflops=float(tf), plan_fp8_tflops=float(tf8))


def here_input() -> tuple:
    """The "measured here on this machine" source: a measurement of this server's /measured
    page, whose acceptance and pass times replace the metrics and the measured costs;
    (the MeasuredHere or None, the fields to write back)."""
    from . import measuredhere

    found = measuredhere.sources()
    wanted = ui.url_settings()[0].plan_here
    if wanted and wanted not in found:
        st.caption(guard.plain(f"'{wanted}' is not measured on this server (yet): measure "
                               "it on /measured; the metrics above are used."))
    label = ui.bind("plan_here", st.selectbox, "or measured here on this machine (the real "
                    "model on /measured)", ("", *found),
                    format_func=lambda o: o or "not used: the metrics above")
    return found.get(label), dict(plan_here=label)
