"""/tour under AppTest, and every chapter's two states: each page runs at the preset and at
the answer with no exception and no fallback note."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support import run_page

from specviz.views import tour
from specviz.web import settings

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "pages" / "9_tour.py"


def page_file(path: str) -> Path:
    """pages/<n>_<name>.py for URL path /<name> (Streamlit's own naming rule)."""
    name = path.strip("/")
    hits = sorted((ROOT / "pages").glob(f"*_{name}.py"))
    assert len(hits) == 1, (path, hits)
    return hits[0]


def run(file: Path, params: dict[str, str], timeout: float = 120) -> AppTest:
    return run_page(file, timeout, **params)


def links(at: AppTest) -> list[tuple[str, str]]:
    return [(b.proto.label, b.proto.url) for b in at.get("link_button")]


# ----------------------------------------------------------------------------- /tour
def test_tour_opens_at_the_first_chapter():
    at = run(TOUR, {})
    assert at.selectbox(key="w_chapter").value == 0
    ch = tour.CHAPTERS[0]
    assert any(h.value == tour.label(0) for h in at.header)
    assert links(at) == [("Open the question ↗", tour.href(ch.preset)),
                         ("Open the answer ↗", tour.href(ch.answer_url))]
    assert at.button(key="tour_prev").disabled and not at.button(key="tour_next").disabled
    assert not at.warning
    text = " ".join(m.value for m in at.markdown)
    for ch in tour.CHAPTERS:  # the outline lists every chapter with both links
        assert f"({tour.href(ch.preset)})" in text and f"({tour.href(ch.answer_url)})" in text


def test_chapter_in_the_url_and_the_next_button():
    at = run(TOUR, {"chapter": "4"})
    assert at.selectbox(key="w_chapter").value == 4
    assert links(at)[1][1] == tour.href(tour.CHAPTERS[4].answer_url)
    at.button(key="tour_next").click().run()
    assert not at.exception
    assert at.selectbox(key="w_chapter").value == 5
    assert at.query_params["chapter"] == "5"
    at.button(key="tour_prev").click().run()
    assert at.selectbox(key="w_chapter").value == 4


def test_last_chapter_has_no_next():
    at = run(TOUR, {"chapter": str(settings.CHAPTER_MAX)})
    assert at.button(key="tour_next").disabled and not at.button(key="tour_prev").disabled


def test_bad_chapter_falls_back_with_a_note():
    at = run(TOUR, {"chapter": "99"})
    assert at.selectbox(key="w_chapter").value == settings.CHAPTER_MAX
    assert any("URL parameter chapter='99'" in w.value for w in at.warning)


def test_presenter_mode_links_keep_present():
    at = run(TOUR, {"present": "1", "chapter": "2"})
    for _, url in links(at):
        assert url.endswith("present=1"), url
    assert at.query_params["present"] == "1"


# ----------------------------------------------------------------------------- the states
# /llm loads Gemma 3 270M: its chapter's states run in tests/llm/test_llm_tour.py, on the
# model the real model's tests load once per session.
REAL_MODEL_PAGES = ("/llm", "/measured")
STATES = [(ch.slug, which, url) for ch in tour.CHAPTERS
          for which, url in (("preset", ch.preset), ("answer", ch.answer_url))
          if tour.split(url)[0] not in REAL_MODEL_PAGES]


@pytest.mark.parametrize("slug,which,url", STATES, ids=[f"{s}-{w}" for s, w, _ in STATES])
def test_every_chapter_state_runs_clean(slug, which, url):
    path, params = tour.split(url)
    s, notes = settings.parse_query(params)
    assert notes == []
    at = run(page_file(path), params)
    assert not at.warning or all("URL parameter" not in w.value for w in at.warning), \
        [w.value for w in at.warning]
    for key, value in params.items():  # the page keeps the state in its URL
        assert at.query_params.get(key) == value, (key, at.query_params)
