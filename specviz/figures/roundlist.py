"""The transcript of played rounds as HTML, one line a round, each emitted token marked by
its origin, for /round and /text."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..core.trace import RoundDigest, RoundTrace
from ..views.stepping import view
from ..views.transcript import RoundTranscript
from .palette import GREY, MARKS


def listed_rounds(tr: RoundTranscript, step: int) -> tuple[RoundTrace, ...]:
    """The rounds the transcript lists at this step: the current one once it is done."""
    return tr.earlier + ((tr.current,) if view(tr.current, step).done else ())


def emitted_status(trace: RoundTrace | RoundDigest, origin: str) -> str:
    """The mark of an emitted token: its origin, or plain decoding for the one token of a
    round that drafted nothing."""
    return "plain" if origin == "bonus" and trace.k == 0 else origin


def transcript_html(traces: Sequence[RoundTrace], first: int = 0) -> str:
    """One line per round: its context, then each emitted token coloured and marked by
    origin (kept, redrawn, bonus, unchecked), then the flushed drafts struck through."""
    if not traces:
        return '<div class="sv-transcript"><i>No round finished yet.</i></div>'
    rows = []
    for r, t in enumerate(traces, start=first):
        cells = [f'<span style="color:{GREY};display:inline-block;min-width:3.5em">r{r}</span>',
                 f"<span>{html.escape(t.name(t.ctx))} →</span>"]
        for e in t.emitted:
            m = MARKS[emitted_status(t, e.origin)]
            cells.append(
                f'<span data-origin="{e.origin}" title="{html.escape(m.label)}" '
                f'style="display:inline-block;margin:1px 2px;padding:0 5px;border-radius:5px;'
                f'border:2px solid {m.colour};background:{m.colour}22">'
                f"{html.escape(t.name(e.token))}{m.symbol}</span>")
        for j in t.flushed:
            cells.append(
                f'<span data-origin="flushed" title="flushed" style="color:{GREY};'
                f'text-decoration:line-through;margin:0 2px">'
                f"{html.escape(t.name(t.positions[j - 1].token))}{MARKS['flushed'].symbol}"
                "</span>")
        rows.append(f'<div class="sv-round" data-round="{r}" style="font-family:monospace;'
                    f'line-height:1.9">' + "".join(cells) + "</div>")
    return '<div class="sv-transcript">' + "".join(rows) + "</div>"
