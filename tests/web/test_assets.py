"""web/assets: the style sheets and scripts are files, filled in by name and safely."""

from __future__ import annotations

import json

import pytest

from specviz.web import assets


def test_every_placeholder_takes_a_value_and_every_value_a_placeholder():
    with pytest.raises(ValueError, match=r"takes \['key', 'px'\]; given \['key'\]"):
        assets.css("min_width.css", key="k")
    with pytest.raises(ValueError, match="given"):
        assets.css("min_width.css", key="k", px=3, colour="#fff")
    assert assets.css("min_width.css", key="k", px=3).startswith(".st-key-k { min-width: 3px")


@pytest.mark.parametrize("value", ["a} body { display: none", "x;y", "'a'", "<b>", "a b", ""])
def test_a_style_sheet_takes_names_colours_and_numbers_only(value):
    with pytest.raises(ValueError, match="not a class name, colour or number"):
        assets.css("min_width.css", key=value, px=3)


def test_a_script_value_is_json_that_cannot_end_the_script():
    js = assets.js("share_sync.js", sync_ms="</script><script>alert(1)//")
    assert "</script>" not in js and "\\u003c/script>" in js
    keys = {"ArrowRight": "next"}
    js = assets.js("step_queue.js", keys=keys, marker="sv-play", queue_max=1, wait_ms=2,
                   poll_ms=3)
    assert f"keys: {json.dumps(keys)}" in js and "{{" not in js


def test_html_values_are_escaped_text():
    h = assets.html_text("copy_link.html", label='<img src=x onerror="alert(1)">')
    assert "<img" not in h and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in h


def test_every_asset_is_used_by_a_module():
    from pathlib import Path

    code = "".join(p.read_text() for p in Path(assets.__file__).parents[1].glob("*.py"))
    files = [p.name for p in assets.HERE.iterdir() if p.suffix in (".css", ".js", ".html")]
    assert files and all(f'"{name}"' in code or f"'{name}'" in code for name in files), files
