"""/llm: speculative decoding on a real language model, Gemma 3 270M, stepped token by token.

The model is loaded once per server and shared; the rounds are played once into a stream
kept by the server, from the seed, so the URL's prompt, draft, temperature, k, seed, rule,
rnd and step reopen the same round and the same frame.
"""

import streamlit as st

from specviz.views import llmpage
from specviz.web import llmstage, notation, stage, ui

app = ui.page("real model", path="llm", story=("k",))
s = app.settings
st.title("A real model: Gemma 3 270M")
INTRO = (
    "Here both models are one real transformer: Gemma 3 270M, run in NumPy on this server, "
    "is the target, and a cheaper copy of itself drafts: its first layers only, every layer "
    "but a few, a head over the most frequent tokens only, an n-gram model over its tokens "
    "or prompt lookup (self-speculative decoding: Zhang et al. 2023; Elhoushi et al. 2024; "
    "Zhao et al. 2025). Both read the same tokens, so the round is the one of the other "
    "pages: the draft guesses k tokens, the target scores all of them in one pass, each "
    "guess stays while its coin u < min(1, p/q), and the first miss is redrawn from "
    "norm(max(0, p − q)) (Leviathan, Kalman & Matias 2022, Algorithm 1). The bars show the "
    "most likely of its 262,144 tokens, and the rest of the vocabulary as one bar; ␣ is a "
    "space, ⏎ a line break."
)
present = ui.presenter_active()
about = ui.folded("About this page, the prompt, the draft and the temperature")  # presenter:
if present:  # one expander, so that the stage starts on the first screen
    with about:
        notation.md(INTRO)
model = llmstage.model()  # (its progress bar on the page, not in a closed section)
ids = spec = None
if model is not None:
    with about:
        if present:
            st.caption(llmpage.model_caption(model))
        ids, spec, T = llmstage.controls(model)


def foot() -> None:
    """Outside presenter mode the page's text and the model's facts come after the stage,
    folded, so that the stage's charts start on the first screen (1440x900) too."""
    if not present:
        with st.expander("About this page: Gemma 3 270M drafted and verified token by token"):
            notation.md(INTRO)
            if model is not None:
                st.caption(llmpage.model_caption(model))


if ids is None or spec is None:
    foot()
    ui.finish(app)
    st.stop()

k, rule = llmstage.k_and_rule(s, spec)
step, rnd = stage.play(llmstage.llm_stage(model, spec, ids, k=k, T=T, seed=s.seed, rule=rule,
                                          warp=app.warp),
                       start_step=s.step, start_rnd=s.rnd, speed=s.speed,
                       restart_on=(spec.label, tuple(ids)))  # a new draft: round 0
foot()
ui.finish(app, step=step, rnd=rnd, speed=stage.speed("llm"))
