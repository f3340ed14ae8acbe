"""Tables and charts as a page shows them: st.dataframe with human headers and one format
per column (HTML at presenter type in presenter mode), a table folded until opened, and
st.plotly_chart in the reader's letters, at presenter type when presenting, with its title
as text for a narrow screen."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from ..figures.chartkit import TEMPLATE
from ..views import columns as table_columns
from . import bigtype, narrow, present
from .notation import reader_notation, swap_figure, text
from .urlstate import presenter_active

FOLD_PREFIX = "fold_"  # session keys of the expanders that draw their body only when open
OPEN_PARAM = "open"  # the URL parameter: the open folded sections, comma-separated
FOLDS_RUN, URL_OPEN = "_folds_run", "_url_open"  # session keys: this run's folds (name ->
# open), the sections the URL opened


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
    df, texts = _missing_shown(df, {key: columns[key][1] for key in shown})
    for key in texts:  # written out, right-aligned as numbers are
        config[key] = st.column_config.TextColumn(text(columns[key][0]), alignment="right",
                                                  width=(columns[key][2:] or (None,))[0])
    box.dataframe(df, hide_index=True, column_config=config, column_order=shown, **kwargs)


MISSING = "—"  # a number that is not there (a draft with no pass of its own has no c)


def _cell(value, fmt: str | None) -> str:
    """One table cell as the grid would show it: its printf format, a tick or a cross for a
    checkbox, MISSING where a number is not there, blank where a text is not."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "" if fmt is None or fmt == table_columns.CHECK else MISSING
    if fmt == table_columns.CHECK:
        return "✓" if value else "✗"
    return fmt % value if fmt else str(value)


def _missing_shown(df: pd.DataFrame, formats: dict[str, str | None]
                   ) -> tuple[pd.DataFrame, list[str]]:
    """The grid writes a missing value as the word None. Here a text column's is blank,
    and a column of numbers with one missing is written out cell by cell (_cell: its
    format, MISSING); returns the table and those columns."""
    out, texts = df, []
    for key, fmt in formats.items():
        if fmt == table_columns.CHECK or not df[key].isna().any():
            continue
        if out is df:
            out = df.copy()
        out[key] = [_cell(v, fmt) for v in df[key]]
        if fmt is not None:
            texts.append(key)
    return out, texts


def folded_open(label: str, *, opened: bool = False):
    """A closed expander whose body is drawn only once the reader opens it (the page then
    reruns): the expander while open, else None. A table or chart kept in one costs a page
    nothing until then (Streamlit's table component is 0.3-0.4 s of the browser's time to
    load, each Plotly chart its own drawing). The open state is the session's, under
    FOLD_PREFIX, and the URL's: OPEN_PARAM lists the open sections, so a link reopens them;
    opened: the link opens it anyway (it chose a view that lives inside)."""
    name = fold_name(label)
    key = FOLD_PREFIX + name
    box = st.expander(text(label), key=key, on_change="rerun",
                      expanded=opened or name in _url_open())
    st.session_state.setdefault(FOLDS_RUN, {})[name] = box.open
    return box if box.open else None


def fold_name(label: str) -> str:
    """A folded section's name in the URL and the session: its label, lower case, runs of
    other characters as one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _url_open() -> frozenset[str]:
    """The sections the URL opened, as the session first read it (as web.urlstate)."""
    if URL_OPEN not in st.session_state:
        raw = st.query_params.get(OPEN_PARAM, "")
        st.session_state[URL_OPEN] = frozenset(x for x in raw.split(",") if x)
    return st.session_state[URL_OPEN]


def fold_query() -> dict[str, str]:
    """The URL parameter of the folded sections open on this run ({} when none is)."""
    shown = sorted(n for n, is_open in st.session_state.get(FOLDS_RUN, {}).items() if is_open)
    return {OPEN_PARAM: ",".join(shown)} if shown else {}


def new_run() -> None:
    """Forget the folded sections of the last run (a page's run starts)."""
    st.session_state[FOLDS_RUN] = {}


def _column(label: str, fmt: str | None, width: int | None = None):
    if fmt == table_columns.CHECK:
        return st.column_config.CheckboxColumn(text(label), width=width)
    if fmt:
        return st.column_config.NumberColumn(text(label), format=fmt, width=width)
    return st.column_config.TextColumn(text(label), width=width)


def chart(fig, key: str | None = None, *, swap_letters: bool = True, fold: str | None = None,
          caption: str | None = None, min_width: int | None = None, **kwargs) -> None:
    """st.plotly_chart in the reader's letters (and, in presenter mode, larger type), with
    its title also as text that a narrow screen shows in its place (web.narrow), and its
    caption under it (in the reader's letters). With fold, a label: the chart and its caption
    wait in a closed expander (folded_open), drawn only once it is opened; fig may then be a
    function of no arguments, so that a closed section does not even build its figure.
    min_width (px, with key): the chart is never drawn narrower; on a narrower screen it
    scrolls sideways (web.narrow.min_width_css)."""
    box = st if fold is None else folded_open(fold)
    if box is None:
        return
    if callable(fig):
        fig = fig()
    fig.update_layout(template=TEMPLATE)  # Streamlit's theme styles it; saves ~6 kB a chart
    if swap_letters:  # (after: a copy with Plotly's default template took 4x as long)
        fig = swap_figure(fig, reader_notation())
    if presenter_active():
        fig = bigtype.big_figure(fig)
    if title := narrow.figure_title(fig):
        box.html(narrow.title_html(title))
    if min_width and key:
        box.html(f"<style>{narrow.min_width_css(key, min_width)}</style>")
    box.plotly_chart(fig, key=key, config=narrow.CHART_CONFIG, **kwargs)
    if caption:
        box.caption(text(caption))

