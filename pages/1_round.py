"""/round: one round of speculative decoding, stepped through token by token.

The rounds are played once (cached) from the seed; stepping only moves an index into
trace.steps, so the same URL (seed, k, rule, rnd, step, ...) replays the same draws.
"""

import streamlit as st

from specviz.web import stage, ui

app = ui.page("one round", path="round")
s = app.settings
st.title("One round, token by token")
ui.intro(
    "The draft model guesses k tokens one after another, each from its own q. The target "
    "model then scores every guess in **one** call, which gives p at each prefix. The guesses "
    "are checked in order, each with its own coin u ~ U[0, 1): a guess stays while "
    "u < min(1, p/q). At the first miss, one token is redrawn from the leftover mass "
    "norm(max(0, p − q)) and the guesses after it are thrown away, since they were built on "
    "the rejected token. If every guess stays, p at the last prefix gives one extra token at "
    "no extra call (Leviathan, Kalman & Matias 2022, Algorithm 1; Chen et al. 2023, "
    "Algorithm 2)."
)
step, rnd = stage.play(stage.round_stage(app), start_step=s.step, start_rnd=s.rnd,
                       speed=s.speed)
ui.finish(app, step=step, rnd=rnd, speed=stage.speed("round"))
