"""`python -m specviz audit`: audit someone's speculative decoding against the exact laws.

    python -m specviz audit --verifier MODULE:FUNCTION [--n 20000] [--seed 0] [--budget 600]
                            [--pair NAME ...] [--json]
    python -m specviz audit --verifier correct        a built-in example (--list: all)

The function has the shape verify(drafted (k,), q (k, V), p (k + 1, V), rng) -> emitted
(analysis.verifieraudit). Prints the verdict in one sentence, then each pair's statistics
(n, TV, the sampling floor, the pass line, the chi-square p-value) and tokens per round
beside the rule's. Exit status: 0 lossless, 1 biased, 2 bad input, 3 too small to tell.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from . import clilive
from .analysis.auditpairs import pairs
from .analysis.verifieraudit import (
    BUDGET_S,
    N_DEFAULT,
    N_MAX,
    STATUS,
    VerifierAudit,
    audit_isolated,
)
from .analysis.verifiers import EXAMPLES
from .clitable import format_table


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help="audit a verifier function against the exact laws",
                       description="Play many rounds through your verify(drafted, q, p, rng) "
                                   "on pairs chosen to expose bugs and compare what it "
                                   "emits with the exact laws of the rule and of every "
                                   "known bug. Exit status: "
                                   + ", ".join(f"{v} {k}" for k, v in STATUS.items()) + ".")
    p.add_argument("--verifier", metavar="MODULE:FUNCTION",
                   help="the function to audit, or a built-in example's name (--list)")
    p.add_argument("--list", action="store_true", help="list the built-in examples")
    p.add_argument("--n", type=int, default=N_DEFAULT,
                   help=f"samples a pair, 1..{N_MAX:,} (default {N_DEFAULT:,})")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--budget", type=float, default=BUDGET_S,
                   help=f"seconds the whole run may take (default {BUDGET_S:g})")
    p.add_argument("--pair", action="append", choices=[q.name for q in pairs()],
                   help="audit on this pair only (repeatable; default all)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    clilive.add_arguments(p)
    return p


CHECKS = (("name", "statistic", "s"), ("n", "n", ","), ("tv", "TV", ".4f"),
          ("floor", "floor", ".4f"), ("threshold", "line", ".4f"), ("p_value", "p-value", ".3g"),
          ("passed", "", lambda ok: "" if ok else "differs"))
TOKENS = (("pair", "pair", "s"), ("k", "k", "d"), ("tokens", "tokens per round", ".3f"),
          ("se", "+-", ".3f"), ("rule", "the rule's", ".3f"))
LIST = (("example", "example", "s"), ("what", "what it is", "s"), ("expected", "expected", "s"))


def _rows(a: VerifierAudit) -> list[dict]:
    return [{"name": c.name, "n": c.n, "tv": c.tv, "floor": c.floor, "threshold": c.threshold,
             "p_value": c.p_value, "passed": c.passed} for c in a.comparison.checks]


def _json(a: VerifierAudit) -> str:
    out = {"verifier": a.name, "verdict": a.verdict, "status": a.status,
           "sentence": a.sentence, "n": a.n, "seconds": round(a.seconds, 3),
           "calls": a.calls, "error": a.error}
    if a.comparison is not None:
        c = a.comparison
        out |= {"like": list(c.like), "unseen": list(c.unseen), "level": c.level,
                "detectable_tv": c.detectable,
                "checks": [{"statistic": x.name, "n": x.n, "tv": x.tv, "floor": x.floor,
                            "threshold": x.threshold, "p_value": x.p_value, "alpha": x.alpha,
                            "passed": x.passed} for x in c.checks],
                "tokens_per_round": list(a.acceptance)}
    return json.dumps(out, indent=2)


def report(a: VerifierAudit) -> str:
    """The verdict, then the table of statistics and tokens per round."""
    lines = [f"{a.name}: {a.sentence}",
             f"({a.calls:,} calls in {a.seconds:.1f} s; exit status {a.status})"]
    if a.comparison is not None:
        lines += ["", format_table(_rows(a), CHECKS), "", format_table(a.acceptance, TOKENS)]
    return "\n".join(lines)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The audit subcommand; returns its exit status."""
    if args.list:
        print(format_table([{"example": k, "what": v[1], "expected": v[2]}
                            for k, v in EXAMPLES.items()], LIST), file=out)
        return 0
    if args.server:
        return clilive.run(args, out)
    if not args.verifier:
        raise ValueError("audit needs --verifier MODULE:FUNCTION, --server URL (or --list)")
    if not 0 < args.budget <= 24 * 3600:
        raise ValueError(f"--budget must be in (0, 86400] seconds; got {args.budget!r}")
    sys.path.insert(0, ".")  # MODULE may be a file in the working directory
    a = audit_isolated(args.verifier, n=args.n, seed=args.seed, budget_s=args.budget,
                       pair_names=args.pair)
    print(_json(a) if args.json else report(a), file=out)
    return a.status
