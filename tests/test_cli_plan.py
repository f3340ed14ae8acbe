"""`python -m specviz plan` on the shipped files and on bad input."""

from __future__ import annotations

import io
import json

from specviz.cli import main

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
    rc, text = run("plan", "--draft-kind", "ngram", "--lookup-ms", "0.05", "--json")
    doc = json.loads(text)
    assert rc == 0 and doc["models"][1]["params"] == 0 and doc["measured"] is None
    assert any("measured with n-gram" in n for n in doc["notes"])
    rc, _ = run("plan", "--draft-kind", "eagle", "--head-layers", "99")
    assert rc == 2 and "Llama-3.2-1B: a head has 1..8 layers" in capsys.readouterr().err
    rc, _ = run("plan", "--measured", "x")
    assert rc == 2 and "--measured takes up to 3" in capsys.readouterr().err
    rc, _ = run("plan", "--tree", "2,2,500")
    assert rc == 2 and "exceed" in capsys.readouterr().err
