"""/text: speculative decoding on n-gram language models trained on real text.

Every round is played from the seed, so the URL's seed, k, rule, rnd, step and the page's
own controls (level, orders, target temperature, drafter, prompt) replay the same draws;
the corpus itself cannot travel in a URL.
"""

import streamlit as st

from specviz.figures import textfigs
from specviz.views import pagedata, textpage
from specviz.web import notation, stage, textmodels, ui

app = ui.page("text", path="text", story=("k", "T"))
s = app.settings
st.title("Real text: speculative decoding on n-gram models")
INTRO = (
    "Here the two models are n-gram language models counted from real text: the target "
    "reads the last n − 1 tokens, the draft fewer. Both come from one set of counts, so they "
    "share the tokeniser. Each next-token row is computed when a position needs it, with "
    "interpolated Kneser-Ney smoothing (Chen & Goodman 1999), and the acceptance rule runs "
    "on those rows exactly as on the tables of the other pages (Leviathan, Kalman & Matias "
    "2022, Algorithm 1). The default text is the docstrings of this Python's standard library."
)
if s.notation != "leviathan":
    st.caption("The round's frames below keep Leviathan's letters (p = target, q = draft): "
               "their tokens can themselves be the letters p and q.")
with ui.folded("About this page, the models, the prompt and the drafter"):
    notation.md(INTRO)
    m = textmodels.models(T_q=s.T)
    st.caption(m.caption)
    ids, unk_note = textmodels.prompt(m)
    if unk_note:
        st.caption(unk_note)
    drafter = textmodels.drafter()
if not ids:
    st.info("Type a prompt: the rounds start from its last tokens.")
    ui.finish(app)
    st.stop()

sc = m.scenario(app, ids, drafter)
step, rnd = stage.play(stage.text_stage(sc, c=s.c, warp=app.warp),
                       start_step=s.step, start_rnd=s.rnd, speed=s.speed)

st.subheader("Which draft order?")
st.caption(notation.text(textpage.order_caption(m.target, s.k)))
ui.chart(lambda: textfigs.order_figure(pagedata.reprice(ui.cached(textpage.page_order_sweep)(
    m.counts, m.counts.fingerprint, m.target, ids, s.k, s.seed, m.T_p, float(s.T)), s.c, s.k),
    m.target), key="text_orders", fold="Tokens per call and speedup by draft order (chart)")

st.subheader("Prompt lookup against the n-gram draft")
st.caption(notation.text(textpage.LOOKUP_CAPTION))
if box := ui.folded_open("The drafters side by side (chart and table)"):
    with box:
        drafters = pagedata.reprice(ui.cached(textpage.page_drafters)(sc), s.c, s.k)
        ui.chart(textfigs.drafter_figure(drafters), key="text_drafters")
        ui.table(textpage.drafter_rows(drafters), textpage.DRAFTER_COLUMNS)

if box := ui.folded_open("Check exactness at this prompt"):
    with box:
        st.caption(notation.text(textpage.EXACT_CAPTION))
        rules = textpage.checked_rules(s.rule)
        n_exact, note = textpage.exact_n(m.dec, s.k, rules, app.tree)
        if note:
            st.info(note)
        if st.button("Run the check", key="text_exact"):
            checked = ui.cached(textpage.page_exactness)(sc, rules=rules, n=n_exact)
            if stopped := textpage.exact_stopped(checked, n_exact):
                st.warning(stopped)
            ui.table(checked, textpage.EXACT_COLUMNS)

ui.finish(app, step=step, rnd=rnd, speed=stage.speed("text"))
