"""The token tree of one traced round, as HTML, showing only what a viewer has been shown
by a step: each level appears at its draft frame, the siblings tried at a node light up
one by one at their verify frames (kept or rejected, with u against the threshold), the
kept path is marked, and the branches off it are struck through once pruned. Statuses
carry a symbol and a word as well as a colour (the chips' marks)."""

from __future__ import annotations

import html

from ..core.trace import RoundTrace
from ..views.stepping import view
from .palette import MARKS


def kept_path(trace: RoundTrace) -> tuple[int, ...]:
    """The sibling indices of the kept drafts, from the root."""
    return tuple(len(pos.tries) - 1 for pos in trace.positions if pos.accepted)


def _status(path, trace, v, kept, tried) -> tuple[str, str]:
    """(status, extra line) of the node at path by this step."""
    d = len(path)
    shown = d < v.verified or d == v.verified and (v.sibling is None or path[-1] <= v.sibling)
    if path in tried and shown:
        t = tried[path]
        return ("accepted" if t.accepted else "rejected"), f"u={t.u:.3f} < {t.threshold:.3f}?"
    if v.settled and path[:len(kept)] != kept[:d]:
        return "flushed", ""
    return "drafted", ""


def tree_html(trace: RoundTrace, step: int) -> str:
    """Nested lists, one per node: token, status, and the coin once its node is checked."""
    if not trace.tree:
        return ""
    v = view(trace, step)
    kept = kept_path(trace)
    tried = {}
    node: tuple[int, ...] = ()
    for pos in trace.positions:  # the tries at each node of the kept path
        for j, t in enumerate(pos.tries):
            tried[node + (j,)] = t
        node = node + (len(pos.tries) - 1,)
    children: dict[tuple[int, ...], list] = {}
    for path, token in trace.tree:
        children.setdefault(path[:-1], []).append((path, token))

    def render(parent) -> str:
        items = []
        for path, token in children.get(parent, []):
            if len(path) > v.drafted and v.drafted < len(trace.positions):
                continue  # the last draft frame shows every level below it too
            status, extra = _status(path, trace, v, kept, tried)
            m = MARKS[status]
            strike = "line-through" if status == "flushed" else "none"
            items.append(
                f'<li class="sv-node" data-path="{".".join(map(str, path))}" '
                f'data-status="{status}" style="color:{m.colour}">'
                f'<b style="text-decoration:{strike}">{html.escape(trace.name(token))}</b> '
                f'<span aria-hidden="true">{m.symbol}</span> <small>{html.escape(m.label)}'
                f'{" · " + html.escape(extra) if extra else ""}</small>{render(path)}</li>')
        return f'<ul style="margin:0 0 0 1.2em;padding:0">{"".join(items)}</ul>' if items else ""

    root = html.escape(trace.name(trace.ctx))
    last = ""
    if v.final:
        e = trace.emitted[-1]
        m = MARKS["bonus" if e.origin == "bonus" else "resampled"]
        last = (f'<div data-status="{e.origin}" style="color:{m.colour}">{m.symbol} '
                f'then <b>{html.escape(trace.name(e.token))}</b> ({html.escape(m.label)})'
                "</div>")
    return (f'<div class="sv-tree" style="font-family:monospace">'
            f'<div>▸ <b>{root}</b> <small>context</small></div>{render(())}{last}</div>')
