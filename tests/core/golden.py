"""Golden traces: rounds recorded from the engines as they stood before the round was
written once (specviz 0.1: round._play for tables, textspec._round for text), replayed
against today's engine by tests/core/test_golden.py.

`python tests/core/golden.py` re-records; it was run once, on the old engines.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

PATH = Path(__file__).with_name("golden_rounds.json.gz")
SEEDS = tuple(range(12))
KS = (1, 3, 6)
TEXT = (
    "the cat sat on the mat. the dog sat on the log. a cat and a dog met on the mat, "
    "and the cat ran to the log while the dog sat. the mat was red and the log was old. "
    "on the old log the red cat sat, and on the red mat the old dog ran.\n"
) * 3
PROMPTS = {"char": "the cat s", "word": "the dog sat on"}
TEXT_ORDERS = {"char": (4, 2), "word": (3, 1)}  # (target, draft)


NEW_KINDS = ("score",)  # frames added after the recording (see test_golden's docstring)


def record_of(trace) -> dict:
    """Everything a trace decides, in plain JSON."""
    return {
        "tokens": [[e.token, e.origin, e.position] for e in trace.emitted],
        "drafts": [p.token for p in trace.positions],
        "coins": [p.u for p in trace.positions],
        "accepted": [p.accepted for p in trace.positions],
        "thresholds": [round(p.threshold, 12) for p in trace.positions],
        "rejected_at": trace.rejected_at,
        "flushed": list(trace.flushed),
        "final_u": trace.final_u,
        "kinds": [s.kind for s in trace.steps if s.kind not in NEW_KINDS],
        "captions": [s.caption for s in trace.steps if s.kind not in NEW_KINDS],
    }


RECORDED = ("correct", "one_hot", "sampler_match", "typical", "lenient", "greedy",
            "no_resample", "continue", "topk_q", "greedy_draft", "inclusive_coin")


def single_rules() -> list[str]:
    """The single-draft rules the earlier engines recorded (rules added since have none)."""
    from specviz.core.rules import RULES

    return [name for name, r in RULES.items() if r.kind == "chain" and name in RECORDED]


def _record() -> dict:
    from specviz.core.round import play_round
    from specviz.core.tables import default_tables, mix_draft
    from specviz.text import textspec
    from specviz.text.ngram import train

    out: dict[str, dict] = {}
    T = default_tables()
    P, Q = T.P, T.Q
    pairs = {"tables": (P, Q), "tables-mix": (P, mix_draft(P, 0.5))}
    for name, (p, q) in pairs.items():
        for rule in single_rules():
            for k in KS:
                for seed in SEEDS:
                    tr = play_round(p, q, seed % 6, k, np.random.default_rng(seed), rule)
                    out[f"{name}|{rule}|{k}|{seed}"] = record_of(tr)
    for level, (to, do) in TEXT_ORDERS.items():
        counts = train(TEXT, level, max(to, do))
        dec = textspec.TextDecoder(counts, to, do)
        prompt = dec.encode(PROMPTS[level])
        for drafter in textspec.DRAFTERS:
            for rule in single_rules():
                for k in KS:
                    for seed in SEEDS:
                        tr = textspec.play_text_round(dec, prompt, k,
                                                      np.random.default_rng(seed), rule, drafter)
                        out[f"{level}-{drafter}|{rule}|{k}|{seed}"] = record_of(tr)
    return out


def load() -> dict:
    with gzip.open(PATH, "rt") as f:
        return json.load(f)


if __name__ == "__main__":
    data = _record()
    with gzip.open(PATH, "wt") as f:
        json.dump(data, f, separators=(",", ":"))
    print(f"{len(data)} traces -> {PATH} ({PATH.stat().st_size:,} bytes)")
