"""The suite's tiers, the order the workers take the tests in, and the fixtures every
directory shares.

Tiers. A plain `pytest` runs the development tier: every test that carries none of the
markers below (pyproject.toml deselects them, `-m "not browser and not model and not slow
and not fuzz"`). `pytest -m ""` runs everything (the README's whole-suite command and
.ci/run do). Which marker a new test gets, first rule that applies:

  browser  it drives a real browser (Chromium) against a real server. Every test in
           tests/e2e/ gets it here; put such tests there.
  model    it loads the real model or another real inference stack (Gemma 3 270M through
           the `model` fixture of tests/llm, transformers and torch, a llama-server). A test
           asking for the `model` fixture gets it here; mark any other by hand.
  slow     it takes more than SLOW_S on a quiet core: a long Monte Carlo run, a sweep of
           many settings, a server started in a subprocess. First try to make it faster
           or smaller; where its power needs the time, keep a small case of it unmarked,
           so that the development tier still runs that code.
  fuzz     it is one case of a fuzz or a large parametrised sweep past the sample the
           development tier keeps: support.tiered(cases, keep=...) marks the rest.
  (none)   everything else: the development tier, which must keep covering every module.

Every test has a time limit (pytest-timeout): DEV_TIMEOUT_S (pyproject's `timeout`) for the
development tier, TIER_TIMEOUT_S for the others; a test that must run longer says so with
its own @pytest.mark.timeout(seconds).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from specviz.text import corpus

STDLIB_MODULES = ("textwrap.py", "functools.py", "collections/__init__.py", "pathlib.py",
                  "shutil.py", "argparse.py", "json/__init__.py", "subprocess.py", "tarfile.py",
                  "zipfile/__init__.py", "logging/__init__.py", "enum.py")


TESTS = Path(__file__).parent


def worker_group(nodeid: str) -> str:
    """The pytest-xdist group of a test, from its node id: a test file stays on one worker,
    so its module fixtures are built once; the real model's tests (llm/) share one worker,
    so it loads the model once. The browser files spread over the workers like the others:
    on one worker together they made the suite's longest group (about 19 minutes in all
    against 13 spread)."""
    parts = Path(nodeid.split("::", 1)[0]).parts
    rel = parts[1:] if parts[:1] == ("tests",) else parts
    return "llm" if rel[0] == "llm" else "/".join(rel)


LONG_FIRST = ("llm", "live", "e2e")  # the longest groups, handed to the workers first: the
# real model's (minutes), the live audits of llama-server and transformers (minutes each in a
# few tests: ranked by size they came last), the browser files (up to 5 minutes each)
CONTRACT = "web/test_stcontract.py"  # before them: after a Streamlit upgrade, the first to fail
BUILT = "live/test_llama_server.py"  # after them: on a machine without llama-server its build
# (deploy/llama_server.py, started by .ci/run before the suite) takes about 10 minutes beside
# the tests; handed out with the live group, its worker sat 560 s waiting for it
SLOW_S = 2.0  # a test longer than this on a quiet core is `slow` (see above)
DEV_TIMEOUT_S = 120  # pyproject.toml's `timeout`, for the development tier (loaded: 2 workers)
TIER_TIMEOUT_S = 600  # for a browser, model, slow or fuzz test (server starts, model loads)
TIERS = ("browser", "model", "slow", "fuzz")


def tier_markers(item) -> None:
    """The markers the rules above give by place and fixture, and the tiers' time limit."""
    if "e2e" in Path(str(item.fspath)).parts:
        item.add_marker(pytest.mark.browser)
    if "model" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.model)
    if any(item.get_closest_marker(t) for t in TIERS):
        item.add_marker(pytest.mark.timeout(TIER_TIMEOUT_S))  # a test's own comes first


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Tier markers on every test (tier_markers: the deselection by -m comes after this
    hook). Then the long groups first, so that no worker starts one when the rest is
    done: the contract with Streamlit, the real model's group (taken late, it was the
    suite's last three minutes with one worker idle), the browser files, llama-server's
    live audit (BUILT), then the others by their number of tests, most first. The workers
    take groups in this order (see below). Within a group, the order stays."""
    for item in items:
        tier_markers(item)
    size = Counter(worker_group(item.nodeid) for item in items)

    def rank(item) -> tuple[int, int]:
        group = worker_group(item.nodeid)
        first = group.split("/", 1)[0]
        if group == CONTRACT:
            return -1, 0
        if group == BUILT:
            return len(LONG_FIRST), 0
        if first in LONG_FIRST:
            return LONG_FIRST.index(first), 0
        return len(LONG_FIRST) + 1, -size[group]
    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup (the README's command) groups by worker_group. pytest-xdist 3.8's
    own loadgroup reads xdist_group marks by appending the group to item._nodeid, which
    pytest 9 no longer reads (Node.nodeid is str(item._id)): the marks grouped nothing."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # Groups in collection order: xdist otherwise reorders them by their number of tests,
    # which put the browser files (few tests, minutes each) last, two at once at the end.
    config.option.loadscopereorder = False

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return ByGroup(config, log)


@pytest.fixture(autouse=True, scope="session")
def _components_scanned_once():
    """Each new AppTest, on its first run, scans every installed distribution's metadata for
    Streamlit components (stcontract.MANIFEST_SCAN): 0.48 s of a 0.8 s run
    of /rules here, in a suite of thousands of fresh AppTests. A server scans once, when its
    runtime starts; the installed packages do not change during a test run, so the tests
    scan once too and hand every AppTest that result."""
    from specviz.web import stcontract

    found = stcontract.get(stcontract.MANIFEST_SCAN)()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(*stcontract.owner(stcontract.MANIFEST_SCAN),
                   lambda max_workers=None: list(found))
        yield


@pytest.fixture(autouse=True, scope="session")
def _full_error_details():
    """The server config shows uncaught errors by type only; in tests a failure should name
    its message, so AppTest runs get the full details (restored afterwards)."""
    from streamlit import config

    before = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")
    yield
    config.set_option("client.showErrorDetails", before)


@pytest.fixture(scope="session")
def model():
    """The real model, Gemma 3 270M, loaded once per worker (tests/llm share one worker;
    a live audit of our own endpoint, tests/live/test_serve.py, loads it on its own)."""
    from specviz.llm import store
    return store.load()


@pytest.fixture(scope="session")
def stdlib_text() -> str:
    """The docstrings of a dozen standard-library modules: real text, parsed in a second
    (tests/text/test_corpus.py parses the whole library once)."""
    root = corpus.stdlib_root()
    return "\n".join(corpus.collect_docstrings([root / m for m in STDLIB_MODULES]))


@pytest.fixture(scope="session")
def small_default_corpus(tmp_path_factory, stdlib_text):
    """A fresh cache directory seeded with stdlib_text, which pages then read as their
    default corpus: no earlier cache is used, and page tests need not parse the library."""
    cache = tmp_path_factory.mktemp("specviz-cache")
    corpus.default_cache_path(cache=cache).write_text(stdlib_text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECVIZ_CACHE_DIR", str(cache))
        yield
