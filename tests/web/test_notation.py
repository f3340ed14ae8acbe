from __future__ import annotations

import plotly.graph_objects as go
import pytest

from specviz.web.notation import letters, swap, swap_figure


@pytest.mark.parametrize(
    "text, chen",
    [
        ("min(1, p/q)", "min(1, q/p)"),
        ("norm(max(0, p - q))", "norm(max(0, q - p))"),
        ("p(x) = 0 is never accepted", "q(x) = 0 is never accepted"),
        ("p_(j+1) = norm(max(0, p_j - q))", "q_(j+1) = norm(max(0, q_j - p))"),
        ("the p-value and top-p stay; so do apple and quick", None),
        ("p50 and p95 latency", None),
        ("rule 'topk_q' and the chi-square p", None),
    ],
)
def test_swap(text, chen):
    assert swap(text, "leviathan") == text
    assert swap(text, "chen") == (text if chen is None else chen)
    assert swap(swap(text, "chen"), "chen") == text  # an involution


def test_letters():
    assert letters("leviathan").target == "p" and letters("chen").target == "q"
    with pytest.raises(ValueError, match="notation"):
        letters("greek")


def test_swap_figure_relabels_and_copies():
    fig = go.Figure(go.Bar(x=[1], y=[2], name="p (target)", hovertemplate="p = %{y}"))
    fig.update_layout(title="p and q", xaxis_title="q(x)",
                      annotations=[dict(text="min(1, p/q)", x=0, y=0)])
    out = swap_figure(fig, "chen")
    assert out.data[0].name == "q (target)" and out.data[0].hovertemplate == "q = %{y}"
    assert out.layout.title.text == "q and p" and out.layout.xaxis.title.text == "p(x)"
    assert out.layout.annotations[0].text == "min(1, q/p)"
    assert fig.data[0].name == "p (target)"  # the original is untouched


def test_swap_figure_reaches_every_axis_and_keeps_the_template():
    fig = go.Figure(go.Bar(x=[1], y=[2], legendgroup="q rows", text="p", yaxis="y2"))
    fig.update_layout(template="none", yaxis_title="p(x)", yaxis2=dict(title="q(x)",
                                                                       overlaying="y"))
    out = swap_figure(fig, "chen")
    assert out.data[0].legendgroup == "p rows" and out.data[0].text == "q"
    assert (out.layout.yaxis.title.text, out.layout.yaxis2.title.text) == ("q(x)", "p(x)")
    assert out.layout.template == fig.layout.template  # still none: not Plotly's default


def test_swap_tables_renames_the_tables_with_the_letters():
    from specviz.web.notation import swap_tables

    assert swap_tables("Tables (target P, draft Q)", "chen") == "Tables (target Q, draft P)"
    assert swap_tables("mix of P and junk: alpha p + (1 - alpha) junk", "chen") == (
        "mix of Q and junk: alpha q + (1 - alpha) junk")
    assert swap_tables("Tables (target P, draft Q)", "leviathan") == "Tables (target P, draft Q)"
    assert swap_tables("PQ and NP stay", "chen") == "PQ and NP stay"


def test_the_letters_rename_the_sidebar():
    from pathlib import Path

    from support import run_page

    root = Path(__file__).resolve().parents[2]
    at = run_page(str(root / "pages" / "5_cost.py"), notation="chen")
    labels = [e.label for e in at.sidebar.expander]
    assert "Tables (target Q, draft P)" in labels, labels
    draft = at.sidebar.radio(key="w_draft")
    assert list(draft.options) == ["table P", "mix of Q and junk"]
