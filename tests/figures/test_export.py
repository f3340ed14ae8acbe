"""The round's standalone HTML export and the PNG fallback."""

from __future__ import annotations

import html
import json
import re

import pytest

from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables
from specviz.figures import animation, export
from specviz.views import stepping, transcript


def _transcript(pair, prefix, k, *, rule="correct", seed=0, tree=(), **kw):
    sc = Scenario.on(pair, prefix, k=k, rule=rule, seed=seed, tree=tree)
    return transcript.round_transcript(sc, **kw)

CASES = [(4, 3, 0, "correct"), (5, 3, 0, "correct"), (3, 7, 0, "correct"), (6, 2, 2, "continue"),
         (1, 1, 0, "correct")]


def trace_of(k: int, seed: int, rnd: int, rule: str):
    d = default_tables()
    return _transcript(TablePair(d.P, d.Q, d.vocab), 0, k, rnd=rnd, seed=seed, rule=rule).current


@pytest.fixture(scope="module")
def traces():
    return {case: trace_of(*case) for case in CASES}


def test_cases_cover_rejection_bonus_and_unchecked(traces):
    origins = {e.origin for t in traces.values() for e in t.emitted}
    assert {"accepted", "resampled", "bonus", "unverified"} <= origins
    assert any(t.flushed for t in traces.values())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_one_frame_per_step_and_a_slider_step_per_frame(traces, case):
    tr = traces[case]
    fig = export.round_figure(tr, case[2])
    n = len(tr.steps)
    assert [f.name for f in fig.frames] == [str(s) for s in range(n)]
    n_animated = len(export.STATUSES) + 6
    for f in fig.frames:
        assert len(f.data) == n_animated and list(f.traces) == list(range(n_animated))
        assert f.layout.title.text.startswith(f"<b>Round {case[2]} · step {f.name} of {n - 1}")
    steps = fig.layout.sliders[0].steps
    assert [list(s.args[0]) for s in steps] == [[str(s)] for s in range(n)]
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert labels == ["▶ play", "❚❚ pause"]
    assert {b.method for b in fig.layout.updatemenus[0].buttons} == {"skip"}  # the player's


@pytest.mark.parametrize("case", CASES, ids=str)
def test_each_frame_shows_the_same_statuses_as_the_round_page(traces, case):
    """The export's chips and the /round page's chips (animation.chips_html) agree, step by
    step, on every token's status and order."""
    tr = traces[case]
    fig = export.round_figure(tr, case[2])
    for s, frame in enumerate(fig.frames):
        page = re.findall(r'data-status="(\w+)"', animation.chips_html(tr, s))
        shown = []
        for status, data in zip(export.STATUSES, frame.data[: len(export.STATUSES)],
                                strict=True):
            shown += [(x, -y, status) for x, y in zip(data.x, data.y, strict=True)]
        ours = [status for _, _, status in sorted(shown)]
        assert sorted(ours) == sorted(page), (s, ours, page)
        # drafts read left to right in position order, as on the page
        assert [st for st in ours if st not in ("resampled", "bonus")] == \
            [st for st in page if st not in ("resampled", "bonus")]


def test_every_status_has_a_shape_a_symbol_and_a_word():
    shapes = set(export.SHAPES.values())
    assert len(shapes) == len(export.SHAPES)  # one shape per status: colour is never alone
    for status in export.STATUSES:
        m = animation.MARKS[status]
        assert m.symbol and m.label and m.colour


def test_the_key_lists_every_outcome_whatever_the_frame(traces):
    fig = export.round_figure(traces[CASES[0]], 0)
    key = [t for t in fig.data if (t.name or "").startswith("key: ")]
    assert [t.name for t in key] == [f"key: {animation.MARKS[s].label}"
                                     for s in export.KEY_STATUSES]
    n_animated = len(export.STATUSES) + 6
    assert all(fig.data.index(t) >= n_animated for t in key)  # never replaced by a frame


