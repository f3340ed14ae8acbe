"""The chart builders of specviz.figures, tested without Streamlit: traces, axes, values.

Also the page-level data functions they draw (the chart-pages section of specviz.demos).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from scenarios import sc

from specviz.analysis import roofline, theory
from specviz.analysis.stats import tv_threshold
from specviz.core.rules import RULES
from specviz.core.tables import default_tables
from specviz.figures import chartkit, charts, costcharts, rulecharts, surfaces
from specviz.views import demos, pagedata

ROOT = Path(__file__).resolve().parents[2]
RULES4 = pagedata.EXACTNESS_RULES


@pytest.fixture(scope="module")
def pair():
    return default_tables()


@pytest.fixture(scope="module")
def ex(pair):
    return demos.exactness(sc(pair.P, pair.Q, 0, 4, seed=1), n=5_000, rules=RULES4)


@pytest.fixture(scope="module")
def conv(pair):
    return demos.convergence(sc(pair.P, pair.Q, 0, 4, seed=1), ns=(200, 2_000), rules=RULES4)


def _trace(fig: go.Figure, name_part: str):
    """The one trace whose name (a legend entry's line break read as a space) holds name_part."""
    hits = [t for t in fig.data if t.name and name_part in t.name.replace("<br>", " ")]
    assert len(hits) == 1, [t.name for t in fig.data]
    return hits[0]


def _vlines(fig: go.Figure) -> list[float]:
    return sorted(s.x0 for s in fig.layout.shapes if s.x0 == s.x1 and s.xref != "paper")


def _hlines(fig: go.Figure) -> list[float]:
    return sorted(s.y0 for s in fig.layout.shapes if s.y0 == s.y1 and s.yref != "paper")


@pytest.mark.parametrize("module", ["charts", "costcharts", "rulecharts", "chartkit"])
def test_figures_module_is_pure(module):
    src = (ROOT / "specviz" / "figures" / f"{module}.py").read_text()
    assert "streamlit" not in src
    assert "random" not in src  # no sampling in a builder


# ----------------------------------------------------------------------------- exactness
def test_tv_bars_values_threshold_and_log_axis(ex):
    rows = pagedata.exactness_rows(ex)
    fig = charts.tv_bars(rows, ex.direct_tv)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 and len(fig.data) == 5  # + floor, threshold (legend), direct
    assert list(bars[0].x) == list(RULES4)
    assert list(bars[0].y) == [r["mc_tv"] for r in rows]
    assert list(bars[1].y) == [r["exact_tv"] for r in rows]
    line = tv_threshold(ex.target, ex.n)
    assert rows[0]["threshold"] == pytest.approx(line)
    assert _hlines(fig) == pytest.approx(sorted([line, rows[0]["floor"]]))
    assert fig.layout.yaxis.type == "log"
    lo, hi = fig.layout.yaxis.range
    assert 10**lo < rows[0]["floor"] and 10**hi > max(r["mc_tv"] for r in rows)
    assert _trace(fig, "pass threshold").name == f"pass threshold {line:.5f}"
    assert _trace(fig, "directly").y[0] == ex.direct_tv


def test_tv_bars_with_a_deterministic_target():
    """A one-hot target: floor 0 and TV 0 everywhere; the log axis still gets a finite range."""
    rows = [{"rule": "correct", "mc_tv": 0.0, "exact_tv": 0.0, "floor": 0.0,
             "threshold": 0.02}]
    fig = charts.tv_bars(rows)
    lo, hi = fig.layout.yaxis.range
    assert math.isfinite(lo) and math.isfinite(hi) and lo < math.log10(0.02) < hi
    assert _hlines(fig) == [0.02]
    assert fig.to_json()


def test_exactness_rows_one_per_rule(ex):
    rows = pagedata.exactness_rows(ex)
    assert [r["rule"] for r in rows] == list(RULES4)
    correct = rows[0]
    assert correct["exact_tv"] < 1e-12 and correct["lossless"]
    assert rows[1]["exact_tv"] > 0.1  # greedy is badly biased on the default pair


def test_marginal_bars_match_the_laws(ex, pair):
    rows = pagedata.marginal_rows(ex, "greedy", pair.vocab)
    fig = charts.marginal_bars(rows, "greedy")
    assert [t.type for t in fig.data] == ["bar", "bar", "scatter"]
    assert list(fig.data[0].x) == list(pair.vocab)
    assert np.allclose(fig.data[0].y, pair.P[0])  # first token of the target: p(.|a)
    assert np.allclose(fig.data[1].y, pagedata.audit_of(ex, "greedy").mc_law.sum(axis=1))
    assert np.allclose(fig.data[2].y, pagedata.audit_of(ex, "greedy").exact_law.sum(axis=1))
    assert sum(fig.data[1].y) == pytest.approx(1.0)


def test_audit_of_unknown_rule(ex):
    with pytest.raises(ValueError, match="not audited"):
        pagedata.audit_of(ex, "inclusive_coin")


def test_page_rules_adds_the_sidebar_rule():
    assert pagedata.page_rules("correct") == RULES4
    assert pagedata.page_rules("greedy") == RULES4
    other = [r for r in RULES if r not in RULES4]
    if other:
        assert pagedata.page_rules(other[0]) == (*RULES4, other[0])
    with pytest.raises(ValueError):
        pagedata.page_rules("no-such-rule")


def test_convergence_figure_log_log_floor_and_bias(conv, ex):
    fig = charts.convergence_figure(conv, ex)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    floor = _trace(fig, "sampling floor")
    # the sweep's floor, extended by this run's n (5,000 lies between 2,000 and ... the end)
    assert list(floor.x) == [200, 2_000, 5_000]
    assert list(floor.y) == pytest.approx([*conv.floor, ex.audits[0].audit.floor])
    for rule in RULES4:
        (mc,) = [t for t in fig.data if t.name == rule]  # the legend entry: the rule's name
        assert list(mc.x) == [200, 2_000] and list(mc.y) == conv.mc_tv[rule]
    for rule in ("greedy", "no_resample", "continue"):
        bias = _trace(fig, f"{rule} exact bias")
        assert bias.line.dash == "dash" and bias.showlegend is False and bias.legendgroup == rule
        assert list(bias.y) == [conv.exact_tv[rule]] * 2
        assert list(bias.x) == [200, 5_000]
    assert not [t for t in fig.data if t.name == "correct exact bias"]  # 0: not on a log axis
    key = _trace(fig, "dashed: a rule's exact TV")  # one legend entry stands for every bias line
    assert key.line.dash == "dash" and list(key.x) == [None]
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert len(shown) == len(RULES4) + 3, shown  # floor, the rules, the key, this run
    run = _trace(fig, "this run")
    assert set(run.x) == {5_000} and list(run.y) == [a.audit.mc_tv for a in ex.audits]


def test_convergence_figure_without_run(conv):
    fig = charts.convergence_figure(conv)
    assert list(_trace(fig, "sampling floor").x) == [200, 2_000]
    assert not [t for t in fig.data if "this run" in (t.name or "")]


def test_joint_diff_heatmap_values(ex, pair):
    diff = pagedata.joint_diff(ex, "no_resample")
    a = pagedata.audit_of(ex, "no_resample")
    assert np.allclose(diff, a.mc_law - ex.target)
    assert diff.sum() == pytest.approx(0.0, abs=1e-12)
    fig = charts.joint_diff_heatmap(diff, pair.vocab, "no_resample")
    (hm,) = fig.data
    assert hm.type == "heatmap" and hm.zmid == 0.0
    assert np.array_equal(np.asarray(hm.z), diff)
    assert hm.zmax == pytest.approx(np.abs(diff).max()) and hm.zmin == -hm.zmax


# ----------------------------------------------------------------------------- acceptance
@pytest.fixture(scope="module")
def alpha_rows(pair):
    measured = demos.draft_sweep(sc(pair.P, pair.Q, 0, 4, seed=3), "alpha", (0.0, 0.5, 1.0),
                                 c=0.0, n_rounds=2_000)
    curve = pagedata.draft_curve(sc(pair.P, pair.Q, 0, 4), "alpha", (0.0, 0.5, 1.0), c=0.1)
    return pagedata.reprice(measured, 0.1, 4), curve


def test_reprice_equals_measuring_at_c(pair, alpha_rows):
    direct = demos.draft_sweep(sc(pair.P, pair.Q, 0, 4, seed=3), "alpha", (0.0, 0.5, 1.0),
                               c=0.1, n_rounds=2_000)
    for a, b in zip(alpha_rows[0], direct, strict=True):
        assert a == pytest.approx(b)


def test_curves_agree_with_theory(alpha_rows):
    _, curve = alpha_rows
    top = curve[-1]  # alpha = 1: the draft copies the target
    assert top["alpha_eff"] == pytest.approx(1.0)
    assert top["tokens_per_call_exact"] == pytest.approx(5.0)
    assert top["speedup_theory"] == pytest.approx(5.0 / 1.4)
    for r in curve:
        assert r["tokens_theory"] == pytest.approx(theory.expected_tokens(r["alpha_eff"], 4))
        assert r["acceptance_theory"] == pytest.approx((r["tokens_theory"] - 1) / 4)


def test_sweep_figure_three_panels(alpha_rows):
    measured, curve = alpha_rows
    fig = charts.sweep_figure(measured, curve, "alpha", "alpha", "t")
    assert len(fig.data) == 9  # measured, exact, theory in each of three panels
    acc, acc_exact, acc_theory = fig.data[:3]
    assert list(acc.x) == [0.0, 0.5, 1.0] and list(acc.y) == [r["acceptance"] for r in measured]
    assert list(acc_exact.y) == [r["acceptance_exact"] for r in curve]
    assert acc_theory.line.dash == "dash"
    tokens = fig.data[3]
    assert list(tokens.error_y.array) == [r["tokens_per_call_se"] for r in measured]
    speed = fig.data[6:]
    assert [t.xaxis for t in speed] == ["x3"] * 3
    assert list(speed[2].y) == [r["speedup_theory"] for r in curve]
    assert _hlines(fig) == [1.0]
    assert all(fig.layout[f"xaxis{i}"].type == "linear" for i in ("", "2", "3"))
    log = charts.sweep_figure(measured, curve, "alpha", "alpha", "t", log_x=True,
                               tickvals=(0.5, 1.0))
    assert all(log.layout[f"xaxis{i}"].type == "log" for i in ("", "2", "3"))
    assert list(log.layout.xaxis2.tickvals) == [0.5, 1.0]


# ----------------------------------------------------------------------------- draft length
def test_k_sweep_figure_best_k_at_argmax(pair):
    measured = pagedata.reprice(demos.k_sweep(sc(pair.P, pair.Q, 0, seed=2),
                                              c=0.0, ks=(1, 2, 4, 8, 16), n_rounds=2_000), 0.1)
    curve = pagedata.k_curve(sc(pair.P, pair.Q, 0), c=0.1, ks=range(1, 17))
    best = demos.best_row(measured)
    best_exact = demos.best_row(curve, "speedup_exact")
    fig = charts.k_sweep_figure(measured, curve, best, best_exact)
    star = _trace(fig, "best k")
    speeds = [r["speedup"] for r in measured]
    assert star.x[0] == measured[int(np.argmax(speeds))]["k"]
    assert star.y[0] == max(speeds)
    cost = _trace(fig, "cost of a round")
    assert list(cost.y) == pytest.approx([1 + 0.1 * k for k in range(1, 17)])
    theory_tokens = _trace(fig, "(1 − alpha^(k+1))")
    a = curve[0]["alpha_eff"]
    assert list(theory_tokens.y) == pytest.approx([(1 - a ** (k + 1)) / (1 - a)
                                                   for k in range(1, 17)])
    assert best_exact["k"] in _vlines(fig)
    assert 1 < best_exact["k"] < 16  # an interior best k


def test_reprice_uses_each_rows_k():
    rows = [{"k": 2, "cost": 0.0, "tokens_per_call": 2.0, "tokens_per_call_exact": 2.5,
             "alpha_eff": 0.5}]
    (r,) = pagedata.reprice(rows, 0.25)
    assert r["cost"] == 1.5
    assert r["speedup"] == pytest.approx(2.0 / 1.5)
    assert r["speedup_exact"] == pytest.approx(2.5 / 1.5)
    assert r["speedup_theory"] == pytest.approx(1.75 / 1.5)
    assert rows[0]["cost"] == 0.0  # the input is not modified


# ----------------------------------------------------------------------------- cost
@pytest.fixture(scope="module")
def cm(pair):
    return demos.cost_model(sc(pair.P, pair.Q, 0, 4), costs=pagedata.COST_GRID)


def test_cost_curve_break_even(cm):
    marks = pagedata.slow_cases(cm, (0.1, 0.6, 1.0))
    fig = costcharts.cost_curve(cm, marks)
    curve = _trace(fig, "speedup at k = 4")
    assert list(curve.x) == list(pagedata.COST_GRID)
    assert list(curve.y) == [r["speedup"] for r in cm.rows]
    star = _trace(fig, "break-even")
    assert star.x[0] == cm.break_even and star.y[0] == 1.0
    assert theory.speedup(cm.tokens_per_call, 4, cm.break_even) == pytest.approx(1.0)
    assert _hlines(fig) == [1.0]
    assert cm.break_even in _vlines(fig)
    m = _trace(fig, "marked")
    assert list(m.x) == [0.1, 0.6, 1.0]
    assert [r["slower"] for r in marks] == [c > cm.break_even for c in (0.1, 0.6, 1.0)]
    assert [r["slower"] for r in marks] == [r["speedup"] < 1 for r in marks]


def test_surface_figures(pair):
    alpha = 0.78
    surface = demos.speedup_surface(alpha)
    point = pagedata.surface_point(surface, 7, 0.2)
    line = pagedata.break_even_curve(surface)
    fig = surfaces.surface_3d(surface, point, line)
    assert {t.type for t in fig.data} == {"scatter"}  # SVG only: no WebGL trace
    ribbons = [t for t in fig.data if t.fill == "toself"]
    assert len(ribbons) == len(surface.ks)
    # the oblique view from its description: x = u + dx d, y = speedup / top + dy d
    u = (np.log10(surface.cs) - np.log10(surface.cs[0])) / np.log10(surface.cs[-1] /
                                                                       surface.cs[0])
    back, front = (np.asarray(ribbons[i].y[:len(u)], float) for i in (0, -1))
    top = (surface.speedup[0, 0] - surface.speedup[0, -1]) / (front[0] - front[-1])
    dy = (back[0] - surface.speedup[-1, 0] / top) - front[0] + surface.speedup[0, 0] / top
    dx = np.asarray(ribbons[0].x[0], float) - u[0]
    assert top >= surface.speedup.max() and dx > 0 and dy > 0  # the back row up and right

    def at(c, k, s):
        dd = (np.asarray(k, float) - 1) / (surface.ks[-1] - 1)
        uu = (np.log10(c) - np.log10(surface.cs[0])) / np.log10(surface.cs[-1] / surface.cs[0])
        return uu + dx * dd, np.asarray(s, float) / top + dy * dd

    for i, rib in enumerate(ribbons):  # drawn from the back row to the front one
        k = surface.ks[-1 - i]
        x, y = at(surface.cs, k, surface.speedup[k - 1])
        np.testing.assert_allclose(np.asarray(rib.x[:len(u)], float), x, atol=1e-3)
        np.testing.assert_allclose(np.asarray(rib.y[:len(u)], float), y, atol=1e-3)
        np.testing.assert_allclose(np.asarray(rib.y[len(u):len(u) + 2], float),
                                   at(surface.cs[[-1, 0]], k, 0.0)[1], atol=1e-3)  # its floor
    ridge = _trace(fig, "ridge")
    rx, ry = at(surface.cs, surface.best_k, surface.speedup.max(axis=0))
    np.testing.assert_allclose(np.asarray(ridge.x, float), rx, atol=1e-3)
    np.testing.assert_allclose(np.asarray(ridge.y, float), ry, atol=1e-3)
    be = _trace(fig, "break-even")
    bx, by = at(np.array([r["c"] for r in line]), [r["k"] for r in line], 1.0)
    np.testing.assert_allclose(np.asarray(be.x, float), bx, atol=1e-3)
    np.testing.assert_allclose(np.asarray(be.y, float), by, atol=1e-3)
    for r in line:
        assert theory.walltime_speedup(alpha, r["k"], r["c"]) == pytest.approx(1.0)
    current = _trace(fig, "current settings")
    cx, cy = at(0.2, 7, theory.walltime_speedup(alpha, 7, 0.2))
    assert (current.x[0], current.y[0]) == pytest.approx((float(cx), float(cy)), abs=1e-3)
    hover = next(t for t in fig.data if t.name == "speedup")
    np.testing.assert_allclose(hover.customdata[:, 2], surface.speedup.ravel(), rtol=1e-6)
    labels = {a.text.strip() for a in fig.layout.annotations}
    assert {"0.001", "1", "k = 1", "k = 32"} <= labels  # c = 1 and both k ends labelled
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert xr[0] < 0 and xr[1] > 1 + dx and yr[0] < 0 and yr[1] >= 1 + dy  # nothing clipped
    assert pagedata.surface_point(surface, 7, 0.0) is None  # off the log axis

    hm = surfaces.surface_heatmap(surface, point, line)
    assert [t.type for t in hm.data] == ["heatmap", "scatter", "scatter", "scatter"]
    be = _trace(hm, "break-even")  # the closed form c*(k), one point per k: no kinks
    assert list(be.y) == [r["k"] for r in line] and list(be.x) == [r["c"] for r in line]
    mark = _trace(hm, "current settings")
    assert (mark.x[0], mark.y[0]) == (0.2, 7)
    assert hm.layout.xaxis.type == "log" and hm.layout.xaxis.dtick == 1
    np.testing.assert_allclose(np.asarray(hm.data[0].z), surface.speedup, atol=5e-5)


def test_surface_rows_long_format():
    surface = demos.speedup_surface(0.5, k_max=3, cs=np.array([0.01, 0.1]))
    rows = pagedata.surface_rows(surface)
    assert len(rows) == 6
    assert rows[1] == {"k": 1, "c": 0.1, "speedup": pytest.approx(1.5 / 1.1),
                       "best_k_at_c": int(surface.best_k[1])}


# ----------------------------------------------------------------------------- roofline
def test_roofline_page_and_figures():
    page = pagedata.roofline_page("Llama-2-7B", "H100 SXM", 4, 512, "fp16", 1)
    assert page.free_tokens == roofline.free_tokens("Llama-2-7B", "H100 SXM", 512)
    tokens = [r["tokens"] for r in page.rows]
    assert tokens[0] == 1 and tokens[-1] >= max(256, 2 * page.free_tokens)
    assert page.rows[0]["mpb_full"] == pytest.approx(0.50, abs=0.005)  # SPEC.md: 0.50
    assert page.rows[0]["mpb_tutorial"] == pytest.approx(0.38, abs=0.005)  # SPEC.md: 0.38
    # memory-bound: the 5-token pass reads only 4 more embedding rows (2e-6 of the bytes)
    assert page.free_for_k and page.verify_ratio == pytest.approx(1.0, rel=1e-5)

    fig = costcharts.roofline_figure(page)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    tut = _trace(fig, roofline.TUTORIAL_LABEL)
    full = [t for t in fig.data if t.name == roofline.FULL_LABEL]
    assert len(full) == 1 and list(full[0].y) == [r["mpb_full"] for r in page.rows]
    assert list(tut.y) == [r["mpb_tutorial"] for r in page.rows]
    chosen = roofline.ACCELERATORS["H100 SXM"]  # its ridge a line, the others one band
    ridge = _trace(fig, "ridge H100 SXM")
    assert set(ridge.y) == {chosen.ridge} and ridge.customdata[0] == chosen.source
    others = [a.ridge for a in roofline.ACCELERATORS.values() if a is not chosen]
    band = _trace(fig, "ridges of the other accelerators")
    assert (min(band.y), max(band.y)) == (min(others), max(others))
    for a in roofline.ACCELERATORS.values():  # each named, with its ridge, in the hover
        assert a is chosen or f"{a.name}: {a.ridge:.0f}" in band.hovertemplate
    assert not [t for t in fig.data if t.name.startswith("ridge ") and t is not ridge]
    assert _vlines(fig) == [5, page.free_tokens]
    xs = sorted(a.x for a in fig.layout.annotations)  # labels at log10 on the log axis
    assert xs == pytest.approx(sorted([math.log10(5), math.log10(page.free_tokens)]))

    t = costcharts.pass_time_figure(page)
    assert t.layout.xaxis.type == "log"
    ratio = _trace(t, "pass time")
    assert ratio.y[0] == 1.0 and ratio.y[-1] > 1.5  # compute-bound at the far end
    mark = _trace(t, "verify k + 1")
    assert (mark.x[0], mark.y[0]) == (5, page.verify_ratio)


def test_roofline_grid_reaches_twice_the_free_tokens():
    assert pagedata.roofline_grid(10)[-1] == 256
    assert pagedata.roofline_grid(300)[-1] == 1024
    assert pagedata.roofline_grid(10**6)[-1] == roofline.MAX_FREE_TOKENS
    grid = pagedata.roofline_grid(300)
    assert grid[0] == 1 and list(grid) == sorted(set(grid))


def test_not_free_when_the_batch_is_compute_bound():
    page = pagedata.roofline_page("Llama-2-7B", "A100 SXM 80GB", 31, 0, "fp16", 512)
    assert not page.free_for_k and page.verify_ratio > 1.0


def test_every_figure_serialises(ex, conv, cm, pair):
    figs = [charts.tv_bars(pagedata.exactness_rows(ex)), charts.convergence_figure(conv, ex),
            costcharts.cost_curve(cm), surfaces.surface_heatmap(demos.speedup_surface(0.6)),
            costcharts.roofline_figure(pagedata.roofline_page())]
    for f in figs:
        assert f.to_json()


# ----------------------------------------------------------------------------- beyond the paper
from specviz.core.dynamic import run_policies  # noqa: E402
from specviz.views import gallery  # noqa: E402


@pytest.fixture(scope="module")
def gal_rows(pair):
    g = gallery.gallery(sc(pair.P, pair.Q, 0, 4, seed=2), n=5_000)
    return gallery.gallery_rows(g), g


def test_gallery_figure_puts_exact_rules_on_the_zero_line(gal_rows):
    rows, g = gal_rows
    fig = rulecharts.gallery_figure(rows, g.threshold, g.n)
    by_family = {t.name: t for t in fig.data}
    assert set(by_family) == {"lossless", "lossy by design", "broken"}
    zero = min(_hlines(fig))
    assert _hlines(fig) == pytest.approx(sorted([zero, g.threshold]))
    assert zero < min(r["exact_tv"] for r in rows if r["exact_tv"] > 0)
    lossless = by_family["lossless"]
    assert set(lossless.y) == {zero} and set(lossless.marker.symbol) == {"diamond"}
    assert lossless.marker.color == rulecharts.FAMILY_COLOURS["lossless"]
    broken = by_family["broken"]
    exact = {r["rule"]: r for r in rows}
    for name, x, y in zip(broken.text, broken.x, broken.y, strict=True):
        assert y == exact[name]["exact_tv"] and x == exact[name]["acceptance_long_run"]
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.ticktext[0] == "0"
    assert fig.layout.yaxis.tickvals[0] == zero
    lo, hi = fig.layout.yaxis.range
    assert 10**lo < zero and 10**hi > max(r["exact_tv"] for r in rows)


def _label_boxes(places, texts):
    from specviz.figures import labels
    return [labels.text_box(p.x * labels.PLOT_W, (1 - p.y) * labels.PLOT_H, t)
            for p, t in zip(places, texts, strict=True)]


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_crowded_labels_get_boxes_clear_of_each_other_and_the_markers():
    from specviz.figures import labels
    xs, ys = [0.5, 0.51, 0.52, 0.5, 0.505], [0.5, 0.5, 0.5, 0.56, 0.53]
    texts = ["continue", "inclusive_coin", "ab", "cd", "warp_raw_q"]
    boxes = _label_boxes(labels.place(xs, ys, texts), texts)
    m = labels.MARKER_PX
    marks = [(x * labels.PLOT_W - m, (1 - y) * labels.PLOT_H - m, x * labels.PLOT_W + m,
              (1 - y) * labels.PLOT_H + m) for x, y in zip(xs, ys, strict=True)]
    for i, a in enumerate(boxes):
        assert not any(_overlaps(a, b) for b in boxes[i + 1:] + marks), (texts[i], a)


@pytest.mark.parametrize("seed", range(5))
def test_leader_lines_pass_no_other_label(seed):
    """Eight labels in a tight cluster (three or more need a leader line): no leader line,
    from a point to its label's centre, runs through another label's box (tested at 48
    points along it). Without the crossing term in the cost every one of these layouts
    has such a line."""
    import random

    from specviz.figures import labels
    rng = random.Random(seed)
    xs, ys = ([0.45 + rng.random() * 0.06 for _ in range(8)] for _ in range(2))
    texts = [rng.choice(["correct", "tree_iid", "ab", "warp_raw_q"]) for _ in range(8)]
    places = labels.place(xs, ys, texts)
    boxes = _label_boxes(places, texts)
    assert sum(p.leader for p in places) >= 3
    for i, p in enumerate(places):
        if not p.leader:
            continue
        a = (xs[i] * labels.PLOT_W, (1 - ys[i]) * labels.PLOT_H)
        b = (p.x * labels.PLOT_W, (1 - p.y) * labels.PLOT_H)
        line = [(a[0] + (b[0] - a[0]) * t / 48, a[1] + (b[1] - a[1]) * t / 48)
                for t in range(1, 48)]
        for j, box in enumerate(boxes):
            hit = [pt for pt in line if box[0] < pt[0] < box[2] and box[1] < pt[1] < box[3]]
            assert j == i or not hit, (texts[i], "crosses", texts[j])


def test_gallery_labels_never_overlap(gal_rows):
    from specviz.figures import labels
    rows, g = gal_rows
    fig = rulecharts.gallery_figure(rows, g.threshold, g.n)
    names = [a for a in fig.layout.annotations if (a.name or "").startswith("label ")]
    assert sorted(a.text for a in names) == sorted(r["rule"] for r in rows)
    # drawn at least GALLERY_MIN_PX wide (the page's min_width), the plot area holds them
    assert {a.font.size for a in names} == {rulecharts.GALLERY_LABEL_PX}
    m = fig.layout.margin
    assert rulecharts.GALLERY_MIN_PX - m.l - m.r >= labels.clear_width(rulecharts.GALLERY_LABEL_PX)
    lo, hi = fig.layout.yaxis.range
    x0, x1 = fig.layout.xaxis.range
    places = [labels.Place((a.ax if a.showarrow else a.x) - x0, 0, False) for a in names]
    ys = [((a.ay if a.showarrow else a.y) - lo) / (hi - lo) for a in names]
    places = [labels.Place(p.x / (x1 - x0), y, False) for p, y in zip(places, ys, strict=True)]
    boxes = _label_boxes(places, [a.text for a in names])
    for i, a in enumerate(boxes):
        assert 0 <= a[0] and a[2] <= labels.PLOT_W and 0 <= a[1] and a[3] <= labels.PLOT_H
        assert not any(_overlaps(a, b) for b in boxes[i + 1:]), names[i].text


def test_production_figure_overlays_theory(pair):
    rep = gallery.production(sc(pair.P, pair.Q, 0, 4, rule="correct", seed=0),
                             params=None, n_rounds=3_000)
    fig = rulecharts.production_figure(rep)
    theory_pp = _trace(fig, "i.i.d. theory")
    assert list(theory_pp.x) == [1, 2, 3, 4]
    assert np.allclose(theory_pp.y, rep.alpha ** np.arange(1, 5))
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 1 and np.allclose(bars[0].y, rep.histogram["measured"])
    cap = [t for t in fig.data if t.name == "theory"][0]
    assert np.allclose(cap.y, theory.acceptance_histogram(rep.alpha, 4))


def test_policy_rows_and_k_figure(pair):
    runs = run_policies(sc(pair.P, pair.Q, 0, 4, seed=1), length=500)
    assert pagedata.dynamic_runs(sc(pair.P, pair.Q, 0, 4, seed=1),
                                 length=500)["heuristic"].ks == runs[
        "heuristic"].ks
    rows = pagedata.policy_rows(runs, 0.25)
    for r in rows:
        run = runs[r["policy"]]
        assert r["speedup"] == pytest.approx(run.tokens / (run.rounds
                                                           + 0.25 * run.drafted))
        assert r["mean_k"] == pytest.approx(np.mean(run.ks))
    fig = rulecharts.policy_k_figure(runs, rows, shown=50)
    assert len(fig.data) == 4
    assert [list(t.y) for t in fig.data] == [runs[p].ks for p in runs]
    assert fig.layout.xaxis.range == (-0.5, 49.5)
    assert pagedata.dynamic_k_max(4) == pagedata.DYN_K_MAX and pagedata.dynamic_k_max(30) == 30


def test_batch_curve_kv_read_keeps_llama7b_memory_bound_at_k4():
    """At ctx 512 the KV cache to read grows with B as fast as the MACs, so on an H100 the
    verify pass of k + 1 = 5 tokens never reaches the ridge: speedup flat at Thm 3.8's."""
    E = float(theory.expected_tokens(0.7, 4))  # i.i.d. alpha = 0.7: Thm 3.8's tokens per call
    kv = pagedata.batch_curve("Llama-2-7B", "H100 SXM", E, 4, 0.1, 512, "fp16", True)
    assert kv.free_throughout and kv.stops_paying is None
    s = [r["speedup"] for r in kv.rows]
    # Thm 3.8's, up to the embedding rows the verify pass gathers (4 B of them: < 1e-4)
    assert s == pytest.approx([theory.walltime_speedup(0.7, 4, 0.1)] * len(s), rel=1e-4)
    assert kv.rows[-1]["tokens_in_pass"] == 1024 * 5


def test_batch_curve_without_kv_stops_paying(pair):
    E = float(theory.expected_tokens(0.7, 4))
    c = pagedata.batch_curve("Llama-2-7B", "H100 SXM", E, 4, 0.1, 512, "fp16", False)
    assert c.stops_free is not None and c.stops_paying is not None
    assert 1 < c.stops_free < c.stops_paying
    by = {r["batch"]: r for r in c.rows}
    assert by[c.stops_paying]["speedup"] < 1.0 <= by[c.stops_paying - 1]["speedup"]
    assert by[c.stops_free]["verify_ratio"] > 1.01 >= by[c.stops_free - 1]["verify_ratio"]
    assert by[1]["speedup"] == pytest.approx(c.memory_bound_speedup, rel=1e-5)  # 4 rows more
    assert c.memory_bound_speedup == pytest.approx(theory.walltime_speedup(0.7, 4, 0.1))
    assert np.all(np.diff([r["speedup"] for r in c.rows]) <= 1e-12)  # never rises with B
    fig = rulecharts.batch_figure(c, batch=64)
    assert _vlines(fig) == [c.stops_free, c.stops_paying]
    assert 1.0 in _hlines(fig)
    assert fig.layout.xaxis.type == "log"
    dot = _trace(fig, "this page's batch")
    assert dot.x == (64,) and dot.y[0] == pytest.approx(by[64]["speedup"])
    # two speedups, each named: the roofline-priced curve, and /cost's closed form
    assert _trace(fig, "priced by the roofline").y[0] == by[1]["speedup"]
    assert _trace(fig, "memory-bound, as /cost").y[0] == c.memory_bound_speedup
    assert fig.to_json()


def test_every_log_axis_labels_decades_only():
    """Plotly's minor labels on a log axis read "5, 2, 0.1, 5, 2, 0.01": every log axis of
    the chart pages takes chartkit.LOG_DECADES (a label at each decade)."""
    import inspect

    src = "".join(inspect.getsource(m) for m in (charts, costcharts, rulecharts, chartkit))
    assert src.count('type="log"') == 2  # LOG_DECADES itself, and the T sweep's own ticks
    assert chartkit.LOG_DECADES == {"type": "log", "dtick": 1}


def test_joint_difference_never_reads_plus_or_minus_zero():
    assert chartkit.signed(3e-5) == chartkit.signed(-3e-5) == "0"
    assert chartkit.signed(1.2e-4) == "+0.0001" and chartkit.signed(-0.0123) == "-0.0123"


def test_measured_machine_is_a_ridge_beside_the_accelerators(monkeypatch):
    from specviz.llm import machine
    monkeypatch.setattr(pagedata, "MACHINE_BIG_ROWS", 20_000)  # 51 MB: still past the caches
    monkeypatch.setattr(machine, "PRODUCT", (128, 256, 256))
    row = pagedata.measured_machine(0.0)
    bw, peak = row["bandwidth_tb_s"] * 1e12, row["peak_tflops"] * 1e12  # bytes/s, FLOP/s
    assert 1e8 < bw < 1e13 and 1e8 < peak < 1e14
    assert np.isclose(row["ridge"], peak / 2 / bw)  # MACs/s over bytes/s
    page = pagedata.roofline_page("Llama-2-7B", "H100 SXM", 4, 512, "fp16", 1)
    assert not [t for t in costcharts.roofline_figure(page).data
                if pagedata.MACHINE_NAME in t.name.replace("<br>", " ")]
    ridge = [t for t in costcharts.roofline_figure(page, row).data
             if pagedata.MACHINE_NAME in t.name.replace("<br>", " ")]
    assert len(ridge) == 1 and list(ridge[0].y) == [row["ridge"]] * 2
