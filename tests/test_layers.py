"""The house's one-way data flow, checked on the source: an import may only point down.

core -> text / llm / analysis -> views -> figures -> web -> pages (and the CLI). Streamlit is
imported in specviz/web/ only. The core is the engine alone: the app's caps and budgets
(views.work), its stores (web.guard) and the round's captions (views.narration) live above.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "specviz"
RANK = {"core": 0, "text": 1, "llm": 1, "analysis": 1, "views": 2, "figures": 3, "web": 4}
TOP = 5  # specviz/cli*.py, __init__.py, __main__.py, app.py, pages/


def _layer(path: Path) -> int:
    rel = path.relative_to(ROOT).parts
    if rel[0] != "specviz" or len(rel) == 2:
        return TOP
    return RANK[rel[1]]


def _imports(path: Path):
    """(line, absolute module name) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            names = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            for name in names:
                yield node.lineno, name


def _target_rank(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "specviz":
        return None
    return RANK.get(parts[1], TOP) if len(parts) > 1 else TOP


def _sources():
    yield from PKG.rglob("*.py")
    yield from (ROOT / "pages").glob("*.py")
    yield ROOT / "app.py"


def test_imports_point_down_the_layers():
    bad = []
    for path in _sources():
        here = _layer(path)
        for line, module in _imports(path):
            there = _target_rank(module)
            if there is not None and there > here and not (here == TOP and there == TOP):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_pages_use_only_web_views_and_figures():
    bad = []
    for path in [*(ROOT / "pages").glob("*.py"), ROOT / "app.py"]:
        for line, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "specviz" and (len(parts) < 2 or parts[1] not in
                                          ("web", "views", "figures")):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "pages import only specviz.web, .views and .figures:\n" + "\n".join(bad)


def test_streamlit_only_in_web():
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in PKG.rglob("*.py")
           if _layer(path) != RANK["web"]
           for line, module in _imports(path) if module.split(".")[0] == "streamlit"]
    assert not bad, "streamlit imported outside specviz/web/: " + ", ".join(bad)


def test_the_checker_sees_a_wrong_arrow(tmp_path):
    """Negative control: a core module importing the web layer is found."""
    src = PKG / "core" / "rule.py"
    fake = ast.parse("from ..web import ui\nimport streamlit as st\n")
    found = []
    for node in ast.walk(fake):
        if isinstance(node, ast.ImportFrom):
            package = list(src.relative_to(ROOT).with_suffix("").parts[:-1])
            base = package[: len(package) - node.level + 1]
            found.append(_target_rank(".".join(base + [node.module])))
    assert found == [RANK["web"]] and RANK["web"] > _layer(src)


def test_llm_imports_only_core():
    """The real model's layer stands on the core alone (not on the n-gram text layer)."""
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for path in (PKG / "llm").rglob("*.py") for line, module in _imports(path)
           if module.split(".")[0] == "specviz" and module.split(".")[1] not in ("core", "llm")]
    assert not bad, "specviz.llm imports outside core:\n" + "\n".join(bad)


APP_ABOVE_CORE = ("K_APP_MAX", "N_APP_MAX", "WORK_APP_MAX", "WORK_REQUEST_MAX", "WORK_STOP_S",
                  "n_cap", "ByteLRU", "Step", "Narrated", "wording")


def _defines(path: Path):
    """(line, name) of what a module defines: its top-level names, its classes' members."""
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        inner = node.body if isinstance(node, ast.ClassDef) else []
        for n in [node, *inner]:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield n.lineno, n.name
            targets = n.targets if isinstance(n, ast.Assign) else (
                [n.target] if isinstance(n, ast.AnnAssign) else [])
            yield from ((n.lineno, t.id) for t in targets if isinstance(t, ast.Name))


def test_core_holds_no_app_policy_store_or_caption():
    """No cap, budget, store or frame of the app in specviz/core, no caption or describe_
    function, and no frozen object patched after the fact (object.__setattr__)."""
    bad = []
    for path in (PKG / "core").rglob("*.py"):
        rel = path.relative_to(ROOT)
        bad += [f"{rel}:{line} defines {name}" for line, name in _defines(path)
                if name in APP_ABOVE_CORE or "caption" in name.lower()
                or name.lower().startswith(("describe", "steps_", "narrat"))]
        if "object.__setattr__" in path.read_text():
            bad.append(f"{rel} patches a frozen object (object.__setattr__)")
    assert not bad, "app policy or narration in the core:\n" + "\n".join(bad)


def test_the_app_policy_has_one_home_each():
    homes: dict[str, list[str]] = {name: [] for name in APP_ABOVE_CORE}
    for path in PKG.rglob("*.py"):
        for _, name in _defines(path):
            if name in homes:
                homes[name].append(str(path.relative_to(ROOT)))
    assert all(len(where) == 1 for where in homes.values()), homes
