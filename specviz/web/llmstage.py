"""/llm's model, controls and stage: Gemma 3 270M loaded once per server process, the
prompt, the draft and the temperature, and the round's stage (web.stage) over the model's
top tokens.

The model (web.server.once, so no clear-cache message reaches it) is loaded by the first
session that asks, with a progress bar; every later session gets the same one at once.
The rounds are played a round at a time into streams (views.llmstream) kept in one store
per process, bounded by every byte they hold (rows, KV caches, logits; a trimmed head
once however many streams share it) and shared by every session: stepping through a
played round only moves an index.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ..core import interrupt
from ..core.warp import Warp
from ..figures import textfigs
from ..llm import store
from ..llm.draftkind import DraftError, DraftSpec
from ..llm.drafts import KINDS, Kit, kind_of
from ..llm.gemma import ModelFileError
from ..views import llmpage, llmstream, stepping, textpage
from ..views.transcript import RoundTranscript, totals_metrics
from ..views.work import WORK_STOP_S, ByteLRU, Flights
from . import files, guard, server, textmodels, ui
from . import settings as S
from .stage import Stage, text_so_far

MODEL = "gemma 3 270m"  # names in the process's store (web.server.once)
STREAMS = "llm streams"
STREAM_BYTES = 320 * 2**20  # what the shared streams hold: rows, caches, trimmed heads
# A stream nobody has read for this long goes (the collector's tick, web.server.expire), so
# the server is back near its idle memory about a minute after the last visitor has left; a
# later visitor of that link plays its rounds again from the seed (a second or two a round).
STREAM_IDLE_S = 45.0
STREAM_FIXED_BYTES = 2 * 2**20  # a stream's Python objects, beside what it counts (nbytes)
_FLIGHTS = Flights()  # one session plays a stream's rounds; the others wait for them


# ----------------------------------------------------------------------------- the model
def model() -> store.Model | None:
    """The process's model (the first caller loads it, with a progress bar; the others
    wait for it), or None with the reason on the page."""
    if server.made(MODEL):
        return server.once(MODEL, store.load)
    bar = st.progress(0.0, text="Loading Gemma 3 270M: once per server, shared by everyone")

    def progress(frac: float, what: str) -> None:
        bar.progress(min(1.0, max(0.0, float(frac))), text=f"Loading Gemma 3 270M: {what}")
    try:
        return server.once(MODEL, lambda: store.load(progress=progress))
    except store.ModelUnavailable as exc:
        st.error(guard.plain(f"The real model is not available: {exc}."))
    except (ModelFileError, OSError) as exc:
        st.error(guard.plain(f"The model file cannot be read: {exc}. Delete it from "
                             f"{store.model_dir()} and it is assembled again "
                             f"({store.INSTALL})."))
    except MemoryError as exc:
        st.error(llmpage.memory_note(exc))
    finally:
        bar.empty()
    return None


def _corpus_ids(m: store.Model) -> np.ndarray:
    """The shipped corpus in Gemma token ids, once per process (trimmed and n-gram drafts)."""
    def make() -> np.ndarray:
        corpus = server.once(textmodels.DEFAULT_CORPUS, textpage.default_corpus)
        return llmpage.corpus_ids(m, corpus.text)
    if server.made("gemma corpus ids"):
        return server.once("gemma corpus ids", make)
    with st.spinner("Reading the shipped corpus in Gemma's tokens (once per server)…"):
        return server.once("gemma corpus ids", make)


KIT = Kit(_corpus_ids, llmpage.ngram_model, server.once)  # shared by /llm and /measured


# ----------------------------------------------------------------------------- controls
def controls(m: store.Model) -> tuple[list[int] | None, DraftSpec | None, float]:
    """The prompt, the draft and the temperature in one row (the prompt's text under it), so
    that the stage's charts start on a 1440x900 screen: (the prompt's token ids or None,
    the draft or None, T), each None with its reason shown."""
    row = st.columns([2.3, 1.9, 0.8, 1.3], vertical_alignment="bottom")
    ids = prompt(m, row[0])
    return (ids, *draft(m, row[1:]))


def prompt(m: store.Model, where) -> list[int] | None:
    """The preset (chosen in `where`) or the reader's prompt, shown under it; its token ids,
    or None with the reason shown."""
    preset = ui.bind("llm_preset", where.radio, "Prompt", horizontal=True,
                     format_func=lambda p: llmpage.PRESETS[p][0])
    own = ui.keep("llm_prompt")
    if preset == "own":
        own = ui.bind("llm_prompt", st.text_area, "Your prompt (the model continues it)",
                      height=110,
                      placeholder="Type a sentence, some code, a question…")
    else:
        st.html(textfigs.prompt_html(llmpage.PRESETS[preset][1]))
    try:
        return llmpage.encode_prompt(m, llmpage.prompt_text(preset, own))
    except llmpage.PromptError as exc:
        st.error(guard.plain(f"Prompt not used: {exc}."))
        return None


def draft(m: store.Model, cols) -> tuple[DraftSpec | None, float]:
    """The draft (kind and parameter) and the temperature, in three columns; (None, T)
    with the reason shown when the draft names none of the model's."""
    ss = st.session_state
    kind = ui.bind("llm_kind", cols[0].selectbox, "Draft",
                   format_func=lambda name: KINDS[name].title)
    if ss.get("_llm_kind", kind) != kind:  # a new kind: start from its own parameter
        ui.assign("llm_arg", KINDS[kind].default)
    ss["_llm_kind"] = kind
    arg = ui.bind("llm_arg", cols[1].text_input, "its parameter",
                  disabled=not KINDS[kind].default,
                  help="; ".join(k.help for k in KINDS.values() if k.default))
    T = ui.bind("llm_T", cols[2].number_input, "temperature T (0: greedy)",
                help="The temperature of both p and q; T = 0 decodes greedily.")
    try:
        spec = llmpage.parse(m, kind, arg)
    except DraftError as exc:
        st.error(guard.plain(f"Draft not used: {exc}."))
        return None, float(T)
    st.caption(kind_of(spec).caption(spec, m.cfg))
    if T == 0:
        st.caption(llmpage.GREEDY_RULE)
    return spec, float(T)


