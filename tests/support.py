"""Shared test helpers (a plain module: tests/e2e has a conftest of its own)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from specviz.core.scenario import Scenario


def random_tables(rng: np.random.Generator, V: int, zero_frac: float = 0.3):
    """A random pair whose rows have zeros in random places (each row keeps some mass)."""

    def table():
        M = rng.dirichlet(np.ones(V), size=V)
        M[rng.random((V, V)) < zero_frac] = 0.0
        empty = M.sum(axis=1) == 0
        M[empty, rng.integers(0, V, empty.sum())] = 1.0
        return M / M.sum(axis=1, keepdims=True)

    return table(), table()


ROOT = Path(__file__).resolve().parents[1]


def tiered(cases: list[tuple], keep: Callable[[int, tuple], bool], ids=None) -> list:
    """The cases of a fuzz or a large sweep as pytest params: those keep(i, case) picks run
    in the development tier, the rest are marked `fuzz` (the whole tier runs them all; see
    tests/conftest.py). Pick at least one case of every class the cases cover."""
    ids = ids or [None] * len(cases)
    return [pytest.param(*case, id=name,
                         marks=() if keep(i, case) else (pytest.mark.fuzz,))
            for i, (case, name) in enumerate(zip(cases, ids, strict=True))]


def app_test(path: str | Path, timeout: float = 30) -> AppTest:
    """An AppTest of the app opened on one page (app.py, or a script in pages/), as a
    browser would open it: the app's entry point is the main script, so the pages are
    registered and the navigation's links resolve."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    page = (ROOT / path).resolve().relative_to(ROOT)  # (ROOT / an absolute path) is that path
    return at if page == Path("app.py") else at.switch_page(str(page))


def run_page(path: str, timeout: float = 30, **params: str) -> AppTest:
    """Run a page under AppTest with URL parameters; it must raise nothing."""
    at = app_test(path, timeout)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def bound_undeclared(at: AppTest, path: str) -> set[str]:
    """The fields the page at site path `path` bound in its last run that are declared
    neither for it nor for the sidebar controls it reads (settings.FIELDS): a page key, or a
    sidebar control the page does not read, drawn anyway."""
    from specviz.web import binding
    from specviz.web import settings as S

    return set(at.session_state[binding.BOUND]) - {*S.sidebar_keys(path), *S.page_keys(path)}


def chips(at: AppTest) -> str:
    """The round's token chips (HTML)."""
    return next(h.proto.body for h in at.html if 'class="sv-chips"' in h.proto.body)


def statuses(at: AppTest) -> list[str]:
    """Each chip's status, in order."""
    return re.findall(r'data-status="(\w+)"', chips(at))


def frame(at: AppTest) -> str:
    """The step counter and caption ("<b>Round r</b> · step s · kind ..." and the caption)."""
    return next(h.proto.body for h in at.html if 'class="sv-step"' in h.proto.body)


def unfold(at: AppTest, timeout: float = 60) -> AppTest:
    """Open every expander that draws its body only when open (ui.folded_open), as a reader
    clicking each would, and rerun the page."""
    from specviz.web.ui import FOLD_PREFIX

    keys = [e.proto.id.rsplit("-", 1)[-1] for e in at.expander]
    folds = [k for k in keys if k.startswith(FOLD_PREFIX)]
    assert folds, "no folded section on this page"
    for key in folds:
        at.session_state[key] = True
    at.run(timeout=timeout)
    return at


def narrated_round(pair, prefix, k: int, *, rng: np.random.Generator, rule="correct"):
    """core.round.play_round, narrated as the app narrates a round (views.narration)."""
    from specviz.core.round import play_round
    from specviz.views.narration import narrate

    return narrate(play_round(Scenario.on(pair, prefix, k=k, rule=rule),
                              rng=rng), pair=pair, rule=rule,
                   prefix=pair.check_prefix(prefix), k=k)
