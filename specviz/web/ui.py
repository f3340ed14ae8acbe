"""Page setup, the shared sidebar, URL state, caching, tables and charts.

Every control is bound to a query parameter: on a session's first run the URL seeds the
widgets (invalid values fall back to defaults with a visible note), and after every run
the URL is rewritten from the widgets, so a copied link reopens the same state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import wraps
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

from ..core.pair import TablePair
from ..core.tables import mix_draft, temper
from ..core.tree import PATHS_TEXT_MAX, Paths, parse_paths
from ..core.warp import Warp, warp_tables
from ..views import columns as table_columns
from ..views import site
from . import guard, narrow, present, server, tableedit
from . import settings as S
from .notation import LETTERS, md, reader_notation, swap_figure, tables, text
from .urlstate import url_settings

SHARED_KEYS = ("k", "c", "draft", "alpha", "T", "seed", "rule", "ctx", "notation", "present",
               "wT", "wtopk", "wtopp", "wminp", "wdraft", "tree")
CACHE_ENTRIES = 64
FOLD_PREFIX = "fold_"  # session keys of the expanders that draw their body only when open


@dataclass(frozen=True)
class AppState:
    """What a page needs: the settings and the pair of tables in use."""

    settings: S.Settings
    P: np.ndarray  # (V, V) target, under the request's warp
    Q: np.ndarray  # (V, V) draft in use: the table or the mix, at temperature T (warped
    # too when the warp covers the draft)
    Q_table: np.ndarray  # (V, V) the draft table as edited
    vocab: tuple[str, ...]
    warp: Warp = Warp()  # the request's sampling warp of the target
    P_raw: np.ndarray | None = None  # (V, V) the target before the warp
    Q_raw: np.ndarray | None = None  # (V, V) the draft in use before the warp
    tree: Paths = ()  # the token tree every tree rule drafts (() : each rule's preset)

    @property
    def ctx(self) -> int:
        """The context token's index."""
        return self.vocab.index(self.settings.ctx)

    @property
    def pair(self) -> TablePair:
        """The tables in use as a model pair (made once per run)."""
        if self._pair is None:
            object.__setattr__(self, "_pair", TablePair(self.P, self.Q, self.vocab))
        return self._pair

    _pair: TablePair | None = None


def cached(fn: Callable) -> Callable:
    """A cached wrapper of a pure specviz function: results shared across sessions, except
    those of a session's own text (kept in that session); heavy functions (views.work)
    compute in the bounded worker pool. A ValueError (settings the library refuses, such
    as an exact law over its caps) is said on the page, and the run stops there."""
    run = guard.gated(fn)
    shared = st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)(run)

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


# ----------------------------------------------------------------------------- URL state
INDEXED = ("radio", "selectbox")  # widgets whose start is an index into their options


def bind(key: str, widget: Callable, *args, cast: Callable | None = None, **kwargs):
    """Draw a widget bound to URL parameter `key`; returns its value. The URL gives its
    starting value (cast turns it into the widget's type: bool for a toggle bound to a 0/1
    parameter); Streamlit's persist_state="session" keeps the reader's value for the
    session, across page switches."""
    wkey = f"w_{key}"
    assigned = st.session_state.get("_assigned", set())
    if wkey in assigned:  # its value was set by assign() for this run: no default on top
        assigned.discard(wkey)
    else:
        url, _ = url_settings()
        start = cast(getattr(url, key)) if cast else getattr(url, key)
        if getattr(widget, "__name__", "") in INDEXED:
            options = list(args[1] if len(args) > 1 else kwargs["options"])
            kwargs["index"] = options.index(start) if start in options else 0
        else:
            kwargs["value"] = start
    value = widget(*args, key=wkey, persist_state="session", **kwargs)
    st.session_state[f"v_{key}"] = value
    return value


def tabs(key: str, labels: dict[str, str]) -> tuple[str, list]:
    """Tabs bound to URL parameter `key` (labels: value -> tab label); only the open tab
    runs. Returns the open tab's value and the tab containers."""
    url, _ = url_settings()
    wkey = f"w_{key}"
    start = labels.get(st.session_state.get(f"v_{key}", getattr(url, key)))
    containers = st.tabs([text(v) for v in labels.values()], key=wkey, on_change="rerun",
                         default=text(start))
    shown = {text(v): k for k, v in labels.items()}
    value = shown.get(st.session_state.get(wkey), getattr(url, key))
    st.session_state[f"v_{key}"] = value
    return value, containers


