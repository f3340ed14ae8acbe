"""The stage of the animated pages (/round, /text): the transport bar, the step's caption
and counter, the chips and the round's three charts, and what follows the step below.

The stage is one st.fragment: a step (a button, a key, the slider or an autoplay tick)
reruns only the stage, never the page's sidebar, models or comparisons. Keys: ← and →
step, N starts a new round, space plays and pauses. The page's URL is rewritten from
inside the stage, so it follows every step, autoplay included.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import streamlit as st

from ..core.scenario import Scenario
from ..figures import animation, roundlist, textfigs, treeview
from ..views import stepping, textpage, transcript
from ..views.transcript import RND_MAX, RoundTranscript
from . import files, guard, narrow, notation, stagekeys, ui
from . import settings as S

Transcript = Callable[[int], RoundTranscript]  # round index -> the transcript up to it
Below = Callable[[RoundTranscript, int], None]  # draws what follows the charts


@dataclass(frozen=True)
class Stage:
    """One animated page's stage: its session keys and what it draws."""

    name: str  # prefix of the stage's widget keys: round | text
    transcript: Transcript
    top: int | None = None  # bars over the top tokens only (a text vocabulary)
    below: Below | None = None
    cap: Callable[[int], tuple[int, str | None]] | None = None  # rnd held, and why

    def key(self, what: str) -> str:
        return f"{self.name}_{what}"


def _state(stage: Stage) -> tuple[int, int]:
    ss = st.session_state
    return ss[stage.key("step")], ss[stage.key("rnd")]


def _goto(stage: Stage, step: int, rnd: int) -> None:
    ss = st.session_state
    ss[stage.key("step")], ss[stage.key("rnd")] = step, rnd
    ss[stage.key("scrub")] = step


def _scrubbed(stage: Stage, drawn: int) -> None:
    """The slider moved. A value equal to the one it was drawn with is the browser sending
    back what it was shown while the server had moved on: no move."""
    ss = st.session_state
    if ss[stage.key("scrub")] != drawn:
        ss[stage.key("step")] = ss[stage.key("scrub")]


def _ticked(stage: Stage, step: int, rnd: int) -> None:
    """An autoplay tick from the browser, keyed by the frame it was showing: one frame on
    from that frame. A tick about a frame that is no longer the current one (a key or a
    button moved it meanwhile, or the tick came twice) is dropped, so a tick can never skip
    a frame or go back one. At the very end, autoplay stops."""
    ss = st.session_state
    if not ss.get(stage.key("autoplay")) or _state(stage) != (step, rnd):
        return
    nxt = stepping.advance(stage.transcript(rnd).current, step, rnd)
    if nxt == (step, rnd):
        ss[stage.key("autoplay")] = False
    else:
        _goto(stage, *nxt)


def _ticker(stage: Stage, step: int, rnd: int) -> None:
    """The autoplay clock's two parts on the server: a hidden button the browser presses
    for a tick (stagekeys.autoplay_js presses it only while the app is idle, so a tick never
    interrupts the run drawing the frame before), and a marker that tells the browser the
    frame shown, whether autoplay is on and its speed."""
    ss = st.session_state
    st.button("tick", key=stage.key("tick"), on_click=_ticked, args=(stage, step, rnd))
    st.html(stagekeys.autoplay_marker_html(stage.name, shown=f"{rnd}:{step}",
                                         on=bool(ss.get(stage.key("autoplay"))),
                                         speed=float(ss[stage.key("speed")])))


