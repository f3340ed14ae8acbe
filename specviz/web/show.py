"""Tables and charts as a page shows them: st.dataframe with human headers and one format
per column (HTML at presenter type in presenter mode), a table folded until opened, and
st.plotly_chart in the reader's letters, at presenter type when presenting, with its title
as text for a narrow screen."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from ..views import columns as table_columns
from . import bigtype, narrow, present
from .notation import reader_notation, swap_figure, text
from .urlstate import presenter_active

FOLD_PREFIX = "fold_"  # session keys of the expanders that draw their body only when open


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
    """A copy of the figure in presenter mode's type (bigtype.big_figure)."""
    return bigtype.big_figure(fig)
