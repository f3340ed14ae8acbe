"""/plan's controls, bound to their URL fields: the measurements, the models and what
drafts (its tree, fixed overheads, measured pass times), the accelerator and the serving.
Each returns its values by URL field, for views.plan.from_url."""

from __future__ import annotations

import streamlit as st

from ..analysis import drafting, overheads
from ..views import plan as pv
from . import files, guard, ui

MAX_BYTES = 2_000_000  # a paste or an upload

TREE, COSTS, ACCEL = ("head, tree and lookup", "measured costs (batch 1, ms; 0 = not given)",
                      "edit the accelerator (0 keeps the preset's number)")  # folds' labels
FIXED, SPLIT = ("fixed costs (us; -1 = the mode's default)",
                "the draft's split and the interconnect")
MODE_LABELS = {"eager": "eager PyTorch", "graphs": "CUDA graphs / compiled",
               "none": "no fixed cost (roofline alone)"}
COST_LABELS = ("launch floor a layer", "a pass, outside its layers", "a round's verification",
               "a tree's round", "each level a tree drafts")


def measurement_inputs() -> tuple[dict, list[tuple[str, str | None]]]:
    """Draw the measurements' controls: the shipped example, the paste (or upload), the
    fields only some formats need, an earlier scrape. (Their values by URL field, the
    uploads' problems as (which upload, problem or None).)"""
    example = ui.bind("plan_example", st.selectbox, "shipped example (used when nothing is "
                      "pasted)", format_func=pv.EXAMPLE_LABELS.get)
    pasted, up_err = files.paste_or_upload(
        "plan_metrics", "paste metrics: vLLM or SGLang /metrics or JSON, llama.cpp log, CSV",
        types=("txt", "prom", "json", "csv", "log"), max_bytes=MAX_BYTES)
    with st.expander("only for some formats"):
        klen = ui.bind("plan_klen", st.number_input, "draft length k (where the metrics "
                       "lack it)")
        rounds = ui.bind("plan_rounds", st.number_input, "rounds (hand-entered rates)")
        before, b_err = files.paste_or_upload(
            "plan_before", "an earlier vLLM /metrics scrape (counters differenced)",
            types=("txt", "prom"), max_bytes=MAX_BYTES, height=100)
    return ({"plan_example": example, "plan_metrics": pasted, "plan_klen": klen,
             "plan_rounds": rounds, "plan_before": before},
            [("metrics upload", up_err), ("earlier scrape upload", b_err)])


def model_inputs() -> tuple[dict, list[tuple[str, str | None]]]:
    """Draw the models' controls (presets, weight types, pasted configs) and what drafts.
    (Their values by URL field, the uploads' problems.)"""
    target = ui.bind("plan_target", st.selectbox, "target preset")
    tdtype = ui.bind("plan_tdtype", st.selectbox, "target weights")
    with st.expander("or paste the target's config.json"):
        t_cfg, t_err = files.paste_or_upload("plan_target_cfg", "target config.json",
                                             types=("json",), max_bytes=MAX_BYTES, height=120)
    draft = ui.bind("plan_draft", st.selectbox, "draft preset")
    ddtype = ui.bind("plan_ddtype", st.selectbox, "draft weights")
    with st.expander("or paste the draft's config.json"):
        d_cfg, d_err = files.paste_or_upload("plan_draft_cfg", "draft config.json",
                                             types=("json",), max_bytes=MAX_BYTES, height=120)
    return ({"plan_target": target, "plan_tdtype": tdtype, "plan_target_cfg": t_cfg,
             "plan_draft": draft, "plan_ddtype": ddtype, "plan_draft_cfg": d_cfg,
             **draft_inputs()}, [("target upload", t_err), ("draft upload", d_err)])


