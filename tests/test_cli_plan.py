"""`python -m specviz plan` on the shipped files and on bad input."""

from __future__ import annotations

import io
import json

import pytest

from specviz.cli import main
from specviz.web.settings import DEFAULTS

EX = "specviz/analysis/examples/vllm_metrics.prom"
CFG = "specviz/analysis/presets/"


def run(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_plan_prints_verdict_and_tables():
    rc, text = run("plan", "--metrics", EX, "--target-config", CFG + "Llama-3.1-8B.json",
                   "--draft-config", CFG + "Llama-3.2-1B.json", "--gpu", "H100",
                   "--context", "4096")
    assert rc == 0
    assert "Llama-3.1-8B (bf16) with Llama-3.2-1B (bf16)" in text and "use k = 3" in text
    assert "Acceptance by position" in text and "By batch size" in text


def test_plan_without_options_prices_the_plan_pages_defaults():
    rc, text = run("plan")
    d = DEFAULTS
    assert rc == 0 and (f"{d.plan_target} ({d.plan_tdtype}) with {d.plan_draft} "
                        f"({d.plan_ddtype}) as draft on {d.plan_gpu}, context {d.plan_ctx:,}, "
                        f"KV cache {d.plan_kvdtype}:") in text
    assert "rounds of k = 4 from vLLM Prometheus" in text  # /plan's example metrics


def test_plan_json_and_presets():
    rc, text = run("plan", "--target-config", "Qwen3-32B", "--draft-config", "Qwen3-0.6B",
                   "--gpu", "H200", "--json")
    doc = json.loads(text)
    assert rc == 0 and doc["by_batch"] and doc["shape"] == "decays"


def test_plan_bad_input(capsys):
    rc, _ = run("plan", "--metrics", "tests/fixtures/plan/no_spec.prom")
    assert rc == 2 and "no speculative-decoding counters" in capsys.readouterr().err
    rc, _ = run("plan", "--target-config", "Llama-3.1-70B")
    assert rc == 2 and "fits with fp8" in capsys.readouterr().err
    rc, _ = run("plan", "--gpu", "Z80")
    assert rc == 2 and "unknown accelerator" in capsys.readouterr().err


def test_plan_heads_trees_ngram_and_measured(capsys):
    rc, text = run("plan", "--draft-kind", "eagle", "--tree", "4,3,16", "--measured", "20,22")
    assert rc == 0 and "priced as that tree" in text and "EAGLE head (1 layer" in text
    assert "the roofline beside your measurements" in text and "roofline ratio" in text
    assert "Draft (an EAGLE head)" in text and "the LM head is the target's" in text
    for kind in ("lookup", "ngram"):  # prompt lookup, and its old name
        rc, text = run("plan", "--draft-kind", kind, "--lookup-ms", "0.05", "--json")
        doc = json.loads(text)
        assert rc == 0 and doc["models"][1]["params"] == 0 and doc["measured"] is None
        assert any("measured with prompt lookup" in n for n in doc["notes"])
    rc, _ = run("plan", "--draft-kind", "eagle", "--head-layers", "99")
    assert rc == 2 and "Llama-3.2-1B: a head has 1..8 layers" in capsys.readouterr().err
    rc, _ = run("plan", "--measured", "x")
    assert rc == 2 and "--measured takes up to 3" in capsys.readouterr().err
    rc, _ = run("plan", "--tree", "2,2,500")
    assert rc == 2 and "exceed" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "text", "args", "message"), [
    ("deep.json", "[" * 1000 + "]" * 1000, (), "nested too deeply"),
    ("inf.prom", "vllm:spec_decode_num_drafts_total +Inf\n", (), "num_drafts must be"),
    ("pos.prom", 'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2e9"} 1\n', (),
     "position '2e9'"),
    ("gen0.log", "draft acceptance = 0.5 (1 accepted / 2 generated)\n#gen drafts = 0\n", (),
     "#gen drafts = 0"),
    ("digits.log", "draft acceptance = " + "1" * 20_000 + "x accepted", (), "the cap is 4,096"),
    ("timings.json", '{"timings": {"draft_n": Infinity}}', ("--k", "4"), "draft_n must be"),
    ("rates.csv", "position,rate\n1,0.5\n", ("--rounds", "1" + "0" * 30), "rounds behind"),
    ("ok.prom", None, ("--context", "1" + "0" * 400), "context must be 1..10,000,000"),
])
def test_plan_hostile_files_get_a_message_not_a_traceback(tmp_path, capsys, name, text, args,
                                                          message):
    path = tmp_path / name
    path.write_text(text if text is not None else open(EX).read())
    rc, _ = run("plan", "--metrics", str(path), *args)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err, err


