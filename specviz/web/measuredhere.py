"""The real model's measurements in the server, kept per setting for every session and
/plan (the model and the drafts' corpus extras are web.llmstage's, shared with /llm).

Measuring is heavy (minutes on a loaded CPU), so it runs only when asked (a button), in
one of web.guard's workers under views.measured's time budget, and its result is kept in a
store of this process (web.server.once: out of reach of clear-cache), keyed by the prompt,
the drafts, k, T, the seed and max_new. /plan lists what that store holds as its
"measured here" source.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable

import streamlit as st

from ..analysis.planner import MeasuredHere
from ..core import interrupt
from ..views import measured as mv
from ..views.work import ByteLRU
from . import guard, server, ui

RESULT_BYTES = 8 * 2**20  # measurements kept (a few kB each)
LISTED = 32  # measurements /plan offers, newest first
_keys_lock = threading.Lock()


def _results() -> ByteLRU:
    return server.once("measured here results", lambda: ByteLRU(RESULT_BYTES))


def _keys() -> deque:
    return server.once("measured here keys", lambda: deque(maxlen=LISTED))


def kept(key: Hashable):
    """The result stored under key, or None."""
    return _results().get(key)


def compute(key: Hashable, fn: Callable, *args, **kwargs):
    """fn(*args, **kwargs) in a heavy worker under the measurement's time budget, stored
    under key; None (with the reason on the page) when the settings are refused."""
    try:
        with guard.worker(), interrupt.budget(mv.MEASURE_STOP_S + 60.0):
            value = fn(*args, **kwargs)
    except ValueError as exc:
        st.error(guard.plain(f"Not measured: {exc}."))
        return None
    _results().put(key, value, 64 * 2**10)
    if key[0] == "measure":
        keys = _keys() if key[1] in {t for _, t in mv.PRESETS.values()} else _own_keys()
        with _keys_lock:
            if key in keys:
                keys.remove(key)
            keys.appendleft(key)
    return value


def measured_note(slot) -> None:
    """In the Measure button's place once its settings are measured: a button that is
    plainly off (secondary, disabled), not the primary one that looks ready to press."""
    slot.button("Measured: kept on this server", key="m_done", disabled=True,
                help="Change the prompt, a draft, k, T, the seed or the tokens to measure "
                     "again")


def _own_keys() -> deque:
    """This session's measurements of its own prompts (listed to it alone)."""
    return st.session_state.setdefault("_measured_own", deque(maxlen=LISTED))


def sources() -> dict[str, MeasuredHere]:
    """Every draft and mode measured on a preset prompt in this process, and on this
    session's own prompts, by a label, newest first."""
    out = {}
    for key in [*_own_keys(), *_keys()]:
        m = _results().get(key)
        if m is None:
            continue
        text = key[1]
        for d in m.drafts:
            for mode in d.modes:
                try:
                    out[mv.source_label(m, d, mode, text)] = mv.plan_source(d, mode,
                                                                             prompt=text)
                except ValueError:
                    continue
    return out


def draw_real_rows(r) -> None:
    """views.realrows.RealRows: the round's positions, then the check against p."""
    from ..views import realrows as rr

    ui.table(r.positions, rr.POSITION_COLUMNS)
    st.caption(guard.plain(
        f"At the prompt, sum min(p, q) = {r.beta_full:.6f} on the full rows and "
        f"{r.beta_lumped:.6f} on the check's {len(r.cells)} cells (the {rr.LUMP_TOP} likeliest "
        "tokens, then the rest split where p >= q and where p < q, which keeps the keep "
        "chance, the residual and the first token's law exactly)."))
    rows = rr.check_rows(r)
    ui.table(rows, rr.CHECK_COLUMNS)
    for row in rows:
        (st.success if row["consistent"] else st.error)(guard.plain(
            f"{row['rule']}: Monte Carlo TV {row['mc_tv']:.5f} against the threshold "
            f"{row['threshold']:.5f} (floor {row['floor']:.5f}, n = {row['n']:,}): "
            f"{row['verdict']}" + rr.expected(row)))
    ui.table(rr.law_rows(r), rr.LAW_COLUMNS, fold="the first token's law, cell by cell")
