"""/plan's settings: one object, its defaults declared once, read alike by the URL, the CLI,
the page and the JSON."""

from __future__ import annotations

import io
import json
from dataclasses import fields, replace

import pytest

from specviz import cliplan
from specviz.cli import build_parser, main
from specviz.views import plan as pv
from specviz.views import plansettings as ps
from specviz.web import settings as S


def test_every_setting_is_one_url_field_with_its_default():
    names = {f.name for f in fields(ps.PlanSettings)}
    assert set(ps.URL) | set(ps.LABELS) == names and not set(ps.URL) & set(ps.LABELS)
    plan_fields = {f.name for f in S.FIELDS if f.pages == ("plan",)}
    assert set(ps.URL.values()) == plan_fields
    for name, key in ps.URL.items():
        assert S.FIELD[key].default == getattr(ps.DEFAULTS, name), name
        assert type(S.FIELD[key].default) is type(getattr(ps.DEFAULTS, name)), name


def _cli(*argv: str) -> ps.PlanSettings:
    return cliplan.settings(build_parser().parse_args(["plan", *argv]))


def test_the_cli_without_flags_plans_the_defaults():
    """Only the labels differ: the CLI names a preset by its name."""
    d = ps.DEFAULTS
    assert _cli() == replace(d, target_name=d.target_preset, draft_name=d.draft_preset)


def test_each_flag_sets_its_setting():
    s = _cli("--gpu", "H200 SXM", "--context", "2048", "--k-max", "5", "--draft-kind", "eagle",
             "--tree", "4,3,16", "--measured", "20,22,3", "--batch", "7")
    assert (s.gpu, s.context_len, s.k_max, s.draft_kind, s.batch) == ("H200 SXM", 2048, 5,
                                                                      "eagle", 7)
    assert (s.tree_topk, s.tree_steps, s.tree_tokens) == (4, 3, 16)
    assert (s.measured_target_ms, s.measured_verify_ms, s.measured_draft_ms) == (20, 22, 3)


def test_from_url_reads_the_page_values_and_casts():
    values = {key: getattr(ps.DEFAULTS, name) for name, key in ps.URL.items()}
    assert ps.from_url(values) == ps.DEFAULTS
    s = ps.from_url({"plan_ctx": 2048.0, "plan_m_c": 1, "plan_model": None, "k": 3})
    assert s.context_len == 2048 and type(s.context_len) is int
    assert s.measured_c == 1.0 and type(s.measured_c) is float and s.model == ""


def test_the_page_data_keeps_its_settings_and_the_json_prints_them():
    s = ps.PlanSettings(metrics_text=pv.example_text("vllm_metrics.prom"), context_len=2048)
    page = pv.plan_page(s)
    assert page.settings is s and not page.errors
    doc = json.loads(json.dumps(pv.page_json(page), default=float))
    assert doc["settings"]["context_len"] == 2048
    assert doc["settings"]["metrics_text"] == {"chars": len(s.metrics_text)}


@pytest.mark.parametrize("argv", [(), ("--context", "1024", "--gpu", "B200")])
def test_cli_json_carries_the_settings_it_planned(argv):
    out = io.StringIO()
    assert main(["plan", *argv, "--json"], out=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["settings"] == ps.settings_json(_cli(*argv))


def test_the_page_labels_every_execution_mode():
    from specviz.analysis import overheads
    from specviz.web import planinputs

    assert tuple(planinputs.MODE_LABELS) == overheads.MODES
    assert len(planinputs.COST_LABELS) == len(overheads.COSTS)
