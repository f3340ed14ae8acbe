"""The app's style sheets, browser scripts and HTML snippets, as files of their own (this
folder), read once and filled in safely.

A file's {{ name }} placeholders take the values given by name, every one (a placeholder
without a value or a value without a placeholder is an error), each written so that it
cannot end the rule, string or element it sits in: in CSS a class name, a colour or a
number only; in a script a JSON value ("</" cannot close the script); in HTML escaped text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
CSS_VALUE = re.compile(r"#?[\w.%-]+")  # a class name, a colour, a number (with its unit)
SELECTOR_NAME = re.compile(r'data-testid="(\w[\w-]*)"|\.(st[A-Z]\w*)')  # Streamlit's, in CSS


@cache
def text(name: str) -> str:
    """The file's text, as it is (read once per process)."""
    return (HERE / name).read_text(encoding="utf-8")


def _fill(name: str, values: dict[str, object], write: Callable[[object], str]) -> str:
    body = text(name)
    wanted = set(PLACEHOLDER.findall(body))
    if wanted != set(values):
        raise ValueError(f"{name} takes {sorted(wanted)}; given {sorted(values)}")
    return PLACEHOLDER.sub(lambda m: write(values[m[1]]), body)


def _css_value(value: object) -> str:
    out = format(value, "g") if isinstance(value, float) else str(value)
    if not CSS_VALUE.fullmatch(out):
        raise ValueError(f"not a class name, colour or number for a style sheet: {out!r}")
    return out


def _js_value(value: object) -> str:
    return json.dumps(value).replace("<", "\\u003c")  # "</script>" cannot end the script


def css(name: str, **values: object) -> str:
    """The style sheet `name` with its placeholders filled."""
    return _fill(name, values, _css_value)


def js(name: str, **values: object) -> str:
    """The script `name` with its placeholders filled, each a JSON value."""
    return _fill(name, values, _js_value)


def html_text(name: str, **values: object) -> str:
    """The HTML snippet `name` with its placeholders filled, each as escaped text."""
    return _fill(name, values, lambda v: html.escape(str(v)))


def selectors() -> list[str]:
    """Streamlit's names the style sheets and scripts select: data-testid values and st*
    class names (web.stcontract checks them against the installed frontend)."""
    found = set()
    for path in sorted(HERE.iterdir()):
        if path.suffix in (".css", ".js", ".html"):
            found |= {a or b for a, b in SELECTOR_NAME.findall(path.read_text(encoding="utf-8"))}
    return sorted(found)
