"""Two notations for the same method: Leviathan et al. 2022 call the target p and the draft q;
Chen et al. 2023 swap the letters (their p is the draft, q the target).

The app writes every formula in Leviathan's letters and, when a reader picks Chen's,
swaps the standalone letters p and q in what it shows: "min(1, p/q)" becomes
"min(1, q/p)", which is Chen et al.'s own form of the same test. text(), tables() and md()
re-letter in the reader's choice for this session (the "Letters" control).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from .urlstate import url_settings

_LETTER = re.compile(r"(?<![A-Za-z0-9_])([pq])(?![A-Za-z])")  # p or q standing alone
_TABLE = re.compile(r"(?<![A-Za-z0-9_])([PQ])(?![A-Za-z])")  # the tables P and Q
_KEEP = ("p-value", "top-p", "p50", "p95", "chi-square p")  # not the letter p


@dataclass(frozen=True)
class Letters:
    target: str  # the target model's letter
    draft: str  # the draft model's letter
    label: str
    source: str


LETTERS = {
    "leviathan": Letters("p", "q", "Leviathan et al. (p = target, q = draft)",
                         "Leviathan, Kalman & Matias 2022, arXiv 2211.17192"),
    "chen": Letters("q", "p", "Chen et al. (p = draft, q = target)",
                    "Chen et al. 2023, arXiv 2302.01318"),
}


def letters(notation: str) -> Letters:
    if notation not in LETTERS:
        raise ValueError(f"unknown notation {notation!r}; choose one of {', '.join(LETTERS)}")
    return LETTERS[notation]


def swap_tables(text: str, notation: str = "leviathan") -> str:
    """text naming the tables P (target) and Q (draft), with p and q, in `notation`'s."""
    if notation == "leviathan" or not text:
        return text
    return swap(_TABLE.sub(lambda m: "Q" if m.group(1) == "P" else "P", text), notation)


def swap(text: str, notation: str = "leviathan") -> str:
    """text written in Leviathan's letters, shown in `notation`'s."""
    if notation == "leviathan" or not text:
        return text
    letters(notation)
    guarded = text
    for i, word in enumerate(_KEEP):
        guarded = guarded.replace(word, f"\x00{i}\x00")
    out = _LETTER.sub(lambda m: "q" if m.group(1) == "p" else "p", guarded)
    for i, word in enumerate(_KEEP):
        out = out.replace(f"\x00{i}\x00", word)
    return out


def swap_figure(fig: go.Figure, notation: str = "leviathan") -> go.Figure:
    """The same figure with every name, title, hover template and annotation re-lettered."""
    if notation == "leviathan":
        return fig
    spec = fig.to_dict()  # a copy, as plain dicts: edited there, validated once when rebuilt
    for tr in spec.get("data", ()):
        for attr in ("name", "hovertemplate", "text", "legendgroup"):
            if isinstance(tr.get(attr), str):
                tr[attr] = swap(tr[attr], notation)
    lay = spec.setdefault("layout", {})
    axes = [v for key, v in lay.items() if key.startswith(("xaxis", "yaxis"))]
    for titled in (lay, *axes):  # the figure's title and every axis title
        title = titled.get("title") if isinstance(titled, dict) else None
        if isinstance(title, dict) and title.get("text"):
            title["text"] = swap(title["text"], notation)
    for ann in lay.get("annotations", ()):
        if ann.get("text"):
            ann["text"] = swap(ann["text"], notation)
    return go.Figure(spec)


# ----------------------------------------------------------------------------- the reader's
def reader_notation() -> str:
    """The reader's letters, as the widget holds them in this run (it is drawn after some
    of the labels it re-letters)."""
    ss = st.session_state
    return ss.get("w_notation", ss.get("v_notation", url_settings()[0].notation))


def text(t: str) -> str:
    """t (written with p = target) in the reader's letters."""
    return swap(t, reader_notation())


def tables(t: str) -> str:
    """t (naming the tables P = target and Q = draft) in the reader's letters."""
    return swap_tables(t, reader_notation())


def md(t: str, **kwargs) -> None:
    """st.markdown in the reader's letters."""
    st.markdown(text(t), **kwargs)


def text_if(t: str, swap_letters: bool = True) -> str:
    """t in the reader's letters, or as it is (token names may themselves be p and q)."""
    return text(t) if swap_letters else t
