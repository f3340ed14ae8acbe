"""/measured: Gemma 3 270M and its drafts, timed on this machine; lossless greedy; exact rows."""

import streamlit as st

from specviz.figures import measured as figs
from specviz.figures import textfigs
from specviz.views import measured as mv
from specviz.views import realrows as rr
from specviz.web import files, guard, llmstage, measuredhere, notation, ui

app = ui.page("measured here", path="measured")
st.title("The real model, measured here")
ui.intro("Gemma 3 270M runs in NumPy on this server's CPU, with drafts made from itself "
         "(early exit, skipped layers, a trimmed head), prompt lookup and an n-gram model. "
         "Each run times the target's pass over one position and over the k + 1 positions "
         "it verifies, and the draft's pass, so the cost ratio c is measured, not chosen. A "
         "round costs k c + t(k+1)/t(1) one-position passes and yields the tokens it keeps "
         "plus one (Leviathan et al. 2022, Thm 3.8): on a CPU the verification is not free, "
         "as it nearly is on a GPU (see /roofline).")
left, right = st.columns([3, 2])
with left:
    preset = ui.bind("m_preset", st.selectbox, "prompt", format_func=lambda p: mv.PRESETS[p][0])
    if preset == "own":
        text = ui.bind("m_prompt", st.text_area, f"your prompt (at most {mv.PROMPT_CHARS_MAX:,}"
                       " characters)", height=90)
    else:
        text = mv.PRESETS[preset][1]
        ui.keep("m_prompt")  # the reader's own prompt stays in the link
        st.html(textfigs.prompt_html(text))
with right:
    c = st.columns(2)
    draft = ui.bind("m_draft", c[0].selectbox, "draft",
                    format_func=lambda d: "every draft" if d == "all" else d)
    k = ui.bind("m_k", c[1].slider, "k: drafted tokens per round")
    T = ui.bind("m_T", c[0].number_input, "T (sampled decoding; 0: greedy only)")
    seed = ui.bind("m_seed", c[1].number_input, "seed")
    new = ui.bind("m_new", c[0].number_input, "tokens per decode")
drafts = mv.DRAFTS if draft == "all" else (draft,)
key = ("measure", text, drafts, int(k), float(T), int(seed), int(new))
result = measuredhere.kept(key)
button = st.empty()  # the Measure button, then (once measured) a greyed note in its place
go = result is None and button.button(mv.button_label(len(drafts), int(new), float(T)),
                                      type="primary", key="m_go")
st.caption(f"Runs are heavy (seconds per token on a loaded CPU): they start on the button, "
           f"stop drafts after {mv.MEASURE_STOP_S:g} s, and are kept for every visitor of "
           "this server, and for /plan.")
if result is None and go and (model := llmstage.model()) is not None:
    with st.spinner("Decoding with and without speculation…"):
        result = measuredhere.compute(key, mv.measure, model, text, drafts, k=int(k),
                                      T=float(T), seed=int(seed), max_new=int(new),
                                      kit=llmstage.KIT)
if result is not None:
    measuredhere.measured_note(button)
    model = llmstage.model()
    st.subheader("Passes, c and tokens per second")
    if result.stopped:
        st.warning(guard.plain(result.stopped))
    rows = mv.summary_rows(result)
    ui.table(rows, mv.SUMMARY_COLUMNS, height=36 * (len(rows) + 1) + 2)
    st.caption(guard.plain(mv.alone_text(result)))
    files.download_csv(rows, "measured_here")
    ui.chart(figs.round_cost_figure(rows), key="m_cost")
    shown = st.selectbox("details of", [d.label for d in result.drafts],
                         key="m_shown") if len(result.drafts) > 1 else result.drafts[0].label
    d = next(x for x in result.drafts if x.label == shown)
    for mode in d.modes:
        f = mv.figures(d, mode)
        (st.success if mv.blame(f) == "pays here" else st.warning)(guard.plain(mv.why(f)))
    st.subheader(f"Acceptance by position: {d.label}")
    cols = st.columns(len(d.modes))
    for col, mode in zip(cols, d.modes, strict=True):
        col.caption(f"{mode}: rounds that kept draft i, with 95% Wilson intervals")
        with col:
            ui.table(mv.acceptance_rows(d.summary(mode)), mv.ACCEPT_COLUMNS)
    st.subheader("Lossless, and where floats disagree")
    notation.md(guard.plain(mv.agreement_text(model, d, result.k)))
    ui.table(mv.agreement_rows(model, d), mv.AGREE_COLUMNS, fold="the tokens, one by one")
elif not go:
    st.info("Press Measure to load the model (once per server, about a minute) and decode.")
st.subheader("Exact on real rows")
notation.md("At one real context, the chance the draft is kept is sum_x min(p, q) and a "
            "rejection draws from norm(max(0, p − q)). Below, one real round's positions, "
            "then the first emitted token sampled many times under the correct rule and "
            "under a broken one (a rejection redraws from p), against the target's row.")
rdraft = mv.rows_draft(draft)
rkey = ("rows", text, rdraft, int(k), float(T), int(seed))
real = measuredhere.kept(rkey)
if real is None and st.button(f"Check {rdraft} on real rows", key="m_rows") \
        and (model := llmstage.model()) is not None:
    with st.spinner("One real round, then the Monte Carlo check…"):
        real = measuredhere.compute(rkey, rr.real_rows, model, text, rdraft, k=int(k),
                                    T=float(T), seed=int(seed), kit=llmstage.KIT)
if real is not None:
    measuredhere.draw_real_rows(real)
ui.finish(app)
