"""The command line: the from-scratch tutorial's six demonstrations as aligned text tables.

    python -m specviz                 all six, on the default tables (about a second)
    python -m specviz demo N [...]    one of them, N in 1..6 (clidemo.py)
    python -m specviz plan [...]      the planner on your metrics, configs and GPU (cliplan.py)
    python -m specviz llm --prompt T  the real model, Gemma 3 270M, and a draft (clillm.py)
    python -m specviz audit --verifier M:F  audit a verifier function (cliaudit.py)

This module parses the arguments and prints; the text comes from clidemo and cliplan.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

import numpy as np

from . import cliaudit, clillm, cliplan
from .analysis.modelcfg import PRESETS
from .clidemo import (
    TITLES,
    demo_cost,
    demo_exactness,
    demo_k_sweep,
    demo_methods,
    demo_one_token,
    demo_roofline,
    demo_sweeps,
)
from .core.rules import RULES
from .core.scenario import Scenario
from .core.tables import check_ctx, default_tables
from .views import demos


# --------------------------------------------------------------------------- arguments
def _int(s: str) -> int:
    try:
        return int(s.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None


def _at_least(lo: int) -> Callable[[str], int]:
    """An argument type: a whole number >= lo."""
    def parse(s: str) -> int:
        v = _int(s)
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {v}")
        return v
    return parse


def _float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not np.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {s!r}")
    return v


def _add_options(p: argparse.ArgumentParser, suppress: bool) -> None:
    """The shared options; on the subcommand they default to SUPPRESS so either place works."""
    def d(v: object) -> object:
        return argparse.SUPPRESS if suppress else v

    p.add_argument("--n", type=_at_least(1), default=d(None),
                   help="demo 2: decodes (default 60,000); demos 3-4: rounds of long "
                        "decode per row (default 20,000)")
    p.add_argument("--k", type=_int, default=d(None),
                   help="drafted tokens per round (default 4); demo 4: sweep k = 1..K "
                        "instead of the default list")
    p.add_argument("--seed", type=_int, default=d(0), help="random seed (default 0)")
    p.add_argument("--c", type=_float, default=d(None),
                   help="draft cost per token as a fraction of a target call (default 0.1); "
                        "demo 5: shown beside the default list of costs")
    p.add_argument("--ctx", default=d("a"),
                   help="context token, by name (a..f) or index (default a)")
    p.add_argument("--rule", choices=list(RULES), default=d(None),
                   help="demo 2: audit only this rule (default: all of them)")
    p.add_argument("--preset", choices=list(PRESETS), default=d("Llama-2-7B"),
                   help="demo 6: model shape (default Llama-2-7B)")
    p.add_argument("--context-len", type=_at_least(0), default=d(512),
                   help="demo 6: context length in tokens (default 512)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m specviz",
        description="Speculative decoding (Leviathan et al. 2022; Chen et al. 2023) on toy "
                    "bigram tables: print the six demonstrations as text tables. With no "
                    "command, all six.",
        epilog="demonstrations: " + "; ".join(f"{n} {t}" for n, t in TITLES.items()),
    )
    _add_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="{demo,all,methods,plan,llm,audit}")
    one = sub.add_parser("demo", help="print one demonstration",
                         description="Print one demonstration: "
                         + "; ".join(f"{n} {t}" for n, t in TITLES.items()))
    one.add_argument("N", type=_int, choices=range(1, 7), metavar="N",
                     help="which demonstration, 1..6")
    _add_options(one, suppress=True)
    for name, text in (("all", "print all six (the default)"),
                       ("methods", "tokens per call: token by token vs block verification, "
                                   "k = 1..16, on the default tables")):
        _add_options(sub.add_parser(name, help=text), suppress=True)
    cliplan.add_parser(sub)
    clillm.add_parser(sub)
    cliaudit.add_parser(sub)
    return parser


def _scenario(args: argparse.Namespace) -> Scenario:
    """The default tables from --ctx (a token's name or index) with --seed."""
    t = default_tables()
    ctx = t.vocab.index(args.ctx) if args.ctx in t.vocab else None
    if ctx is None:
        try:
            ctx = check_ctx(int(args.ctx), len(t.vocab))
        except ValueError:
            raise ValueError(f"--ctx must be a token name ({', '.join(t.vocab)}) or an index "
                             f"0..{len(t.vocab) - 1}; got {args.ctx!r}") from None
    return Scenario.of(t.P, t.Q, ctx=ctx, seed=args.seed, vocab=t.vocab)


def render(n: int, args: argparse.Namespace) -> str:
    """The text of demonstration n under the parsed options."""
    k = 4 if args.k is None else args.k
    c = 0.1 if args.c is None else args.c
    sc = _scenario(args)
    if n == 1:
        return demo_one_token(sc)
    if n == 2:
        rules = list(RULES) if args.rule is None else [args.rule]
        return demo_exactness(sc.replace(k=k), args.n or 60_000, rules)
    if n == 3:
        return demo_sweeps(sc.replace(k=k), c, args.n or 20_000)
    if n == 4:
        ks = demos.KS if args.k is None else range(1, args.k + 1)
        if args.k is not None and args.k < 2:
            raise ValueError(f"demo 4 sweeps k = 1..K and needs K >= 2; got --k {args.k}")
        return demo_k_sweep(sc, c, ks, args.n or 20_000)
    if n == 5:
        costs = demos.COSTS if args.c is None else sorted({*demos.COSTS, args.c})
        return demo_cost(sc.replace(k=k), costs)
    return demo_roofline(args.preset, args.context_len, "fp16")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of `python -m specviz`; returns the exit status (2 on bad input)."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    args = parser.parse_args(argv)
    which = [args.N] if args.command == "demo" else list(TITLES)
    try:
        if args.command == "plan":
            return cliplan.run(args, out)
        if args.command == "llm":
            return clillm.run(args, out)
        if args.command == "audit":
            return cliaudit.run(args, out)
        if args.command == "methods":
            print(demo_methods(_scenario(args)), file=out)
            return 0
        for i, n in enumerate(which):
            if i:
                print("\n", file=out)
            print(render(n, args), file=out, flush=True)
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0