def draft_inputs() -> dict:
    """Draw the drafting controls and the costs; their values by URL field."""
    kind = ui.bind("plan_dkind", st.selectbox, "what drafts",
                   format_func=drafting.DRAFT_KINDS.get)
    box, field, opened = ui.folded_fields(TREE)  # number boxes: drawn once opened
    with box:
        if opened:
            st.caption("A head with a pasted draft config.json is priced from that config; "
                       "without one, from the target's width and this many layers. Medusa "
                       "(Cai et al. 2024): its heads are the tree's steps (default 4), its "
                       "candidates the tokens verified less one (default 63: Medusa's "
                       "mc_sim_7b_63).")
        got = {key: field(key, st.number_input, label, **kw) for key, label, kw in (
            ("plan_hlayers", "head layers", {}),
            ("plan_topk", "tree topk (SGLang)", {}),
            ("plan_steps", "tree steps (0 = a chain of k)", {}),
            ("plan_dtokens", "tree tokens verified (0 = steps + 1)", {}),
            ("plan_lookup_ms", "n-gram lookup per round (ms)", {"format": "%.3f"}))}
    box, field, _ = ui.folded_fields(COSTS)
    with box:
        got |= {key: field(key, st.number_input, label, format="%.3f") for key, label in (
            ("plan_m_target_ms", "measured decode step"),
            ("plan_m_verify_ms", "measured verify pass"),
            ("plan_m_draft_ms", "measured draft step"))}
        got["plan_m_c"] = field("plan_m_c", st.number_input, "or measured c")
        got["plan_m_k"] = field("plan_m_k", st.number_input, "k the verify pass was measured "
                                "at (0 = the metrics' k)")
        got |= {key: field(key, st.number_input, label, format="%.3f") for key, label in (
            ("plan_t_oh_ms", "extra fixed time per target pass"),
            ("plan_d_oh_ms", "extra fixed time per draft pass"))}
    box, field, _ = ui.folded_fields(FIXED)
    with box:
        got |= {f"plan_{c}_us": field(f"plan_{c}_us", st.number_input, label, format="%.1f")
                for c, label in zip(overheads.COSTS, COST_LABELS, strict=True)}
    return {"plan_dkind": kind, **got}


def hardware_inputs() -> dict:
    """Draw the accelerator, its overrides and the serving controls; their values by URL
    field."""
    got = {"plan_gpu": ui.bind("plan_gpu", st.selectbox, "accelerator")}
    box, field, _ = ui.folded_fields(ACCEL)
    with box:
        got |= {key: field(key, st.number_input, label) for key, label in (
            ("plan_mem_gb", "memory (GB)"), ("plan_bw_tbs", "bandwidth (TB/s)"),
            ("plan_tflops", "dense bf16 TFLOP/s"), ("plan_fp8_tflops", "dense fp8 TFLOP/s"))}
    got["plan_exec"] = ui.bind("plan_exec", st.selectbox, "how passes run",
                               format_func=MODE_LABELS.get)
    got["plan_tp"] = ui.bind("plan_tp", st.number_input, "tensor parallelism (target)")
    got["plan_devices"] = ui.bind("plan_devices", st.number_input,
                                  "devices in the server (0 = as many as tp)")
    box, field, opened = ui.folded_fields(SPLIT)
    with box:
        got["plan_dtp"] = field("plan_dtp", st.number_input, "draft's tensor parallelism "
                                "(0 = 1; a head runs at the target's)")
        got["plan_link"] = _link(got["plan_gpu"], field, opened)
    got["plan_ctx"] = ui.bind("plan_ctx", st.number_input, "context (tokens per sequence)")
    got["plan_kvdtype"] = ui.bind("plan_kvdtype", st.selectbox, "KV cache")
    got["plan_kmax"] = ui.bind("plan_kmax", st.slider, "longest draft k priced")
    got["plan_batch"] = ui.bind("plan_batch", st.number_input, "your batch size (0 = none)")
    return got


def _link(gpu: str, field, opened: bool) -> str:
    """The interconnect box: the links this accelerator has ("" = its first); a choice another
    accelerator had falls back to the default."""
    names = ("", *(x.name for x in pv.ACCELERATORS[gpu].links))
    if opened and st.session_state.get("w_plan_link") not in names:
        ui.assign("plan_link", "")
    return field("plan_link", st.selectbox, "interconnect", options=names,
                 format_func=lambda n: n or f"{names[1]} (its default)")


def here_input():
    """The "measured here on this machine" source: a measurement of this server's /measured
    page, whose acceptance and pass times replace the metrics and the measured costs (the
    label and the MeasuredHere, or None)."""
    from . import measuredhere

    found = measuredhere.sources()
    wanted = ui.url_settings()[0].plan_here
    if wanted and wanted not in found:
        st.caption(guard.plain(f"'{wanted}' is not measured on this server (yet): measure "
                               "it on /measured; the metrics above are used."))
    label = ui.bind("plan_here", st.selectbox, "or measured here on this machine (the real "
                    "model on /measured)", options=("", *found),
                    format_func=lambda o: o or "not used: the metrics above")
    return label, found.get(label)
