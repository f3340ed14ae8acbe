"""`python -m specviz llm`: speculative decoding of the real model (Gemma 3 270M), printed.

    python -m specviz llm --prompt TEXT --draft early-exit:6 --k 4 --temperature 1 --seed 0
                          --max-new 64 [--rule correct] [--json]

Prints each round (drafted tokens, how far they were kept, the token that ended it), then
what was measured on this machine: the target's pass at 1 and at k + 1 positions, the
draft's time per token and so c, tokens per target call, acceptance by position, and
tokens per second with and without speculation.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TextIO

from .clitable import format_table
from .core.kinds import kind_of
from .core.rules import RULES, get_rule
from .llm import store
from .llm.decode import Run, Summary, plain, speculate, summarise
from .llm.draftkind import DraftError
from .llm.drafts import draft_pair, parse_draft, usage
from .llm.pair import LLMPair, show
from .llm.runner import Runner
from .views.llmpage import PLAIN_KIT, encode_prompt, rule_note
from .views.measured import acceptance_rows, why

PROMPT_CHARS_MAX = 8_000  # characters of prompt read
PROMPT_TOKENS_MAX = 1_024  # tokens of prompt the model is run on


def add_parser(sub) -> None:
    p = sub.add_parser("llm", help="speculative decoding of Gemma 3 270M, measured here",
                       description="Decode a prompt with Gemma 3 270M (GGUF, run in NumPy) "
                                   "and one of its own drafts, round by round, and print "
                                   "the measured costs and acceptance.")
    p.add_argument("--prompt", required=True, help="the text to continue")
    p.add_argument("--draft", default="early-exit:6",
                   help=f"one of {usage()} (default early-exit:6)")
    p.add_argument("--k", type=int, default=4, help="drafted tokens per round (default 4)")
    p.add_argument("--temperature", type=float, default=1.0, help="T of p and q (default 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--max-new", type=int, default=64, help="tokens to generate (default 64)")
    p.add_argument("--rule", default="correct", choices=list(RULES),
                   help="acceptance rule (default correct)")
    p.add_argument("--json", action="store_true", help="print everything as JSON instead")


def _round_line(pair: LLMPair, i: int, tr) -> str:
    drafted = " ".join(pair.name(p.token) for p in tr.positions) or "(nothing)"
    if tr.tree:  # a token tree: its size, and the last sibling tried at each depth walked
        drafted = f"tree of {len(tr.tree)}, walked: {drafted}"
    kept = sum(1 for e in tr.emitted if e.origin == "accepted")
    last = tr.emitted[-1]
    return (f"round {i:3d}: drafted [{drafted}]  kept {kept}/{tr.k}  {last.origin} "
            f"'{pair.name(last.token)}'")


def _summary_text(s: Summary, s_label: str) -> str:
    ms = lambda v: "-" if v is None else f"{1e3 * v:.1f} ms"  # noqa: E731
    pairs = [
        ("target pass, 1 position", ms(s.target_1_s)),
        (_verify_label(s), ms(s.target_k1_s)),
        ("draft, per drafted token", ms(s.draft_s) + (
            "" if s.drafted_per_round == s.k else f"   ({s.drafted_per_round:.1f} a round)")),
        ("c (draft / target at 1)", "-" if s.c is None else f"{s.c:.3f}"),
        ("tokens per target call", f"{s.tokens_per_call:.2f} over {s.rounds} rounds"),
        ("tokens/s speculative", f"{s.spec_tps:.2f}"),
        ("tokens/s target alone", f"{s.plain_tps:.2f}   (speedup {s.speedup:.2f}x)"),
    ]
    width = max(len(a) for a, _ in pairs) + 2
    lines = [a.ljust(width) + b for a, b in pairs]
    if s.speedup < 1:
        lines.append(why(f"draft {s_label}", "as run", s))
    table = format_table(acceptance_rows(s), [("i", "position", "d"), ("kept", "kept", "d"),
                                ("drafted", "drafted", "d"), ("rate", "rate", ".3f"),
                                ("lo", "95% low", ".3f"), ("hi", "95% high", ".3f")])
    return "\n".join(lines) + "\n\nacceptance by position:\n" + table


def _verify_label(s: Summary) -> str:
    """The verification pass and the rows it scores: k + 1, or a tree's nodes + 1."""
    if s.verify_rows is None or s.verify_rows == s.k + 1:
        return f"target pass, k + 1 = {s.k + 1} positions"
    return f"target pass, tree of {s.verify_rows:g} positions (median)"


def run(args: argparse.Namespace, out: TextIO) -> int:
    try:
        model = store.load()
    except store.ModelUnavailable as exc:
        print(f"python -m specviz llm: error: {exc}", file=sys.stderr)
        return 2
    try:
        spec = parse_draft(args.draft, cfg=model.cfg)
        if (note := rule_note(args.rule, spec.kind)) is not None:
            raise ValueError(note)
        ids = encode_prompt(model, args.prompt, max_chars=PROMPT_CHARS_MAX,
                            max_tokens=PROMPT_TOKENS_MAX)
        pair = draft_pair(model, spec, T=args.temperature, kit=PLAIN_KIT)
        spec_run = speculate(pair, ids, k=args.k, seed=args.seed, rule=args.rule,
                             max_new=args.max_new)
        alone = plain(Runner(model.weights), ids, T=pair.T, seed=args.seed,
                      max_new=args.max_new)
    except (ValueError, DraftError) as exc:
        print(f"python -m specviz llm: error: {exc}", file=sys.stderr)
        return 2
    rule = get_rule(args.rule)
    summary = summarise(spec_run, alone, k=args.k, scored=kind_of(rule).scored(rule, args.k))
    if args.json:
        print(json.dumps(_as_json(model, pair, ids, spec_run, alone, summary), indent=1),
              file=out)
        return 0
    print(f"Gemma 3 270M, draft {spec.label}, k = {args.k}, T = {pair.T:g}, rule "
          f"{args.rule}; prompt {len(ids)} tokens; model loaded in {model.load_s:.1f} s\n",
          file=out)
    for i, tr in enumerate(spec_run.rounds, 1):
        print(_round_line(pair, i, tr), file=out)
    text = model.tokenizer.decode(spec_run.tokens)
    print(f"\ngenerated: {show(text)}\n\n{_summary_text(summary, spec.label)}", file=out)
    return 0


def _as_json(model, pair, ids, spec_run: Run, alone: Run, s: Summary) -> dict:
    return {
        "model": "gemma-3-270m (q4_k_m gguf, f32)", "draft": pair.spec.label,
        "prompt_ids": ids, "tokens": list(spec_run.tokens),
        "text": model.tokenizer.decode(spec_run.tokens),
        "plain_tokens": list(alone.tokens),
        "rounds": [{"drafted": [p.token for p in tr.positions],
                    "accepted": [p.accepted for p in tr.positions],
                    "emitted": [[e.token, e.origin] for e in tr.emitted]}
                   for tr in spec_run.rounds],
        "summary": asdict(s) | {"speedup": s.speedup}, "load_s": model.load_s,
    }
