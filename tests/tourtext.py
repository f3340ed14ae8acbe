"""The tour's chapters read back, for tests/views/test_tour.py and tests/llm/test_llm_tour.py:
a number an answer quotes, and the settings a chapter's link opens."""

from __future__ import annotations

import re

from specviz.views import tour
from specviz.web import settings


def num(text: str, pattern: str) -> float:
    """The number captured by `pattern` in an answer (fails loudly when the text moved)."""
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {text!r}"
    return float(m[1].replace(",", "").rstrip("."))


def state(url: str) -> settings.Settings:
    """The settings a tour link opens (it must parse with no note)."""
    s, notes = settings.parse_query(tour.split(url)[1])
    assert notes == []
    return s
