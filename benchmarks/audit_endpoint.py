"""Every chain rule of the registry served live and audited as any server would be.

specviz's own model behind its OpenAI-compatible endpoint (llm.serve.Engine), decoding with
one rule at a time, audited over HTTP by analysis.liveaudit.audit_server (the first token's
law and the first two tokens' against the target's own top logprobs): the lossless rules
should pass, the lossy and broken ones fail where this n can see their bias, and a run too
small to see one says so. The warp rules are served under a warp (--T, --top-k, --top-p),
the others unwarped. Prints per rule: the verdict, each statistic's n, TV, floor, line, the
smallest TV the run would catch and the p-value, and the seconds it took; the load before
and after. tests/live/test_serve.py runs the correct rule and greedy in CI; this runs them all.

    .venv/bin/python benchmarks/audit_endpoint.py [--rules correct greedy ...] [--n 400]
        [--draft skip:4,8] [--k 2] [--prompt "Once upon a time"]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.analysis.liveaudit import Sampling, audit_server  # noqa: E402
from specviz.analysis.spread import cpus, load_average  # noqa: E402
from specviz.core.rules import RULES, reads_warp  # noqa: E402
from specviz.llm import store  # noqa: E402
from specviz.llm.serve import Engine, make_server  # noqa: E402
from specviz.views.llmpage import PLAIN_KIT  # noqa: E402

RESOLUTION = 0.2  # as the tests': a run that cannot catch this TV is too small to tell


def chain_rules() -> list[str]:
    """The registry's rules that draft one chain (the endpoint plays chains)."""
    return [n for n, r in RULES.items() if r.kind == "chain"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules", nargs="+", default=chain_rules())
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--draft", default="skip:4,8")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--T", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    engine = Engine(store.load(), rule="correct", draft=a.draft, k=a.k, kit=PLAIN_KIT)
    server = make_server(engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    warp = Sampling(a.T, top_k=a.top_k, top_p=a.top_p)
    print(f"draft {a.draft}, k = {a.k}, n = {a.n} a rule, prompt {a.prompt!r}; warp rules "
          f"at T {a.T:g}, top-k {a.top_k}, top-p {a.top_p:g}; {cpus()} CPUs", flush=True)
    for name in a.rules:
        engine.set_rule(name)
        before, t0 = load_average(), time.monotonic()
        au = audit_server(server=url, prompt=a.prompt, n=a.n, seed=a.seed,
                          sampling=warp if reads_warp(RULES[name]) else Sampling(1.0),
                          resolution=RESOLUTION)
        print(f"{name} ({RULES[name].family}): {au.verdict}; {time.monotonic() - t0:.0f} s, "
              f"load {before:.1f} -> {load_average():.1f}", flush=True)
        for c in au.comparison.checks:
            print(f"    {c.name}: n {c.n} TV {c.tv:.4f} floor {c.floor:.4f} line "
                  f"{c.threshold:.4f} catches {c.detectable:.4f} p {c.p_value:.3g}", flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
