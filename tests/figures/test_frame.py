"""What every chart shares so that it reads on a phone (figures.frame), and where /cost puts
its value labels: every figure of the chart pages keeps its legend in a strip of its own
under the plot, wraps long legend entries, keeps panel titles short and draws point labels
unclipped; on the falling speedup curve each label sits in a quadrant the curve never
enters, clear of the break-even lines whenever one of the two quadrants is."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scenarios import sc

from specviz.analysis import acceptance, planner
from specviz.core.dynamic import run_policies
from specviz.core.tables import default_tables
from specviz.figures import charts, costcharts, frame, methods, plan, rulecharts, surfaces, textfigs
from specviz.views import demos, gallery, pagedata
from specviz.views import methods as method_rows
from specviz.views.plan import PlanSettings, example_text, plan_page


@pytest.fixture(scope="module")
def figures() -> dict:
    """One of each figure the chart pages draw (small runs)."""
    d = default_tables()
    ex = demos.exactness(sc(d.P, d.Q, 0, 4, seed=1), n=2_000, rules=pagedata.EXACTNESS_RULES)
    conv = demos.convergence(sc(d.P, d.Q, 0, 4, seed=1),
                             ns=(200, 2_000), rules=pagedata.EXACTNESS_RULES)
    alpha = pagedata.reprice(demos.draft_sweep(sc(d.P, d.Q, 0, 4, seed=0), "alpha",
                                               (0.0, 0.5, 1.0), c=0.0, n_rounds=500), 0.1, 4)
    ks = pagedata.reprice(demos.k_sweep(sc(d.P, d.Q, 0, seed=0),
                                        c=0.0, ks=(1, 2, 4), n_rounds=500), 0.1)
    k_curve = pagedata.k_curve(sc(d.P, d.Q, 0), c=0.1, ks=(1, 2, 4))
    cm = demos.cost_model(sc(d.P, d.Q, 0, 4), costs=pagedata.COST_GRID)
    surface = demos.speedup_surface(0.7)
    page = pagedata.roofline_page()
    g = gallery.gallery(sc(d.P, d.Q, 0, 4, seed=0), n=1_000)
    runs = run_policies(sc(d.P, d.Q, 0, 4, seed=1), length=300)
    p = plan_page(PlanSettings(metrics_text=example_text("vllm_metrics.prom"), gpu="H100"))
    drafters = [{"drafter": name, "tokens per call": 2.0, "speedup": 1.5, "c": 0.1}
                for name in ("ngram", "lookup")]
    orders = [{"draft order": o, "smaller than target": o < 3, "acceptance": 0.5,
               "beta": 0.6, "tokens per call": 2.0, "speedup": 1.5} for o in (1, 2, 3)]
    assert isinstance(p.plan, planner.Plan) and isinstance(p.report,
                                                            acceptance.AcceptanceReport)
    return {
        "tv_bars": charts.tv_bars(pagedata.exactness_rows(ex), ex.direct_tv),
        "marginal": charts.marginal_bars(pagedata.marginal_rows(ex, "correct", d.vocab),
                                         "correct"),
        "convergence": charts.convergence_figure(conv, ex),
        "sweep": charts.sweep_figure(alpha, pagedata.draft_curve(sc(d.P, d.Q, 0, 4), "alpha",
                                                                 (0.0, 1.0), c=0.1),
                                     "alpha", "alpha (mix weight)", "alpha sweep"),
        "k_sweep": charts.k_sweep_figure(ks, k_curve, demos.best_row(ks)),
        "cost": costcharts.cost_curve(cm, pagedata.slow_cases(cm, (0.1, 0.6, 1.0))),
        "surface_3d": surfaces.surface_3d(surface),
        "surface_heatmap": surfaces.surface_heatmap(surface),
        "roofline": costcharts.roofline_figure(page),
        "pass_time": costcharts.pass_time_figure(page),
        "batch": rulecharts.batch_figure(pagedata.batch_curve("Llama-2-7B", "H100 SXM", 2.5, 4,
                                                          0.1, 512, "fp16", False), 8),
        "gallery": rulecharts.gallery_figure(gallery.gallery_rows(g), g.threshold, g.n),
        "production": rulecharts.production_figure(gallery.production(
            sc(d.P, d.Q, 0, 4, rule="correct", seed=0), params=None, n_rounds=2_000)),
        "policy_k": rulecharts.policy_k_figure(runs, pagedata.policy_rows(runs, 0.1), 50),
        "warps": methods.warp_figure(method_rows.warp_sweep(sc(d.P, d.Q, 0, 4), draft=False)),
        "frontier": plan.frontier_figure(p.plan), "best_k": plan.best_k_figure(p.plan),
        "plan_acceptance": plan.acceptance_figure(p.report),
        "drafters": textfigs.drafter_figure(drafters),
        "orders": textfigs.order_figure(orders, 4),
    }


def test_every_legend_has_a_strip_of_its_own_under_the_plot(figures):
    for name, fig in figures.items():
        legend = fig.layout.legend
        assert (legend.yref, legend.y, legend.yanchor) == ("container", 0.0, "bottom"), name
        assert legend.orientation == "h" and (legend.x, legend.xanchor) == (0.0, "left"), name


def test_no_legend_entry_is_wider_than_a_phone(figures):
    for name, fig in figures.items():
        for tr in fig.data:
            if tr.name and tr.showlegend is not False:
                lines = tr.name.split("<br>")
                assert all(len(line) <= frame.LEGEND_LINE + 8 for line in lines), (name, lines)


def test_panel_titles_fit_their_share_of_a_phone(figures):
    """A panel of a row of n gets about 1/n of a phone's plot: about 60 / n characters."""
    for name, fig in figures.items():
        grid = fig._grid_ref  # None unless made by make_subplots
        if not grid or len(grid) != 1:
            continue  # one row of panels only
        titles = [a.text for a in fig.layout.annotations if a.yanchor == "bottom"
                  and a.xref == "paper" and a.yref == "paper"]
        for title in titles:
            assert all(len(line) <= 60 // len(grid[0]) for line in title.split("<br>")), (
                name, title)


