"""The contract with Streamlit (specviz/web/stcontract.py): every private name specviz uses
is in the installed Streamlit, in a fresh process (no test's patches in it), and so is every
browser-side name the app's style sheets and scripts select. tests/conftest.py runs this file
first, so that after an upgrade it is the first thing to fail. The negative controls: a name
gone, a replaced name no longer read, a selector gone; the server's start stops, naming it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.web import assets, stcontract

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


def test_the_installed_streamlit_has_every_name_specviz_uses():
    run = _fresh("from specviz.web import stcontract as c; c.check(); "
                 "print('missing in the frontend:', c.check_frontend())")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "missing in the frontend: []", run.stdout


def test_every_name_says_what_specviz_does_with_it():
    assert len(stcontract.BY_NAME) == len(stcontract.PRIVATE)
    for p in stcontract.PRIVATE:
        assert p.name.startswith("streamlit") and ":" in p.name and p.use, p
    assert stcontract.CLEAR_CACHE in stcontract.BY_NAME  # tests/web/test_server.py's


def test_a_missing_name_is_named(monkeypatch):
    from streamlit.runtime.app_session import AppSession

    monkeypatch.delattr(AppSession, "_handle_clear_cache_request")
    with pytest.raises(stcontract.StreamlitChanged, match="_handle_clear_cache_request") as e:
        stcontract.check()
    assert "a client's clear-cache message" in str(e.value)  # and what it is for


def test_an_instance_attribute_no_longer_set_is_named(monkeypatch):
    monkeypatch.setattr(stcontract, "_instance_attrs", lambda cls: set())
    with pytest.raises(stcontract.StreamlitChanged, match="AppSession.__init__ no longer sets"):
        stcontract.check()


def test_a_replaced_name_that_streamlit_no_longer_calls_is_named(monkeypatch):
    from streamlit.runtime.app_session import AppSession

    monkeypatch.setattr(AppSession, "handle_backmsg", lambda self, msg: None)
    with pytest.raises(stcontract.StreamlitChanged, match="no longer reads "
                       "_handle_clear_cache_request"):
        stcontract.replace(stcontract.CLEAR_CACHE, lambda self: None)


def test_a_selector_streamlit_no_longer_writes_is_found(monkeypatch):
    monkeypatch.setattr(assets, "selectors", lambda: ["stMain", "stSidebarCollapsedControl"])
    assert stcontract.check_frontend() == ["stSidebarCollapsedControl"]  # gone by 1.67
    assert stcontract.frontend_has("stBaseButton-primary")  # written `stBaseButton-${kind}`
    assert not stcontract.frontend_has("stMai")  # a whole name only


def test_the_server_start_stops_naming_the_missing_name():
    run = _fresh("from streamlit.runtime.app_session import AppSession\n"
                 "del AppSession._handle_clear_cache_request\n"
                 "from specviz.web import server\n"
                 "server.main(['run', 'app.py', '--server.headless=true'])\n")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.startswith("specviz cannot start: Streamlit has no "
                                 f"{stcontract.CLEAR_CACHE}"), run.stderr[-2000:]


def _streamlit_imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name, a.asname) for a in node.names
                        if a.name.split(".")[0] == "streamlit")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == \
                "streamlit":
            yield node.lineno, node.module, None


def test_outside_the_contract_specviz_imports_streamlit_as_st_only():
    """Any other import of Streamlit's modules is a private part used outside the contract:
    name it in stcontract.PRIVATE and reach it through there."""
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for path in (ROOT / "specviz").rglob("*.py") if path.name != "stcontract.py"
           for line, module, alias in _streamlit_imports(path)
           if (module, alias) != ("streamlit", "st")]
    assert not bad, "\n".join(bad)