def k_and_rule(s: S.Settings, spec: DraftSpec) -> tuple[int, str]:
    """The sidebar's k and rule as this page plays them, with a note where it cannot."""
    rule = s.rule
    if note := llmpage.rule_note(rule, spec.kind):
        st.info(f"{note} {llmpage.PLAYS_CORRECT}")
        rule = "correct"
    k, note = llmpage.play_k(rule, s.k, heads=spec.heads)
    if note:
        st.info(note)
    return k, rule


# ----------------------------------------------------------------------------- the stage
def _ready(s: llmstream.Stream | None, rnd: int) -> bool:
    """Whether stream s shows round rnd (held at ROUNDS_MAX) without playing anything."""
    return s is not None and s.kept(min(rnd, llmstream.ROUNDS_MAX))


def _played(key: tuple, make, rnd: int) -> tuple[llmstream.Stream, int]:
    """The stream under key with round rnd played, or as far as this request's time
    allowed; a round it no longer keeps is played again from the seed. Single flight: one
    session plays a key's rounds, the others asking for it wait and read what it played
    (the store is looked at again after the wait and after taking the worker)."""
    streams = server.once(STREAMS, lambda: ByteLRU(STREAM_BYTES, STREAM_IDLE_S))
    reached = min(rnd, llmstream.ROUNDS_MAX)
    s = streams.get(key)
    if _ready(s, rnd):
        return s, reached
    with _FLIGHTS.hold(key, interrupt.check), \
            st.spinner("Playing rounds on Gemma 3 270M (about a second each)…"):
        s = streams.get(key)
        if not _ready(s, rnd):
            with guard.worker(), interrupt.budget(WORK_STOP_S):
                s = streams.get(key)
                if s is None or (rnd < s.played and not s.kept(rnd)):
                    s = make()
                if not s.kept(reached):
                    reached = s.extend(rnd)
        streams.put(key, s, s.nbytes + STREAM_FIXED_BYTES, s.shared)
    return s, reached


def llm_stage(m: store.Model, spec: DraftSpec, ids: list[int], *, k: int, T: float,
              seed: int, rule: str, warp: Warp) -> Stage:
    """/llm's stage: rounds of the real pair from the prompt, top tokens only."""
    key = llmpage.stream_key(spec, ids, k=k, T=T, seed=seed, rule=rule, warp=warp)

    def make() -> llmstream.Stream:
        return llmpage.stream(m, spec, ids, k=k, T=T, seed=seed, rule=rule, warp=warp,
                              kit=KIT)

    def cap(rnd: int) -> tuple[int, str | None]:
        _, reached = _played(key, make, rnd)
        return reached, llmstream.rounds_note(rnd, reached)

    def played(rnd: int) -> RoundTranscript:
        return _played(key, make, rnd)[0].transcript(rnd)

    def below(tr: RoundTranscript, step: int) -> None:
        text_so_far(llmpage.context_caption(m, tr),
                    totals_metrics(stepping.totals_at(tr, step)))
        st.html(textfigs.tokens_html(llmpage.Pieces(m.tokenizer), tr, step))
        a, b = st.columns(2)
        with a:
            files.download_round_html(llmpage.export_trace(tr.current, llmpage.TOP_BARS),
                                      tr.rnd, step, key="llm_export")
        ui.copy_link(b)
    return Stage("llm", played, llmpage.TOP_BARS, below, cap)
