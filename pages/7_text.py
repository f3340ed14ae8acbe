"""/text: speculative decoding on n-gram language models trained on real text.

The counts are trained once per corpus and level (st.cache_resource: the model object is
shared, never copied); every round is played from the seed, so the URL's seed, k, rule,
rnd and step replay the same draws. Level, orders, target temperature, prompt and corpus
are widgets kept in the session (not yet in the URL).
"""

from dataclasses import replace

import streamlit as st

from specviz.figures import animation, textfigs
from specviz.views import stepping, textpage, transcript
from specviz.web import guard, ui
from specviz.web import settings as S

SPEEDS = (0.5, 1.0, 2.0, 3.0)  # autoplay: seconds per step
TEXT_KEYS = ("level", "order", "dorder", "Tp", "drafter", "prompt")  # this page's URL params
SOURCES = {"stdlib": "Python docstrings (default)", "paste": "paste text", "upload": "upload"}



def _page_values() -> dict:
    """This page's controls as drawn in this run, for the URL."""
    return {key: ss.get(f"v_{key}", getattr(s, key)) for key in TEXT_KEYS}


app = ui.page("text")
s = app.settings
ss = st.session_state
if "text_step" not in ss:  # first visit in this session: the URL decides
    ss["text_step"], ss["text_rnd"] = s.step, s.rnd


@st.cache_resource(show_spinner="Reading the standard library's docstrings…")
def _default_corpus() -> textpage.Corpus:
    return textpage.default_corpus()


def _big(fig):
    """Presenter mode's larger type, without re-lettering: token names may be p or q."""
    return ui.present_figure(fig) if ui.presenter_active() else fig