def clamp(key: str, lo, hi) -> None:
    """Hold widget `key`'s value inside [lo, hi] before it is drawn (its range just moved)."""
    url, _ = url_settings()
    wkey = f"w_{key}"
    now = st.session_state.get(wkey, getattr(url, key))
    held = min(max(now, lo), hi)
    if wkey not in st.session_state or held != now:
        assign(key, held)


def assign(key: str, value) -> None:
    """Set the widget bound to `key` to value (before it is drawn, or in a callback)."""
    st.session_state[f"w_{key}"] = value
    st.session_state.setdefault("_assigned", set()).add(f"w_{key}")


# ----------------------------------------------------------------------------- the page
def page(title: str, keys: Sequence[str] = (), layout: str = "wide", *,
         story: Sequence[str] = ()) -> AppState:
    """Set a page up: config, the shared sidebar, the URL notes. Page-specific controls are
    drawn by the page with bind(); call finish(state, keys) at the end to rewrite the URL.
    story: the shared controls the page's story turns on (say "k", "c"); in presenter
    mode, which hides the sidebar, they sit in a bar at the page's top, with the pages."""
    server.install()
    guard.install_stop_check()
    guard.session_uploads(guard.uploads_in_use())
    url, notes = url_settings()
    st.set_page_config(page_title=f"specviz · {title}", layout=layout,
                       initial_sidebar_state="collapsed" if url.present else "auto")
    st.html(f"<style>{narrow.narrow_css()}</style>")  # style only: takes no room
    if url.present:
        _presenter()
    state = tableedit.tables_state()
    _navigation()
    sb = st.sidebar
    at = _presenter_bar(story) if url.present else {}
    sb.header("Settings")
    (k_at, k_kw), (c_at, c_kw) = (at.get(key, (sb, {})) for key in ("k", "c"))
    k = bind("k", k_at.slider, "k: drafted tokens per round", 1, S.K_APP_MAX, **k_kw)
    c = bind("c", c_at.slider, "c: draft cost per token (x one target call)", 0.0, 2.0,
             step=0.01, **c_kw)
    draft = bind("draft", sb.radio, "Draft model", S.DRAFTS, horizontal=True,
                 format_func=lambda d: tables({"table": "table Q", "mix": "mix of P and junk"}[d]))
    alpha = bind("alpha", sb.slider, "alpha: draft quality (1 copies the target)", 0.0, 1.0,
                 step=0.01, disabled=draft != "mix")
    T = bind("T", sb.number_input, "T: draft temperature", min_value=0.05, max_value=10.0,
             step=0.05)
    seed = bind("seed", sb.number_input, "seed", min_value=0, max_value=S.SEED_MAX, step=1)
    rule = bind("rule", sb.selectbox, "rule", tuple(S.RULES))
    ctx = bind("ctx", sb.selectbox, "context token", state["vocab"])
    notation = bind("notation", sb.radio, "Letters", S.NOTATIONS,
                    format_func=lambda n: LETTERS[n].label)
    warp = _warp_controls(sb)
    tree_text, paths = _tree_control(sb)
    tableedit.table_editor()
    s = replace(url, k=int(k), c=float(c), draft=draft, alpha=float(alpha), T=float(T),
                seed=int(seed), rule=rule, ctx=ctx, notation=notation, wT=warp.temperature,
                wtopk=warp.top_k, wtopp=warp.top_p, wminp=warp.min_p, wdraft=int(warp.draft),
                tree=tree_text)
    if not st.session_state.get("_notes_shown"):  # on the run that read the URL
        st.session_state["_notes_shown"] = True
        for note in notes + ([state["note"]] if state["note"] else []):
            st.warning(note)
    P, Q_table = state["P"], state["Q"]
    Q = mix_draft(P, s.alpha) if s.draft == "mix" else Q_table
    if s.T != 1.0:
        Q = temper(Q, s.T)
    Pw, Qw = warp_tables(P, Q, warp)
    return AppState(s, Pw, Qw, Q_table, state["vocab"], warp, P, Q, paths)


STORY_KEYS = ("k", "c")  # the shared controls a presenter bar can hold
STORY_FORMATS = {"k": "k = %d", "c": "c = %.2f"}  # on the thumb: the label folds away


def _presenter_bar(story: Sequence[str]) -> dict[str, tuple]:
    """Presenter mode's way around: the pages, in a menu pinned beside the way out (it
    keeps presenter mode, which lives in the session), and a bar at the page's top with a
    column for each of the story's controls, at presenter type, named on their thumbs.
    Returns control key -> (the column to draw it in, the widget's extra arguments)."""
    with st.container(key=present.PAGES_KEY).popover("☰ pages", key="sv_present_pages"):
        for p in site.PAGES:
            st.page_link(p.script, label=p.title, icon=p.icon)
    shown = [key for key in story if key in STORY_KEYS]
    if not shown:
        return {}
    cols = st.container(key=present.BAR_KEY).columns([3] * len(shown) + [1])
    extra = {key: dict(format=STORY_FORMATS[key], label_visibility="collapsed")
             for key in shown}
    return {key: (col, extra[key]) for key, col in zip(shown, cols, strict=False)}


