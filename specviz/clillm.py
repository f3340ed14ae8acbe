"""`python -m specviz llm`: speculative decoding of the real model (Gemma 3 270M), printed.

    python -m specviz llm --prompt TEXT --draft trimmed:16384 --k 4 --temperature 1 --seed 0
                          --max-new 64 [--rule correct] [--reps 3] [--json]

Prints each round (drafted tokens, how far they were kept, the token that ended it), then
what was measured on this machine, each figure the median (smallest-largest) of --reps
decodes run interleaved with and without speculation: the target's pass at 1 and at k + 1
positions, the draft's time per token and so c, tokens per target call, acceptance by
position, tokens per second with and without speculation, the speedup beside what the
round's own figures allow, and the machine's load. T = 0 decodes greedily (argmax).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TextIO

from .clitable import format_table
from .core.rules import RULES
from .core.tables import K_MAX
from .llm import store
from .llm.decode import NEW_MAX, Run, Summary
from .llm.draftkind import DraftError
from .llm.drafts import DEFAULT_DRAFT, parse_draft, usage
from .llm.pair import show
from .views.llmpage import GREEDY_RULE, PLAIN_KIT, encode_prompt, rule_note
from .views.measured import Figures, acceptance_rows, figures, noise_text, why
from .views.measureruns import REPS, REPS_MAX, Measurement, measure

PROMPT_CHARS_MAX = 8_000  # characters of prompt read
PROMPT_TOKENS_MAX = 1_024  # tokens of prompt the model is run on


def add_parser(sub) -> None:
    p = sub.add_parser("llm", help="speculative decoding of Gemma 3 270M, measured here",
                       description="Decode a prompt with Gemma 3 270M (GGUF, run in NumPy) "
                                   "and one of its own drafts, round by round, and print "
                                   "the measured costs and acceptance.")
    p.add_argument("--prompt", required=True, help="the text to continue")
    p.add_argument("--draft", default=DEFAULT_DRAFT,
                   help=f"one of {usage()} (default {DEFAULT_DRAFT})")
    p.add_argument("--k", type=int, default=4, help="drafted tokens per round (default 4)")
    p.add_argument("--temperature", type=float, default=1.0,
                   help="T of p and q; 0 decodes greedily (default 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--max-new", type=int, default=64, help="tokens to generate (default 64)")
    p.add_argument("--rule", default="correct", choices=list(RULES),
                   help="acceptance rule (default correct)")
    p.add_argument("--reps", type=int, default=REPS,
                   help=f"runs of each decode, interleaved, 1..{REPS_MAX} (default {REPS})")
    p.add_argument("--json", action="store_true", help="print everything as JSON instead")


def _round_line(names, i: int, tr) -> str:
    drafted = " ".join(names[p.token] for p in tr.positions) or "(nothing)"
    if tr.tree:  # a token tree: its size, and the last sibling tried at each depth walked
        drafted = f"tree of {len(tr.tree)}, walked: {drafted}"
    kept = sum(1 for e in tr.emitted if e.origin == "accepted")
    last = tr.emitted[-1]
    return (f"round {i:3d}: drafted [{drafted}]  kept {kept}/{tr.k}  {last.origin} "
            f"'{names[last.token]}'" + (f"  (stopped: {tr.stopped})" if tr.stopped else ""))


def _summary_text(f: Figures, m: Measurement) -> str:
    s, sp = f.s, f.spreads
    ms = lambda name: "-" if sp[name] is None else (  # noqa: E731
        f"{1e3 * sp[name].median:.1f} ms" if sp[name].n < 2 else
        f"{1e3 * sp[name].median:.1f} ms ({1e3 * sp[name].lo:.1f}-{1e3 * sp[name].hi:.1f})")
    txt = lambda name, fmt=".2f", noise=False, unit="": (  # noqa: E731
        "noise (cannot be true)" if noise else "-" if sp[name] is None
        else sp[name].text(fmt, unit))
    pairs = [
        ("target pass, 1 position", ms("t1")),
        (_verify_label(s), ms("tk1")),
        ("draft, per drafted token", ms("draft") + (
            "" if s.drafted_per_round == s.k else f"   ({s.drafted_per_round:.1f} a round)")),
        ("c (draft / target at 1)", txt("c", ".3f", f.c_noise) + (
            "" if f.c_macs is None else f"   (by multiply-adds {f.c_macs:.2f})")),
        ("tokens per target call", f"{s.tokens_per_call:.2f} over {s.rounds} rounds"),
        ("tokens/s speculative", txt("spec_tps")),
        ("tokens/s target alone", txt("plain_tps")),
        ("speedup, wall clock", txt("speedup", ".2f", f.speedup_noise, "x")),
        ("speedup the passes allow", txt("formula", ".2f", f.c_noise, "x")
         + "   E / (n c + t(k+1)/t(1))"),
    ]
    width = max(len(a) for a, _ in pairs) + 2
    lines = [f"median (smallest-largest) of {m.reps} runs of each decode, interleaved; "
             f"{m.max_new} tokens each, the prefill off the clock"]
    lines += [a.ljust(width) + b for a, b in pairs]
    lines.append(why(f))
    if m.load is not None:
        lines.append(m.load.text())
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
        spec.check_k(args.k)
        if (note := rule_note(args.rule, spec.kind)) is not None:
            raise ValueError(note)
        ids = encode_prompt(model, args.prompt, max_chars=PROMPT_CHARS_MAX,
                            max_tokens=PROMPT_TOKENS_MAX)
        mode = "greedy" if args.temperature == 0 else "sampled"
        m = measure(model, args.prompt, [spec.label], k=args.k, T=args.temperature,
                    seed=args.seed, max_new=args.max_new, kit=PLAIN_KIT, reps=args.reps,
                    rule=args.rule, ids=ids, only=mode, keep_first=True,
                    stop_s=float("inf"), caps=(K_MAX, NEW_MAX))
    except (ValueError, DraftError) as exc:
        print(f"python -m specviz llm: error: {exc}", file=sys.stderr)
        return 2
    f, first = figures(m.drafts[0], mode), m.first[(spec.label, mode)]
    if args.json:
        print(json.dumps(_as_json(model, spec.label, ids, first, m.first[("alone", mode)], f, m),
                         indent=1), file=out)
        return 0
    print(f"Gemma 3 270M, draft {spec.label}, k = {m.k}, T = {m.T:g}"
          f"{' (greedy)' if m.T == 0 else ''}, rule {args.rule}; prompt {len(ids)} tokens; "
          f"model loaded in {model.load_s:.1f} s\n", file=out)
    if m.T == 0:
        print(GREEDY_RULE + "\n", file=out)
    names = model.tokenizer.shown
    for i, tr in enumerate(first.rounds, 1):
        print(_round_line(names, i, tr), file=out)
    print(f"\ngenerated: {show(_text(model, first.tokens))}\n\n{_summary_text(f, m)}",
          file=out)
    return 0


def _text(model, tokens) -> str:
    """The generated text up to the first end-of-text (the decodes go on past it, so that
    both are timed over the same length), with a note where it stopped."""
    eos = model.cfg.eos
    if eos not in tokens:
        return model.tokenizer.decode(list(tokens))
    i = list(tokens).index(eos)
    return (model.tokenizer.decode(list(tokens[:i])) + f" [<eos> at token {i + 1}; the "
            f"decodes ran on to {len(tokens)} so both are timed over the same length]")


def _position(names, p) -> dict:
    return {"token": p.token, "text": names[p.token], "p": p.p, "q": p.q, "u": p.u,
            "keep": p.threshold, "accepted": p.accepted}


def _as_json(model, label: str, ids, spec_run: Run, alone: Run, f: Figures,
             m: Measurement) -> dict:
    names, s = model.tokenizer.shown, f.s
    spreads = {name: None if v is None else asdict(v) for name, v in f.spreads.items()}
    return {
        "model": "gemma-3-270m (q4_k_m gguf, f32)", "draft": label, "T": m.T,
        "greedy": m.T == 0, "prompt_ids": ids, "tokens": list(spec_run.tokens),
        "text": model.tokenizer.decode(spec_run.tokens),
        "plain_tokens": list(alone.tokens),
        "rounds": [{"drafted": [p.token for p in tr.positions],
                    "accepted": [p.accepted for p in tr.positions],
                    "positions": [_position(names, p) for p in tr.positions],
                    "emitted": [[e.token, e.origin] for e in tr.emitted],
                    "emitted_text": [names[e.token] for e in tr.emitted],
                    "final_u": tr.final_u, "stopped": tr.stopped or None}
                   for tr in spec_run.rounds],
        "summary": asdict(s) | {"speedup": None if f.speedup_noise else f["speedup"].median},
        "load_s": model.load_s,
        "reps": m.reps, "spreads": spreads,
        "noise": noise_text(f) or None,
        "load": None if m.load is None else asdict(m.load) | {"busy": m.load.busy},
    }