st.title("Real text: speculative decoding on n-gram models")
ui.md(
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

# ----------------------------------------------------------------------------- the models
top = st.columns([1.6, 1, 1, 1, 1], vertical_alignment="bottom")
source = top[0].radio("Corpus", tuple(SOURCES), format_func=SOURCES.get, horizontal=True,
                      key="text_source")
level = ui.bind("level", top[1].radio, "Tokens", S.TEXT_LEVELS,
                format_func=textpage.LEVEL_LABELS.get, horizontal=True)
if ss.get("_text_level", level) != level:  # new tokens: start from that level's orders
    ss["w_order"], ss["w_dorder"] = textpage.DEFAULT_ORDERS[level]
ss["_text_level"] = level
lo, hi = textpage.TARGET_ORDERS[level]
ui.clamp("order", lo, hi)  # a URL may ask a word model for order 8
target = ui.bind("order", top[2].slider, "target order n", lo, hi)
d_max = textpage.draft_order_max(target)
ui.clamp("dorder", 1, d_max)  # the draft stays the smaller model
if d_max > 1:
    draft = ui.bind("dorder", top[3].slider, "draft order", 1, d_max)
else:
    draft = ss["v_dorder"] = 1
T_p = ui.bind("Tp", top[4].number_input, "target temperature", min_value=0.05,
              max_value=10.0, step=0.05, help="The draft's temperature is the sidebar's T.")

text_corpus = None
if source == "paste":
    pasted = st.text_area("Your text (plain text, up to 5 MB)", key="text_paste", height=140)
    if pasted.strip():
        try:
            text_corpus = textpage.user_corpus(pasted, "pasted text")
        except textpage.CorpusError as exc:
            st.error(guard.plain(f"Text not used: {exc} The default corpus stays in use."))
elif source == "upload":
    up = st.file_uploader("A UTF-8 text file, up to 5 MB", key="text_upload")
    if up is not None:
        try:
            text_corpus = textpage.user_corpus(up.getvalue(), up.name)
        except textpage.CorpusError as exc:
            st.error(guard.plain(f"File not used: {exc} The default corpus stays in use."))
if text_corpus is None:
    text_corpus = _default_corpus()

try:  # models of a user's text live in this session, bounded (web/guard.py)
    counts = guard.text_counts(text_corpus, level, textpage.counts_max_order(target))
except textpage.CorpusError as exc:
    st.error(guard.plain(f"Text not used: {exc} The default corpus stays in use."))
    text_corpus = _default_corpus()
    counts = guard.text_counts(text_corpus, level, textpage.counts_max_order(target))
dec = guard.text_decoder(counts, target, draft, float(T_p), float(s.T))
st.caption(guard.plain(textpage.model_caption(text_corpus, counts, target, draft, T_p, s.T)))

prompt = ui.bind("prompt", st.text_area, "Prompt", max_chars=S.PROMPT_MAX_CHARS, height=80)
ids, n_unk = textpage.encode_prompt(dec, prompt)
if not ids:
    st.info("Type a prompt: the rounds start from its last tokens.")
    ui.finish(app, replace(s, **_page_values()), TEXT_KEYS)
    st.stop()
if n_unk:
    st.caption(f"{n_unk} prompt token(s) are not in the corpus's vocabulary; both models read "
               "them as <unk>.")
rule = s.rule
drafter = ui.bind("drafter", st.radio, "Drafter in the animation", S.TEXT_DRAFTERS,
                  horizontal=True, format_func=textpage.DRAFTER_LABELS.get)

# ----------------------------------------------------------------------------- one round
st.subheader("One round at a time")
rnd, rnd_note = textpage.round_cap(dec, s.k, ss["text_rnd"], S.RND_MAX)
if rnd_note:
    ss["text_rnd"] = rnd
    st.info(rnd_note)
pair = textpage.warped(dec.pair(drafter), app.warp)  # the sidebar's sampling warp
tr = ui.cached(transcript.round_transcript)(pair, pair.fingerprint, ids, s.k, rnd=rnd,
                                           seed=s.seed, rule=rule, traced=2)
trace = tr.current
step, note = stepping.clamp_step(trace, ss.get("text_scrub", ss["text_step"]))
if note:
    st.warning(note)
ss["text_scrub"] = step
rule_note = animation.rule_note(trace)
if rule_note:
    st.warning(rule_note)


def _goto(new_step: int, new_rnd: int) -> None:
    ss["text_scrub"], ss["text_step"], ss["text_rnd"] = new_step, new_step, new_rnd


nxt = stepping.advance(trace, step, rnd)
prv = stepping.retreat(step, rnd, tr.previous)
bar = st.columns([1, 1, 1.3, 1.3, 2.4], vertical_alignment="bottom")
bar[0].button("◀ prev", key="text_prev", on_click=_goto, args=prv,
              disabled=prv == (step, rnd), width="stretch")
bar[1].button("next ▶", key="text_next", on_click=_goto, args=nxt,
              disabled=nxt == (step, rnd), width="stretch")
bar[2].button("new round", key="text_new_round", on_click=_goto,
              args=(0, stepping.round_after(rnd)), width="stretch",
              help="The next round: it starts where this one ended")
autoplay = bar[3].toggle("autoplay", key="text_autoplay")
speed = bar[4].select_slider("speed", SPEEDS, value=1.0, key="text_speed",
                             format_func=lambda x: f"{x:g} s per step")
step = st.slider("step", 0, stepping.last_step(trace), key="text_scrub")
ss["text_step"] = step

v = stepping.view(trace, step)
st.markdown(animation.frame_caption(trace, step, rnd))
st.caption(guard.plain(textpage.context_caption(dec, tr)))
st.info(guard.plain(v.caption))
st.html(animation.chips_html(trace, step))
st.html(animation.legend_html())
left, right = st.columns(2)
left.plotly_chart(_big(textfigs.text_bars_figure(trace, step)), key="text_bars")
right.plotly_chart(_big(animation.coin_figure(trace, step)), key="text_coin")
right.plotly_chart(_big(textfigs.text_residual_figure(trace, step)), key="text_residual")

st.markdown("**The text so far** (grey: the prompt; colours: how each token was made)")
totals = textpage.totals_at(tr, step)
for col, (label, value) in zip(st.columns(5), textpage.running_metrics(totals, s.k, s.c, drafter),
                               strict=True):
    col.metric(label, value)
st.html(textfigs.text_html(dec, tr, step))

# ----------------------------------------------------------------------------- comparisons
st.subheader("Which draft order?")
st.caption(ui.text(f"Each bar is one decode of {textpage.PAGE_TOKENS} tokens from the prompt with "
           f"the same {target}-gram target, seed and k = {s.k}; only the draft's order changes. "
           "Acceptance = kept / drafted; beta = sum min(p, q), the chance that one draft is kept "
           "(Leviathan et al. 2022, Sec. 3.1). Speedup = tokens per call / (1 + k c) at the "
           "sidebar's c."))
orders = ui.cached(textpage.page_order_sweep)(counts, counts.fingerprint, target, ids, s.k,
                                              s.seed, float(T_p), float(s.T))
ui.chart(textfigs.order_figure(textpage.reprice(orders, s.k, s.c), target), key="text_orders")

st.subheader("Prompt lookup against the n-gram draft")
st.caption(ui.text("Prompt lookup (Saxena 2023) drafts by copying: it finds the last earlier place "
           "where the newest few tokens occurred and proposes what came next, with q = 1 on "
           "that token. It costs nothing to run (c = 0) but drafts only when the text repeats "
           f"itself. Both decodes: {textpage.PAGE_TOKENS} tokens from the same prompt and "
           "seed."))
drafters = textpage.reprice(ui.cached(textpage.page_drafters)(dec, dec.key, ids, s.k, s.seed,
                                                              rule), s.k, s.c)
ui.chart(textfigs.drafter_figure(drafters), key="text_drafters")
st.dataframe(textpage.drafter_rows(drafters), hide_index=True)

with st.expander("Check exactness at this prompt"):
    st.caption(ui.text(f"{textpage.EXACT_N:,} decodes from the prompt; the first two tokens each "
               "emits are binned (the target's top tokens and pairs, the rest lumped) and "
               "compared with the target's own law, computed row by row. A rule passes when "
               "its distance stays under the pass line of a perfect sampler."))
    rules = tuple(dict.fromkeys(("correct", "no_resample", "greedy", rule)))
    n_exact = textpage.exact_n(dec, s.k, len(rules))
    if note := textpage.exact_note(dec, s.k, n_exact):
        st.info(note)
    if st.button("Run the check", key="text_exact"):
        st.dataframe(ui.cached(textpage.page_exactness)(dec, dec.key, ids, s.k, s.seed, rules,
                                                        drafter, n_exact), hide_index=True)


ui.autoplay("text_autoplay", lambda: (ss["text_step"], ss["text_rnd"]), _goto, nxt,
            speed if autoplay else None)
ui.finish(app, replace(s, step=step, rnd=rnd, **_page_values()), ("step", "rnd") + TEXT_KEYS)
