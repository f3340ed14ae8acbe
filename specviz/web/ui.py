"""Page setup, the shared sidebar, presenter mode's bar, caching and the URL's rewrite.

The widgets bound to the URL are web.binding's, tables and charts web.show's, the share
box web.share's; their names are importable from here too, as the pages use them. Every
control is bound to a query parameter: on a session's first run the URL seeds the
widgets (invalid values fall back to defaults with a visible note), and after every run
the URL is rewritten from the widgets, so a copied link reopens the same state.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, wraps

import numpy as np
import streamlit as st

from ..core.kinds.treeshape import Paths, parse_paths
from ..core.pair import TablePair
from ..core.scenario import Scenario, ignored
from ..core.tables import mix_draft, temper
from ..core.warp import Warp, warp_tables
from ..views import site
from . import binding, guard, narrow, present, server, share, show, stagekeys, tableedit
from . import settings as S
from .binding import assign, bind, clamp, hold, keep, set_params, tabs  # noqa: F401
from .notation import LETTERS, md, tables
from .share import copy_link, share_url  # noqa: F401
from .show import FOLD_PREFIX, chart, folded_open, table  # noqa: F401
from .urlstate import presenter_active, url_settings

CACHE_ENTRIES = 64


@dataclass(frozen=True)
class AppState:
    """What a page needs: the settings and the pair of tables in use."""

    settings: S.Settings
    P: np.ndarray  # (V, V) target, under the request's warp
    Q: np.ndarray  # (V, V) draft in use: the table or the mix, at temperature T (warped
    # too when the warp covers the draft)
    vocab: tuple[str, ...]
    warp: Warp = Warp()  # the request's sampling warp of the target
    P_raw: np.ndarray | None = None  # (V, V) the target before the warp
    Q_raw: np.ndarray | None = None  # (V, V) the draft in use before the warp
    tree: Paths = ()  # the token tree every tree rule drafts (() : each rule's preset)

    @property
    def ctx(self) -> int:
        """The context token's index."""
        return self.vocab.index(self.settings.ctx)

    @cached_property
    def scenario(self) -> Scenario:
        """The sidebar's scenario on the tables in use (validated once per run)."""
        s = self.settings
        return Scenario.of(self.P, self.Q, ctx=self.ctx, k=s.k, rule=s.rule, seed=s.seed,
                           tree=self.tree, vocab=self.vocab)

    @cached_property
    def standard(self) -> Scenario:
        """The scenario under the standard rule: what the acceptance, draft-length and cost
        pages study."""
        return self.scenario.replace(rule="correct", tree=())

    @cached_property
    def raw(self) -> Scenario:
        """The scenario on the tables before the request's warp (the warp rules warp them)."""
        if self.warp.identity:
            return self.scenario
        return self.scenario.replace(pair=TablePair(self.P_raw, self.Q_raw, self.vocab))


def cached(fn: Callable) -> Callable:
    """A cached wrapper of a pure specviz function: results shared across sessions, except
    those of a session's own text (kept in that session); heavy functions (views.work)
    compute in the bounded worker pool. A ValueError (settings the library refuses, such
    as an exact law over its caps) is said on the page, and the run stops there."""
    run = guard.gated(fn)
    unread = ignored(fn)
    shared = st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False,
                           hash_funcs={Scenario: lambda sc: sc.cache_key(unread)})(run)

    @wraps(fn)
    def call(*args, **kwargs):
        try:
            if guard.private(args, kwargs):
                return guard.session_memo(run, args, kwargs)
            return shared(*args, **kwargs)
        except ValueError as exc:
            st.error(guard.plain(f"Not computed with these settings: {exc}."))
            st.stop()
    return call




