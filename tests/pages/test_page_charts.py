"""AppTest of the chart pages: /exactness, /acceptance, /draft-length, /cost, /roofline.

Each page runs without an exception, a widget change changes what is shown, URL parameters
reach the widgets (and come back in the URL), and invalid parameters fall back with a note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support import run_page, unfold

from specviz.core.rules import TUTORIAL_RULES
from specviz.views import columns, pagedata, site
from specviz.web import settings as S

ROOT = Path(__file__).resolve().parents[2]
PAGES = {path: site.BY_PATH[path].script
         for path in ("exactness", "acceptance", "draft-length", "cost", "roofline")}
SMALL = {"exactness": {"n": "2000"}}  # keep the Monte Carlo short in tests
EXACTNESS_CHARTS = ("the_sidebar_s_rule_against_the_target_the_first_token_the_first_two_charts,"
                    "tv_against_n_for_each_rule_beside_the_floor_chart")  # its folds, opened


def run(page: str, **params: str) -> AppTest:
    return run_page(ROOT / PAGES[page], 60, **{**SMALL.get(page, {}), **params})


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def query(at: AppTest) -> dict[str, str]:
    return dict(at.query_params)


def test_every_page_file_is_listed_once():
    scripts = [p.script for p in site.PAGES]
    assert len(set(scripts)) == len(scripts) and len({p.path for p in site.PAGES}) == len(scripts)
    files = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "pages").glob("*.py"))
    assert sorted(scripts) == ["app.py", *files]
    assert [p.script for p in site.PAGES if not p.path] == ["app.py"]  # one home page
    for p in site.PAGES[1:]:  # Streamlit names a page in pages/ after its file: <n>_<path>.py
        assert Path(p.script).name.split("_", 1)[1] == f"{p.path}.py", p


@pytest.mark.parametrize("page", list(PAGES))
def test_page_runs_with_charts_and_downloads(page):
    at = run(page)
    assert not at.warning
    assert len(at.get("plotly_chart")) >= 1
    assert at.title and at.title[0].value
    if page == "draft-length":  # its downloads wait with their tables (test_first_load)
        at = unfold(at, 120)
    assert len(at.get("download_button")) >= 1


# ----------------------------------------------------------------------------- exactness
def test_exactness_n_from_the_url_and_back():
    at = run("exactness", n="3000", k="3", open=EXACTNESS_CHARTS)
    assert at.number_input(key="w_n").value == 3000
    assert at.slider(key="w_k").value == 3
    rows = at.dataframe[0].value
    assert list(rows["rule"]) == ["correct", "greedy", "no_resample", "continue"]
    assert query(at)["n"] == "3000"
    floor = metrics(at)["sampling floor (expected TV of n exact draws)"]
    at.number_input(key="w_n").set_value(500).run()
    assert not at.exception
    assert metrics(at)["sampling floor (expected TV of n exact draws)"] != floor
    assert query(at)["n"] == "500"
    conv = charts(at)[-1]
    stars = [t for t in conv["data"] if t["name"].startswith("this run")]
    assert stars and set(stars[0]["x"]) == {500}


def test_exactness_sidebar_rule_drives_the_marginal_and_the_heatmap():
    at = run("exactness", rule="no_resample", open=EXACTNESS_CHARTS)
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert any("marginal" in t and "no_resample" in t for t in titles)
    assert any("joint" in t and "no_resample" in t for t in titles)
    at.selectbox(key="w_rule").set_value("greedy").run()
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert any("marginal" in t and "greedy" in t for t in titles)


def test_exactness_runs_a_non_spec_rule_too():
    other = [r for r in S.RULES if r not in TUTORIAL_RULES]
    at = run("exactness", rule=other[0])
    assert other[0] in list(at.dataframe[0].value["rule"])


def test_exactness_shows_the_cap():
    at = run("exactness", n=str(S.N_APP_MAX + 1))
    assert any("held at" in w.value for w in at.warning)  # out of range: held at the cap
    assert at.number_input(key="w_n").value == S.N_APP_MAX
    assert "capped" in " ".join(c.value for c in at.caption)


# ----------------------------------------------------------------------------- acceptance
def test_acceptance_k_slider_changes_the_sweep():
    at = unfold(run("acceptance", k="2"))
    assert at.slider(key="w_k").value == 2
    before = at.dataframe[0].value["tokens_per_call"].max()
    assert before <= 3.0 + 1e-9  # k = 2: at most 3 tokens per call
    at.slider(key="w_k").set_value(6).run()
    assert not at.exception
    after = at.dataframe[0].value["tokens_per_call"].max()
    assert after > 3.0
    assert query(at)["k"] == "6"


def test_acceptance_c_reprices_without_remeasuring():
    at = unfold(run("acceptance", c="0"))
    tokens = at.dataframe[0].value["tokens_per_call"].tolist()
    speed0 = at.dataframe[0].value["speedup"].tolist()
    assert speed0 == pytest.approx(tokens)  # c = 0: speedup = tokens per call
    at.slider(key="w_c").set_value(0.5).run()
    assert at.dataframe[0].value["tokens_per_call"].tolist() == tokens
    assert at.dataframe[0].value["speedup"].tolist() == pytest.approx([t / 3 for t in tokens])


# ----------------------------------------------------------------------------- draft length
def test_draft_length_c_moves_the_best_k():
    at = run("draft-length", c="0.02")
    best_cheap = metrics(at)["best k (exact)"]
    at.slider(key="w_c").set_value(0.5).run()
    assert not at.exception
    best_dear = metrics(at)["best k (exact)"]
    assert int(best_dear.split()[0]) < int(best_cheap.split()[0])
    assert query(at)["c"] == "0.5"


# ----------------------------------------------------------------------------- cost
def test_cost_deep_link_reaches_the_widgets():
    at = run("cost", k="7", c="0.2")
    assert at.slider(key="w_k").value == 7
    assert at.slider(key="w_c").value == pytest.approx(0.2)
    m = metrics(at)
    assert "tokens per call (exact, k = 7)" in m and "speedup at c = 0.2" in m
    text = " ".join(md.value for md in at.markdown)
    assert "c = 0.6" in text and "c = 1" in text
    c_star = m["break-even c*"]
    at.slider(key="w_k").set_value(3).run()
    assert metrics(at)["break-even c*"] != c_star
    assert query(at) == {"k": "3", "c": "0.2"}


def test_cost_states_the_slower_case():
    at = run("cost", k="12", surface="3d")  # a long draft: c* = (tokens - 1) / k is well below 0.6
    text = " ".join(md.value for md in at.markdown)
    assert float(metrics(at)["break-even c*"]) < 0.6
    assert "slower than decoding with the target alone" in text
    surface = [c for c in charts(at) if is_3d(c)]
    lines = [t for t in surface[0]["data"] if t.get("name", "").startswith("speedup = 1")]
    assert len(lines) == 1 and lines[0]["x"]  # the break-even line drawn on the surface


def is_3d(chart: dict) -> bool:
    """The surface's 3D view: a filled ribbon per k (SVG: no WebGL trace)."""
    kinds = {t["type"] for t in chart["data"]}
    return kinds == {"scatter"} and sum(t.get("fill") == "toself" for t in chart["data"]) > 1


