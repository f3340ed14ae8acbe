"""The tables' columns (views.columns): human headers, one number format per column, and
names that the rows they are shown with really have; the accelerators' numbers against the
datasheet figures quoted in their sources."""

from __future__ import annotations

import re

import pytest
from scenarios import sc

from specviz.analysis import roofline
from specviz.core.tables import default_tables
from specviz.views import columns as C
from specviz.views import demos, gallery, pagedata, textpage
from specviz.views.plan import PlanSettings, example_text, plan_page

SPECS = {**C.ALL, "DRAFTER": textpage.DRAFTER_COLUMNS, "TEXT_EXACT": textpage.EXACT_COLUMNS,
         "PRODUCTION": C.production_columns(gallery.METRICS_ROUNDS),
         "POLICY": C.policy_columns(0.25)}
FIXED = re.compile(r"%(\.\d+[fe]|d)x?")  # a printf format with a fixed number of decimals
IDENTIFIER = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")  # alpha_eff, tokens_per_call_se


@pytest.mark.parametrize("name", list(SPECS))
def test_headers_are_words_and_each_column_has_one_format(name):
    spec = SPECS[name]
    headers = [entry[0] for entry in spec.values()]
    assert not [h for h in headers if IDENTIFIER.search(h)], headers
    assert len(set(headers)) == len(headers), headers  # no two columns read the same
    for key, (header, fmt, *width) in spec.items():
        assert header == header.strip() and header, key
        assert fmt in (None, C.CHECK) or FIXED.fullmatch(fmt), (key, fmt)
        assert all(isinstance(w, int) and w > 0 for w in width), (key, width)


@pytest.fixture(scope="module")
def rows():
    """The rows each spec is shown with, as the pages make them (small runs)."""
    d = default_tables()
    alpha = pagedata.reprice(demos.draft_sweep(sc(d.P, d.Q, 0, 4, seed=0), "alpha", (0.0, 1.0),
                                               c=0.0, n_rounds=500), 0.1, 4)
    temp = pagedata.reprice(demos.draft_sweep(sc(d.P, d.Q, 0, 4, seed=0), "T", (0.5, 2.0),
                                              c=0.0, n_rounds=500), 0.1, 4)
    ks = pagedata.reprice(demos.k_sweep(sc(d.P, d.Q, 0, seed=0),
                                        c=0.0, ks=(1, 2), n_rounds=500), 0.1)
    curve = pagedata.k_curve(sc(d.P, d.Q, 0), c=0.1, ks=(1, 2)) + pagedata.draft_curve(
        sc(d.P, d.Q, 0, 4), "alpha", (0.0, 1.0), c=0.1) + pagedata.draft_curve(
        sc(d.P, d.Q, 0, 4), "T", (0.5, 2.0), c=0.1)
    ex = demos.exactness(sc(d.P, d.Q, 0, 2, seed=1), n=500, rules=("correct",))
    page = pagedata.roofline_page()
    plan = plan_page(PlanSettings(metrics_text=example_text("vllm_metrics.prom"),
                                  gpu="H100"))
    return {
        "SWEEP": alpha + temp + ks, "CURVE": curve,
        "EXACTNESS": [{**r, "verdict": ""} for r in pagedata.exactness_rows(ex)],
        "COST": demos.cost_model(sc(d.P, d.Q, 0, 4), costs=(0.0, 1.0)).rows,
        "ACCELERATORS": page.accelerators, "ROOFLINE": page.rows,
        "GALLERY": gallery.gallery_rows(gallery.gallery(sc(d.P, d.Q, 0, 2, seed=0), n=200)),
        "PLAN_BY_BATCH": plan.tables["by_batch"], "PLAN_BY_K": plan.tables["by_k"],
        "PRODUCTION": gallery.production(sc(d.P, d.Q, 0, 2), n_rounds=200).rows,
        "POLICY": pagedata.policy_rows(pagedata.dynamic_runs(sc(d.P, d.Q, 0, 3, seed=0),
                                                             length=200, threshold=0.5), 0.25),
    }


@pytest.mark.parametrize("name", ["SWEEP", "CURVE", "EXACTNESS", "COST", "ACCELERATORS",
                                  "ROOFLINE", "GALLERY", "GALLERY_RUN", "PLAN_BY_BATCH",
                                  "PLAN_BY_K", "PRODUCTION", "POLICY"])
def test_every_column_named_is_in_the_rows(rows, name):
    data = rows["GALLERY" if name == "GALLERY_RUN" else name]
    keys = set().union(*(r.keys() for r in data))
    assert set(SPECS[name]) <= keys, set(SPECS[name]) - keys
    if name != "SWEEP" and name != "CURVE":  # the sweeps share one spec across their x
        assert all(set(SPECS[name]) <= set(r) for r in data)


def test_the_sweep_tables_show_measured_and_exact_side_by_side(rows):
    shown = [k for k in C.SWEEP if k in rows["SWEEP"][-1]]
    assert shown == ["k", "cost", "acceptance", "acceptance_exact", "tokens_per_call",
                     "tokens_per_call_se", "tokens_per_call_exact", "speedup", "speedup_exact"]
    assert not [k for k in C.SWEEP if k.endswith("theory")]  # theory: the curve's table


def test_the_production_header_counts_the_rounds_it_is_given():
    assert C.production_columns(1_234)["measured"][0] == "measured (1,234 rounds)"


def test_the_policy_speedup_header_names_its_c():
    assert C.policy_columns(0.25)["speedup"][0] == "speedup at c = 0.25"


NUMBER = r"([\d,]+(?:\.\d+)?)"


def _quoted(source: str, unit: str) -> float | None:
    """The first figure the datasheet quote gives in unit ('TFLOPS', 'TB/s', 'GB')."""
    m = re.search(NUMBER + r" " + re.escape(unit) + r"(?![\w/])", source)
    return float(m[1].replace(",", "")) if m else None


@pytest.mark.parametrize("name", list(roofline.ACCELERATORS))
def test_accelerator_rows_match_their_quoted_datasheets(name):
    row = next(r for r in pagedata.roofline_page().accelerators if r["accelerator"] == name)
    src = row["source"]
    flops = _quoted(src, "TFLOPS") or 1000 * _quoted(src, "PFLOPS")
    assert row["peak_tflops"] == pytest.approx(flops)
    bw = _quoted(src, "TB/s") or _quoted(src, "GB/s") / 1000
    assert row["bandwidth_tb_s"] == pytest.approx(bw)
    if "MiB" in src:  # a GPU: as the card reports it
        mib = float(re.findall(r"(\d[\d,]*) MiB", src)[-1].replace(",", ""))
        assert row["memory_gib"] == pytest.approx(mib / 1024)
        assert mib * 2**20 > 0.9 * 1e9 * float(re.findall(r"(\d+) GB(?!/)", src)[-1])
    else:  # a TPU: as its page states it, in GiB or GB
        gib = _quoted(src, "GiB")
        assert row["memory_gib"] == pytest.approx(gib or _quoted(src, "GB") * 1e9 / 2**30)
    if "no FP8" in src:
        assert row["fp8_tflops"] is None
    else:
        fp8 = re.search(NUMBER + r" (?:TFLOPS |PFLOPS )?dense FP8", src)
        scale = 1000 if "PFLOPS" in src else 1
        assert row["fp8_tflops"] == pytest.approx(scale * float(fp8[1].replace(",", "")))
    assert row["ridge"] == pytest.approx(flops / 2 * 1e12 / (bw * 1e12))
