"""The acceptance parsers import downwards only (record <- formats <- servermetrics), and the
small things they share live once: the quoting helpers, a dtype's bytes, the served types."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from specviz.analysis import gauges, llamalog, pasted, planner, record, serverformats, shape
from specviz.cli import build_parser
from specviz.web import settings

ANALYSIS = Path(inspect.getfile(record)).parent


def _imported(module) -> set[str]:
    """The sibling modules a module imports (relative imports inside specviz.analysis)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out |= {node.module} if node.module else {a.name for a in node.names}
    return out


def test_the_formats_never_import_servermetrics():
    for m in (record, serverformats, llamalog, gauges):
        assert "servermetrics" not in _imported(m), m.__name__


def test_quoting_helpers_and_dtype_bytes_are_defined_once():
    defs = {}
    for path in ANALYSIS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                defs.setdefault(node.name, []).append(path.name)
    assert defs["listed"] == ["pasted.py"] and defs["cut"] == ["pasted.py"]
    assert "_bytes" not in defs and defs["dtype_bytes"] == ["shape.py"]
    assert pasted.listed(["ab" * 50], chars=10) == pasted.cut("ab" * 50, 10)
    assert not hasattr(planner, "_bytes")


def test_the_page_and_the_cli_offer_the_same_served_types():
    plan = build_parser()._subparsers._group_actions[0].choices["plan"]
    choices = {a.dest: tuple(a.choices) for a in plan._actions if a.choices}
    assert choices["set_target_dtype"] == choices["set_kv_dtype"] == shape.SERVED_DTYPES
    assert all(settings.FIELD[f"plan_{k}dtype"].parse.options is shape.SERVED_DTYPES
               for k in ("t", "d", "kv"))
    assert "fp32" not in shape.SERVED_DTYPES


def test_one_catalogue_of_model_presets():
    """/roofline, /plan and both CLIs offer the shipped config.json files, read once: no
    preset is written in code."""
    from specviz.analysis import modelcfg

    files = sorted(p.stem for p in (ANALYSIS / "presets").glob("*.json"))
    assert list(modelcfg.PRESETS) == files and "Llama-2-7B" in files and "Qwen3-32B" in files
    assert all(modelcfg.preset(n) is modelcfg.PRESETS[n] for n in files)
    roofline_cli = {a.dest: a.choices for a in build_parser()._actions}["preset"]
    assert list(roofline_cli) == files
    assert settings.PRESETS is modelcfg.PRESETS and settings.preset_names() == tuple(files)
    for path in ANALYSIS.glob("*.py"):
        assert "ModelShape(\"" not in path.read_text(), path.name
