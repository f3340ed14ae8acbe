"""/roofline: why verifying k + 1 tokens costs about one decode step, and where that ends."""

import streamlit as st

from specviz.figures import costcharts, rulecharts
from specviz.views import columns, demos, pagedata
from specviz.web import files, notation, ui

app = ui.page("roofline", path="roofline", story=("k",))
s = app.settings
st.title("Roofline: why scoring k + 1 tokens is nearly free")
notation.md(
    "A decode step of a large model reads every weight once to produce one token, so it is "
    "bound by memory bandwidth, not arithmetic. Scoring k + 1 positions in one pass reads the "
    "same weights and does k + 1 times the multiply-accumulates (MACs), so the pass costs "
    "about the same, until MACs per byte reach the accelerator's **ridge** (peak MACs/s "
    "divided by bytes/s), where compute becomes the limit (Leviathan et al. 2022, §1 and §3.4 "
    "make this argument; the ridge is the roofline model's)."
)
cols = st.columns(5)
preset = ui.bind("preset", cols[0].selectbox, "model shape")
dtype = ui.bind("dtype", cols[1].selectbox, "weight type")
ctxlen = ui.bind("ctxlen", cols[2].number_input, "context length (tokens)")
batch = ui.bind("batch", cols[3].number_input, "batch (sequences)")
accel = ui.bind("accel", cols[4].selectbox, "accelerator")
page = ui.cached(pagedata.roofline_page)(preset, accel, s.k, int(ctxlen), dtype, int(batch))
one = page.rows[0]  # a one-token pass

m = st.columns(4)
gb, gib = pagedata.bytes_label(one["bytes"])  # the value fits a column; GiB in the label
m[0].metric(notation.text(f"weights, every one (= {gib})"), gb)
m[1].metric(notation.text("MACs per byte, 1 token (full count)"), f"{one['mpb_full']:.3f}")
m[2].metric(notation.text(f"free tokens on {accel}"), f"{page.free_tokens:,}")
m[3].metric(notation.text(f"verify k + 1 = {s.k + 1} tokens (x a decode step)"),
            f"{page.verify_ratio:.3f}x")
if page.free_for_k:
    st.success(notation.text(f"Verifying k + 1 = {s.k + 1} tokens is free here: a pass of up to "
                             f"{page.free_tokens:,} tokens per sequence costs within "
                             f"{pagedata.FREE_TOLERANCE:.0%} of a one-token pass on {accel}."))
else:
    st.warning(notation.text(f"Verifying k + 1 = {s.k + 1} tokens is not free here: it costs "
                             f"{page.verify_ratio:.3f}x a decode step; only {page.free_tokens:,} "
                             f"tokens per sequence fit within {pagedata.FREE_TOLERANCE:.0%} of a "
                             "one-token pass."))
if page.free_tokens >= pagedata.MAX_FREE_TOKENS:
    st.info(notation.text(f"The pass stays memory-bound over the whole search range "
                          f"(1..{pagedata.MAX_FREE_TOKENS:,} tokens)."))

measured = ui.cached(pagedata.measured_machine)() if st.toggle(
    "show this machine's ridge, measured here (f32; about 2 s, once)", key="machine") else None
ui.chart(costcharts.roofline_figure(page, measured), key="roofline")
st.caption(notation.text(f"Two counts, both shown: the **{pagedata.TUTORIAL_LABEL}**, and the "
                         f"**{pagedata.FULL_LABEL}** (all three SwiGLU matrices, grouped-query K "
                         "and V, the LM head), with and without reading the KV cache. Bytes are "
                         "every weight (and the KV cache) once per pass, as the tutorial counts "
                         "them (a pass itself gathers only its tokens' rows of an untied input "
                         "embedding); MACs grow with tokens x batch."))
ui.chart(costcharts.pass_time_figure(page), key="pass_time", fold="The pass time by tokens (chart)")

