"""specviz's own model behind an OpenAI-compatible endpoint (llm.serve), decoding with a rule
of the registry, audited live (analysis.liveaudit) as any server would be: the correct rule
passes (not yet here: see BROKEN); a broken rule whose bias on the first two tokens this run can
see fails."""

from __future__ import annotations

import threading

import pytest

from specviz.analysis.completions import ServerError, post
from specviz.analysis.lawcompare import BIASED, LOSSLESS
from specviz.analysis.liveaudit import Sampling, audit_server
from specviz.core.rules import RULES
from specviz.llm.serve import Engine, make_server

pytestmark = [pytest.mark.slow]

PROMPT = "Once upon a time"
N = 400
RESOLUTION = 0.2  # as tests/live's: a run that cannot catch this TV is too small to tell
PLAIN = Sampling(1.0)  # no warp: a warped row costs a sort of 262,144 probabilities per read
# The tutorial's three broken rules and a q that is not the proposal, unwarped: every rule of
# the registry is audited on exact tables by tests/analysis/test_verifieraudit.py; served live,
# each costs N requests of the real model (minutes on two busy cores), and the warp_* bugs
# would need a warp (a sort of the whole vocabulary per row read).
# Run here so far (load 7-15): greedy, biased at n 400 (first two tokens TV 0.375, line 0.207,
# p 4e-42). The correct rule at n 400 was too small to tell (no statistic differs; first two
# tokens TV 0.137, line 0.219: its first token is speculative and flat), so its case needs
# ~1,500 samples (an hour of this machine) and is not here yet; nor are no_resample, continue
# and topk_q, which were not run to the end.
BROKEN = ("greedy",)


@pytest.fixture(scope="module")
def served(model):
    engine = Engine(model, rule="correct", k=2)
    server = make_server(engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield engine, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_bad_requests_get_a_clear_message(served):
    _, url = served
    with pytest.raises(ServerError, match="max_tokens must be an integer in 0..16"):
        post(url + "/v1/completions", {"prompt": "hi", "max_tokens": 10**6})
    with pytest.raises(ServerError, match="a prompt holds text and token ids"):
        post(url + "/v1/completions", {"prompt": ["hi", -1]})


@pytest.mark.timeout(1800)  # its own (before the tier's 600 s): N requests of the real model
@pytest.mark.parametrize("rule", BROKEN)
def test_each_rule_audited_live(rule, served):
    engine, url = served
    assert rule == "correct" or RULES[rule].family == "broken"
    engine.set_rule(rule)
    a = audit_server(server=url, prompt=PROMPT, n=N, sampling=PLAIN, seed=11,
                     resolution=RESOLUTION)
    checks = "; ".join(f"{c.name}: n {c.n} TV {c.tv:.4f} floor {c.floor:.4f} line "
                       f"{c.threshold:.4f} p {c.p_value:.3g}" for c in a.comparison.checks)
    print(f"{rule}: {a.verdict} ({checks}; sampling {a.sample_s:.1f} s)")
    assert a.verdict == (LOSSLESS if rule == "correct" else BIASED), checks
