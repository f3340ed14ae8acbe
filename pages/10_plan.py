"""/plan: your measurements, models and hardware in; which k at which batch out."""

import streamlit as st

from specviz.figures import plan as figs
from specviz.views import columns
from specviz.views import plan as pv
from specviz.web import files, guard, notation, planinputs, ui, urlcodec

app = ui.page("plan", path="plan")
st.title("Plan: does a draft model pay on your server?")
notation.md("Bring what your server measured, your models' `config.json` and your accelerator. "
            "Each forward pass is priced by the roofline (bytes over bandwidth or MACs over peak, "
            "whichever is slower) on each device the model is split across, plus its launches "
            "and its all-reduces; tokens per round come from the measured per-position "
            "acceptance (Leviathan et al. 2022, eq. 1 and Thm 3.8; Chen et al. 2023).")
m_col, mod_col, hw_col = st.columns(3)
with m_col:
    st.subheader("Measurements")
    measures, uploads = planinputs.measurement_inputs()
    here_label, here = planinputs.here_input()
    model = st.session_state.get("w_plan_model", app.settings.plan_model)  # its box: below
with mod_col:
    st.subheader("Models")
    models, more = planinputs.model_inputs()
with hw_col:
    st.subheader("Hardware and serving")
    hardware = planinputs.hardware_inputs()
settings = pv.from_url({**measures, **models, **hardware, "plan_model": model,
                        "plan_here": here_label})
st.caption("Accelerator source: " + pv.ACCELERATORS[settings.gpu].source + ".")
if page_links := pv.link_sources(settings):
    st.caption(guard.plain(page_links))
uploads = [f"The {where} was not used: {err}." for where, err in uploads + more if err]
page = ui.cached(pv.plan_page)(settings, here=here)
with m_col:  # a scrape of several models: a choice among those the parse found
    model = ui.bind("plan_model", st.selectbox, "model", options=page.models) if page.models \
        else ""
for show, messages in ((st.error, uploads + page.errors), (st.info, page.notes)):
    for m in messages:
        show(guard.plain(m))
if page.verdict:
    st.success(guard.plain(page.verdict_parts[0]))
    reasons = page.verdict_parts[1:] + page.model_lines
    st.markdown("\n".join("- " + guard.plain(x) for x in reasons))
if page.batch_note:
    (st.warning if "does not fit" in page.batch_note else st.info)(guard.plain(page.batch_note))
if "measured" in page.tables:
    ui.table(page.tables["measured"], columns.PLAN_MEASURED)
if (rep := page.report) is not None:
    c = st.columns(4)
    c[0].metric("alpha (95% CI)", f"{rep.alpha:.3f}", page.alpha_ci, delta_color="off",
                delta_arrow="off")
    c[1].metric("mean acceptance length", f"{rep.record.mean_acceptance_length:.3f}")
    c[2].metric("acceptance by position", rep.shape)
    c[3].metric("measured k", rep.k)
if page.plan is not None:
    every = st.toggle("show every k on the frontier", value=True, key="plan_every_k")
    ui.chart(figs.frontier_figure(page.plan, every_k=every), key="plan_frontier")
    files.download_table(page.tables["frontier"], "plan_frontier")
    ui.chart(figs.best_k_figure(page.plan), key="plan_best_k", fold="best k by batch (chart)")
    files.download_table(page.tables["by_batch"], "plan_by_batch")
    ui.table(page.tables["by_batch"], columns.PLAN_BY_BATCH, fold="the table by batch size")
if rep is not None:
    ui.chart(figs.acceptance_figure(rep), key="plan_acceptance", fold="acceptance (chart)")
    files.download_table(page.tables["acceptance"], "plan_acceptance")
if page.plan is not None:
    st.subheader("Tokens per call by k")
    ui.table(page.tables["by_k"], columns.PLAN_BY_K, fold="the table by k")
    files.download_table(page.tables["by_k"], "plan_by_k")
blobs = {}
for key, value, what in (("plan_metrics", settings.metrics_text, "metrics paste"),
                         ("plan_before", settings.metrics_before, "earlier scrape"),
                         ("plan_target_cfg", settings.target_text, "target config"),
                         ("plan_draft_cfg", settings.draft_text, "draft config")):
    blobs[key], note = urlcodec.url_blob(value, what)
    if note:
        st.warning(note)
ui.finish(app, **blobs)