def test_plan_hostile_config_gets_a_message(tmp_path, capsys):
    cfg = json.loads(open(CFG + "Llama-3.1-8B.json").read())
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({**cfg, "hidden_size": float("inf")}))
    rc, _ = run("plan", "--target-config", str(path))
    assert rc == 2 and "'hidden_size' must be a whole number; got inf" in capsys.readouterr().err


def test_plan_model_choice_and_an_earlier_scrape(tmp_path, capsys):
    two = "tests/fixtures/plan/vllm_two_models.prom"
    rc, text = run("plan", "--metrics", two)  # the first model, saying so
    assert rc == 0 and "holds 2 models (a, b): shown is a" in text
    rc_a, a = run("plan", "--metrics", two, "--model", "a", "--json")
    rc_b, b = run("plan", "--metrics", two, "--model", "b", "--json")
    assert rc_a == rc_b == 0 and json.loads(a)["alpha"] != json.loads(b)["alpha"]
    earlier, later = open(EX).read().split("\n\n", 1)
    (tmp_path / "t0.prom").write_text(earlier)
    (tmp_path / "t1.prom").write_text(later)
    rc, text = run("plan", "--metrics", str(tmp_path / "t1.prom"), "--metrics-before",
                   str(tmp_path / "t0.prom"))
    assert rc == 0 and "2 scrapes differenced" in text


def test_plan_reads_sglang_averages_and_says_what_they_lack(capsys):
    for name, source in (("sglang_gauges.prom", "SGLang /metrics gauges"),
                         ("sglang_server_info.json", "SGLang /get_server_info")):
        rc, text = run("plan", "--metrics", "tests/fixtures/plan/" + name)
        assert rc == 0 and f"An average from {source}: mean acceptance length 2.500 at k = 3" \
            in text and "No interval" in text
        assert "an average: no count of rounds, so no intervals" in text
        assert "Wilson" not in text
    rc, text = run("plan", "--metrics", "tests/fixtures/plan/sglang_gauges.prom", "--json")
    assert rc == 0 and json.loads(text)["alpha_ci"] is None


def test_plan_tensor_parallel_json_carries_the_split_the_costs_and_their_sources():
    rc, text = run("plan", "--target-config", "Llama-3.1-70B", "--tp", "4", "--devices", "4",
                   "--json")
    doc = json.loads(text)
    par = doc["parallelism"]
    assert rc == 0 and (par["tp"], par["draft_tp"], par["devices"]) == (4, 1, 4)
    assert par["interconnect"]["name"] == "NVLink 4" and "SGLang PR #2904" in \
        par["interconnect"]["source"]
    assert "Pipeline parallelism is not priced" in par["pipeline"]
    assert "on the first device" in par["where"] and "on 4 x H100 SXM" in doc["verdict"]
    o = doc["overheads"]
    assert o["mode"] == "graphs" and o["assumed"] and "CUDA.jl" in o["source"]
    assert {r["cost"] for r in o["costs_us"]} == {"layer", "pass", "round", "tree", "level"}
    t = doc["passes_at_batch_1"]["target"]
    assert t["collectives_s"] > 0 and t["total_s"] == pytest.approx(
        t["roofline_s"] + t["launch_s"] + t["collectives_s"] + t["extra_s"])
    assert "Fixed costs assumed" in doc["verdict"]
    assert doc["settings"]["tp"] == 4 and doc["settings"]["exec_mode"] == "graphs"


def test_plan_given_costs_are_not_assumed_and_the_roofline_alone_has_none():
    rc, text = run("plan", "--exec", "eager", "--layer-us", "100", "--pass-us", "50",
                   "--round-us", "0", "--tree-us", "0", "--level-us", "0", "--json")
    doc = json.loads(text)
    assert rc == 0 and not doc["overheads"]["assumed"] and "Fixed costs as given" in \
        doc["verdict"]
    rc, text = run("plan", "--exec", "none", "--json")
    assert "No fixed cost a pass" in json.loads(text)["verdict"]