# ----------------------------------------------------------------------------- roofline
ROOFLINE_BATCH = "the_speedup_by_batch_size_its_metrics_and_csv_chart"  # the batch section's fold


def test_roofline_params_reach_the_widgets():
    at = run("roofline", preset="Llama-2-70B", dtype="int8", ctxlen="2048", batch="4",
             accel="H200 SXM")
    assert at.selectbox(key="w_preset").value == "Llama-2-70B"
    assert at.selectbox(key="w_dtype").value == "int8"
    assert at.number_input(key="w_ctxlen").value == 2048
    assert at.number_input(key="w_batch").value == 4
    assert at.selectbox(key="w_accel").value == "H200 SXM"
    assert query(at) == {"preset": "Llama-2-70B", "dtype": "int8", "ctxlen": "2048",
                         "batch": "4", "accel": "H200 SXM"}
    assert "free tokens on H200 SXM" in metrics(at)


def test_roofline_batch_changes_the_free_tokens():
    at = run("roofline")
    free = metrics(at)["free tokens on H100 SXM"]
    assert at.success  # k + 1 = 5 is free for one sequence
    at.number_input(key="w_batch").set_value(256).run()
    assert not at.exception
    assert metrics(at)["free tokens on H100 SXM"] != free
    assert query(at) == {"batch": "256"}


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("page, params, key", [
    ("exactness", {"n": "lots"}, "n"),
    ("acceptance", {"k": "99"}, "k"),
    ("draft-length", {"c": "-1"}, "c"),
    ("cost", {"k": "0", "c": "nan"}, "k"),
    ("roofline", {"preset": "GPT-9<script>", "batch": "0"}, "preset"),
])
def test_invalid_params_fall_back_with_a_note(page, params, key):
    at = run(page, **params)
    notes = " ".join(w.value for w in at.warning)
    assert f"URL parameter {key}=" in notes
    assert "<script>" not in notes
    assert at.get("plotly_chart")