def test_bars_and_coin_appear_when_the_page_shows_them(traces):
    tr = traces[CASES[0]]
    fig = export.round_figure(tr, 0)
    for s, frame in enumerate(fig.frames):
        v = stepping.view(tr, s)
        p, q, law = (frame.data[len(export.STATUSES) + i].y for i in range(3))
        assert (sum(q) > 0) == (v.focus is not None)
        assert (sum(p) > 0) == (v.focus is not None and v.scored)  # p from the target's call
        assert (sum(law) > 0) == v.final
        coin = frame.data[-1]
        assert (coin.x[0] is not None) == (v.focus is not None and v.verified >= v.focus)


def test_html_is_standalone_and_lists_the_steps(traces):
    tr = traces[CASES[0]]
    page = export.round_html(tr, 0)
    assert page.startswith("<html") or page.lower().startswith("<!doctype html>")
    assert '<html lang="en">' in page and "<title>specviz · round 0" in page
    # plotly.js is inside the file; nothing is fetched from anywhere
    assert len(page) > 3_000_000
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<(?:link|img|iframe)[^>]+(?:src|href)=", page)
    assert page.count("<li>") == len(tr.steps)
    for st in tr.steps:
        assert html.escape(st.caption) in page
    m = re.search(r'Plotly\.newPlot\(\s*"sv-round",\s*(\[.*?\]),\s*\{', page, re.S)
    assert m and len(json.loads(m[1])) == len(export.STATUSES) + 6 + len(export.KEY_STATUSES)
    assert export.round_html_bytes(tr, 0) == page.encode("utf-8")


def test_token_names_are_escaped():
    import numpy as np
    from support import narrated_round

    d = default_tables()
    vocab = ("<b>", "a&b", "c", "d", "e", "f")
    tr = narrated_round(TablePair(d.P, d.Q, vocab), 0, 3, rng=np.random.default_rng(0),
                        rule="correct")
    page = export.round_html(tr, 0)
    assert "<b>" not in page.split("</title>")[0]
    assert "Context &#x27;&lt;b&gt;&#x27;" in page  # the step list
    fig = export.round_figure(tr, 0)
    assert fig.frames[0].data[0].text[0] == "&lt;b&gt;<br>context"  # the context chip
    bars = fig.frames[0].data[len(export.STATUSES)]
    assert list(bars.x[:2]) == ["&lt;b&gt;", "a&amp;b"]  # tick labels


def test_the_export_opens_at_the_step_on_screen(traces):
    tr = traces[CASES[0]]
    start = 4
    fig = export.round_figure(tr, 0, start=start)
    assert fig.layout.sliders[0].active == start
    assert f"step {start} " in fig.layout.title.text
    first = fig.data[len(export.STATUSES)]  # p bar as shown at the start step
    assert list(first.y) == list(fig.frames[start].data[len(export.STATUSES)].y)
    html_text = export.round_html(tr, 0, start=start)
    assert f'"active": {start}' in html_text or f'"active":{start}' in html_text


def test_each_frame_names_the_position_its_bars_are_at(traces):
    tr = traces[CASES[0]]
    fig = export.round_figure(tr, 0)
    for s, frame in enumerate(fig.frames):
        v, title = stepping.view(tr, s), frame.layout.xaxis2.title.text
        if v.focus is None:
            assert "appear with the first draft" in title, (s, title)
        else:
            assert title.endswith(f"(position {tr.positions[v.focus - 1].i})"), (s, title)


def test_keep_and_reject_share_one_coin_bar(traces):
    fig = export.round_figure(traces[CASES[0]], 0)
    keep, reject = (t for t in fig.data if t.name in ("keep: u < t", "reject: u ≥ t"))
    assert keep.offsetgroup == reject.offsetgroup == "coin"  # one height, not two groups
    assert keep.width == reject.width
    assert keep.marker.color == animation.MARKS["accepted"].colour  # as on the stage
    assert reject.marker.color == animation.MARKS["rejected"].colour
