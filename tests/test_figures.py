"""The chart builders of specviz.figures, tested without Streamlit: traces, axes, values.

Also the page-level data functions they draw (the chart-pages section of specviz.demos).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from specviz import demos, figures, roofline, theory
from specviz.rules import RULES
from specviz.stats import tv_threshold
from specviz.tables import default_tables

ROOT = Path(__file__).resolve().parents[1]
RULES4 = demos.EXACTNESS_RULES


@pytest.fixture(scope="module")
def pair():
    return default_tables()


@pytest.fixture(scope="module")
def ex(pair):
    return demos.exactness(pair.P, pair.Q, 0, k=4, n=5_000, seed=1, rules=RULES4)


@pytest.fixture(scope="module")
def conv(pair):
    return demos.convergence(pair.P, pair.Q, 0, k=4, ns=(200, 2_000), seed=1, rules=RULES4)


def _trace(fig: go.Figure, name_part: str):
    hits = [t for t in fig.data if t.name and name_part in t.name]
    assert len(hits) == 1, [t.name for t in fig.data]
    return hits[0]


def _vlines(fig: go.Figure) -> list[float]:
    return sorted(s.x0 for s in fig.layout.shapes if s.x0 == s.x1 and s.xref != "paper")


def _hlines(fig: go.Figure) -> list[float]:
    return sorted(s.y0 for s in fig.layout.shapes if s.y0 == s.y1 and s.yref != "paper")


def test_figures_module_is_pure():
    src = (ROOT / "specviz" / "figures.py").read_text()
    assert "streamlit" not in src
    assert "random" not in src  # no sampling in a builder


# ----------------------------------------------------------------------------- exactness
def test_tv_bars_values_threshold_and_log_axis(ex):
    rows = demos.exactness_rows(ex)
    fig = figures.tv_bars(rows, ex.direct_tv)
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
    fig = figures.tv_bars(rows)
    lo, hi = fig.layout.yaxis.range
    assert math.isfinite(lo) and math.isfinite(hi) and lo < math.log10(0.02) < hi
    assert _hlines(fig) == [0.02]
    assert fig.to_json()


def test_exactness_rows_one_per_rule(ex):
    rows = demos.exactness_rows(ex)
    assert [r["rule"] for r in rows] == list(RULES4)
    correct = rows[0]
    assert correct["exact_tv"] < 1e-12 and correct["lossless"]
    assert rows[1]["exact_tv"] > 0.1  # greedy is badly biased on the default pair


def test_marginal_bars_match_the_laws(ex, pair):
    rows = demos.marginal_rows(ex, "greedy", pair.vocab)
    fig = figures.marginal_bars(rows, "greedy")
    assert [t.type for t in fig.data] == ["bar", "bar", "scatter"]
    assert list(fig.data[0].x) == list(pair.vocab)
    assert np.allclose(fig.data[0].y, pair.P[0])  # first token of the target: p(.|a)
    assert np.allclose(fig.data[1].y, demos.audit_of(ex, "greedy").mc_law.sum(axis=1))
    assert np.allclose(fig.data[2].y, demos.audit_of(ex, "greedy").exact_law.sum(axis=1))
    assert sum(fig.data[1].y) == pytest.approx(1.0)


def test_audit_of_unknown_rule(ex):
    with pytest.raises(ValueError, match="not audited"):
        demos.audit_of(ex, "inclusive_coin")


def test_page_rules_adds_the_sidebar_rule():
    assert demos.page_rules("correct") == RULES4
    assert demos.page_rules("greedy") == RULES4
    other = [r for r in RULES if r not in RULES4]
    if other:
        assert demos.page_rules(other[0]) == (*RULES4, other[0])
    with pytest.raises(ValueError):
        demos.page_rules("no-such-rule")


def test_convergence_figure_log_log_floor_and_bias(conv, ex):
    fig = figures.convergence_figure(conv, ex)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    floor = _trace(fig, "sampling floor")
    # the sweep's floor, extended by this run's n (5,000 lies between 2,000 and ... the end)
    assert list(floor.x) == [200, 2_000, 5_000]
    assert list(floor.y) == pytest.approx([*conv.floor, ex.audits[0].floor])
    for rule in RULES4:
        mc = _trace(fig, f"{rule} (Monte Carlo)")
        assert list(mc.x) == [200, 2_000] and list(mc.y) == conv.mc_tv[rule]
    for rule in ("greedy", "no_resample", "continue"):
        bias = _trace(fig, f"{rule} exact bias")
        assert bias.line.dash == "dash"
        assert list(bias.y) == [conv.exact_tv[rule]] * 2
        assert list(bias.x) == [200, 5_000]
    assert not [t for t in fig.data if t.name == "correct exact bias"]  # 0: not on a log axis
    run = _trace(fig, "this run")
    assert set(run.x) == {5_000} and list(run.y) == [a.mc_tv for a in ex.audits]


def test_convergence_figure_without_run(conv):
    fig = figures.convergence_figure(conv)
    assert list(_trace(fig, "sampling floor").x) == [200, 2_000]
    assert not [t for t in fig.data if "this run" in (t.name or "")]


def test_joint_diff_heatmap_values(ex, pair):
    diff = demos.joint_diff(ex, "no_resample")
    a = demos.audit_of(ex, "no_resample")
    assert np.allclose(diff, a.mc_law - ex.target)
    assert diff.sum() == pytest.approx(0.0, abs=1e-12)
    fig = figures.joint_diff_heatmap(diff, pair.vocab, "no_resample")
    (hm,) = fig.data
    assert hm.type == "heatmap" and hm.zmid == 0.0
    assert np.array_equal(np.asarray(hm.z), diff)
    assert hm.zmax == pytest.approx(np.abs(diff).max()) and hm.zmin == -hm.zmax


# ----------------------------------------------------------------------------- acceptance
@pytest.fixture(scope="module")
def alpha_rows(pair):
    measured = demos.alpha_sweep(pair.P, 0, 4, 0.0, (0.0, 0.5, 1.0), n_rounds=2_000, seed=3)
    return demos.reprice(measured, 0.1, 4), demos.alpha_curve(pair.P, 0, 4, 0.1, (0.0, 0.5, 1.0))


def test_reprice_equals_measuring_at_c(pair, alpha_rows):
    direct = demos.alpha_sweep(pair.P, 0, 4, 0.1, (0.0, 0.5, 1.0), n_rounds=2_000, seed=3)
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
    fig = figures.sweep_figure(measured, curve, "alpha", "alpha", "t")
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
    log = figures.sweep_figure(measured, curve, "alpha", "alpha", "t", log_x=True,
                               tickvals=(0.5, 1.0))
    assert all(log.layout[f"xaxis{i}"].type == "log" for i in ("", "2", "3"))
    assert list(log.layout.xaxis2.tickvals) == [0.5, 1.0]


# ----------------------------------------------------------------------------- draft length
def test_k_sweep_figure_best_k_at_argmax(pair):
    measured = demos.reprice(demos.k_sweep(pair.P, pair.Q, 0, 0.0, (1, 2, 4, 8, 16),
                                           n_rounds=2_000, seed=2), 0.1)
    curve = demos.k_curve(pair.P, pair.Q, 0, 0.1, range(1, 17))
    best = demos.best_row(measured)
    best_exact = demos.best_row(curve, "speedup_exact")
    fig = figures.k_sweep_figure(measured, curve, best, best_exact)
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
    (r,) = demos.reprice(rows, 0.25)
    assert r["cost"] == 1.5
    assert r["speedup"] == pytest.approx(2.0 / 1.5)
    assert r["speedup_exact"] == pytest.approx(2.5 / 1.5)
    assert r["speedup_theory"] == pytest.approx(1.75 / 1.5)
    assert rows[0]["cost"] == 0.0  # the input is not modified


# ----------------------------------------------------------------------------- cost
@pytest.fixture(scope="module")
def cm(pair):
    return demos.cost_model(pair.P, pair.Q, 0, 4, demos.COST_GRID)


def test_cost_curve_break_even(cm):
    marks = demos.slow_cases(cm, (0.1, 0.6, 1.0))
    fig = figures.cost_curve(cm, marks)
    curve = _trace(fig, "speedup at k = 4")
    assert list(curve.x) == list(demos.COST_GRID)
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
    point = demos.surface_point(surface, 7, 0.2)
    line = demos.break_even_curve(surface)
    fig = figures.surface_3d(surface, point, line)
    surf = fig.data[0]
    assert surf.type == "surface"
    assert np.array_equal(np.asarray(surf.z), surface.speedup)
    assert surf.contours.z.show and surf.contours.z.start == 1.0
    assert surf.contours.z.start + surf.contours.z.size > surf.contours.z.end  # one level: 1
    assert fig.layout.scene.xaxis.type == "log"
    ridge = _trace(fig, "ridge")
    assert list(ridge.y) == list(surface.best_k)
    assert np.allclose(ridge.z, surface.speedup.max(axis=0))
    be = _trace(fig, "break-even")
    assert set(be.z) == {1.0} and len(be.x) > 0
    for r in line:
        assert theory.walltime_speedup(alpha, r["k"], r["c"]) == pytest.approx(1.0)
    sidebar = _trace(fig, "sidebar")
    assert sidebar.z[0] == pytest.approx(theory.walltime_speedup(alpha, 7, 0.2))
    assert demos.surface_point(surface, 7, 0.0) is None  # off the log axis

    hm = figures.surface_heatmap(surface)
    assert [t.type for t in hm.data] == ["heatmap", "contour", "scatter"]
    contour = hm.data[1]
    assert contour.contours.start == contour.contours.end == 1.0
    assert hm.layout.xaxis.type == "log"
    assert np.array_equal(np.asarray(hm.data[0].z), surface.speedup)


def test_surface_rows_long_format():
    surface = demos.speedup_surface(0.5, k_max=3, cs=np.array([0.01, 0.1]))
    rows = demos.surface_rows(surface)
    assert len(rows) == 6
    assert rows[1] == {"k": 1, "c": 0.1, "speedup": pytest.approx(1.5 / 1.1),
                       "best_k_at_c": int(surface.best_k[1])}


# ----------------------------------------------------------------------------- roofline
def test_roofline_page_and_figures():
    page = demos.roofline_page("Llama-2-7B", "H100 SXM", 4, 512, "fp16", 1)
    assert page.free_tokens == roofline.free_tokens("Llama-2-7B", "H100 SXM", 512)
    tokens = [r["tokens"] for r in page.rows]
    assert tokens[0] == 1 and tokens[-1] >= max(256, 2 * page.free_tokens)
    assert page.rows[0]["mpb_full"] == pytest.approx(0.50, abs=0.005)  # SPEC.md: 0.50
    assert page.rows[0]["mpb_tutorial"] == pytest.approx(0.38, abs=0.005)  # SPEC.md: 0.38
    assert page.free_for_k and page.verify_ratio == pytest.approx(1.0)

    fig = figures.roofline_figure(page)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    tut = _trace(fig, roofline.TUTORIAL_LABEL)
    full = [t for t in fig.data if t.name == roofline.FULL_LABEL]
    assert len(full) == 1 and list(full[0].y) == [r["mpb_full"] for r in page.rows]
    assert list(tut.y) == [r["mpb_tutorial"] for r in page.rows]
    for a in roofline.ACCELERATORS.values():
        ridge = _trace(fig, f"ridge {a.name}")
        assert set(ridge.y) == {a.ridge}
        assert ridge.customdata[0] == a.source
    assert _vlines(fig) == [5, page.free_tokens]
    xs = sorted(a.x for a in fig.layout.annotations)  # labels at log10 on the log axis
    assert xs == pytest.approx(sorted([math.log10(5), math.log10(page.free_tokens)]))

    t = figures.pass_time_figure(page)
    assert t.layout.xaxis.type == "log"
    ratio = _trace(t, "pass time")
    assert ratio.y[0] == 1.0 and ratio.y[-1] > 1.5  # compute-bound at the far end
    mark = _trace(t, "verify k + 1")
    assert (mark.x[0], mark.y[0]) == (5, page.verify_ratio)


def test_roofline_grid_reaches_twice_the_free_tokens():
    assert demos.roofline_grid(10)[-1] == 256
    assert demos.roofline_grid(300)[-1] == 1024
    assert demos.roofline_grid(10**6)[-1] == roofline.MAX_FREE_TOKENS
    grid = demos.roofline_grid(300)
    assert grid[0] == 1 and list(grid) == sorted(set(grid))


def test_not_free_when_the_batch_is_compute_bound():
    page = demos.roofline_page("Llama-2-7B", "A100 SXM 80GB", 31, 0, "fp16", 512)
    assert not page.free_for_k and page.verify_ratio > 1.0


def test_every_figure_serialises(ex, conv, cm, pair):
    figs = [figures.tv_bars(demos.exactness_rows(ex)), figures.convergence_figure(conv, ex),
            figures.cost_curve(cm), figures.surface_heatmap(demos.speedup_surface(0.6)),
            figures.roofline_figure(demos.roofline_page())]
    for f in figs:
        assert f.to_json()
