"""The house's one-way data flow, checked on the source: an import may only point down, never
sideways to a sibling layer, and no modules import each other in a circle.

core -> text / llm / analysis -> views -> figures -> web -> pages (and the CLI). text, llm
and analysis are siblings: none imports another (what joins them lives in views). Streamlit
is imported in specviz/web/ only. The core is the engine alone: the app's caps and budgets
(views.work), its stores (web.guard) and the round's captions (views.narration) live above.

The module map, docs/ARCHITECTURE.md, is made from the code (LAYERS and each module's
docstring) by this file: `.venv/bin/python tests/test_layers.py > docs/ARCHITECTURE.md`;
test_the_module_map_is_the_code fails when a module is missing from it or it is stale.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "specviz"
RANK = {"core": 0, "text": 1, "llm": 1, "analysis": 1, "views": 2, "figures": 3, "web": 4}
TOP = 5  # specviz/cli*.py, __init__.py, __main__.py, app.py, pages/
LAYERS = {  # each room (a folder of specviz/) and what it holds, for the module map
    "core": "the engine: the rules, the pair interface, the round, Monte Carlo, exact laws, "
            "draft-length policies, warps and the verification kinds (core/kinds)",
    "text": "n-gram models of text and prompt lookup, as model pairs",
    "llm": "the real model, Gemma 3 270M in f32 NumPy: its file, tokenizer, forward pass, "
           "drafts, decoding, and this machine's rates",
    "analysis": "statistics and the exactness audit, closed forms, the roofline, the planner, "
                "and what serving systems report",
    "views": "page data: what each page and the CLI show, computed from the layers below "
             "(no Streamlit, no figures)",
    "figures": "pure Plotly and HTML builders: data in, go.Figure out",
    "web": "the only Streamlit imports: the page frame, the URL's settings, widgets, the "
           "server process, the contract with Streamlit (stcontract), CSS and scripts (assets)",
}


def _layer(path: Path) -> int:
    rel = path.relative_to(ROOT).parts
    if rel[0] != "specviz" or len(rel) == 2:
        return TOP
    return RANK[rel[1]]


def _room(module: str) -> str:
    """The folder of specviz/ a module name is in ("top" for the CLI, pages and app.py)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in RANK else "top"


def _name(path: Path) -> str:
    """A source file's module name ("specviz.core.rule"; "pages.1_round", "app")."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, text: str | None = None):
    """(line, absolute module name) for every import in the file (text, when given, in place
    of the file's), relative ones resolved; `from package import module` names the module."""
    tree = ast.parse(path.read_text() if text is None else text, filename=str(path))
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{mod}.{a.name}"
                yield node.lineno, sub if _is_module(sub) else mod


@cache
def _is_module(name: str) -> bool:
    where = ROOT / Path(*name.split("."))
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def _target_rank(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "specviz":
        return None
    return RANK.get(parts[1], TOP) if len(parts) > 1 else TOP


def _sources() -> dict[Path, str]:
    files = [*sorted(PKG.rglob("*.py")), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]
    return {path: path.read_text() for path in files}


def wrong_arrows(sources: dict[Path, str]) -> list[str]:
    """Imports that point up the layers, or sideways into a sibling layer's room."""
    bad = []
    for path, text in sources.items():
        here, room = _layer(path), _room(_name(path))
        for line, module in _imports(path, text):
            there = _target_rank(module)
            if there is None or here == TOP:
                continue
            if there > here:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} (up)")
            elif there == here and _room(module) != room:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} (a sibling)")
    return bad


def import_graph(sources: dict[Path, str]) -> dict[str, set[str]]:
    """module -> the modules it imports (anywhere in it, at the top or in a function)."""
    names = {_name(path) for path in sources}
    graph = {}
    for path, text in sources.items():
        out = set()
        for _, module in _imports(path, text):
            while module and module not in names:  # a name inside a module: the module
                module = module.rpartition(".")[0]
            out.add(module)
        graph[_name(path)] = out - {"", _name(path)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_imports_point_down_the_layers_never_sideways():
    bad = wrong_arrows(_sources())
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_no_modules_import_each_other_in_a_circle():
    found = cycles(import_graph(_sources()))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_see_an_upward_a_sideways_and_a_circular_import():
    """Negative controls on real files with one line added each."""
    sources = _sources()
    rule, stats = PKG / "core" / "rule.py", PKG / "analysis" / "stats.py"
    tables = PKG / "core" / "tables.py"  # core.warp imports it
    wrong = {**sources, rule: sources[rule] + "\nfrom ..web import ui\n",
             stats: sources[stats] + "\nfrom ..text import corpus\n"}
    assert sorted(wrong_arrows(wrong)) == [
        f"specviz/analysis/stats.py:{sources[stats].count(chr(10)) + 2} imports "
        "specviz.text.corpus (a sibling)",
        f"specviz/core/rule.py:{sources[rule].count(chr(10)) + 2} imports specviz.web.ui (up)"]
    assert "specviz.core.tables" in import_graph(sources)["specviz.core.warp"]
    circle = {**sources, tables: sources[tables] + "\nfrom .warp import temper\n"}
    (found,) = cycles(import_graph(circle))
    assert {"specviz.core.tables", "specviz.core.warp"} <= set(found), found


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


# ----------------------------------------------------------------------------- the map
def _summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""
    return " ".join(doc.split("\n\n")[0].split()) or "(no docstring)"


def module_map() -> str:
    """docs/ARCHITECTURE.md: the layers, bottom up, each room's modules with their summaries."""
    out = ["# specviz: the layers and their rooms", "",
           "<!-- Made by tests/test_layers.py from the code (its LAYERS and each module's "
           "docstring): `.venv/bin/python tests/test_layers.py > docs/ARCHITECTURE.md`. "
           "The test fails when this file is stale. -->", "",
           "Data flows one way: core -> text, llm and analysis (siblings: none imports "
           "another) -> views -> figures -> web -> the pages and the CLI. An import may "
           "only point down the layers, and no modules import each other in a circle "
           "(tests/test_layers.py).", ""]
    for room, holds in sorted(LAYERS.items(), key=lambda kv: (RANK[kv[0]], kv[0])):
        out += [f"## {room}/ (layer {RANK[room]}): {holds}", ""]
        out += [f"- `{path.relative_to(PKG).as_posix()}`: {_summary(path)}"
                for path in sorted((PKG / room).rglob("*.py")) if path.name != "__init__.py"
                or path.parent != PKG / room]
        out.append("")
    out += [f"## At the top (layer {TOP}): the CLI, the app and its pages", ""]
    pages = sorted((ROOT / "pages").glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
    top = [*sorted(PKG.glob("*.py")), ROOT / "app.py", *pages]
    out += [f"- `{path.relative_to(ROOT).as_posix()}`: {_summary(path)}" for path in top]
    return "\n".join(out) + "\n"


def test_the_module_map_is_the_code():
    made, kept = module_map(), (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    missing = [line for line in made.splitlines() if line.startswith("- `")
               and line.split("`")[1] not in kept]
    assert not missing, "modules missing from docs/ARCHITECTURE.md (regenerate it, see " \
        "tests/test_layers.py):\n" + "\n".join(missing)
    assert kept == made, "docs/ARCHITECTURE.md is stale: regenerate it (see tests/test_layers.py)"


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


if __name__ == "__main__":
    sys.stdout.write(module_map())
