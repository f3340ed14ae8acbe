"""/round through Streamlit's AppTest: URL state, stepping, replay, bad parameters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support import chips, frame, run_page, statuses

from specviz.core.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "1_round.py")


def _run(**params: str) -> AppTest:
    return run_page(PAGE, **params)


def _state(at: AppTest) -> tuple:
    """Everything the page shows about the round: captions, markdown and HTML."""
    return (tuple(i.value for i in at.info), tuple(m.value for m in at.markdown),
            tuple(h.proto.body for h in at.html), at.slider(key="round_scrub").value)


def test_the_chips_speak_the_readers_letters():
    """In Chen et al.'s letters the target is q and the draft p, on the chips as on the
    charts beside them (k = 5, seed 3: x2 is rejected at step 9)."""
    lev, chen = (chips(_run(k="5", seed="3", step="9", **extra))
                 for extra in ({}, {"notation": "chen"}))
    assert "x1  q=0.2638" in lev and "p=0.3100" in lev and "norm(max(0, p - q))" in lev
    assert "x1  p=0.2638" in chen and "q=0.3100" in chen and "norm(max(0, q - p))" in chen
    assert statuses(_run(k="5", seed="3", step="9", notation="chen")) == re.findall(
        r'data-status="(\w+)"', lev)  # the same round, only the letters differ


def test_page_runs_with_defaults():
    at = _run()
    assert at.slider(key="round_scrub").value == 0
    assert statuses(at) == ["context"] + ["pending"] * 4  # k = 4 by default
    assert not at.warning
    charts = at.get("plotly_chart")  # the bars, the coin and the residual, in turn
    assert [c.proto.id.rsplit("-", 1)[-1] for c in charts] == [
        "round_bars", "round_coin", "round_residual"]
    assert [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts] == [
        "p and q", "The coin", "The last token"]


def test_query_params_reach_the_widgets():
    at = _run(k="3", step="3")  # step 3 = the third draft
    assert "k = 3" in frame(at)
    assert statuses(at).count("drafted") == 3 and "pending" not in statuses(at)
    at = _run(step="5")
    assert at.slider(key="round_scrub").value == 5
    assert "step 5 ·" in frame(at) and " of " not in frame(at).split("sv-caption")[0]


def test_next_then_prev_returns_to_the_same_state():
    at = _run(seed="2", step="3")
    before = _state(at)
    at.button(key="round_next").click().run()
    assert at.slider(key="round_scrub").value == 4 and _state(at) != before
    assert at.query_params["step"] == "4"
    at.button(key="round_prev").click().run()
    assert not at.exception
    assert _state(at) == before


def test_next_past_the_last_step_starts_the_next_round_and_prev_comes_back():
    at = _run(seed="4", step="999")  # clamped to the last step, with a note
    assert any("past the end" in w.value for w in at.warning)
    last = at.slider(key="round_scrub").value
    assert last == at.slider(key="round_scrub").max
    at.button(key="round_next").click().run()
    assert "Round 1" in frame(at) and at.slider(key="round_scrub").value == 0
    at.button(key="round_prev").click().run()
    assert "Round 0" in frame(at) and at.slider(key="round_scrub").value == last


def test_the_same_seed_replays_the_same_round():
    a, b = _run(seed="5", step="30"), _run(seed="5", step="30")
    assert chips(a) == chips(b) and frame(a) == frame(b)
    others = [chips(_run(seed=str(s), step="30")) for s in (6, 7, 8, 9)]
    assert any(c != chips(a) for c in others)


def test_slider_scrubs_and_the_url_follows():
    at = _run(seed="1")
    at.slider(key="round_scrub").set_value(6).run()
    assert not at.exception and "step 6 ·" in frame(at)
    assert at.query_params["step"] == "6"


def test_new_round_advances_rnd_and_resets_the_step():
    at = _run(seed="3", step="4")
    at.button(key="round_new").click().run()
    assert not at.exception
    assert "Round 1" in frame(at) and at.slider(key="round_scrub").value == 0
    assert at.query_params["rnd"] == "1"
    assert "step" not in at.query_params  # step 0 is the default
    at.slider(key="round_scrub").set_value(4).run()
    at2 = _run(seed="3", rnd="1", step="4")  # the link replays that round
    assert chips(at2) == chips(at)


@pytest.mark.parametrize(
    "params, key, rnd",
    [({"step": "-3"}, "step", 0), ({"k": "banana"}, "k", 0), ({"rule": "<script>"}, "rule", 0),
     ({"rnd": "1e9"}, "rnd", 999)],
)
def test_invalid_params_fall_back_with_a_note(params, key, rnd):
    """Garbage takes the default; a number past its cap is held at the cap; both say so."""
    at = _run(**params)
    notes = [w.value for w in at.warning]
    assert any(f"URL parameter {key}=" in n for n in notes), notes
    assert all("<script>" not in n for n in notes)
    assert at.slider(key="round_scrub").value == 0 and f"<b>Round {rnd}</b>" in frame(at)


def test_a_broken_rule_is_flagged_and_plays():
    at = _run(rule="continue", seed="1", step="999")
    assert any("continue" in w.value for w in at.warning)


def test_autoplay_toggle_runs_and_does_not_step_on_a_full_run():
    at = _run(seed="2", step="2")
    at.toggle(key="round_autoplay").set_value(True).run()
    assert not at.exception and at.slider(key="round_scrub").value == 2
    at.select_slider(key="round_speed").set_value(0.5).run()
    assert not at.exception
    at.toggle(key="round_autoplay").set_value(False).run()
    assert not at.exception and at.slider(key="round_scrub").value == 2


def test_transcript_counts_the_current_round_once_done():
    at = _run(seed="3", rnd="2", step="0")
    rounds = [m for m in at.metric if m.label.startswith("rounds")]
    assert rounds[0].value == "2"
    at = _run(seed="3", rnd="2", step="999")
    rounds = [m for m in at.metric if m.label.startswith("rounds")]
    assert rounds[0].value == "3"
    transcript = next(h.proto.body for h in at.html if "sv-transcript" in h.proto.body)
    assert transcript.count('class="sv-round"') == 3


def test_the_autoplay_speed_is_in_the_url():
    at = _run(speed="2")
    assert at.select_slider(key="round_speed").value == 2.0
    assert at.query_params.get("speed") == "2"
    at.select_slider(key="round_speed").set_value(0.5).run()
    assert at.query_params.get("speed") == "0.5"


def test_csv_has_its_header_before_any_round_is_done():
    import pandas as pd

    from specviz.core.pair import TablePair
    from specviz.core.tables import default_tables
    from specviz.views import transcript

    d = default_tables()
    pair = TablePair(d.P, d.Q, d.vocab)
    tr = transcript.round_transcript(Scenario.on(pair, 0, k=4), rnd=0)
    assert transcript.transcript_rows(tr, False) == []  # nothing finished yet
    empty = pd.DataFrame([], columns=transcript.TRANSCRIPT_COLUMNS).to_csv(index=False)
    assert empty.strip() == ",".join(transcript.TRANSCRIPT_COLUMNS)
    (row,) = transcript.transcript_rows(tr, True)
    assert tuple(row) == transcript.TRANSCRIPT_COLUMNS  # the header names every column


def test_a_tree_given_as_paths_is_the_tree_the_round_drafts():
    at = _run(rule="tree_wor", k="3", tree="[[0], [1], [0, 0], [0, 1], [1, 0]]", step="999")
    tree_view = next(h.proto.body for h in at.html if 'class="sv-tree"' in h.proto.body)
    paths = set(re.findall(r'data-path="([\d.]+)"', tree_view))
    assert paths == {"0", "1", "0.0", "0.1", "1.0"}
    assert at.query_params["tree"] == "[[0], [1], [0, 0], [0, 1], [1, 0]]"
    assert not at.error
    at = _run(rule="tree_wor", k="3", tree="[[0], [1], [0, 0], [0, 1], [1, 0]]")
    assert "A tree of 5 drafted tokens (5 paths, depth 3)" in frame(at)


def test_a_malformed_tree_says_why_and_the_preset_is_drafted():
    at = _run(rule="tree_wor", k="3", tree="[[0], [0, 0], [0, 2]]", step="999")
    assert any("without its earlier sibling [0, 1]" in w.value for w in at.warning)
    tree_view = next(h.proto.body for h in at.html if 'class="sv-tree"' in h.proto.body)
    assert len(re.findall(r'data-path="', tree_view)) == 15  # the 3-2-1 preset at depth 3
    assert "tree" not in at.query_params
    at.text_input(key="w_tree").input("[[0], [1]").run()  # typed in the sidebar: refused
    assert any("Token tree not used" in e.value for e in at.error)