def _transport(stage: Stage, tr: RoundTranscript, step: int, rnd: int) -> int:
    """prev, next, new round, autoplay, speed and the step slider; Streamlit shows each
    button's key (← → N) on the button, the toggle's label names space."""
    trace = tr.current
    nxt = stepping.advance(trace, step, rnd)
    prv = stepping.retreat(step, rnd, tr.previous)
    bar = st.container(key=stage.key("transport")).columns([1, 1, 1.3, 1.3, 1.4, 3],
                                                         vertical_alignment="bottom")
    bar[0].button("◀ prev", key=stage.key("prev"), shortcut="Left", on_click=_goto,
                  args=(stage, *prv), disabled=prv == (step, rnd),
                  help="One step back (←)", width="stretch")
    bar[1].button("next ▶", key=stage.key("next"), shortcut="Right", on_click=_goto,
                  args=(stage, *nxt), disabled=nxt == (step, rnd),
                  help="One step on (→)", width="stretch")
    bar[2].button("new round", key=stage.key("new"), shortcut="N", on_click=_goto,
                  args=(stage, 0, stepping.round_after(rnd)),
                  help="The next round: it starts where this one ended (N)", width="stretch")
    bar[3].toggle("autoplay ␣", key=stage.key("autoplay"), help="Play and pause (space)")
    bar[4].select_slider("speed", key=stage.key("speed"),
                         **S.widget_bounds("speed", "select_slider"),
                         format_func=lambda x: f"{x:g} s per step",
                         label_visibility="collapsed")
    st.session_state[stage.key("scrub")] = step
    return bar[5].slider("step", 0, stepping.last_step(trace), key=stage.key("scrub"),
                         on_change=_scrubbed, args=(stage, step), format="step %d",
                         label_visibility="collapsed")


def _charts(stage: Stage, trace, step: int) -> None:
    figs = {"bars": animation.bars_figure(trace, step, top=stage.top),
            "coin": animation.coin_figure(trace, step),
            "residual": animation.residual_figure(trace, step, top=stage.top)}
    cols = st.container(key=stage.key("charts")).columns([1.25, 0.9, 1.25])
    for col, (name, fig) in zip(cols, figs.items(), strict=True):
        with col:
            ui.chart(fig, key=stage.key(name), swap_letters=stage.top is None)


def _body(stage: Stage) -> None:
    ss = st.session_state
    step, rnd = _state(stage)
    if stage.cap is not None:
        rnd, rnd_note = stage.cap(rnd)
        if rnd_note:
            ss[stage.key("rnd")] = rnd
            st.info(rnd_note)
    tr = stage.transcript(rnd)
    step, note = stepping.clamp_step(tr.current, step)
    if note:
        st.warning(note)
    ss[stage.key("step")] = step
    with st.container(key=stage.key("stage"), gap="small"):
        step = _transport(stage, tr, step, rnd)
        ss[stage.key("step")] = step
        _ticker(stage, step, rnd)
        trace = tr.current
        st.html(notation.text_if(animation.step_html(trace, step, rnd), stage.top is None))
        st.html(notation.text_if(animation.chips_html(trace, step) + animation.legend_html(),
                                 stage.top is None))  # the chips' p, q: the reader's letters
        if trace.tree:  # a token tree: the drafted tree, the siblings tried, the kept path
            st.html(notation.text_if(treeview.tree_html(trace, step), stage.top is None))
        _charts(stage, trace, step)
    ui.set_params(step=step, rnd=rnd, speed=ss[stage.key("speed")])
    if stage.below is not None:
        stage.below(tr, step)


def play(stage: Stage, *, start_step: int, start_rnd: int, speed: float,
         restart_on: Hashable = None) -> tuple[int, int]:
    """Draw the stage (a fragment); returns the (step, rnd) on screen. restart_on: what
    the rounds are of (/llm: the draft and the prompt); when it changes in a session, the
    stage starts again at round 0, step 0."""
    ss = st.session_state
    if stage.key("step") not in ss:  # the first visit in this session: the URL decides
        ss[stage.key("step")], ss[stage.key("rnd")] = start_step, start_rnd
        ss[stage.key("speed")] = speed
    elif ss.get(stage.key("of"), restart_on) != restart_on:
        _goto(stage, 0, 0)
    ss[stage.key("of")] = restart_on
    # A run that stopped before the stage (your own prompt, still empty) dropped the speed
    # slider: drawn again, it showed its first choice (0.5 s) and sent that back on the next
    # step. Set on every run, the browser is told the value to show.
    ss[stage.key("speed")] = ss.get(stage.key("speed"), speed)
    rnd = ss[stage.key("rnd")] if stage.cap is None else stage.cap(ss[stage.key("rnd")])[0]
    rule_note = animation.rule_note(stage.transcript(rnd).current)  # the round _body shows
    if rule_note:
        st.warning(notation.text(rule_note))
    css = narrow.stage_css(stage.name, present=ui.presenter_active(),
                           slanted=stage.top is not None)  # (top tokens: names slanted)
    st.html(f"<style>{css}</style>")  # once, outside the fragment
    st.fragment(_body)(stage)
    st.html(f"<script>{stagekeys.autoplay_js()}</script>", unsafe_allow_javascript=True)
    ui.play_pause_shortcut(stage.key("autoplay"),
                           step_keys={"ArrowRight": stage.key("next"),
                                      "ArrowLeft": stage.key("prev")})
    return _state(stage)


