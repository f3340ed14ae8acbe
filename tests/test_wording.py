"""What a reader sees never points at a file they cannot open: the product cites the
papers and the from-scratch tutorial by name, never a notes file outside the repository."""

from __future__ import annotations

from pathlib import Path

from specviz.core.rules import RULES

ROOT = Path(__file__).resolve().parents[1]


def _shipped():
    yield from (ROOT / "specviz").rglob("*.py")
    yield from (ROOT / "pages").glob("*.py")
    yield ROOT / "app.py"
    yield ROOT / "README.md"


def test_no_shipped_text_names_spec_md():
    bad = [str(p.relative_to(ROOT)) for p in _shipped() if "SPEC.md" in p.read_text()]
    assert not bad, bad


def test_rule_sources_cite_what_a_reader_can_find():
    for rule in RULES.values():
        assert "SPEC" not in rule.source, rule.name