# ----------------------------------------------------------------------------- the page
def page(title: str, layout: str = "wide", *, path: str, story: Sequence[str] = ()) -> AppState:
    """Set a page up: config, the shared sidebar, the URL notes. path: the page's views.site
    path; the sidebar draws the shared controls it reads (settings.sidebar_keys) and keeps
    the others in the link. Page-specific controls are drawn by the page with bind(); call
    finish(state) at the end to rewrite the URL. story: the shared controls the page's story
    turns on (say "k", "c"); in presenter mode, which hides the sidebar, they sit in a bar
    at the page's top, with the pages."""
    server.install()
    binding.begin()
    guard.install_stop_check()
    show.new_run()
    guard.session_uploads(guard.uploads_in_use())
    url, notes = url_settings()
    st.set_page_config(page_title=f"specviz · {title}", layout=layout,
                       initial_sidebar_state="collapsed" if url.present else "auto")
    st.html(f"<style>{narrow.narrow_css()}{stagekeys.MAIN_FOCUS_CSS}</style>")  # no room
    if url.present:
        _presenter()
    state = tableedit.tables_state()
    _page_links(st.sidebar.container(key="sv_nav"))  # at the top of the sidebar
    reads = S.sidebar_keys(path)
    at = _presenter_bar([key for key in story if key in reads]) if url.present else {}
    st.sidebar.header("Settings")
    v, warp, paths = _shared_controls(st.sidebar, at, reads, state["vocab"])
    if path in S.TABLES:
        tableedit.table_editor()
    s = replace(url, **v, wT=warp.temperature, wtopk=warp.top_k, wtopp=warp.top_p,
                wminp=warp.min_p, wdraft=int(warp.draft))
    if not st.session_state.get("_notes_shown"):  # on the run that read the URL
        st.session_state["_notes_shown"] = True
        for note in notes + ([state["note"]] if state["note"] else []):
            st.warning(note)
    P = state["P"]
    Q = mix_draft(P, s.alpha) if s.draft == "mix" else state["Q"]
    if s.T != 1.0:
        Q = temper(Q, s.T)
    Pw, Qw = warp_tables(P, Q, warp)
    return AppState(s, Pw, Qw, state["vocab"], warp, P, Q, paths)


def _shared_controls(sb, at: dict, reads: tuple[str, ...],
                     vocab: tuple[str, ...]) -> tuple[dict, Warp, Paths]:
    """The sidebar's controls the page reads, drawn (k, c, T in the presenter bar when at
    holds them); every other shared field keeps its value (binding.last), so that the link
    carries it to the pages that read it. Returns the values, the warp and the tree."""
    v = {}

    def put(key: str, draw: Callable) -> None:
        v[key] = type(getattr(S.DEFAULTS, key))(draw() if key in reads else binding.last(key))

    (k_at, k_kw), (c_at, c_kw) = (at.get(key, (sb, {})) for key in ("k", "c"))
    T_at, T_kw = at.get("T", (sb, None))  # in the bar: a slider named on its thumb, as k, c
    put("k", lambda: bind("k", k_at.slider, "k: drafted tokens per round", **k_kw))
    put("c", lambda: bind("c", c_at.slider, "c: draft cost per token (x one target call)",
                          **c_kw))
    put("draft", lambda: bind("draft", sb.radio, "Draft model", horizontal=True,
                              format_func=lambda d: tables({"table": "table Q",
                                                            "mix": "mix of P and junk"}[d])))
    put("alpha", lambda: bind("alpha", sb.slider, "alpha: draft quality (1 copies the target)",
                              disabled=v["draft"] != "mix"))
    put("T", lambda: bind("T", T_at.slider if T_kw else sb.number_input,
                          "T: draft temperature", **(T_kw or {})))
    put("seed", lambda: bind("seed", sb.number_input, "seed"))
    put("rule", lambda: bind("rule", sb.selectbox, "rule"))
    put("ctx", lambda: bind("ctx", sb.selectbox, "context token", options=vocab))
    put("notation", lambda: bind("notation", sb.radio, "Letters",
                                 format_func=lambda n: LETTERS[n].label))
    warp = _warp_controls(sb, drawn="wT" in reads)
    v["tree"], paths = _tree_control(sb, drawn="tree" in reads)
    return v, warp, paths


STORY_KEYS = ("k", "c", "T")  # the shared controls a presenter bar can hold
STORY_FORMATS = {"k": "k = %d", "c": "c = %.2f", "T": "T = %.2f"}  # on the thumb: the label
# folds away


def _presenter_bar(story: Sequence[str]) -> dict[str, tuple]:
    """Presenter mode's way around: the pages, in a menu pinned beside the way out (it
    keeps presenter mode, which lives in the session), and a bar at the page's top with a
    column for each of the story's controls, at presenter type, named on their thumbs.
    Returns control key -> (the column to draw it in, the widget's extra arguments)."""
    _page_links(st.container(key=present.PAGES_KEY).popover("☰ pages", key="sv_present_pages"))
    shown = [key for key in story if key in STORY_KEYS]
    if not shown:
        return {}
    cols = st.container(key=present.BAR_KEY).columns([3] * len(shown) + [1])
    extra = {key: dict(format=STORY_FORMATS[key], label_visibility="collapsed")
             for key in shown}
    return {key: (col, extra[key]) for key, col in zip(shown, cols, strict=False)}


