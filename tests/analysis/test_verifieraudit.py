"""The audit of a verifier function (issue 41 part 1): verdicts, bugs named, bad input.

The examples (analysis.verifiers) are written from the rules' descriptions; the audit knows
the registry's exact laws. Negative controls: a shifted row, and laws all equal to the
target's, must each make a test here fail (see the notes of h3-audit).
"""

from __future__ import annotations

import numpy as np
import pytest

from specviz import cli
from specviz.analysis.auditpairs import LEFT_OUT, known_rules, pairs
from specviz.analysis.lawcompare import BIASED, INCONCLUSIVE, LOSSLESS
from specviz.analysis.verifieraudit import (
    audit_isolated,
    audit_verifier,
    load,
    load_source,
)
from specviz.analysis.verifiers import BAD, EXAMPLES, correct
from specviz.core.rules import RULES

SMALL = ["zeros", "k = 1"]  # two small pairs: a run of a second or two
MOST = [p.name for p in pairs() if p.V <= 64]  # every pair but the large vocabulary


def test_every_registry_rule_is_known_or_left_out_for_its_shape():
    assert set(known_rules()) | set(LEFT_OUT) == set(RULES)
    assert all(RULES[name].kind == "tree" or name == "one_hot" for name in LEFT_OUT)


def test_every_known_broken_rule_has_an_example():
    broken = {n for n in known_rules() if RULES[n].family != "lossless"}
    assert broken <= {v[3] for v in EXAMPLES.values()}


@pytest.mark.parametrize("name", [k for k, v in EXAMPLES.items() if v[2] == BAD
                                  and k != "hangs"])
def test_bad_verifiers_get_status_2_with_the_reason(name):
    a = audit_verifier(load(name), n=50, pair_names=SMALL)
    assert a.status == 2 and a.verdict == "bad input" and a.calls == 1
    reason = {"raises": "raised RuntimeError", "out_of_range": "outside 0..3",
              "too_many": "returned 4 tokens", "mutates": "changed its inputs"}[name]
    assert reason in a.sentence


@pytest.mark.parametrize("answer, reason", [
    (lambda d, q, p, rng: [], "returned 0 tokens"),
    (lambda d, q, p, rng: [0.5], "not a sequence of integer"),
    (lambda d, q, p, rng: [[0]], "not a sequence of integer"),
    (lambda d, q, p, rng: None, "not a sequence of integer"),
    (lambda d, q, p, rng: [-1], "outside 0..3"),
])
def test_garbage_is_bad_input(answer, reason):
    a = audit_verifier(answer, n=10, pair_names=["zeros"])
    assert a.status == 2 and reason in a.error


def test_a_slow_verifier_passes_its_budget():
    def slow(d, q, p, rng):
        import time
        time.sleep(0.01)
        return correct(d, q, p, rng)
    a = audit_verifier(slow, n=1000, pair_names=["zeros"], budget_s=0.2)
    assert a.status == 2 and "time budget of 0.2 s" in a.sentence and a.calls < 100


@pytest.mark.slow
def test_a_verifier_that_never_returns_is_stopped():
    a = audit_isolated("hangs", n=10, pair_names=["zeros"], budget_s=1.0)
    assert a.status == 2 and "took longer than the time budget of 1 s" in a.sentence
    assert a.seconds < 30  # the budget counts from the loaded function, not the spawn's 60 s
    gone = audit_isolated(source="import os\ndef verify(d, q, p, rng):\n    os._exit(3)\n",
                          n=10, pair_names=["zeros"], budget_s=5.0)
    assert gone.status == 2 and "ended the process (exit code 3)" in gone.sentence


def test_the_rule_passes_and_greedy_is_caught_and_named():
    """Two small pairs at n = 3,000: the rule is not biased (lossless on every pair and
    n = 5,000 in the slow test; here a small known bias, lenient's, may go unseen)."""
    ok = audit_verifier(correct, n=3000, pair_names=SMALL)
    assert ok.verdict in (LOSSLESS, INCONCLUSIVE) and "correct" in ok.comparison.like
    bad = audit_verifier(load("greedy"), n=3000, pair_names=SMALL)
    assert bad.verdict == BIASED and bad.status == 1 and bad.comparison.like == ("greedy",)
    assert "keep x only if it is the target's most likely token" in bad.sentence


def test_a_bug_no_rule_has_is_biased_unlike_any_known_rule():
    a = audit_verifier(load("bonus_off_by_one"), n=3000, pair_names=SMALL)
    assert a.status == 1 and a.sentence.startswith("biased, unlike any known rule")
    assert "biased, biased" not in a.sentence and ": k = 1: first" in a.sentence


def test_a_small_run_says_it_is_too_small():
    a = audit_verifier(correct, n=100, pair_names=SMALL)
    assert a.status == 3 and "too small to tell" in a.sentence and "raise n" in a.sentence


@pytest.mark.slow
@pytest.mark.parametrize("name", [k for k, v in EXAMPLES.items() if v[2] != BAD])
def test_each_example_gets_its_verdict_and_its_bug_named(name):
    fn, _, want, like = EXAMPLES[name]
    a = audit_verifier(fn, n=5000, pair_names=MOST, name=name)
    assert a.verdict == want, a.sentence
    if like:
        assert a.comparison.like == (like,), a.sentence
    else:
        assert a.comparison.like == () and "unlike any known rule" in a.sentence
    if name == "sample_matching":
        assert "on the table" in a.sentence


@pytest.mark.slow
def test_a_lossless_verifier_fails_about_as_often_as_the_level_says():
    """40 audits of the rule at level 0.25 on two pairs: the false alarms are at most the
    level plus 4 binomial standard errors (Bonferroni over four statistics: at most)."""
    runs, level = 40, 0.25
    fails = sum(audit_verifier(correct, n=400, seed=s, pair_names=SMALL, level=level).verdict
                == BIASED for s in range(runs))
    assert fails / runs <= level + 4 * np.sqrt(level * (1 - level) / runs)


def test_pasted_source_defines_verify():
    fn = load_source("def verify(drafted, q, p, rng):\n    return [int(drafted[0])]\n")
    assert fn(np.array([2]), None, None, None) == [2]
    with pytest.raises(ValueError, match="named verify"):
        load_source("def check(d, q, p, rng):\n    return [0]\n")
    with pytest.raises(ValueError, match="does not run"):
        load_source("def verify(:\n")


def test_load_names_what_is_wrong():
    with pytest.raises(ValueError, match="MODULE:FUNCTION"):
        load("nothing")
    with pytest.raises(ValueError, match="cannot load"):
        load("specviz.analysis.verifiers:nope")
    assert load("specviz.analysis.verifiers:correct") is correct


def test_the_command_line_lists_the_examples_and_needs_a_verifier(capsys):
    assert cli.main(["audit", "--list"]) == 0
    assert "sample_matching" in capsys.readouterr().out
    assert cli.main(["audit"]) == 2
    assert "--verifier" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_line_exit_status(capsys):
    base = ["audit", "--n", "4000", "--pair", "zeros", "--pair", "V = 16, k = 4", "--verifier"]
    assert cli.main(base + ["specviz.analysis.verifiers:correct"]) == 0
    assert "lossless" in capsys.readouterr().out
    assert cli.main(base + ["no_resample"]) == 1
    assert "like no_resample" in capsys.readouterr().out
    assert cli.main(base + ["raises"]) == 2