st.subheader("Accelerators")
if box := ui.folded_open("The accelerators' numbers and their sources (table, CSV)"):
    with box:
        ui.table(page.accelerators, columns.ACCELERATORS)
        files.download_csv(page.accelerators, "accelerators")
        st.caption(notation.text("Sources: " + "; ".join(f"{a['accelerator']}: {a['source']}"
                                                         for a in page.accelerators) + "."))
ui.table(page.rows, columns.ROOFLINE, fold="MACs and bytes by tokens in the pass (table)")
files.download_csv(page.rows, f"roofline_{preset}_{dtype}")

st.subheader("Batch size")
if box := ui.folded_open("The speedup by batch size, its metrics and CSV (chart)"):
    with box:
        notation.md(
            "A server verifies many sequences at once. With batch B, a plain decode step holds "
            "B tokens and a verify pass **B (k + 1)** tokens, over the same weights. While both "
            "passes are memory-bound they take the same time and the speedup is Thm 3.8's; once "
            "B (k + 1) tokens carry the verify pass past the ridge, the k extra positions are "
            "paid in full and the speedup falls, below 1 for a large enough batch. Priced per "
            "pass: S(B) = E[tokens] t_1(B) / (t_(k+1)(B) + k c t_1(B)), with E[tokens] = "
            "(1 − alpha^(k+1)) / (1 − alpha) (Leviathan et al. 2022, eq. 1) and t_T(B) the "
            "roofline time of a pass of B sequences with T new tokens each. The model shape, "
            "weight type, context and accelerator are those chosen above; E[tokens] is the "
            "sidebar's pair's exact long-run tokens per call, the same number /cost prices, so "
            "the two pages agree at a memory-bound batch.")
        kv = ui.bind("kv", st.toggle, "read the KV cache in each pass", cast=bool)
        st.caption(notation.text(pagedata.KV_SWITCH_NOTE))
        alpha = ui.cached(pagedata.long_run_alpha)(app.standard)
        cm = ui.cached(demos.cost_model)(app.standard, costs=pagedata.COST_GRID)
        curve = ui.cached(pagedata.batch_curve)(preset, accel, cm.tokens_per_call, s.k, s.c,
                                                int(ctxlen), dtype, kv)
        b = st.columns(4)
        b[0].metric(notation.text(f"tokens per call (exact; alpha_eff {alpha:.4f})"),
                    f"{curve.tokens_per_call:.4f}")
        b[1].metric(notation.text("memory-bound speedup (as /cost)"),
                    f"{curve.memory_bound_speedup:.3f}x")
        b[2].metric(notation.text("verifying stops being free at B"),
                    f"{curve.stops_free:,}" if curve.stops_free else "never")
        b[3].metric(notation.text("speculation stops paying at B"),
                    f"{curve.stops_paying:,}" if curve.stops_paying else "never")
        if kv and curve.free_throughout:
            st.info(notation.text(
                f"With the KV-cache read, {preset} at a context of {int(ctxlen):,} tokens stays "
                f"memory-bound at every batch up to {curve.max_batch:,} on {accel}: the cache "
                "to read grows with B as fast as the MACs do, so MACs per byte level off below "
                f"the ridge and verifying k + 1 = {s.k + 1} tokens stays as cheap as one decode "
                "step. Switch the KV-cache read off to see the weights-only roofline turn "
                "compute-bound."))
        elif curve.free_throughout:
            st.info(notation.text(f"The verify pass stays memory-bound at every batch up to "
                                  f"{curve.max_batch:,} on {accel}."))
        ui.chart(rulecharts.batch_figure(curve, int(batch)), key="batch", caption=(
            f"B runs over 1..{curve.max_batch:,}; 'never' means not within that range. The blue "
            "dot is the batch chosen above. c is the draft's cost per token as a fraction of a "
            "plain decode step at the same batch, so it is held fixed as B grows."))
        files.download_csv(curve.rows, f"batch_speedup_{preset}_{dtype}_k{s.k}")
else:
    ui.keep("kv")  # closed: the KV-cache switch keeps its value in the link
ui.finish(app)
