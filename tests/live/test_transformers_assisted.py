"""transformers' assisted generation end to end under a warp (top-k, top-p, temperature) on
two table models, audited against plain sampling's exact law (analysis.assistedaudit), and
its negative control: the same path with the assistant reporting its raw logits as the q of
drafts it sampled under the warp (transformers issue #47932's mechanism) must be caught.
n is the smallest that sees every known warp bug (n_for_power), not a number tuned here."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.analysis.lawcompare import BIASED, LOSSLESS

torch = pytest.importorskip("torch")  # the optional audit extra (requirements-audit.lock)
transformers = pytest.importorskip("transformers")

from specviz.analysis.assistedaudit import (  # noqa: E402
    PROMPT,
    TWICE,
    assisted_tables,
    audit_assisted,
    read_rows,
    table_model,
)

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.mark.timeout(120)
def test_a_table_model_reads_back_its_table():
    P, _ = assisted_tables()
    rows = read_rows(table_model(P), PROMPT)
    np.testing.assert_allclose(rows, P, atol=1e-6)  # float32 logits: rows to 1e-6


@pytest.mark.timeout(600)  # about a minute on a quiet core
def test_transformers_assisted_generation_under_a_warp(capsys):
    a = audit_assisted()
    with capsys.disabled():
        print(f"\n{a.sentence}")
    assert a.verdict == LOSSLESS, a.sentence
    assert set(a.comparison.like) <= {"warped", "warped" + TWICE}, a.sentence
    assert a.draft_warps in (1, 2), a.sentence  # it reports a warped row, never the raw q


@pytest.mark.timeout(600)
def test_a_raw_q_wrapped_into_the_path_is_caught(capsys):
    a = audit_assisted(bug="raw_q")
    with capsys.disabled():
        print(f"\n{a.sentence}")
    assert a.verdict == BIASED, a.sentence
    assert a.comparison.like and all(name.startswith("warp_raw_q")
                                     for name in a.comparison.like), a.sentence
    assert a.draft_warps == 0, a.sentence  # the control did report the raw q