def _tree_control(sb, *, drawn: bool) -> tuple[str, Paths]:
    """The token tree of the tree rules, as text (drawn: in the sidebar; else its last
    value); (text, paths), ("", ()) when empty or malformed (then, where drawn, with a
    message saying what is wrong)."""
    if drawn:
        with sb.expander("Token tree (rules tree_*)"):
            text = bind("tree", st.text_input, "tree: paths or branching",
                        placeholder="[[0], [1], [0, 0], [0, 1], [1, 0]]  or  3-2-1",
                        help="A list of paths of sibling indices, as Medusa's choices: [0] is "
                             "the first candidate after the context, [0, 1] the second child "
                             "of it. Or a branching per depth: 3-2-1. Cut to depth k; empty: "
                             "each tree rule's own preset.")
    else:
        text = binding.last("tree")
    try:
        return text.strip(), parse_paths(text) if text.strip() else ()
    except ValueError as exc:
        if drawn:
            st.error(guard.plain(f"Token tree not used: {exc}. The tree rules draft their "
                                 "presets."))
        return "", ()


def _page_links(box) -> None:
    """The pages' links (views.site) in box, with our titles and icons; Streamlit's own
    list, named after the files in pages/, is off (.streamlit/config.toml)."""
    for p in site.PAGES:
        box.page_link(p.script, label=p.title, icon=p.icon)


def _warp_controls(sb, *, drawn: bool) -> Warp:
    """The request's sampling warp: temperature, top-k, top-p, min-p of the target, and
    whether the draft samples from its warped row too (drawn: in the sidebar; else their
    last values)."""
    def field(key: str, widget: Callable, label: str, **kwargs):
        return bind(key, widget, label, **kwargs) if drawn else binding.last(key)

    with sb.expander("Sampling warp (temperature, top-k, top-p, min-p)") if drawn \
            else contextlib.nullcontext():
        wT = field("wT", st.number_input, "temperature")
        topk = field("wtopk", st.number_input, "top-k (0 = off)")
        topp = field("wtopp", st.slider, "top-p")
        minp = field("wminp", st.slider, "min-p")
        wdraft = field("wdraft", st.toggle, "the draft samples from its warped row too",
                       cast=bool)
    return Warp(float(wT), int(topk), float(topp), float(minp), bool(wdraft))


def finish(app: AppState, **values) -> None:
    """Rewrite the URL from the shared controls, the fields the page bound (binding.drawn),
    edited tables and the open folded sections, with values (what the page holds itself:
    the stage's step, a blob) on top; then the sidebar's share box shows that URL."""
    own = binding.drawn() | values
    keys = S.SHARED_KEYS + tuple(k for k in S.KEYS if k in own)
    q, notes = S.fit_query({**S.to_query(replace(app.settings, **own), keys),
                            **tableedit.table_query(), **show.fold_query()})
    if q != st.query_params.to_dict():
        st.query_params.from_dict(q)
    share.share_box(q, notes)


def intro(t: str) -> None:
    """A page's opening explanation; in presenter mode it folds away under an expander,
    so that the stage starts on the first screen."""
    if presenter_active():
        with st.expander("About this page"):
            md(t)
    else:
        md(t)


def folded_fields(label: str) -> tuple:
    """A section of controls drawn only once opened (show.folded_open), and how to read its
    fields: field(key, widget, label, **kwargs) draws the widget with bind while the section
    is open, else keeps the field's value (binding.keep), so that the link still carries it.
    Returns (the open expander, or a null context when closed; field; whether it is open)."""
    box = folded_open(label)
    if box is None:
        return contextlib.nullcontext(), lambda key, *_, **__: binding.keep(key), False
    return box, bind, True


def folded(label: str):
    """A container that, in presenter mode, folds away under an expander (controls a
    speaker sets before the talk), so that the stage starts on the first screen."""
    return st.expander(label) if presenter_active() else st.container()


def _presenter() -> None:
    """Presenter mode: large black type, no sidebar, header or toolbar, a way out."""
    st.html(present.presenter_html() + f"<script>{present.EXIT_JS}</script>",
            unsafe_allow_javascript=True)


_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def play_pause_shortcut(toggle_key: str, *,
                        step_keys: dict[str, str] = stagekeys.STEP_KEYS) -> None:
    """Space plays and pauses: a key listener that flips the toggle keyed `toggle_key`
    (never while typing, nor when the focus is on a control where space has its own
    meaning); the arrow keys press the buttons keyed in step_keys, one press one step
    (stagekeys.step_queue_js)."""
    for key in (toggle_key, *step_keys.values()):
        if not _KEY_RE.fullmatch(key):
            raise ValueError(f"widget keys must be plain; got {key!r}")
    st.html(f"<script>{stagekeys.play_pause_js(toggle_key)}"
            f"{stagekeys.step_queue_js(step_keys)}</script>", unsafe_allow_javascript=True)
