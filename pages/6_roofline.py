"""/roofline: why verifying k + 1 tokens costs about one decode step, and where that ends."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from specviz import demos, figures, roofline, ui
from specviz import settings as S

PAGE_KEYS = ("preset", "dtype", "ctxlen", "batch", "accel")

app = ui.page("roofline")
s = app.settings
st.title("Roofline: why scoring k + 1 tokens is nearly free")
st.markdown(
    "A decode step of a large model reads every weight once to produce one token, so it is "
    "bound by memory bandwidth, not arithmetic. Scoring k + 1 positions in one pass reads the "
    "same weights and does k + 1 times the multiply-accumulates (MACs), so the pass costs "
    "about the same, until MACs per byte reach the accelerator's **ridge** (peak MACs/s "
    "divided by bytes/s), where compute becomes the limit (Leviathan et al. 2022, §1 and §3.4 "
    "make this argument; the ridge is the roofline model's)."
)
cols = st.columns(5)
with cols[0]:
    preset = ui.bind("preset", st.selectbox, "model shape", tuple(roofline.PRESETS))
with cols[1]:
    dtype = ui.bind("dtype", st.selectbox, "weight type", tuple(roofline.DTYPE_BYTES))
with cols[2]:
    ctxlen = ui.bind("ctxlen", st.number_input, "context length (tokens)", min_value=0,
                     max_value=S.CTX_LEN_MAX, step=256)
with cols[3]:
    batch = ui.bind("batch", st.number_input, "batch (sequences)", min_value=1,
                    max_value=S.BATCH_MAX, step=1)
with cols[4]:
    accel = ui.bind("accel", st.selectbox, "accelerator", tuple(roofline.ACCELERATORS))
page = ui.cached(demos.roofline_page)(preset, accel, s.k, int(ctxlen), dtype, int(batch))
one = page.rows[0]  # a one-token pass

m = st.columns(4)
m[0].metric("bytes read per pass", f"{one['bytes']:.4g} B")
m[1].metric("MACs per byte, 1 token (full count)", f"{one['mpb_full']:.3f}")
m[2].metric(f"free tokens on {accel}", f"{page.free_tokens:,}")
m[3].metric(f"verify k + 1 = {s.k + 1} tokens (x a decode step)", f"{page.verify_ratio:.3f}x")
if page.free_for_k:
    st.success(f"Verifying k + 1 = {s.k + 1} tokens is free here: a pass of up to "
               f"{page.free_tokens:,} tokens per sequence costs within "
               f"{roofline.FREE_TOLERANCE:.0%} of a one-token pass on {accel}.")
else:
    st.warning(f"Verifying k + 1 = {s.k + 1} tokens is not free here: it costs "
               f"{page.verify_ratio:.3f}x a decode step; only {page.free_tokens:,} tokens per "
               f"sequence fit within {roofline.FREE_TOLERANCE:.0%} of a one-token pass.")
if page.free_tokens >= roofline.MAX_FREE_TOKENS:
    st.info(f"The pass stays memory-bound over the whole search range "
            f"(1..{roofline.MAX_FREE_TOKENS:,} tokens).")

st.plotly_chart(figures.roofline_figure(page), key="roofline")
st.caption(f"Two counts, both shown: the **{roofline.TUTORIAL_LABEL}**, and the "
           f"**{roofline.FULL_LABEL}** (all three SwiGLU matrices, grouped-query K and V, the "
           "LM head), with and without reading the KV cache. Bytes are the weights (and the "
           "KV cache), read once per pass; MACs grow with tokens x batch.")
st.plotly_chart(figures.pass_time_figure(page), key="pass_time")

st.subheader("Accelerators")
st.dataframe(pd.DataFrame(page.accelerators), hide_index=True, column_config={
    "ridge": st.column_config.NumberColumn("ridge (MACs/byte)", format="%.1f"),
    "free_tokens": st.column_config.NumberColumn("free tokens (this model)"),
    "source": st.column_config.TextColumn("source (peak dense FP16/BF16, HBM bandwidth)"),
})
ui.download_csv(page.accelerators, "accelerators")
st.caption("Sources: " + "; ".join(f"{a['accelerator']}: {a['source']}"
                                   for a in page.accelerators) + ".")
with st.expander("MACs and bytes by tokens in the pass (table)"):
    st.dataframe(pd.DataFrame(page.rows), hide_index=True)
    ui.download_csv(page.rows, f"roofline_{preset}_{dtype}")
ui.finish(app, replace(s, preset=preset, dtype=dtype, ctxlen=int(ctxlen), batch=int(batch),
                       accel=accel), PAGE_KEYS)
