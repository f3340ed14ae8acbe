"""vLLM's and SGLang's outputs as those servers write them: v0 counters, names escaped by
an OpenMetrics client, several models in one scrape, SGLang's short histograms and older
meta_info (SGLang's averages: test_sglang_averages.py)."""

from __future__ import annotations

import json

import pytest

from specviz.analysis.record import MetricsError, ModelChoice
from specviz.analysis.servermetrics import parse_any


def counter(name: str, value: float, labels: str = 'model_name="m"', help_: str = "") -> str:
    return (f"# HELP {name} {help_ or 'Number of ' + name.split('_', 3)[-1] + '.'}\n"
            f"# TYPE {name} counter\n{name}_total{{{labels}}} {value}\n")


def test_vllm_v0_counters_give_rounds_as_emitted_minus_accepted():
    """vLLM v0 has no num_drafts: each round emits its accepted drafts and one more."""
    text = (counter("vllm:spec_decode_num_accepted_tokens", 3000.0)
            + counter("vllm:spec_decode_num_draft_tokens", 5000.0)
            + counter("vllm:spec_decode_num_emitted_tokens", 4000.0)
            + "# HELP vllm:spec_decode_draft_acceptance_rate Speculative token acceptance rate.\n"
              "# TYPE vllm:spec_decode_draft_acceptance_rate gauge\n"
              'vllm:spec_decode_draft_acceptance_rate{model_name="m"} 0.6\n')
    rec = parse_any(text)
    assert (rec.rounds, rec.drafted, rec.accepted, rec.k) == (1000, 5000, 3000, 5)
    assert any("emitted minus accepted" in n for n in rec.notes)


def test_missing_counters_say_what_was_found():
    text = counter("vllm:spec_decode_num_accepted_tokens", 30.0)
    with pytest.raises(MetricsError, match="num_drafts \\(v1\\) or .*num_emitted_tokens \\(v0\\)"
                                           ".*found: vllm:spec_decode_num_accepted_tokens"):
        parse_any(text)


def test_openmetrics_names_escaped_to_underscores():
    """An OpenMetrics client writes vllm_spec_decode_... (':' escaped) and ends with # EOF."""
    text = (counter("vllm_spec_decode_num_drafts", 100.0)
            + counter("vllm_spec_decode_num_draft_tokens", 300.0)
            + counter("vllm_spec_decode_num_accepted_tokens", 150.0)
            + "# TYPE vllm_spec_decode_num_accepted_tokens_per_pos counter\n"
            + "".join(f'vllm_spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",'
                      f'position="{i}"}} {v}\n' for i, v in enumerate((70.0, 50.0, 30.0)))
            + "# EOF\n")
    rec = parse_any(text)
    assert (rec.rounds, rec.k, rec.accepted_at.tolist()) == (100, 3, [70, 50, 30])


def two_models() -> str:
    out = ""
    for name, (n, d, a) in (("meta-llama/Llama-3.1-8B", (100, 400, 200)),
                            ("Qwen/Qwen3-8B", (50, 150, 30))):
        lab = f'engine="0",model_name="{name}"'
        out += (counter("vllm:spec_decode_num_drafts", n, lab)
                + counter("vllm:spec_decode_num_draft_tokens", d, lab)
                + counter("vllm:spec_decode_num_accepted_tokens", a, lab))
    return out


def test_several_models_are_listed_and_one_is_chosen():
    text = two_models()
    with pytest.raises(ModelChoice, match="2 models .*choose one") as err:
        parse_any(text)
    assert err.value.models == ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B")
    qwen = parse_any(text, model="Qwen/Qwen3-8B")
    assert qwen.rounds == 50 and qwen.models == err.value.models
    assert parse_any(text, model="meta-llama/Llama-3.1-8B").accepted == 200
    with pytest.raises(ModelChoice, match="no counters of model 'gpt'"):
        parse_any(text, model="gpt")
    one = (counter("vllm:spec_decode_num_drafts", 10) + counter(
        "vllm:spec_decode_num_draft_tokens", 30) + counter("vllm:spec_decode_num_accepted_tokens",
                                                             15))
    assert parse_any(one).models == ()  # one model: no choice to offer
    unnamed = (counter("vllm:spec_decode_num_drafts", 10) + counter(
        "vllm:spec_decode_num_draft_tokens", 30) + counter("vllm:spec_decode_num_accepted_tokens",
                                                             12, labels='engine="0"'))
    rec = parse_any(unnamed)  # a series without model_name names no second model
    assert (rec.rounds, rec.drafted, rec.accepted, rec.models) == (10, 30, 12, ())


def test_sglang_k_comes_from_proposed_drafts_over_verify_count():
    """SGLang's histogram grows only to the most drafts a round kept: with k = 4 drafted per
    round and no round keeping more than 2, it has 3 buckets, not 5."""
    mi = {"meta_info": {"spec_verify_ct": 40, "spec_num_proposed_drafts": 160,
                        "spec_num_correct_drafts": 30, "completion_tokens": 70,
                        "spec_correct_drafts_histogram": [20, 10, 10]}}
    rec = parse_any(json.dumps(mi))
    assert rec.k == 4 and rec.rounds == 40  # the histogram padded to k + 1 = 5 buckets
    assert rec.accepted_at.tolist() == [20, 10, 0, 0]


def test_older_sglang_meta_info_needs_k():
    mi = {"meta_info": {"prompt_tokens": 12, "completion_tokens": 130, "spec_verify_ct": 50}}
    with pytest.raises(MetricsError, match="--speculative-num-steps"):
        parse_any(json.dumps(mi))
    rec = parse_any(json.dumps(mi), k=3)
    assert (rec.rounds, rec.drafted, rec.accepted) == (50, 150, 80)


VLLM_DOC = {  # vLLM's docs/features/speculative_decoding/acceptance_metrics.md, a summary
    "mean_acceptance_length": 1.2325581395348837, "draft_acceptance_rate": 0.07751937984496124,
    "acceptance_histogram": [39, 1, 0, 3], "acceptance_histogram_by_draft_length":
    {"3": [39, 1, 0, 3]}, "num_spec_steps": 43, "num_accepted_draft_tokens": 10,
    "num_draft_tokens": 129, "num_spec_tokens": 3}


def test_vllm_histograms_by_draft_length():
    """One length: the histogram as it is. Several (variable-length drafting, grammar-cut
    drafts): the law comes from the steps that drafted the longest, saying so."""
    one = parse_any(json.dumps({"metrics": {"speculative_decoding": VLLM_DOC}}))
    assert (one.rounds, one.k, one.accepted_at.tolist()) == (43, 3, [4, 3, 3])
    mixed = {**VLLM_DOC, "acceptance_histogram": [45, 3, 0, 3], "num_spec_steps": 51,
             "num_accepted_draft_tokens": 12, "num_draft_tokens": 139,
             "acceptance_histogram_by_draft_length": {"3": [39, 1, 0, 3], "1": [6, 2]}}
    rec = parse_any(json.dumps({"metrics": {"speculative_decoding": mixed}}))
    assert (rec.rounds, rec.k, rec.accepted_at.tolist()) == (43, 3, [4, 3, 3])
    assert "steps by length: 1: 8, 3: 43" in rec.notes[0]
    bad = {**mixed, "acceptance_histogram_by_draft_length": {"3": [1, 2], "1": [6, 2]}}
    with pytest.raises(MetricsError, match="maps a draft length k .* to k \\+ 1 counts"):
        parse_any(json.dumps({"metrics": {"speculative_decoding": bad}}))
