"""/round: one round of speculative decoding, stepped through token by token.

The rounds are played once (cached) from the seed; stepping only moves an index into
trace.steps, so the same URL (seed, k, rule, rnd, step, ...) replays the same draws.
"""

from dataclasses import replace

import streamlit as st

from specviz.figures import animation, treeview
from specviz.views import stepping, transcript
from specviz.web import ui

SPEEDS = (0.5, 1.0, 2.0, 3.0)  # autoplay: seconds per step

app = ui.page("one round")
s = app.settings
ss = st.session_state
if "round_step" not in ss:  # first visit in this session: the URL decides
    ss["round_step"], ss["round_rnd"] = s.step, s.rnd

st.title("One round, token by token")
ui.md(
    "The draft model guesses k tokens one after another, each from its own q. The target "
    "model then scores every guess in **one** call, which gives p at each prefix. The guesses "
    "are checked in order, each with its own coin u ~ U[0, 1): a guess stays while "
    "u < min(1, p/q). At the first miss, one token is redrawn from the leftover mass "
    "norm(max(0, p − q)) and the guesses after it are thrown away, since they were built on "
    "the rejected token. If every guess stays, p at the last prefix gives one extra token at "
    "no extra call (Leviathan, Kalman & Matias 2022, Algorithm 1; Chen et al. 2023, "
    "Algorithm 2)."
)

rnd = ss["round_rnd"]
tr = ui.cached(transcript.round_transcript)(app.pair, app.pair.fingerprint, app.ctx, s.k,
                                           rnd=rnd, seed=s.seed, rule=s.rule)
trace = tr.current
step, note = stepping.clamp_step(trace, ss.get("scrub", ss["round_step"]))
if note:
    st.warning(ui.text(note))
ss["scrub"] = step
rule_note = animation.rule_note(trace)
if rule_note:
    st.warning(ui.text(rule_note))


def _goto(new_step: int, new_rnd: int) -> None:
    ss["scrub"], ss["round_step"], ss["round_rnd"] = new_step, new_step, new_rnd


nxt = stepping.advance(trace, step, rnd)
prv = stepping.retreat(step, rnd, tr.previous)
bar = st.columns([1, 1, 1.3, 1.3, 2.4], vertical_alignment="bottom")
bar[0].button("◀ prev", key="prev", shortcut="Left", on_click=_goto, args=prv,
              disabled=prv == (step, rnd), help="One step back (←)", width="stretch")
bar[1].button("next ▶", key="next", shortcut="Right", on_click=_goto, args=nxt,
              disabled=nxt == (step, rnd), help="One step on (→)", width="stretch")
bar[2].button("new round", key="new_round", shortcut="N", on_click=_goto,
              args=(0, stepping.round_after(rnd)),
              help="The next round of this seed's text (N)", width="stretch")
autoplay = bar[3].toggle("autoplay", key="autoplay", help="Play and pause (space)")
speed = bar[4].select_slider("speed", SPEEDS, value=1.0, key="speed",
                             format_func=lambda x: f"{x:g} s per step")
step = st.slider("step", 0, stepping.last_step(trace), key="scrub")
ss["round_step"] = step
ui.play_pause_shortcut("autoplay")

v = stepping.view(trace, step)
ui.md(animation.frame_caption(trace, step, rnd))
st.info(ui.text(v.caption))
st.html(ui.text(animation.chips_html(trace, step)))  # text only: no p/q tags
st.html(ui.text(animation.legend_html()))
if trace.tree:  # a token tree: the drafted tree, the siblings tried, the kept path
    st.html(ui.text(treeview.tree_html(trace, step)))
left, right = st.columns(2)
with left:
    ui.chart(animation.bars_figure(trace, step), key="bars")
with right:
    ui.chart(animation.coin_figure(trace, step), key="coin")
    ui.chart(animation.residual_figure(trace, step), key="residual")

st.subheader("Transcript so far")
st.caption(ui.text("Rounds chain: each starts from the last token of the one before. Totals "
                   "count every round from round 0; the list shows the latest few."))
totals = animation.totals_at(tr, step)
for col, (label, value) in zip(st.columns(4), animation.totals_metrics(totals), strict=True):
    col.metric(ui.text(label), value)
st.html(ui.text(animation.transcript_html(animation.listed_rounds(tr, step), tr.first)))
ui.download_csv(transcript.transcript_rows(tr, v.done), "round_transcript")
ui.download_round_html(trace, rnd)
ui.copy_link()


ui.autoplay("autoplay", lambda: (ss["round_step"], ss["round_rnd"]), _goto, nxt,
            speed if autoplay else None)
ui.finish(app, replace(s, step=step, rnd=rnd), ("step", "rnd"))
