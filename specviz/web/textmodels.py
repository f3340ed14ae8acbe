"""/text's controls: the corpus, the n-gram models and the prompt, drawn and cached.

The default corpus is read once per server process (web.server.once); the counts and
decoders live in web.guard's bounded stores: the default corpus's are shared by every
session, those of a reader's own text stay in that session.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ..core.scenario import Scenario
from ..views import textpage
from . import guard, server, ui

SOURCES = {"stdlib": "Python docstrings (default)", "paste": "paste text", "upload": "upload"}


@dataclass(frozen=True)
class Models:
    """The models in use and what the page says about them."""

    corpus: textpage.Corpus
    counts: object  # NGramCounts
    dec: textpage.TextDecoder
    level: str
    target: int
    draft: int
    T_p: float

    def scenario(self, app: ui.AppState, ids: tuple[int, ...], drafter: str) -> Scenario:
        """The decoder's pair with the drafter, from the prompt's ids, at the sidebar's k,
        rule, seed and tree."""
        s = app.settings
        return Scenario.on(self.dec.pair(drafter), ids, k=s.k, rule=s.rule, seed=s.seed,
                           tree=app.tree)

    @property
    def caption(self) -> str:
        """What the models were counted from (escaped: the corpus may be the reader's)."""
        return guard.plain(textpage.model_caption(self.corpus, self.counts, self.target,
                                                  self.draft, self.T_p, self.dec.T_q))


DEFAULT_CORPUS = "default corpus"  # its name in the process's store (web.server.once)


def _default_corpus() -> textpage.Corpus:
    """The standard library's docstrings, read once per server process."""
    if server.made(DEFAULT_CORPUS):
        return server.once(DEFAULT_CORPUS, textpage.default_corpus)
    with st.spinner("Reading the standard library's docstrings…"):
        return server.once(DEFAULT_CORPUS, textpage.default_corpus)


def _orders(col_level, col_target, col_draft) -> tuple[str, int, int]:
    ss = st.session_state
    level = ui.bind("level", col_level.radio, "Tokens",
                    format_func=textpage.LEVEL_LABELS.get, horizontal=True)
    if ss.get("_text_level", level) != level:  # new tokens: start from that level's orders
        for key, value in zip(("order", "dorder"), textpage.DEFAULT_ORDERS[level],
                              strict=True):
            ui.assign(key, value)
    ss["_text_level"] = level
    lo, hi = textpage.TARGET_ORDERS[level]
    ui.clamp("order", lo, hi)  # a URL may ask a word model for order 8
    target = ui.bind("order", col_target.slider, "target order n", min_value=lo, max_value=hi)
    d_max = textpage.draft_order_max(target)
    ui.clamp("dorder", 1, d_max)  # the draft stays the smaller model
    if d_max > 1:
        draft = ui.bind("dorder", col_draft.slider, "draft order", max_value=d_max)
    else:
        draft = ui.hold("dorder", 1)
    return level, int(target), int(draft)


def _user_corpus(source: str) -> textpage.Corpus | None:
    """The pasted or uploaded text as a corpus, or None (with the reason shown)."""
    raw, name = None, None
    if source == "paste":
        pasted = st.text_area("Your text (plain text, up to 5 MB)", key="text_paste",
                              height=140)
        raw, name = (pasted, "pasted text") if pasted.strip() else (None, None)
    elif source == "upload":
        up = st.file_uploader("A UTF-8 text file, up to 5 MB", key="text_upload")
        raw, name = (up.getvalue(), up.name) if up is not None else (None, None)
    if raw is None:
        return None
    try:
        return textpage.user_corpus(raw, name)
    except textpage.CorpusError as exc:
        what = "Text" if source == "paste" else "File"
        st.error(guard.plain(f"{what} not used: {exc} The default corpus stays in use."))
        return None


def models(*, T_q: float) -> Models:
    """The corpus and the two orders (one row of controls), then the models they make."""
    top = st.columns([1.6, 1, 1, 1, 1], vertical_alignment="bottom")
    source = top[0].radio("Corpus", tuple(SOURCES), format_func=SOURCES.get,
                          horizontal=True, key="text_source", persist_state="session")
    level, target, draft = _orders(top[1], top[2], top[3])
    T_p = float(ui.bind("Tp", top[4].number_input, "target temperature",
                        help="The draft's temperature is the sidebar's T."))
    corpus = _user_corpus(source) or _default_corpus()
    try:  # models of a user's text live in this session, bounded (web/guard.py)
        counts = guard.text_counts(corpus, level, textpage.counts_max_order(target))
    except textpage.CorpusError as exc:
        st.error(guard.plain(f"Text not used: {exc} The default corpus stays in use."))
        corpus = _default_corpus()
        counts = guard.text_counts(corpus, level, textpage.counts_max_order(target))
    dec = guard.text_decoder(counts, target, draft, T_p, float(T_q))
    return Models(corpus, counts, dec, level, target, draft, T_p)


def prompt(m: Models) -> tuple[tuple[int, ...], str | None]:
    """The prompt box; returns its token ids and a note on unknown tokens (or None)."""
    text = ui.bind("prompt", st.text_area, "Prompt", height=80)
    ids, n_unk = textpage.encode_prompt(m.dec, text)
    note = (f"{n_unk} prompt token(s) are not in the corpus's vocabulary; both models read "
            "them as <unk>.") if n_unk else None
    return ids, note


def drafter() -> str:
    return ui.bind("drafter", st.radio, "Drafter in the animation", horizontal=True,
                   format_func=textpage.DRAFTER_LABELS.get)

