"""specviz home page (the app's entry point): what speculative decoding is, where to start, and
the current settings. The other pages are the scripts in pages/ (views.site lists them)."""

import streamlit as st

from specviz.views import demos
from specviz.web import notation, ui

app = ui.page("speculative decoding", path="")
s = app.settings
st.title("specviz: speculative decoding, watched, checked and priced")
notation.md(
    "A big model writes one token per forward pass, and each pass is paid mostly in "
    "reading its weights from memory. Speculative decoding lets a small **draft** model "
    "guess **k** tokens, then asks the big **target** model about all of them in one pass. "
    "A coin per guess, weighted by min(1, p/q), decides which guesses stand; the first "
    "miss is replaced by a draw from the leftover mass norm(max(0, p − q)). The text that "
    "comes out has exactly the target's distribution "
    "(Leviathan, Kalman & Matias 2022, arXiv 2211.17192; Chen et al. 2023, arXiv 2302.01318)."
)
st.subheader("Start here")
notation.md(":material/explore: [**The guided tour**](tour): eight questions in the order "
            "the ideas build, each with a preset link and its answer.  \n"
            ":material/play_circle: [**One round, token by token**](round): the drafts, the "
            "one target call, each coin, the redraw or the bonus.  \n"
            ":material/smart_toy: [**A real model**](llm): the same round on Gemma 3 270M "
            "and a cheaper copy of itself, on your prompt.")

summary = ui.cached(demos.summary)(app.scenario, c=s.c)
st.subheader("Your settings, in numbers")
st.caption(notation.text(f"One round played from context '{s.ctx}' with seed {s.seed} (a single "
                         "random draw: change the seed and it changes):"))
st.metric(notation.text("this round emits"), summary["round_text"])
st.caption(notation.text(summary["values_caption"]))
cols = st.columns(3)
cols[0].metric(notation.text("acceptance (accepted / drafted)"),
               f"{summary['acceptance_rate']:.3f}")
cols[1].metric(notation.text("tokens per target call"), f"{summary['tokens_per_call']:.3f}")
cols[2].metric(notation.text(f"speedup at c = {s.c:g}"), f"{summary['speedup']:.3f}x")
st.caption(notation.text(summary["caption"] + " Acceptance is not alpha: alpha is the chance "
                         "that one draft is kept, while acceptance counts the drafts after a "
                         "rejection as drafted and never kept, so it is lower (Leviathan et al. "
                         "2022, Sec. 3.1)."))
ui.finish(app)