# ----------------------------------------------------------------------------- beyond the paper
def _frame_with(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_draft_length_dynamic_section():
    at = run("draft-length", k="3", c="0.2", open="each_policy_s_tokens_calls_and_speedup_at_a_"
             "confidence_threshold_table,"
             "k_drafted_in_each_round_by_policy_chart")  # the section's table and chart, opened
    pol = _frame_with(at, "target_calls").set_index("policy")
    assert list(pol.index) == ["constant", "heuristic", "confidence", "oracle"]
    assert pol.loc["constant", "draft_calls"] == 3 * pol.loc["constant", "target_calls"]
    assert (pol["tokens"] >= 3_000).all()
    assert pol.loc["oracle", "target_calls"] == pol["target_calls"].min()
    speed = pol["tokens"] / (pol["target_calls"] + 0.2 * pol["draft_calls"])
    assert pol["speedup"].tolist() == pytest.approx(speed.tolist())
    fig = next(c for c in charts(at) if "round by round" in c["layout"]["title"]["text"])
    assert len(fig["data"]) == 4 and set(fig["data"][0]["y"]) == {3}  # constant k = 3
    at.slider(key="w_c").set_value(0.0).run()  # c reprices without a new decode
    again = _frame_with(at, "target_calls").set_index("policy")
    assert again["target_calls"].equals(pol["target_calls"])
    assert again["speedup"].tolist() == pytest.approx(again["tokens_per_call"].tolist())
    at.slider(key="w_threshold").set_value(0.9).run()  # only the confidence policy moves
    high = _frame_with(at, "target_calls").set_index("policy")
    assert high.loc["confidence", "draft_calls"] != again.loc["confidence", "draft_calls"]
    assert high.drop("confidence")["draft_calls"].equals(again.drop("confidence")["draft_calls"])


def test_roofline_batch_section_kv_toggle():
    """By default (weights only) the batch chart shows the turn; with the KV-cache read it
    stays flat and says why."""
    at = run("roofline", open=ROOFLINE_BATCH)  # the section, opened
    m = metrics(at)
    free, paying = int(m["verifying stops being free at B"]), int(
        m["speculation stops paying at B"])
    assert 1 < free < paying <= 1024
    fig = next(c for c in charts(at) if "batch size" in c["layout"]["title"]["text"])
    assert {free, paying} <= {s["x0"] for s in fig["layout"]["shapes"]}
    assert not any("stays memory-bound" in i.value for i in at.info)
    assert m["weights, every one (= 12.55 GiB)"] == "13.48 GB"  # 13.48e9 B = 12.55 x 2^30 B
    assert any("KV cache" in c.value and "default" in c.value for c in at.caption)
    at.toggle(key="w_kv").set_value(True).run()
    assert not at.exception
    m = metrics(at)
    assert m["verifying stops being free at B"] == "never"
    assert m["speculation stops paying at B"] == "never"
    assert any("Llama-2-7B at a context of 512 tokens stays memory-bound" in i.value
               for i in at.info)
    fig = next(c for c in charts(at) if "batch size" in c["layout"]["title"]["text"])
    line = fig["data"][0]
    assert line["x"][0] == 1 and line["x"][-1] == 1024
    # flat, memory-bound throughout, up to the embedding rows the larger passes gather
    # (at B = 1024 the verify pass reads 4 x 1024 more of them: 1e-4 of its bytes)
    assert max(line["y"]) - min(line["y"]) < 1e-4 * max(line["y"])


def test_roofline_batch_follows_the_accelerator_and_k():
    at = run("roofline", accel="A100 SXM 80GB", k="8", open=ROOFLINE_BATCH)
    m = metrics(at)  # A100's ridge is lower: even with the KV read the pass turns compute-bound
    assert m["verifying stops being free at B"] != "never"


def test_chen_letters_on_a_chart_page():
    lev, chen = run("acceptance"), run("acceptance", notation="chen")
    md_lev = " ".join(m.value for m in lev.markdown)
    md_chen = " ".join(m.value for m in chen.markdown)
    assert "min(p(x), q(x))" in md_lev and "min(q(x), p(x))" in md_chen
    ex = run("exactness", notation="chen", open=EXACTNESS_CHARTS)
    names = [t.get("name", "") for c in charts(ex) for t in c["data"]]
    assert "target q(x1 | ctx)" in names and "target p(x1 | ctx)" not in names


def test_exactness_holds_n_at_the_work_cap_for_long_drafts():
    at = run("exactness", k="32", n="3000000")
    info = " ".join(i.value for i in at.info)
    cap = pagedata.capped_n(3_000_000, 32, pagedata.page_rules("correct"))[0]
    assert cap < S.n_cap(32) and cap * 33 * 4 <= S.WORK_REQUEST_MAX
    assert f"{cap:,}" in info and "cap bites" in info


def test_acceptance_tab_is_in_the_url_and_only_the_open_tab_runs():
    at = run("acceptance")
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert len(titles) == 1 and "draft quality alpha" in titles[0]
    assert "tab" not in query(at)  # the default tab
    at = run("acceptance", tab="T")
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert len(titles) == 1 and "temperature mismatch T" in titles[0]
    assert charts(at)[0]["layout"]["xaxis"]["type"] == "log"  # temperatures on a log axis
    assert query(at).get("tab") == "T"


def test_sweep_tables_have_human_headers_and_one_format_per_column():
    at = unfold(run("draft-length"))
    measured, curve = [d for d in at.dataframe if "tokens_per_call_exact" in d.value.columns]
    for table, spec in ((measured, columns.SWEEP), (curve, columns.CURVE)):
        config, shown = json.loads(table.proto.columns), list(table.proto.column_order)
        assert shown == [key for key in spec if key in table.value.columns]
        assert [config[key]["label"] for key in shown] == [spec[key][0] for key in shown]
        assert all("_" not in config[key]["label"] for key in shown)
    assert "tokens_per_call_se" in measured.proto.column_order  # measured: with its error
    assert json.loads(curve.proto.columns)["alpha_eff"]["type_config"]["format"] == "%.4f"


def test_cost_draws_the_heatmap_first_and_the_3d_surface_on_demand():
    at = run("cost")  # the surface waits in its closed section; opened, the heatmap shows
    assert len(charts(at)) == 1 and "surface" not in query(at)
    at = unfold(at)
    kinds = [t["type"] for c in charts(at) for t in c["data"]]
    assert "heatmap" in kinds and not any(map(is_3d, charts(at)))  # the phone-friendly view
    assert "surface" not in query(at)
    at = run("cost", surface="3d")
    kinds = [t["type"] for c in charts(at) for t in c["data"]]
    assert any(map(is_3d, charts(at))) and "heatmap" not in kinds
    assert query(at).get("surface") == "3d"


TABLES = {"exactness": [columns.EXACTNESS], "cost": [columns.COST],
          "roofline": [columns.ACCELERATORS, columns.ROOFLINE],
          "acceptance": [columns.SWEEP]}
FOLDED = ("cost", "roofline", "acceptance")  # every table there waits in a closed expander


@pytest.mark.parametrize("page", list(TABLES))
def test_each_table_shows_its_named_columns_only(page):
    """The page's tables show the columns views.columns names, in that order, under their
    human headers; the other keys of the rows (the accelerators' sources) stay unshown."""
    at = run(page)
    if page in FOLDED:
        assert not [d for d in at.dataframe if d.key is None]  # drawn once opened, not before
        unfold(at)
    tables = [d for d in at.dataframe if d.key is None]  # the sidebar's editors have keys
    assert len(tables) == len(TABLES[page])
    for table, spec in zip(tables, TABLES[page], strict=True):
        config, shown = json.loads(table.proto.columns), list(table.proto.column_order)
        assert shown == [key for key in spec if key in table.value.columns] and shown
        assert [config[key]["label"] for key in shown] == [spec[key][0] for key in shown]
    if page == "roofline":
        assert "source" in tables[0].value and "source" not in tables[0].proto.column_order
        assert all(a in " ".join(c.value for c in at.caption)
                   for a in tables[0].value["source"])  # cited under the table instead


@pytest.mark.parametrize("params", [{}, {"k": "7", "c": "0.25"}])
def test_roofline_and_cost_price_the_same_speedup(params):
    """/roofline's memory-bound batch speedup is /cost's speedup at the same k and c: both
    from the pair's exact long-run tokens per call (the closed form at alpha_eff differs)."""
    roof = metrics(run("roofline", open=ROOFLINE_BATCH, **params))
    cost = metrics(run("cost", **params))
    c = params.get("c", "0.1")
    assert roof["memory-bound speedup (as /cost)"] == cost[f"speedup at c = {float(c):g}"]


def test_roofline_shows_this_machine_only_when_asked(monkeypatch):
    """Off on load (nothing measured); switched on, this machine's measured ridge joins the
    roofline chart, and the URL does not change."""
    calls = []
    real = pagedata.measured_machine

    def counted(*a, **kw):
        calls.append(1)
        return real(0.0)  # one sample: the test measures nothing but that it is drawn

    monkeypatch.setattr(pagedata, "measured_machine", counted)
    at = run("roofline")
    names = [t.get("name", "").replace("<br>", " ") for c in charts(at) for t in c["data"]]
    assert not calls and not any(pagedata.MACHINE_NAME in n for n in names)
    at.toggle(key="machine").set_value(True).run()
    assert not at.exception
    fig = next(c for c in charts(at) if "MACs per byte by tokens" in c["layout"]["title"]["text"])
    ridge = [t for t in fig["data"]
             if pagedata.MACHINE_NAME in t.get("name", "").replace("<br>", " ")]
    assert len(ridge) == 1 and ridge[0]["y"][0] == ridge[0]["y"][1] > 0
    assert query(at) == {}
