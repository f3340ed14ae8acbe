"""/tour: a guided tour in ten chapters; each opens a preset state that poses a question,
and links to the state that answers it (specviz.tour holds the chapters)."""

import streamlit as st

from specviz.views import tour
from specviz.web import notation, ui

app = ui.page("tour", path="tour")
s = app.settings
presenting = ui.presenter_active()

st.title("A guided tour of speculative decoding")
notation.md(
    "Ten stops, in the order the ideas build on each other: one token, exactness, "
    "acceptance, draft length, cost, the roofline, then the verification rules, real "
    "text, a real model and the model drafting for itself. Each stop opens a page at a "
    "preset state and asks a question. "
    "Try it there, then open the answer: a second state of the app that shows it, with a "
    "short explanation. Links open in a new tab, at exactly that state, so this page stays put."
)

chapter = ui.bind("chapter", st.selectbox, "Chapter", format_func=tour.label)
ch = tour.CHAPTERS[chapter]
before, after = tour.neighbours(chapter)


def _go(i: int) -> None:
    ui.assign("chapter", i)


st.header(tour.label(chapter))
notation.md(f"**Question.** {ch.question}")
cols = st.columns(2)
cols[0].link_button("Open the question ↗", tour.href(ch.preset, presenting), type="primary",
                    width="stretch", help=f"Opens {ch.preset} in a new tab")
cols[1].link_button("Open the answer ↗", tour.href(ch.answer_url, presenting),
                    width="stretch", help=f"Opens {ch.answer_url} in a new tab")
with st.expander("Read the answer"):
    notation.md(ch.answer)
nav = st.columns(2)
nav[0].button("◀ previous chapter", key="tour_prev", on_click=_go, args=(before,),
              disabled=before is None, shortcut="Left", width="stretch",
              help="The chapter before (←)")
nav[1].button("next chapter ▶", key="tour_next", on_click=_go, args=(after,),
              disabled=after is None, shortcut="Right", width="stretch",
              help="The chapter after (→)")

st.subheader("All chapters")
for i, row in enumerate(tour.outline()):
    other = tour.CHAPTERS[i]
    notation.md(f"**{row['chapter']}** ({row['page']}): {row['question']} "
                f"[question]({tour.href(other.preset, presenting)}) · "
                f"[answer]({tour.href(other.answer_url, presenting)})")
st.caption("The numbers in the answers are those of the default tables (the real-model chapter's: "
           "Gemma 3 270M's); with your own tables (edited in the sidebar of the pages that "
           "play them) the shapes hold but the numbers move. Presenting? Add present=1 to any "
           "address for large type and no sidebar; the tour's links keep it.")
ui.finish(app)
