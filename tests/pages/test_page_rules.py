"""AppTest of /rules (the rules gallery and production metrics), and the letters toggle:
with notation=chen in the URL a page shows Chen et al.'s letters (p = draft)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support import run_page, unfold

from specviz.core.rules import RULES
from specviz.views import columns, gallery
from specviz.web import rulesui, show
from specviz.web.show import fold_name

ROOT = Path(__file__).resolve().parents[2]
RULES_PAGE = next(ROOT.glob("pages/*_rules.py"))


def run(path: Path = RULES_PAGE, **params: str) -> AppTest:
    """The page with its gallery and production tables, its run's controls, the rules' notes
    and the converter opened (by the URL, as a link)."""
    return run_page(path, 60, **{"open": OPEN_TABLES, **params})


OPEN_TABLES = ",".join(fold_name(label) for label in (
    rulesui.GALLERY_TABLE, "The production metrics: measured, exact and theory (table)",
    rulesui.RUN_CONTROLS,
    rulesui.NOTES, rulesui.CONVERTER))
PRODUCTION_CHART = "the_production_metrics_by_position_and_as_a_histogram_chart"


def table(at: AppTest):
    return at.dataframe[0].value.set_index("rule")


def production(at: AppTest):
    return next(d.value for d in at.dataframe if "metric" in d.value.columns)


def text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.label for e in at.expander] + [m.label for m in at.metric]
    return " ".join(parts)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


@pytest.fixture(scope="module")
def page() -> AppTest:
    return run()


def test_the_page_file_gives_the_rules_path():
    from streamlit.source_util import page_icon_and_name

    assert page_icon_and_name(RULES_PAGE)[1] == "rules"


def test_rules_page_runs_with_every_rule(page):
    assert not page.warning
    t = table(page)
    assert len(t) == len(RULES) and list(t.index) == list(RULES)
    assert set(t["verdict"]) == {"consistent with the target", "caught"}
    assert (t.loc[[n for n, r in RULES.items() if r.lossless], "verdict"]
            == "consistent with the target").all()
    src = " ".join(m.value for m in page.markdown)
    assert sum(f"**{rule}: " in src for rule in RULES) == len(RULES)  # a note for each
    assert "Medusa" in src
    assert "**Source:** sgl-project/sglang issue #35771" in src
    assert len(page.get("download_button")) >= 2


def test_the_tables_show_their_named_columns(page):
    """The gallery table shows views.columns.GALLERY (it fits a 1440 px screen), this run's
    counts and the parameters another table; the rows keep every key (the CSV's)."""
    def run_tables():
        return [d for d in page.dataframe
                if list(d.proto.column_order) == list(columns.GALLERY_RUN)]
    assert not run_tables()  # this run's table waits in a closed expander
    gal = unfold(page).dataframe[0]
    assert len(run_tables()) == 1
    assert list(gal.proto.column_order) == list(columns.GALLERY)
    labels = json.loads(gal.proto.columns)
    assert [labels[k]["label"] for k in columns.GALLERY] == [h for h, *_ in
                                                             columns.GALLERY.values()]
    assert {"label", "source", "exact_here"} <= set(gal.value.columns)


def test_the_chart_plots_every_rule_by_family(page):
    fig = next(c for c in charts(page) if "acceptance against exactness" in
               c["layout"]["title"]["text"])
    names = {t["name"]: t["text"] for t in fig["data"] if t.get("text")}
    assert set(names) == {"lossless", "lossy by design", "broken"}
    assert sorted(sum(names.values(), [])) == sorted(RULES)


def test_changing_a_rule_parameter_changes_only_that_rule(page):
    at = run()
    before = table(at)
    at.slider(key="w_lenient_l").set_value(0.9).run()
    assert not at.exception
    after = table(at)
    assert after.loc["lenient", "params"] == "l = 0.9"
    assert after.loc["lenient", "exact_tv"] < before.loc["lenient", "exact_tv"]
    assert after.loc["lenient", "acceptance_long_run"] < before.loc["lenient",
                                                                    "acceptance_long_run"]
    others = [r for r in RULES if r != "lenient"]
    assert after.loc[others].equals(before.loc[others])
    at.slider(key="w_multi_draft_m").set_value(1).run()
    t = table(at)  # one candidate: SpecInfer is the standard rule
    assert t.loc["multi_draft", "acceptance_long_run"] == pytest.approx(
        t.loc["correct", "acceptance_long_run"], abs=1e-12)


def test_a_tiny_bias_is_reported_as_not_resolvable(page):
    at = run()
    at.slider(key="w_inclusive_coin_u_bits").set_value(24).run()
    row = table(at).loc["inclusive_coin"]
    assert row["exact_tv"] > 0 and row["verdict"] == "not resolvable at this n"


def test_k_and_n_reach_the_gallery():
    at = run(k="2")
    assert at.slider(key="w_k").value == 2
    assert (table(at)["tokens_per_call_long_run"] <= 3.0 + 1e-9).all()
    floor = {m.label: m.value for m in at.metric}["sampling floor (expected TV of n exact draws)"]
    at.select_slider(key="w_rules_n").set_value(20_000).run()
    m = {m.label: m.value for m in at.metric}
    assert m["decodes per rule"] == "20,000"
    assert m["sampling floor (expected TV of n exact draws)"] != floor


@pytest.mark.parametrize("params, key", [
    ({"k": "99"}, "k"),
    ({"rule": "nonsense<b>"}, "rule"),
    ({"notation": "greek"}, "notation"),
])
def test_invalid_url_params_give_notes(params, key):
    at = run(**params)
    notes = " ".join(w.value for w in at.warning)
    assert f"URL parameter {key}=" in notes and "<b>" not in notes
    assert len(table(at)) == 22


# ----------------------------------------------------------------- production metrics
@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_production_metrics_follow_the_sidebar_rule():
    at = run(rule="multi_draft", k="3", open=OPEN_TABLES + "," + PRODUCTION_CHART)
    md = " ".join(m.value for m in at.markdown)
    assert "'multi_draft'" in md
    prod = production(at)
    assert list(prod["metric"])[:2] == ["mean acceptance length (1 + accepted / drafts)",
                                        "draft acceptance rate (accepted / drafted)"]
    fig = next(c for c in charts(at) if "Production metrics" in c["layout"]["title"]["text"])
    theory = next(t for t in fig["data"] if t["name"].startswith("i.i.d. theory"))
    assert len(theory["y"]) == 3  # alpha^i, i = 1..k
    length = prod.loc[0, "exact"]
    at.slider(key="w_multi_draft_m").set_value(6).run()  # the gallery's parameter applies
    assert production(at).loc[0, "exact"] > length


def test_production_table_shows_its_columns_with_the_round_count():
    """The production table is drawn from views.columns (headers, formats, order), and its
    measured column says how many rounds it counts."""
    at = run()
    table = next(d for d in at.dataframe if "metric" in d.value.columns)
    config = json.loads(table.proto.columns)
    assert list(table.proto.column_order) == ["metric", "measured", "exact", "theory"]
    assert config["measured"]["label"] == f"measured ({gallery.METRICS_ROUNDS:,} rounds)"
    assert config["exact"]["label"] == "exact (long run)"
    assert {config[k]["type_config"]["format"] for k in ("exact", "theory")} == {"%.4f"}
    # alpha is not measured: the grid wrote None; the column is written out, a dash there
    measured = list(table.value["measured"])
    assert measured[-1] == show.MISSING and config["measured"]["alignment"] == "right"
    assert all(re.fullmatch(r"\d+\.\d{4}", v) for v in measured[:-1]), measured


def test_converter_explains_why_the_rate_is_not_alpha():
    at = run(k="4")
    m = {m.label: m.value for m in at.metric}
    assert m["alpha"] == "0.8000" and m["draft acceptance rate"] == "0.5904"
    at.radio(key="w_conv_given").set_value("rate").run()
    at.number_input(key="w_conv_value").set_value(0.5904).run()
    assert {m.label: m.value for m in at.metric}["alpha"] == "0.8000"
    at.radio(key="w_conv_given").set_value("length").run()
    at.number_input(key="w_conv_value").set_value(0.5).run()  # below 1: impossible
    assert not at.exception
    assert any("mean acceptance length must be in [1, 5]" in w.value for w in at.warning)


# ----------------------------------------------------------------- letters
@pytest.mark.parametrize("path", ["app.py", "pages/1_round.py", RULES_PAGE.name])
def test_chen_letters_swap_p_and_q(path):
    file = ROOT / path if path == "app.py" or "/" in path else ROOT / "pages" / path
    lev, chen = run(file), run(file, notation="chen")
    assert "min(1, p/q)" in text(lev) and "min(1, q/p)" not in text(lev)
    assert "min(1, q/p)" in text(chen) and "min(1, p/q)" not in text(chen)


def test_chen_letters_leave_rule_names_alone():
    chen = run(notation="chen", rule="topk_q")
    assert "'topk_q'" in " ".join(m.value for m in chen.markdown)
    assert "**topk_q: p from before top-k" in " ".join(m.value for m in chen.markdown)
    assert chen.slider(key="w_topk_q_top_k").label.startswith("topk_q: top_k")
    assert "topk_q" in list(chen.dataframe[0].value["rule"])


def test_chen_letters_reach_the_rules_table_and_charts():
    chen = run(notation="chen", rule="one_hot")
    assert "**one_hot: one-hot p" in " ".join(m.value for m in chen.markdown)
    assert any("norm(max(0, q - p))" in e for e in (m.value for m in chen.markdown))
    assert chen.radio(key="w_notation").value == "chen"