def _tree_control(sb) -> tuple[str, Paths]:
    """The token tree of the tree rules, as text; (text, paths), ("", ()) when empty or
    malformed (then with a message saying what is wrong)."""
    with sb.expander("Token tree (rules tree_*)"):
        text = bind("tree", st.text_input, "tree: paths or branching", max_chars=PATHS_TEXT_MAX,
                    placeholder="[[0], [1], [0, 0], [0, 1], [1, 0]]  or  3-2-1",
                    help="A list of paths of sibling indices, as Medusa's choices: [0] is the "
                         "first candidate after the context, [0, 1] the second child of it. "
                         "Or a branching per depth: 3-2-1. Cut to depth k; empty: each tree "
                         "rule's own preset.")
        try:
            return text.strip(), parse_paths(text) if text.strip() else ()
        except ValueError as exc:
            st.error(guard.plain(f"Token tree not used: {exc}. The tree rules draft their "
                                 "presets."))
            return "", ()


def _navigation() -> None:
    """The pages' links (views.site) at the top of the sidebar, with our titles and icons;
    Streamlit's own list, named after the files in pages/, is off (.streamlit/config.toml)."""
    nav = st.sidebar.container(key="sv_nav")
    for p in site.PAGES:
        nav.page_link(p.script, label=p.title, icon=p.icon)


def _warp_controls(sb) -> Warp:
    """The request's sampling warp: temperature, top-k, top-p, min-p of the target, and
    whether the draft samples from its warped row too."""
    with sb.expander("Sampling warp (temperature, top-k, top-p, min-p)"):
        wT = bind("wT", st.number_input, "temperature", min_value=0.05, max_value=5.0,
                  step=0.05)
        topk = bind("wtopk", st.number_input, "top-k (0 = off)", min_value=0, max_value=4096,
                    step=1)
        topp = bind("wtopp", st.slider, "top-p", 0.01, 1.0, step=0.01)
        minp = bind("wminp", st.slider, "min-p", 0.0, 1.0, step=0.01)
        wdraft = bind("wdraft", st.toggle, "the draft samples from its warped row too",
                      cast=bool)
    return Warp(float(wT), int(topk), float(topp), float(minp), bool(wdraft))


def finish(app: AppState, settings: S.Settings, keys: Sequence[str] = ()) -> None:
    """Rewrite the URL from the shared controls, the page's own keys and edited tables; then
    the sidebar's share box shows that URL."""
    q, notes = S.fit_query({**S.to_query(settings, SHARED_KEYS + tuple(keys)),
                            **tableedit.table_query()})
    if q != st.query_params.to_dict():
        st.query_params.from_dict(q)
    _share_box(q, notes)


def table(rows, columns: dict[str, tuple[str, str | None]], *, fold: str | None = None,
          **kwargs) -> None:
    """st.dataframe of the named columns only, in their order, with human headers and one
    number format per column (columns: key -> (header, printf format, views.columns.CHECK
    for a checkbox, or None for text[, width in px])); other columns stay in the data,
    unshown. With fold, a label: the table waits in a closed expander (ui.fold)."""
    box = st if fold is None else folded_open(fold)
    if box is None:
        return
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    shown = [key for key in columns if key in df.columns]
    if presenter_active():  # the grid draws on a canvas at its own small type: HTML grows
        box.html(present.table_html(
            [text(columns[key][0]) for key in shown],
            [[_cell(v, columns[key][1]) for key, v in zip(shown, row, strict=True)]
             for row in df[shown].itertuples(index=False)],
            [columns[key][1] is None for key in shown]))
        return
    config = {key: _column(*columns[key]) for key in shown}
    box.dataframe(df, hide_index=True, column_config=config, column_order=shown, **kwargs)


def _cell(value, fmt: str | None) -> str:
    """One table cell as the grid would show it: its printf format, a tick or a cross for a
    checkbox, blank where there is no value."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if fmt == table_columns.CHECK:
        return "✓" if value else "✗"
    return fmt % value if fmt else str(value)


def folded_open(label: str):
    """A closed expander whose body is drawn only once the reader opens it (the page then
    reruns): the expander while open, else None. A table kept in one costs a page nothing
    until then; Streamlit's table component is 0.3-0.4 s of the browser's time to load
    (benchmarks/bench_chartlib.py). The open state is the session's, under FOLD_PREFIX."""
    key = FOLD_PREFIX + re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    box = st.expander(text(label), key=key, on_change="rerun")
    return box if box.open else None