@pytest.mark.parametrize(("args", "message"), [
    (("--target-config", "Llama-3.1-70B", "--tp", "3", "--devices", "4"),
     "Parallelism: Llama-3.1-70B: tensor parallelism 3 does not divide its 64 attention heads"),
    (("--tp", "8", "--devices", "4"),
     "Parallelism: tensor parallelism 8 needs 8 devices; the server has 4"),
    (("--tp", "2", "--interconnect", "ICI"),
     "Interconnect: H100 SXM has no interconnect 'ICI'; it has NVLink 4, PCIe Gen5"),
    (("--draft-kind", "eagle", "--tp", "2", "--draft-tp", "1"),
     "a head runs where the target runs"),
    (("--exec", "eager", "--layer-us", "nan"), "Fixed costs: the layer cost must be"),
])
def test_plan_a_split_or_cost_that_cannot_run_gets_its_own_message(capsys, args, message):
    rc, _ = run("plan", *args)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err, err


def test_plan_measured_is_compared_at_the_k_it_was_measured_at():
    """The shipped metrics were measured at k = 4: the measured table prices k = 4, not the
    best k, unless --measured-k says where the verify pass was timed."""
    rc, text = run("plan", "--measured", "20,24", "--json")
    doc = json.loads(text)
    assert rc == 0 and any("compared at k = 4, the draft length the acceptance" in n
                           for n in doc["notes"])
    e = {r["quantity"]: r for r in doc["measured"]}["tokens per round E_k"]["measured"]
    assert e == pytest.approx(1 + 0.8 + 0.6 + 0.42 + 0.2772, rel=1e-3)  # E_4 of the example
    rc, text = run("plan", "--measured", "20,24", "--measured-k", "2", "--json")
    e2 = {r["quantity"]: r for r in json.loads(text)["measured"]}["tokens per round E_k"]
    assert e2["measured"] == pytest.approx(2.4, rel=1e-3)


def test_plan_a_recommendation_past_the_measured_k_says_what_it_assumes():
    """n-gram lookup is nearly free, so the best k runs past the 5 measured: the verdict says
    the extra positions assume alpha^i; a draft model's best k (3) needs no such word."""
    rc, text = run("plan", "--metrics", "tests/fixtures/plan/vllm_iid.prom", "--k-max", "12",
                   "--draft-kind", "ngram")
    verdict = text.split("\n")[2]
    assert rc == 0 and "use k = 12" in verdict
    assert "k = 10, 11, 12 is past the measured k = 5" in verdict and "alpha^i beyond" in verdict
    rc, text = run("plan", "--metrics", "tests/fixtures/plan/vllm_iid.prom", "--k-max", "12")
    assert rc == 0 and "use k = 3" in text and "is past the measured" not in text


def test_plan_tpu():
    rc, text = run("plan", "--gpu", "TPU v5e", "--target-config", "Llama-3.1-8B", "--tp", "4",
                   "--devices", "4", "--json")
    doc = json.loads(text)
    assert rc == 0 and doc["parallelism"]["interconnect"]["name"] == "ICI"
    assert "cloud.google.com/tpu/docs/v5e" in doc["accelerator"]["source"]


def test_plan_medusa_heads_and_their_tree(capsys):
    """Medusa's heads: its own tree by default (mc_sim_7b_63: depth 4, 63 nodes and the
    target's next token verified), another from --tree, in the verdict, the notes and the
    JSON; a tree its heads cannot make gets a message."""
    rc, text = run("plan", "--draft-kind", "medusa", "--json")
    doc = json.loads(text)
    assert rc == 0 and doc["draft"] == {"kind": "medusa", "tree": {
        "topk": 1, "steps": 4, "verify_tokens": 64}}
    assert doc["models"][1]["model"] == "Medusa heads (4 at d 4,096)"
    assert any("Medusa's 4 heads (Cai et al. 2024) run once a round" in n for n in doc["notes"])
    assert doc["parallelism"]["draft_tp"] == doc["parallelism"]["tp"] == 1
    rc, text = run("plan", "--draft-kind", "medusa", "--tree", "1,3,32", "--tp", "2")
    assert rc == 0 and "Medusa heads (3 at d 4,096) (bf16) drafting" in text
    assert "fixed tree of 31 candidates" in text and "the head at 2" in text
    rc, _ = run("plan", "--draft-kind", "medusa", "--tree", "1,9,64")
    assert rc == 2 and "Medusa has 1..8 heads" in capsys.readouterr().err