def test_two_line_panel_titles_have_room_under_the_figures_title(figures):
    """Panel titles on two lines sit higher than on one: the default 60 px top margin would
    draw them over the figure's own title (chartkit.layout's `top`)."""
    for name, fig in figures.items():
        titles = [a.text for a in fig.layout.annotations if a.yanchor == "bottom"
                  and a.xref == "paper" and a.yref == "paper"]
        if fig._grid_ref and any("<br>" in t for t in titles):
            assert fig.layout.margin.t >= 80, (name, fig.layout.margin.t)


def test_every_hover_says_what_its_trace_is_in_its_own_words(figures):
    """A hover text ends with Plotly's <extra> (chartkit.tip), empty or naming the trace:
    without it Plotly adds the trace's whole legend name in a box beside it."""
    for name, fig in figures.items():
        for tr in fig.data:
            hover = getattr(tr, "hovertemplate", None)
            assert hover is None or hover.endswith("</extra>"), (name, tr.name, hover)


def test_a_line_label_keeps_a_space_from_its_line(figures):
    """A vertical line's label (chartkit.vline) starts with a space when it sits right of
    the line and ends with one when it sits left of it."""
    labels = [(name, a) for name in ("cost", "roofline", "pass_time", "batch")
              for a in figures[name].layout.annotations
              if a.yref == "paper" and a.xref != "paper" and not a.showarrow]
    assert len(labels) >= 5
    for name, a in labels:
        assert a.text.startswith(" ") if a.xanchor == "left" else a.text.endswith(" "), (
            name, a.text)


def test_point_labels_are_never_clipped_at_the_axes(figures):
    labelled = 0
    for name in ("cost", "gallery"):
        for tr in figures[name].data:
            if tr.type == "scatter" and "text" in (tr.mode or ""):
                assert tr.cliponaxis is False, (name, tr.name)
                labelled += 1
    assert labelled >= 1  # the gallery's names are annotations (figures.labels), not text


