"""The work budget of one request for trees, multi-draft and block: each URL's page run
once under AppTest (the app's own cached, gated path), timed in wall and process CPU
seconds, with the notes the page shows about caps and stops.

    .venv/bin/python benchmarks/bench_budget.py
    .venv/bin/python benchmarks/bench_budget.py --only rules text-check

The tree is '16-15': 16 candidates, 15 under each, 256 nodes (the cap of a user's tree).
CPU figures are of this process (the page runs in it); on a machine shared with others the
wall time is longer than the CPU time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support import app_test, unfold  # noqa: E402

TREE = "16-15"
CASES = {  # name -> (page, URL parameters, press the exactness check)
    "text-check-tree": ("pages/7_text.py", {"order": "8", "k": "32", "rule": "tree_iid",
                                            "tree": TREE}, True),
    "text-check-multi8": ("pages/7_text.py", {"k": "32", "rule": "multi_draft",
                                              "multi_draft_m": "8"}, True),
    "rules-tree": ("pages/8_rules.py", {"rule": "tree_iid", "tree": TREE}, False),
    "text-rnd999-tree": ("pages/7_text.py", {"rule": "tree_iid", "tree": TREE, "rnd": "999",
                                             "k": "32"}, False),
    "round-rnd999-tree": ("pages/1_round.py", {"rule": "tree_iid", "tree": TREE, "rnd": "999",
                                               "k": "32"}, False),
    "home-block-k32": ("app.py", {"rule": "block", "k": "32"}, False),
    "rules-multi8": ("pages/8_rules.py", {"rule": "multi_draft", "multi_draft_m": "8",
                                          "k": "32", "rules_n": "2000000"}, False),
    "exactness-tree": ("pages/2_exactness.py", {"rule": "tree_iid", "tree": TREE,
                                                "n": "1000000"}, False),
}


def notes(at) -> list[str]:
    """What the page says about caps, stops and refusals."""
    keys = ("cap", "stopped", "budget", "Not computed", "held", "decodes per rule")
    out = [e.value for e in list(at.info) + list(at.warning) + list(at.error)]
    return [n[:160] for n in out if any(k in n for k in keys)]


def run(page: str, params: dict, check: bool):
    at = app_test(page, 600)
    for k, v in params.items():
        at.query_params[k] = v
    w0, c0 = time.perf_counter(), time.process_time()
    at.run(timeout=600)
    if check:
        unfold(at, 600)
        at.button(key="text_exact").click().run(timeout=600)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    errs = [str(e.value)[:120] for e in at.exception]
    return wall, cpu, notes(at) + errs, len(at.metric)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=list(CASES))
    args = ap.parse_args()
    for name in args.only:
        page, params, check = CASES[name]
        wall, cpu, said, metrics = run(page, params, check)
        print(f"{name:20s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  metrics {metrics:2d}  "
              f"notes: {said}", flush=True)


if __name__ == "__main__":
    main()
