"""The one exactness audit (specviz.analysis.audit): its two tests, its verdict, and the n
that resolves a bias."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specviz.analysis import audit as A
from specviz.analysis.stats import sampling_floor, tv_threshold
from specviz.core.exact import target_joint
from specviz.core.tables import default_tables

TARGET = np.array([0.5, 0.3, 0.2])


def test_the_audit_counts_n_and_reads_both_tests_against_lines_derived_from_n():
    counts = np.array([5_020, 2_990, 1_990])  # n = 10,000, close to the target
    a = A.audit(counts, TARGET, biased=False)
    assert a.n == 10_000
    assert abs(a.mc_tv - 0.002) < 1e-12  # (|0.502-0.5| + |0.299-0.3| + |0.199-0.2|) / 2
    assert a.floor == sampling_floor(TARGET, 10_000)
    assert a.threshold == tv_threshold(TARGET, 10_000)
    assert 0.5 < a.p_value <= 1.0 and a.at_floor and a.verdict == A.CONSISTENT


def test_a_far_sample_fails_both_tests():
    a = A.audit(np.array([2_000, 4_000, 4_000]), TARGET, biased=True)  # negative control
    assert not a.at_floor and a.p_value < 1e-100 and a.verdict == A.CAUGHT
    assert a.test.tv_above and a.test.p_below and "TV above the threshold" in a.test.text


def test_verdicts():
    base = A.Audit(n=10_000, mc_tv=0.001, floor=0.005, threshold=0.01, p_value=0.5,
                   biased=False)
    assert base.verdict == A.CONSISTENT
    assert replace(base, mc_tv=0.02).verdict == A.FALSE_ALARM
    assert replace(base, biased=True).verdict == A.UNRESOLVED
    assert replace(base, biased=True, mc_tv=0.05).verdict == A.CAUGHT
    assert replace(base, p_value=1e-5).verdict == A.FALSE_ALARM  # exact, yet p is tiny
    assert replace(base, biased=True, p_value=1e-5).verdict == A.CAUGHT  # TV under the line
    assert replace(base, biased=True, p_value=0.002).verdict == A.UNRESOLVED
    assert not A.is_biased(1e-12) and A.is_biased(1.1e-12)


def test_n_to_resolve_is_where_the_threshold_crosses_the_bias():
    target = target_joint(default_tables().P, 0, n_tokens=2)
    for bias in (0.3, 0.02, 0.004):
        n = A.n_to_resolve(target, bias)
        assert tv_threshold(target, n) < bias <= tv_threshold(target, n - 1)
    assert A.n_to_resolve(target, 0.0) is None
    assert A.n_to_resolve(target, 1e-13) is None
    assert A.n_to_resolve(target, 1e-7) is None  # would need more than 10^12 decodes
