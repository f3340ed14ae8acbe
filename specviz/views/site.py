"""The app's pages, listed once: the navigation, the tour's links and the tests read this.

Each page: its script (app.py is the home page, the others sit in pages/ as Streamlit's
multipage layout wants: the file name after its number is the URL path), the path it
answers on, its title in the navigation and an icon from the Material Symbols that
Streamlit ships.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    script: str  # path from the repository root
    path: str  # URL path ("" = the home page)
    title: str
    icon: str


PAGES = (
    Page("app.py", "", "Start here", ":material/home:"),
    Page("pages/9_tour.py", "tour", "Guided tour", ":material/explore:"),
    Page("pages/1_round.py", "round", "One round", ":material/play_circle:"),
    Page("pages/7_text.py", "text", "Real text", ":material/article:"),
    Page("pages/11_llm.py", "llm", "Real model", ":material/smart_toy:"),
    Page("pages/2_exactness.py", "exactness", "Exactness", ":material/verified:"),
    Page("pages/3_acceptance.py", "acceptance", "Acceptance", ":material/done_all:"),
    Page("pages/4_draft-length.py", "draft-length", "Draft length",
         ":material/straighten:"),
    Page("pages/5_cost.py", "cost", "Cost", ":material/payments:"),
    Page("pages/6_roofline.py", "roofline", "Roofline", ":material/speed:"),
    Page("pages/8_rules.py", "rules", "Rules gallery", ":material/rule:"),
    Page("pages/12_measured.py", "measured", "Measured here", ":material/timer:"),
    Page("pages/10_plan.py", "plan", "Plan your server", ":material/calculate:"),
    Page("pages/13_audit.py", "audit", "Audit a verifier", ":material/fact_check:"),
)
BY_PATH = {p.path: p for p in PAGES}
LINKABLE = tuple(f"/{p.path}" for p in PAGES if p.path not in ("", "tour", "plan"))
