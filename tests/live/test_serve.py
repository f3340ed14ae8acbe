"""specviz's own model behind an OpenAI-compatible endpoint (llm.serve), decoding with a rule
of the registry, audited live (analysis.liveaudit) as any server would be: the correct rule
passes at an n that can see TV 0.2; a broken rule whose bias this run can see fails. A live
audit, here beside the others: its own xdist group (tests/conftest.py), so its 12 minutes of
requests run beside the real model's group instead of after it."""

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
RESOLUTION = 0.2  # as tests/live's: a run that cannot catch this TV is too small to tell
PLAIN = Sampling(1.0)  # no warp: a warped row costs a sort of 262,144 probabilities per read
# n a rule, from the run's power: at n 400 the correct rule's first token (11 cells, p1 of
# ',' 0.61) caught TV >= 0.203, just short of RESOLUTION ("too small to tell"); that TV falls
# as 1/sqrt(n), so n 600 catches TV >= 0.166 (measured: 0.1657). Greedy's bias (first two
# tokens TV 0.375 against a line of 0.207 at n 400, p 4e-42) is caught at 400. The draft is
# the endpoint's default, skip:4,8 (16 of the 18 layers): q near p, so a rule's handling of a
# rejection shows. A weak draft hides it: trimmed:16384:4 puts 0.93 of q on a token p gives
# nothing after this prompt, so the first draft is always rejected with residual ~ p, and
# no_resample passed at n 600 (benchmarks/audit_endpoint.py audits every chain rule so).
N = {"correct": 600, "greedy": 400}


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
@pytest.mark.parametrize("rule", list(N))
def test_each_rule_audited_live(rule, served):
    engine, url = served
    assert rule == "correct" or RULES[rule].family == "broken"
    engine.set_rule(rule)
    a = audit_server(server=url, prompt=PROMPT, n=N[rule], sampling=PLAIN, seed=11,
                     resolution=RESOLUTION)
    checks = "; ".join(f"{c.name}: n {c.n} TV {c.tv:.4f} floor {c.floor:.4f} line "
                       f"{c.threshold:.4f} p {c.p_value:.3g}" for c in a.comparison.checks)
    print(f"{rule}: {a.verdict} ({checks}; sampling {a.sample_s:.1f} s)")
    assert a.verdict == (LOSSLESS if rule == "correct" else BIASED), checks
