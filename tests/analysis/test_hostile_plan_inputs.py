"""/plan's parsers under hostile pastes: every one gets the field's own message (a
MetricsError or ConfigError, never an OverflowError, RecursionError, ZeroDivisionError or
TypeError), nothing is sized by a number before it is checked, and no paste makes a parse
slow (a pattern that backtracks on a long run of digits held the server for tens of s)."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from specviz.analysis import llamalog, modelcfg, serverformats
from specviz.analysis.servermetrics import MetricsError, parse_any
from specviz.core import interrupt
from specviz.views import plan as pv

P = "vllm:spec_decode_"
DEEP = 1000  # nesting that json's reader cannot recurse through


def prom(drafts: str = "100", tokens: str = "300", accepted: str = "150",
         positions: tuple[tuple[str, str], ...] = ()) -> str:
    text = (f"{P}num_drafts_total {drafts}\n{P}num_draft_tokens_total {tokens}\n"
            f"{P}num_accepted_tokens_total {accepted}\n")
    return text + "".join(f'{P}num_accepted_tokens_per_pos_total{{position="{p}"}} {v}\n'
                          for p, v in positions)


def llama_line(inside: str = "10 accepted / 20 generated", tail: str = "") -> str:
    return f"slot print_timing: id 0 | draft acceptance = 0.5 ({inside}){tail}\n"


METRICS = {  # name: (pasted text, what the message must say)
    "json nested 1000 deep (array)": ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    "json nested 1000 deep (object)": ('{"a":' * DEEP + "1" + "}" * DEEP, "nested too deeply"),
    "json integer of 5000 digits": ('{"acceptance_histogram": [' + "1" * 5000 + ", 1]}",
                                    "too long"),
    "counter 1e308": (prom(drafts="1e308", tokens="1e308", accepted="1e308"),
                      "num_drafts must be a whole number in 0..9,007"),
    "counter +Inf": (prom(drafts="+Inf"), "num_drafts must be a whole number.*got inf"),
    "counter NaN": (prom(accepted="NaN"), "num_accepted_tokens must be a whole number.*nan"),
    "counter negative": (prom(drafts="-5"), "num_drafts must be a whole number"),
    "counter fractional": (prom(drafts="10.5"), "num_drafts must be a whole number"),
    "counters summed past 2^53": (prom(drafts="9e15") + prom(drafts="9e15").replace(
        "_total ", '_total{engine="1"} '), "summed over its series"),
    "position +Inf": (prom(positions=(("+Inf", "10"),)), "position '\\+Inf'.*0..63"),
    "position NaN": (prom(positions=(("NaN", "10"),)), "position 'NaN'"),
    "position 60000000": (prom(positions=(("60000000", "10"),)), "position '60000000'"),
    "position 2e9": (prom(positions=(("2000000000", "10"),)), "position '2000000000'"),
    "position 0.5": (prom(positions=(("0.5", "10"),)), "position '0.5'"),
    "position -1": (prom(positions=(("-1", "10"),)), "position '-1'"),
    "position missing": (prom() + f"{P}num_accepted_tokens_per_pos_total 5\n",
                         "without a position"),
    "per-position count +Inf": (prom(positions=(("0", "+Inf"),)), "at position 0|got inf"),
    "vLLM histogram [1e300, 1]": (json.dumps({"acceptance_histogram": [1e300, 1]}),
                                  "histogram count must be a whole number"),
    "vLLM histogram of 500,000 buckets": (json.dumps({"acceptance_histogram": [1] * 500_000}),
                                       "500,000 buckets"),
    "vLLM histogram strings": ('{"acceptance_histogram": ["1", "2"]}', "histogram count"),
    "vLLM num_spec_tokens Infinity": ('{"acceptance_histogram": [1, 2], '
                                      '"num_spec_tokens": Infinity}', "num_spec_tokens"),
    "vLLM num_spec_tokens NaN": ('{"acceptance_histogram": [1, 2], "num_spec_tokens": NaN}',
                                 "num_spec_tokens must be a draft length"),
    "vLLM num_spec_tokens 1e308": ('{"acceptance_histogram": [1, 2], '
                                   '"num_spec_tokens": 1e308}', "num_spec_tokens"),
    "vLLM num_spec_steps Infinity": ('{"acceptance_histogram": [1, 2], '
                                     '"num_spec_steps": Infinity}', "whole number"),
    "SGLang 1e308": (json.dumps({"meta_info": {"spec_verify_ct": 1e308,
                                               "spec_num_proposed_drafts": 1e308,
                                               "spec_num_correct_drafts": 1e308}}),
                     "spec_verify_ct must be a whole number"),
    "SGLang drafted Infinity": ('{"meta_info": {"spec_verify_ct": 3, "spec_num_proposed_drafts"'
                                ': Infinity, "spec_num_correct_drafts": 1}}', "drafted count"),
    "SGLang histogram [1e300, 1]": (json.dumps({"meta_info": {
        "spec_verify_ct": 2, "spec_correct_drafts_histogram": [1e300, 1]}}), "histogram count"),
    "hand CSV 0,1e300": ("accepted,rounds\n0,1e300\n1,1\n", "histogram count"),
    "hand CSV 40-digit count": ("accepted,rounds\n0,1" + "0" * 40 + "\n1,1\n",
                                "a number of 41 digits"),
    "hand CSV 5000 columns": ("accepted,rounds" + ",x" * 5000 + "\n0,1\n", "short lines"),
    "hand CSV 5000 fields in a row": ("accepted,rounds\n0,1" + ",1" * 5000 + "\n",
                                      "short lines"),
    "hand CSV 10^5 rows": ("accepted,rounds\n" + "0,1\n" * 10**5, "at most 65 rows"),
    "llama.cpp #gen drafts = 0": (llama_line() + "statistics: #gen drafts = 0, #acc = 0\n",
                                  "#gen drafts = 0"),
    "llama.cpp counts of 401 digits": (llama_line("1" + "0" * 400 + " accepted / 2" + "0" * 400
                                                  + " generated") + "#gen drafts = 10\n",
                                       "at most 32 characters"),
    "llama.cpp count 1e308": (llama_line("1e308 accepted / 1e308 generated")
                              + "#gen drafts = 10\n", "accepted must be a whole number"),
    "llama.cpp rate inf": (llama_line(tail=", mean acceptance length = 2, acceptance rate per "
                                      "position = (inf, 0.5)") + "#gen drafts = 10\n",
                           "rate per position must be a finite number"),
    "llama.cpp rate 7": (llama_line(tail=", acceptance rate per position = (7, 0.5)")
                         + "#gen drafts = 10\n", "in \\[0, 1\\]"),
    "llama.cpp rate x": (llama_line(tail=", acceptance rate per position = (x, 0.5)")
                         + "#gen drafts = 10\n", "got 'x'"),
    "llama.cpp 100 rates": (llama_line(tail=", acceptance rate per position = ("
                                       + ", ".join(["0.5"] * 100) + ")") + "#gen drafts = 10\n",
                            "100 rates per position"),
    "llama.cpp mean length 1 + 1e-15": (llama_line(tail=", mean acceptance length = "
                                                   "1.000000000000001"), "fewer than the"),
    "llama.cpp #gen drafts Infinity": (llama_line() + "#gen drafts = Infinity,\n",
                                       "#gen drafts must be a finite number"),
    "llama.cpp garbled counts": (llama_line("10 accepted, 20 generated"), "expected 'draft"),
}


@pytest.mark.parametrize("name", list(METRICS))
def test_hostile_metrics_get_the_fields_own_message(name):
    text, message = METRICS[name]
    with pytest.raises(MetricsError, match=message):
        parse_any(text)


@pytest.mark.parametrize(("doc", "k", "message"), [
    ('{"timings": {"draft_n": Infinity, "draft_n_accepted": 1}}', 4, "draft_n must be"),
    ('{"timings": {"draft_n": 1e308, "draft_n_accepted": 1}}', 4, "draft_n must be"),
    ('{"timings": {"draft_n": 10, "draft_n_accepted": NaN}}', 4, "draft_n_accepted must be"),
    ('{"timings": {"draft_n": 10, "draft_n_accepted": 1}}', 10**30, "--draft-max"),
])
def test_hostile_llamacpp_timings(doc, k, message):
    with pytest.raises(MetricsError, match=message):
        parse_any(doc, k=k)


def test_hostile_rounds_behind_rates():
    with pytest.raises(MetricsError, match="rounds behind the rates"):
        parse_any("position,rate\n1,0.5\n", rounds=10**30)


BASE = json.loads(modelcfg.preset_text("Llama-3.1-8B"))
MOE = {**BASE, "num_local_experts": 8, "num_experts_per_tok": 2}
CONFIGS = {  # name: (config.json text, what the message must say)
    "nested 1000 deep": ('{"a":' * DEEP + "1" + "}" * DEEP, "nested too deeply"),
    "hidden_size Infinity": (json.dumps({**BASE, "hidden_size": float("inf")}),
                             "'hidden_size' must be a whole number; got inf"),
    "hidden_size NaN": (json.dumps({**BASE, "hidden_size": float("nan")}),
                        "'hidden_size' must be a whole number; got nan"),
    "hidden_size 1e300": (json.dumps({**BASE, "hidden_size": 1e300}),
                          "'hidden_size' = 1e\\+300 is not a plausible value"),
    "vocab_size 1e300": (json.dumps({**BASE, "vocab_size": 1e300}), "'vocab_size' = 1e\\+300"),
    "head_dim Infinity": (json.dumps({**BASE, "head_dim": float("inf")}), "'head_dim' must"),
    "shared expert width 1e300": (json.dumps({**MOE, "shared_expert_intermediate_size": 1e300}),
                                  "'shared_expert_intermediate_size' = 1e\\+300"),
    "n_shared_experts 1e300": (json.dumps({**MOE, "n_shared_experts": 1e300}),
                               "'n_shared_experts' = 1e\\+300"),
    "n_shared_experts [1]": (json.dumps({**MOE, "n_shared_experts": [1]}),
                             "'n_shared_experts' must be a whole number; got \\[1\\]"),
    "n_shared_experts 'x'": (json.dumps({**MOE, "n_shared_experts": "x"}), "n_shared_experts"),
    "num_local_experts Infinity": (json.dumps({**BASE, "num_local_experts": float("inf"),
                                               "num_experts_per_tok": 2}), "num_local_experts"),
    "num_experts_per_tok 1e300": (json.dumps({**MOE, "num_experts_per_tok": 1e300}),
                                  "num_experts_per_tok"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_hostile_configs_get_the_fields_own_message(name):
    text, message = CONFIGS[name]
    with pytest.raises(modelcfg.ConfigError, match=message):
        modelcfg.parse_config(text, name="target")


def test_the_experts_message_states_the_real_cap():
    """The cap on experts is LIMITS["experts"] (4,096), and the message says so."""
    lo, hi = modelcfg.LIMITS["experts"]
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        cfg = json.dumps({**BASE, key: hi + 1, "num_experts_per_tok": 2})
        with pytest.raises(modelcfg.ConfigError, match=f"\\({lo:,}..{hi:,}\\)") as err:
            modelcfg.parse_config(cfg, name="target")
        assert "10,000,000" not in str(err.value)
    ok = modelcfg.parse_config(json.dumps({**BASE, "num_local_experts": hi,
                                           "num_experts_per_tok": 2}))
    assert ok.experts == hi


@pytest.mark.parametrize("name", ["json nested 1000 deep (array)", "counter +Inf", "counter NaN",
                                  "position +Inf", "vLLM histogram [1e300, 1]",
                                  "hand CSV 0,1e300", "vLLM num_spec_tokens Infinity",
                                  "SGLang 1e308", "llama.cpp #gen drafts = 0"])
def test_the_plan_page_data_says_it_and_goes_on(name):
    """plan_page turns each into an error of the measurements, the models still read."""
    page = pv.plan_page(pv.PlanSettings(metrics_text=METRICS[name][0]))
    assert len(page.errors) == 1 and page.errors[0].startswith("Measurements: ")
    assert page.plan is None and not page.verdict


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_plan_page_data_says_a_bad_config(name):
    page = pv.plan_page(pv.PlanSettings(metrics_text=pv.example_text(pv.EXAMPLES[0]),
                                        target_text=CONFIGS[name][0]))
    assert len(page.errors) == 1 and page.errors[0].startswith("target model: ")
    assert page.report is not None  # the measurements were still read


# --------------------------------------------------------------------------- item: freeze
FREEZERS = {  # a run of digits that does not match: the old pattern backtracked on it
    "20,000 digits": "draft acceptance = " + "1" * 20_000 + "x accepted",
    "200,000 digits": "draft acceptance = " + "1" * 200_000 + "x accepted",
    "200,000 digits in the counts": "draft acceptance = 0.5 (" + "1" * 200_000 + " accepted",
    "2,000,000 characters of near misses": ("draft acceptance = 1 (1 accepted / 1\n" * 52_000)
    [:2_000_000],
}


@pytest.mark.parametrize("name", list(FREEZERS))
def test_no_paste_makes_the_log_parse_slow(name):
    """Far under the 14-53 s the backtracking pattern took on 20,000-24,000 digits (a
    generous bound: the machine is loaded; the parse is linear and takes milliseconds)."""
    start = time.perf_counter()
    with pytest.raises(MetricsError):
        parse_any(FREEZERS[name])
    assert time.perf_counter() - start < 1.0


def test_a_long_log_line_is_refused_with_its_cap():
    with pytest.raises(MetricsError, match=f"the cap is {llamalog.LOG_LINE_MAX:,}"):
        parse_any(FREEZERS["20,000 digits"])


def test_the_log_reader_uses_no_pattern():
    """Structural: the llama.cpp reader splits strings; no regular expression is left in
    the module to backtrack."""
    assert not hasattr(serverformats, "re")
    assert not any(type(v).__name__ == "Pattern" for v in vars(serverformats).values())


def test_the_old_format_and_a_log_line_still_read():
    line = ("draft acceptance rate = 0.64479 (  167 accepted /   259 generated), mean "
            "acceptance length =  2.92, acceptance rate per position = (0.805, 0.632, 0.483)\n"
            "statistics draft: #gen drafts =     87, #acc drafts =    70\n")
    rec = parse_any(line)
    assert (rec.rounds, rec.k, rec.drafted) == (87, 3, 259)
    assert rec.accepted_at.tolist() == [70, 55, 42]  # round(rate x 87)


# --------------------------------------------------------------------------- item: memory
@pytest.mark.parametrize("position", ["2000000", "60000000", "2000000000"])
def test_a_far_position_allocates_nothing_before_it_is_refused(position):
    """The old parser built a list of `position` entries before checking k (2e6: 16 MB;
    6e7: +935 MB RSS in 7 s). The position is checked against K_MAX first."""
    text = prom(positions=(("0", "10"), (position, "1")))
    tracemalloc.start()
    try:
        with pytest.raises(MetricsError, match="positions are whole numbers 0..63"):
            parse_any(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20, peak  # bytes


# --------------------------------------------------------------------------- item: stops
@pytest.mark.parametrize("text", [
    prom() * 2000,  # Prometheus samples
    "line\n" * 5000 + llama_line() + "#gen drafts = 10\n",  # a long log
    json.dumps([{"acceptance_histogram": [1, 2]}] * 3000),  # many responses pooled
])
def test_a_long_parse_stops_when_its_session_goes(text):
    """The parsers ask core.interrupt as they go: a closed tab or a shutting-down server
    (the app's hook says stop) ends the parse instead of waiting for it."""
    asked = []

    def hook() -> bool:
        asked.append(1)
        return len(asked) > 1  # the first check passes, a later one stops

    interrupt.install(hook)
    try:
        with pytest.raises(interrupt.Interrupted):
            parse_any(text)
    finally:
        interrupt.install(None)
