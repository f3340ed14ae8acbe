"""transformers' shipped speculative sampling step, audited as a verifier function through the
thin adapter (analysis.torchverify), and its negative control: the same step handed a q the
drafts did not come from (transformers issue #47932's mechanism) must be caught."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.analysis.lawcompare import BIASED, INCONCLUSIVE, LOSSLESS
from specviz.analysis.verifieraudit import audit_verifier

torch = pytest.importorskip("torch")  # the optional audit extra (requirements-audit.lock)
transformers = pytest.importorskip("transformers")

from specviz.analysis.torchverify import flattened, shipped, with_reported_q  # noqa: E402

pytestmark = [pytest.mark.model, pytest.mark.slow]

SMALL = ["zeros", "k = 1"]  # zeros in q and p; k = 1, where the bonus is half the output
N = 1500


def test_the_adapter_returns_what_transformers_returns():
    q = np.array([[0.5, 0.5, 0.0]])
    p = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])  # p gives the draft nothing
    out = shipped([0], q, p, np.random.default_rng(0))
    assert out == [2]  # rejected: the residual is all on token 2


@pytest.mark.timeout(1800)  # thousands of calls into torch: minutes on a busy machine
def test_transformers_shipped_step(capsys):
    a = audit_verifier(shipped, n=N, pair_names=SMALL, name="transformers "
                       + transformers.__version__)
    with capsys.disabled():
        print(f"\n{a.sentence}")
    assert a.verdict in (LOSSLESS, INCONCLUSIVE), a.sentence
    assert "correct" in a.comparison.like, a.sentence


@pytest.mark.timeout(1800)
def test_a_reported_q_that_is_not_the_proposal_is_caught(capsys):
    a = audit_verifier(with_reported_q(flattened), n=N, pair_names=SMALL, name="raw q")
    with capsys.disabled():
        print(f"\n{a.sentence}")
    assert a.verdict == BIASED, a.sentence