def text_so_far(caption: str, metrics: list[tuple[str, str]]) -> None:
    """Under a text stage (/text, /llm): the caption on the context, the running totals
    and the heading of the text drawn below them."""
    st.caption(guard.plain(caption))
    st.markdown("**The text so far** (grey: the prompt; colours: how each token was made)")
    for col, (label, value) in zip(st.columns(len(metrics)), metrics, strict=True):
        col.metric(label, value)


def speed(name: str) -> float:
    """The stage's autoplay speed (seconds per step), for the page's URL."""
    return float(st.session_state.get(f"{name}_speed", S.DEFAULTS.speed))


# ----------------------------------------------------------------------------- /round
def _round_below(tr: RoundTranscript, step: int) -> None:
    st.subheader("Transcript so far")
    st.caption(notation.text("Rounds chain: each starts from the last token of the one before. "
                             "Totals count every round from round 0; the list shows the latest "
                             "few."))
    totals = stepping.totals_at(tr, step)
    for col, (label, value) in zip(st.columns(4), transcript.totals_metrics(totals),
                                   strict=True):
        col.metric(notation.text(label), value)
    st.html(notation.text(roundlist.transcript_html(roundlist.listed_rounds(tr, step), tr.first)))
    done = stepping.view(tr.current, step).done
    a, b, c = st.columns(3)
    with a:
        files.download_csv(transcript.transcript_rows(tr, done), "round_transcript",
                           columns=transcript.TRANSCRIPT_COLUMNS)
    with b:
        files.download_round_html(tr.current, tr.rnd, step)
    ui.copy_link(c)


def round_stage(app: ui.AppState) -> Stage:
    """/round's stage: the tables in use, from the context token, every token drawn."""
    s = app.settings

    def played(rnd: int) -> RoundTranscript:
        return ui.cached(transcript.round_transcript)(app.scenario, rnd=rnd)
    def cap(rnd: int) -> tuple[int, str | None]:
        return transcript.round_cap(s.k, rnd, s.rule, app.tree)
    return Stage("round", played, None, _round_below, cap)


# ----------------------------------------------------------------------------- /text
def text_stage(sc: Scenario, *, c: float, warp) -> Stage:
    """/text's stage: the scenario's n-gram pair under the sidebar's sampling warp, from
    the prompt, top tokens only."""
    dec, drafter, k = sc.pair.dec, sc.pair.drafter, sc.k
    warped = sc.replace(pair=textpage.warped(sc.pair, warp))

    def played(rnd: int) -> RoundTranscript:
        return ui.cached(transcript.round_transcript)(warped, rnd=rnd, traced=2)

    def below(tr: RoundTranscript, step: int) -> None:
        text_so_far(textpage.context_caption(dec, tr),
                    textpage.running_metrics(stepping.totals_at(tr, step), k, c, drafter))
        st.html(textfigs.tokens_html(dec.counts.tokenizer, tr, step))
    def cap(rnd: int) -> tuple[int, str | None]:
        return textpage.round_cap(dec, k, rnd, RND_MAX, sc.rule, sc.tree)
    return Stage("text", played, textpage.TOP_BARS, below, cap)