@pytest.mark.parametrize(("text", "second"), [
    ("theory at alpha_eff (Leviathan et al. 2022, eq. 1, Thm 3.8)",
     "(Leviathan et al. 2022, eq. 1, Thm 3.8)"),  # a bracket opens the second line
    ("(1 − alpha^(k+1)) / (1 − alpha) (Leviathan et al. 2022, eq. 1)",
     "(Leviathan et al. 2022, eq. 1)"),
    ("speedup (H100 SXM, without the KV-cache read)", "without the KV-cache read)"),
    ("x" * 60, None), ("short", None),
])
def test_long_legend_entries_wrap_once_keeping_every_word(text, second):
    got = frame.wrap_line(text)
    if second is None:  # short, or nowhere to cut
        assert got == text
        return
    first, rest = got.split("<br>")
    assert f"{first} {rest}" == text and rest == second
    assert max(len(first), len(rest)) <= frame.LEGEND_LINE


# ----------------------------------------------------------------------------- /cost labels
def _box(spot: str, c: float, s: float, rx: float, ry: float) -> tuple[float, ...]:
    """A label's box (left, bottom, right, top) in data units at a text position."""
    v, h = spot.split()
    x0 = c if h == "right" else c - rx
    y0 = s if v == "top" else s - ry
    return x0, y0, x0 + rx, y0 + ry


def _clean(box, c_star: float, c_max: float, y_max: float) -> bool:
    """Inside the axes, and crossed by neither the c* line nor the speedup = 1 line."""
    x0, y0, x1, y1 = box
    inside = 0.0 <= x0 and x1 <= c_max and 0.0 <= y0 and y1 <= y_max
    return inside and not x0 < c_star < x1 and not y0 < 1.0 < y1


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_cost_labels_sit_clear_of_the_break_even_crossing(k):
    d = default_tables()
    cm = demos.cost_model(sc(d.P, d.Q, 0, k), costs=pagedata.COST_GRID)
    marks = pagedata.slow_cases(cm, [round(0.05 * i, 2) for i in range(41)])
    fig = costcharts.cost_curve(cm, marks)
    m = next(t for t in fig.data if t.name == "marked draft costs")
    c_max, y_max = pagedata.COST_GRID[-1], fig.layout.yaxis.range[1]
    rx, ry = costcharts.LABEL_REACH_X * c_max, costcharts.LABEL_REACH_Y * y_max
    for r, spot in zip(marks, m.textposition, strict=True):
        # the two quadrants a falling curve never enters
        assert spot in ("top right", "bottom left"), spot
        boxes = {s: _box(s, r["c"], r["speedup"], rx, ry) for s in ("top right", "bottom left")}
        if any(_clean(b, cm.break_even, c_max, y_max) for b in boxes.values()):
            assert _clean(boxes[spot], cm.break_even, c_max, y_max), (k, r, spot)


def test_the_break_even_marker_has_no_label_of_its_own_beside_it():
    d = default_tables()
    cm = demos.cost_model(sc(d.P, d.Q, 0, 4), costs=pagedata.COST_GRID)
    fig = costcharts.cost_curve(cm, pagedata.slow_cases(cm, (0.1, 0.6, 1.0)))
    star = next(t for t in fig.data if t.name == "break-even c*")
    assert star.mode == "markers"  # its value is written at the top of its line instead
    top = [a for a in fig.layout.annotations if a.yref == "paper" and a.y == 1.0
           and re.search(rf"c\* = {cm.break_even:.4f}", a.text)]
    assert len(top) == 1 and top[0].x == cm.break_even and top[0].xanchor == "left"
    spots = dict(zip(next(t for t in fig.data if t.name == "marked draft costs").x,
                     next(t for t in fig.data if t.name == "marked draft costs").textposition,
                     strict=True))
    assert spots[0.6] == "top right"  # 0.948x: bottom left would sit on the c* marker


def test_plotly_text_escapes_tags_but_keeps_quotes():
    """A token '"' must read as '"' on a bar's tick (Plotly prints &quot; as it stands),
    and a token '<b>' as text, not bold."""
    from support import narrated_round

    from specviz.core.pair import TablePair
    from specviz.figures import animation
    from specviz.figures.frame import svg_text

    assert svg_text('"<b>&\'') == '"&lt;b&gt;&amp;\''
    P = np.full((3, 3), 1 / 3)
    tr = narrated_round(TablePair(P, P, ('"', "<b>", "a")), 0, 2, rng=np.random.default_rng(0))
    ticks = animation.bars_figure(tr, 1).layout.xaxis.ticktext or ()
    text = json.dumps(animation.bars_figure(tr, 1).to_plotly_json())
    assert "&quot;" not in text and "&lt;b&gt;" in text, ticks
