"""`python -m specviz audit --server URL`: audit a live OpenAI-compatible server.

    python -m specviz audit --server URL [--reference URL] --prompt TEXT --n N
                            [--temperature T] [--top-k K] [--top-p P] [--json]

The audit is analysis.liveaudit's. Prints the verdict in one sentence, each statistic (n, TV,
the sampling floor, the pass line, the chi-square p-value, the smallest TV it would catch),
the first token's law beside its counts, and the time. Exit status: 0 lossless, 1 biased,
2 bad input or a server unfit for an audit (the message says why), 3 too small to tell.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from .analysis.completions import TIMEOUT_S, ServerError
from .analysis.lawcompare import BIASED, LOSSLESS
from .analysis.liveaudit import RESOLUTION, TOKENS, TOP, LiveAudit, Sampling, audit_server
from .clitable import format_table

STATUS = {LOSSLESS: 0, BIASED: 1}  # anything else (too small to tell): 3; bad input: 2
SERVER_N = 1000  # samples by default


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The live server's options, on the `audit` command."""
    g = p.add_argument_group("a live server (OpenAI-compatible /v1/completions)")
    g.add_argument("--server", metavar="URL", help="the server to audit")
    g.add_argument("--reference", metavar="URL",
                   help="where the target's laws come from (default: the server itself)")
    g.add_argument("--prompt", default="Once upon a time", help="the prompt")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top", type=int, default=TOP,
                   help=f"top tokens a law is read over, plus a rest bucket (default {TOP})")
    g.add_argument("--tokens", type=int, default=TOKENS,
                   help=f"tokens each sample asks for, of which two count (default {TOKENS})")
    g.add_argument("--model", default=None, help="the model the server must answer as")
    g.add_argument("--timeout", type=float, default=TIMEOUT_S,
                   help=f"seconds one request may take (default {TIMEOUT_S:g})")
    g.add_argument("--concurrency", type=int, default=1, help="requests in flight")
    g.add_argument("--resolution", type=float, default=RESOLUTION,
                   help=f"the TV a run must catch, else too small to tell "
                        f"(default {RESOLUTION:g})")


def sentence(a: LiveAudit) -> str:
    c = a.comparison
    if c.verdict == LOSSLESS:
        return (f"lossless at this n: {a.n:,} samples follow the target's law (it would "
                f"have caught TV {c.detectable:.3f} with probability 0.95)")
    if c.verdict == BIASED:
        w = c.worst
        return (f"biased: the {w.name} differs from the target's law (TV {w.tv:.3f} against "
                f"a line of {w.threshold:.3f}, chi-square p = {w.p_value:.2g}, n = {w.n:,})")
    return (f"too small to tell: {a.n:,} samples catch only TV >= {c.detectable:.3f}; "
            "ask for more (--n)")


def _checks(a: LiveAudit) -> list[dict]:
    return [{"statistic": c.name, "n": c.n, "tv": c.tv, "floor": c.floor,
             "threshold": c.threshold, "p_value": c.p_value, "alpha": c.alpha,
             "detectable": c.detectable, "passed": c.passed} for c in a.comparison.checks]


def report(a: LiveAudit, *, as_json: bool = False) -> str:
    if as_json:
        return json.dumps({"verdict": a.verdict, "sentence": sentence(a), "n": a.n,
                           "checks": _checks(a), "sample_s": round(a.sample_s, 3),
                           "law_s": round(a.law_s, 3), "requests": a.requests,
                           "first": [{"token": a.names.get(t, str(t)), "p": float(p),
                                      "count": a.first_counts[t]} for t, p in a.first.items()],
                           "warnings": list(a.warnings)}, indent=2)
    checks = format_table(_checks(a), (("statistic", "statistic", "s"), ("n", "n", ","),
                                       ("tv", "TV", ".4f"), ("floor", "floor", ".4f"),
                                       ("threshold", "line", ".4f"),
                                       ("p_value", "p-value", ".3g"),
                                       ("detectable", "catches TV >=", ".3f")))
    first = format_table([{"token": repr(a.names.get(t, str(t))), "p": float(p),
                           "seen": a.first_counts[t] / a.n} for t, p in a.first.items()],
                         (("token", "first token", "s"), ("p", "target", ".4f"),
                          ("seen", "sampled", ".4f")))
    lines = [sentence(a), "", checks, "", first, "",
             f"{a.requests:,} requests: sampling {a.sample_s:.1f} s, the target's laws "
             f"{a.law_s:.1f} s"]
    return "\n".join(lines + [f"note: {w}" for w in a.warnings])


def run(args: argparse.Namespace, out: TextIO) -> int:
    try:
        a = audit_server(server=args.server, reference=args.reference, prompt=args.prompt,
                         n=args.n if args.n is not None else SERVER_N,
                         sampling=Sampling(args.temperature, args.top_k, args.top_p),
                         top=args.top, tokens=args.tokens, model=args.model,
                         timeout_s=args.timeout, seed=args.seed or 0,
                         concurrency=args.concurrency, resolution=args.resolution)
    except (ServerError, ValueError) as err:
        print(f"audit: {err}", file=sys.stderr)
        return 2
    print(report(a, as_json=getattr(args, "json", False)), file=out)
    return STATUS.get(a.verdict, 3)


def main(argv: list[str] | None = None) -> int:
    """The live audit alone (`python -m specviz.clilive`), as `audit --server` runs it."""
    p = argparse.ArgumentParser(prog="python -m specviz audit", description=__doc__)
    p.add_argument("--n", type=int, default=SERVER_N)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    add_arguments(p)
    args = p.parse_args(argv)
    if not args.server:
        p.error("--server is required")
    return run(args, sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