def _column(label: str, fmt: str | None, width: int | None = None):
    if fmt == table_columns.CHECK:
        return st.column_config.CheckboxColumn(text(label), width=width)
    if fmt:
        return st.column_config.NumberColumn(text(label), format=fmt, width=width)
    return st.column_config.TextColumn(text(label), width=width)


def intro(t: str) -> None:
    """A page's opening explanation; in presenter mode it folds away under an expander,
    so that the stage starts on the first screen."""
    if presenter_active():
        with st.expander("About this page"):
            md(t)
    else:
        md(t)


def set_params(**values) -> None:
    """Rewrite these query parameters only (dropped at their defaults): for a fragment,
    which reruns without the rest of the page."""
    q = S.to_query(replace(S.DEFAULTS, **values), tuple(values))
    for key in values:
        if key in q:
            if st.query_params.get(key) != q[key]:
                st.query_params[key] = q[key]
        elif key in st.query_params:
            del st.query_params[key]


def chart(fig, key: str | None = None, *, swap_letters: bool = True, **kwargs) -> None:
    """st.plotly_chart in the reader's letters (and, in presenter mode, larger type), with
    its title also as text that a narrow screen shows in its place (web.narrow)."""
    if swap_letters:
        fig = swap_figure(fig, reader_notation())
    fig.update_layout(template="none")  # Streamlit's theme styles it; saves ~6 kB a chart
    if presenter_active():
        fig = present_figure(fig)
    if title := narrow.figure_title(fig):
        st.html(narrow.title_html(title))
    st.plotly_chart(fig, key=key, config=narrow.CHART_CONFIG, **kwargs)


def present_figure(fig):
    """A copy of the figure in presenter mode's type (present.big_figure)."""
    return present.big_figure(fig)


def folded(label: str):
    """A container that, in presenter mode, folds away under an expander (controls a
    speaker sets before the talk), so that the stage starts on the first screen."""
    return st.expander(label) if presenter_active() else st.container()


# ----------------------------------------------------------------------------- presenting
def presenter_active() -> bool:
    """Whether this session was opened with present=1 in the URL."""
    return bool(url_settings()[0].present)


def _presenter() -> None:
    """Presenter mode: large black type, no sidebar, header or toolbar, a way out."""
    st.html(present.presenter_html() + f"<script>{present.EXIT_JS}</script>",
            unsafe_allow_javascript=True)


_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def play_pause_shortcut(toggle_key: str = "autoplay",
                        hints: Sequence[tuple[str, str]] | None = present.KEY_HINTS, *,
                        step_keys: dict[str, str] = present.STEP_KEYS) -> None:
    """Space plays and pauses: a key listener that flips the toggle keyed `toggle_key`
    (never while typing, nor when the focus is on a control where space has its own
    meaning), with a line of key hints (hints=None draws none); the arrow keys press the
    buttons keyed in step_keys, one press one step (present.step_queue_js)."""
    for key in (toggle_key, *step_keys.values()):
        if not _KEY_RE.fullmatch(key):
            raise ValueError(f"widget keys must be plain; got {key!r}")
    body = present.key_hints_html(tuple(hints)) if hints else ""
    st.html(body + f"<script>{present.play_pause_js(toggle_key)}"
            f"{present.step_queue_js(step_keys)}</script>", unsafe_allow_javascript=True)


# ----------------------------------------------------------------------------- sharing
def share_url(q: dict[str, str]) -> str:
    """The address of this page at query q (just '?query' where the browser's URL is not
    known, as under AppTest)."""
    base = st.context.url or ""
    return base + (f"?{urlencode(q)}" if q else "")


def copy_link(container=None) -> None:
    """A "copy link to this state" button (in `container`, default the main column): it
    copies the browser's address at the moment of the click, which holds every setting."""
    (container or st).html(present.copy_link_html(), unsafe_allow_javascript=True)


def _share_box(q: dict[str, str], notes: Sequence[str] = ()) -> None:
    """Sidebar: a button that copies the live address, and the address itself as text (its
    text is one click to select where scripts or the clipboard are blocked)."""
    sb = st.sidebar
    sb.markdown("**Share this state**")
    for note in notes:
        sb.caption(note)
    copy_link(sb)
    sb.html(present.share_url_html(share_url(q) or "(this page, all defaults)")
            + f"<script>{present.share_sync_js()}</script>", unsafe_allow_javascript=True)
