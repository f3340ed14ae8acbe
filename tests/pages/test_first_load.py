"""What a page's first load sends: charts and tables below the first screen wait in closed
sections, drawn once opened, and the URL says which sections are open (a link reopens them).

Each Plotly chart is drawn by the browser on the page's first load, and the first table
grid loads Streamlit's table component (benchmarks/bench_browser.py, bench_chartlib.py);
what a reader has not reached or opened should cost the first load nothing.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest
from support import run_page, unfold

from specviz.views import site
from specviz.web import rulesui
from specviz.web.show import fold_name
from specviz.web.ui import FOLD_PREFIX

# page -> (charts on the first load at most, the chart keys drawn only once opened)
FIRST_LOAD = {
    "roofline": (1, {"pass_time", "batch"}),
    "cost": (1, {"surface_heatmap"}),
    "rules": (1, {"warps", "production"}),
    "plan": (1, {"plan_best_k", "plan_acceptance"}),
    "draft-length": (1, {"dynamic_k"}),
    "text": (3, {"text_orders", "text_drafters"}),  # the stage's three charts lead
    "exactness": (1, {"marginal", "joint_diff", "convergence"}),
}
# page -> the keys of controls drawn only once their section is opened (a closed section's
# fields keep their values and their place in the link)
FOLDED_CONTROLS = {
    "rules": {"w_rules_n", "w_lenient_l", "w_multi_draft_m", "w_conv_given", "w_conv_value"},
    "plan": {"w_plan_hlayers", "w_plan_lookup_ms", "w_plan_t_oh_ms", "w_plan_m_c",
             "w_plan_mem_gb", "w_plan_fp8_tflops"},
    "draft-length": {"w_threshold"},
}
DOWNLOADS_FIRST = {"draft-length": 0}  # download buttons on a first load: they wait with
# their tables (each is a component the browser loads and draws)
CHART_JSON_MAX = 40_000  # bytes of figure JSON on a first load, all charts together


def run(path: str, **params: str):
    return run_page(site.BY_PATH[path].script, 120, **params)


def chart_keys(at) -> set[str]:
    return {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}


def table_grids(at) -> list:
    return [d for d in at.dataframe if d.key is None]  # the sidebar's editors have keys


def folds(at) -> list[str]:
    keys = [e.proto.id.rsplit("-", 1)[-1] for e in at.expander]
    return [k.removeprefix(FOLD_PREFIX) for k in keys if k.startswith(FOLD_PREFIX)]


@pytest.mark.parametrize("path", list(FIRST_LOAD))
def test_a_first_load_draws_only_the_leading_chart(path):
    most, later = FIRST_LOAD[path]
    at = run(path)
    charts = at.get("plotly_chart")
    assert len(charts) <= most, chart_keys(at)
    assert not chart_keys(at) & later
    assert sum(len(c.proto.spec) for c in charts) <= CHART_JSON_MAX
    unfold(at, 120)
    assert later <= chart_keys(at)  # every chart is still there, once opened
    assert not at.exception


def control_keys(at) -> set[str]:
    return {w.key for kind in ("slider", "select_slider", "number_input", "radio")
            for w in at.get(kind)}


@pytest.mark.parametrize("path", list(FOLDED_CONTROLS))
def test_a_first_load_draws_no_folded_control(path):
    at = run(path)
    assert not control_keys(at) & FOLDED_CONTROLS[path]
    assert FOLDED_CONTROLS[path] <= control_keys(unfold(at, 120))  # there, once opened
    assert not at.exception


@pytest.mark.parametrize("path,field,value", [
    ("rules", "lenient_l", "0.9"), ("rules", "rules_n", "20000"), ("rules", "conv_value", "0.5"),
    ("plan", "plan_m_c", "0.01"), ("plan", "plan_mem_gb", "40"),
    ("draft-length", "threshold", "0.9")])
def test_a_closed_sections_fields_stay_in_the_link(path, field, value):
    at = run(path, **{field: value})
    assert not control_keys(at) & FOLDED_CONTROLS[path]  # closed
    assert at.query_params[field] == value


def test_a_closed_sections_field_still_counts():
    at = run("rules", lenient_l="0.9", open=fold_name(rulesui.GALLERY_TABLE))
    lenient = at.dataframe[0].value.set_index("rule").loc["lenient"]
    assert lenient["params"] == "l = 0.9"


@pytest.mark.parametrize("path", list(DOWNLOADS_FIRST))
def test_a_first_load_draws_few_download_buttons(path):
    at = run(path)
    assert len(at.get("download_button")) == DOWNLOADS_FIRST[path]
    assert len(unfold(at, 120).get("download_button")) >= 3  # each with its table, opened


def test_a_closed_chart_is_not_even_built():
    def script():
        import plotly.graph_objects as go
        import streamlit as st

        from specviz.web import ui

        def figure():
            st.session_state["built"] = st.session_state.get("built", 0) + 1
            return go.Figure(go.Bar(y=[1, 2]))
        ui.chart(figure, key="late", fold="a late chart")

    at = AppTest.from_function(script).run(timeout=60)
    assert "built" not in at.session_state and not at.get("plotly_chart")
    at.session_state[FOLD_PREFIX + "a_late_chart"] = True  # the reader opens it
    at.run(timeout=60)
    assert at.session_state["built"] == 1 and chart_keys(at) == {"late"}


def test_rules_notes_wait_in_one_closed_section():
    at = run("rules")
    assert not any("**Source:**" in m.value for m in at.markdown)
    assert sum("**Source:**" in m.value for m in unfold(at, 120).markdown) >= 20


@pytest.mark.parametrize("path,grids", [("rules", 3), ("draft-length", 3)])
def test_a_first_load_draws_no_table_grid(path, grids):
    at = run(path)  # each grid is 0.3-0.4 s of a load in the browser: /rules' chart leads
    assert len(table_grids(at)) == 0
    assert len(table_grids(unfold(at, 120))) >= grids  # every table, once opened


def test_an_opened_section_is_in_the_url_and_a_link_reopens_it():
    at = run("roofline")
    assert "open" not in at.query_params
    batch = next(f for f in folds(at) if "batch" in f)
    at.session_state[FOLD_PREFIX + batch] = True  # the reader opens the batch chart
    at.run(timeout=120)
    assert at.query_params["open"] == batch
    assert "batch" in chart_keys(at) and "pass_time" not in chart_keys(at)
    again = run("roofline", open=batch)  # the link, in a new session
    assert chart_keys(again) == chart_keys(at)
    assert again.query_params["open"] == batch


def test_the_url_lists_every_open_section_and_ignores_unknown_ones():
    at = run("rules", open="nothing_here")
    assert "open" not in at.query_params and len(at.get("plotly_chart")) == 1
    names = sorted(folds(at))
    both = ",".join(n for n in names if n.endswith("_chart"))
    at = run("rules", open=both)
    assert {"warps", "production"} <= chart_keys(at)
    assert at.query_params["open"] == both


def test_a_folded_chart_keeps_its_caption_inside():
    at = run("roofline", open="the_speedup_by_batch_size_its_metrics_and_csv_chart")
    batch = json.loads(next(c.proto.spec for c in at.get("plotly_chart")
                            if c.proto.id.endswith("batch")))
    assert batch["data"]
    assert any("B runs over 1.." in c.value for c in at.caption)
    shut = run("roofline")
    assert not any("B runs over 1.." in c.value for c in shut.caption)


def test_roofline_batch_metrics_wait_with_their_chart():
    at = run("roofline")  # the first screen's four metrics; the batch section's once opened
    assert len(at.metric) == 4 and "w_kv" not in {t.key for t in at.toggle}
    opened = unfold(at, 120)
    assert "speculation stops paying at B" in {m.label for m in opened.metric}
    assert "w_kv" in {t.key for t in opened.toggle}


def test_a_link_to_the_3d_surface_opens_its_section():
    at = run("cost", surface="3d")
    assert {"cost_curve", "surface_3d"} == chart_keys(at)
    assert at.query_params["surface"] == "3d"

