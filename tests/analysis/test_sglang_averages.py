"""SGLang's averages as its server writes them: the /metrics gauges (rendered here by
prometheus_client, as SGLang's collector renders them) and /get_server_info. Each is read as
an average: the mean acceptance length and k, with no interval and no per-position law."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from specviz.analysis.acceptance import analyse, summary
from specviz.analysis.record import Averages, MetricsError, ModelChoice
from specviz.analysis.servermetrics import parse_any
from specviz.views.plan import PlanSettings, plan_page

FX = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
HELP_L = "The average acceptance length of speculative decoding."
HELP_R = ("The average acceptance rate of speculative decoding (`accepted tokens / total draft "
          "tokens` in batch).")
LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "dp_rank", "moe_ep_rank")


def scrape(ranks: dict, *, rate: bool = True, model: str = "m") -> str:
    """SGLang's two gauges for each dp rank: ranks = {dp_rank: (accepted drafts, rounds,
    num_draft_tokens)} over one log interval, set as its scheduler sets them."""
    reg = CollectorRegistry()
    g_len = Gauge("sglang:spec_accept_length", HELP_L, labelnames=LABELS, registry=reg)
    g_rate = Gauge("sglang:spec_accept_rate", HELP_R, labelnames=LABELS, registry=reg)
    for dp, (acc, rounds, ndt) in ranks.items():
        lab = dict(model_name=model, engine_type="unified", tp_rank="0", pp_rank="0",
                   dp_rank=str(dp), moe_ep_rank="0")
        g_len.labels(**lab).set((acc + rounds) / rounds)
        if rate:
            g_rate.labels(**lab).set((acc + rounds) / (rounds * ndt))
    return generate_latest(reg).decode()


def scrape_new(acc: int, rounds: int, steps: int, ndt: int, *, config: bool = True) -> str:
    """SGLang v0.5.10 on: the rate is accepted drafts / proposed drafts, and (config) the
    active speculative_num_steps and num_draft_tokens are gauges too."""
    reg = CollectorRegistry()
    lab = dict(model_name="m", engine_type="unified", tp_rank="0", pp_rank="0", dp_rank="0",
               moe_ep_rank="0")
    for name, doc, value in (
            ("sglang:spec_accept_length", "Mean acceptance length of speculative decoding "
             "(accepted drafts + bonus token per forward).", (acc + rounds) / rounds),
            ("sglang:spec_accept_rate", "Speculative acceptance rate (`accepted drafts / "
             "proposed drafts` in batch).", acc / (rounds * steps)),
            ("sglang:spec_num_steps", "Currently active speculative_num_steps.", steps),
            ("sglang:spec_num_draft_tokens", "Currently active speculative_num_draft_tokens "
             "(decouples from steps under topk>1).", ndt)):
        if config or "num_" not in name:
            Gauge(name, doc, labelnames=LABELS, registry=reg).labels(**lab).set(value)
    return generate_latest(reg).decode()


def test_newer_gauges_give_k_themselves_or_by_the_newer_rate():
    rec = parse_any(scrape_new(150, 100, 3, 4))
    assert (rec.k, rec.mean_acceptance_length) == (3, 2.5)
    bare = parse_any(scrape_new(150, 100, 3, 4, config=False))  # k = (L - 1) / rate
    assert bare.k == 3 and any("(L - 1) / rate" in n for n in bare.notes)
    old = parse_any(scrape({0: (150, 100, 4)}))  # older HELP: k = L / rate - 1
    assert old.k == 3 and any("L / rate - 1" in n for n in old.notes)
    tree = parse_any(scrape_new(150, 100, 3, 8))
    assert any("SGLang drafted a tree (sglang:spec_num_draft_tokens = 8" in n
               for n in tree.notes)


def iid_length(alpha: float, k: int) -> float:
    """1 + alpha + ... + alpha^k: the i.i.d. mean acceptance length, written here."""
    return sum(alpha ** j for j in range(k + 1))


def test_gauges_give_the_length_and_k_from_length_over_rate():
    rec = parse_any(scrape({0: (150, 100, 4)}))  # --speculative-num-steps 3: 4 tokens
    assert isinstance(rec, Averages)
    assert (rec.k, rec.mean_acceptance_length) == (3, 2.5)
    rep = analyse(rec)
    assert iid_length(rep.alpha, 3) == pytest.approx(2.5, abs=1e-9)
    assert rep.alpha_ci is None and rep.shape == "assumed i.i.d."
    assert all(r["rate_lo"] is None and r["cond_lo"] is None for r in rep.rows)
    assert rep.tokens_per_call(3) == pytest.approx(2.5, abs=1e-9)
    text = " ".join(rec.notes) + summary(rep)
    assert "last log interval" in text and "No interval" in text and "per-position law" in text


def test_the_shipped_fixture_and_the_length_alone_needs_k():
    assert parse_any((FX / "sglang_gauges.prom").read_text()).k == 3
    alone = scrape({0: (150, 100, 4)}, rate=False)
    with pytest.raises(MetricsError, match="not the draft length .*--speculative-num-steps"):
        parse_any(alone)
    assert parse_any(alone, k=5).k == 5  # the user's k, where the rate is missing


def test_ranks_are_averaged_unweighted_and_say_so():
    rec = parse_any(scrape({0: (150, 100, 4), 1: (50, 100, 4)}))  # 2.5 and 1.5
    assert rec.mean_acceptance_length == pytest.approx(2.0)
    assert any("averaged unweighted" in n for n in rec.notes)


@pytest.mark.parametrize(("ranks", "message"), [
    ({0: (0, 100, 4)}, None),  # nothing kept: length 1, alpha 0, read
    ({0: (500, 100, 4)}, "outside 1..k \\+ 1 = 4"),  # 6 > k + 1: not SGLang's own figure
])
def test_lengths_outside_one_to_k_plus_one_are_refused(ranks, message):
    text = scrape(ranks)
    if message is None:
        assert analyse(parse_any(text)).alpha == pytest.approx(0.0, abs=1e-9)
        return
    with pytest.raises(MetricsError, match=message):
        parse_any(text, k=3)


def test_a_zero_gauge_means_no_speculation_yet():
    text = scrape({0: (150, 100, 4)}).replace("} 2.5", "} 0.0").replace("} 0.625", "} 0.0")
    for k in (None, 3):
        with pytest.raises(MetricsError, match="is 0: the server has not verified a draft"):
            parse_any(text, k=k)


def test_escaped_names_and_several_models():
    esc = scrape({0: (150, 100, 4)}).replace("sglang:", "sglang_") + "# EOF\n"
    assert parse_any(esc).mean_acceptance_length == 2.5
    two = scrape({0: (150, 100, 4)}, model="a") + scrape({0: (50, 100, 4)}, model="b")
    with pytest.raises(ModelChoice, match="2 models") as err:
        parse_any(two)
    assert err.value.models == ("a", "b")
    assert parse_any(two, model="b").mean_acceptance_length == 1.5


def info(**over) -> dict:
    doc = json.loads((FX / "sglang_server_info.json").read_text())
    return {**doc, **over}


def test_server_info_gives_the_average_since_start_and_k():
    rec = parse_any(json.dumps(info()))
    assert isinstance(rec, Averages) and (rec.k, rec.mean_acceptance_length) == (3, 2.5)
    assert rec.source == "SGLang /get_server_info"
    assert any("since the server started" in n for n in rec.notes)
    assert parse_any(json.dumps(info()), k=2).k == 2


def test_server_info_of_a_tree_says_to_enter_the_tree():
    rec = parse_any(json.dumps(info(speculative_eagle_topk=4, speculative_num_draft_tokens=8)))
    assert any("SGLang drafted a tree (speculative_eagle_topk = 4" in n for n in rec.notes)


def test_server_info_of_several_ranks_and_of_a_pd_router():
    states = [{"avg_spec_accept_length": 2.0}, {"avg_spec_accept_length": 3.0}]
    rec = parse_any(json.dumps(info(internal_states=states)))
    assert rec.mean_acceptance_length == 2.5 and any("2 ranks" in n for n in rec.notes)
    router = {"internal_states": [{"last_gen_throughput": 0.0, "avg_spec_accept_length": None}],
              "decode": [{"internal_states": [{"avg_spec_accept_length": 1.8}],
                          "speculative_num_steps": 2}]}
    assert parse_any(json.dumps(router)).k == 2  # the decode server's own arguments
    null = info(speculative_num_steps=None)  # a null argument: the state's own is read
    null["internal_states"][0]["speculative_num_steps"] = 2
    assert parse_any(json.dumps(null)).k == 2
    many = parse_any(json.dumps(info(internal_states=[{"avg_spec_accept_length": 2.0}] * 5000)))
    assert any("first 1,024 internal states read (of 5,000+)" in n for n in many.notes)


@pytest.mark.parametrize(("over", "message"), [
    (dict(internal_states=[{"last_gen_throughput": 0.0}], speculative_algorithm=None),
     "no avg_spec_accept_length in internal_states \\(speculative_algorithm = None\\)"),
    (dict(speculative_num_steps=None, internal_states=[{"avg_spec_accept_length": 2.0}]),
     "without speculative_num_steps: enter k"),
    (dict(internal_states=[{"avg_spec_accept_length": "2.5"}]), "must be a number"),
    (dict(internal_states=[{"avg_spec_accept_length": 9.0}]), "outside 1..k \\+ 1 = 4"),
])
def test_server_info_refusals_name_what_was_found(over, message):
    with pytest.raises(MetricsError, match=message):
        parse_any(json.dumps(info(**over)))


def test_the_planner_prices_an_average_and_says_what_it_lacks():
    page = plan_page(PlanSettings(metrics_text=(FX / "sglang_gauges.prom").read_text(),
                                  gpu="H100"))
    assert not page.errors and page.plan is not None
    assert page.report.alpha_ci is None and "No interval" in page.verdict
    assert any("last log interval" in n for n in page.notes)


@pytest.mark.parametrize(("text", "message"), [
    ("sglang:spec_accept_length NaN\n", "must be a finite number; got nan"),
    ("sglang:spec_accept_length -3\nsglang:spec_accept_rate 0.5\n",
     "= -3 and sglang:spec_accept_rate = 0.5 give no draft length"),
    ("sglang:spec_accept_length 2.5\nsglang:spec_accept_rate 0\n", "give no draft length"),
    ("sglang:spec_accept_length 2.5\n# HELP sglang:spec_accept_rate " + HELP_R
     + "\nsglang:spec_accept_rate 1e-300\n", "gives k = 2.5e\\+300, outside 1..64"),
    ("sglang:spec_accept_length 2.5\nsglang:spec_accept_rate 0.5\n",  # no HELP: 4 or 3
     "gives k = 4 \\(builds to v0.5.9\\) or 3 \\(v0.5.10 on\\), with no HELP line"),
    (json.dumps({"internal_states": [{"avg_spec_accept_length": True}],
                 "speculative_num_steps": 3}), "must be a number; got True"),
    (json.dumps({"decode": 5, "avg_spec_accept_length": 2.0, "speculative_num_steps": 3}),
     None),  # a malformed router part is skipped, the top-level average read
    (json.dumps({"internal_states": [{"avg_spec_accept_length": 2.0}],
                 "speculative_num_steps": 10**400}), "a number of 401 digits"),
    ('sglang:spec_accept_length{model_name="a"} 2\nsglang:spec_accept_length{model_name="b"} 2\n',
     "holds gauges of 2 models"),
])
def test_hostile_averages_get_a_message(text, message):
    if message is None:
        assert parse_any(text).mean_acceptance_length == 2.0
        return
    with pytest.raises(MetricsError, match=message):
        parse_any(text)
