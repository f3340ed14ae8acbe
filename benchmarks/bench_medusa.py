"""Medusa's heads against the target alone and the other drafts, measured in one run.

For each default prompt (story, code, fact) and each k, /measured's own code
(views.measureruns.measure: each decode --reps times, interleaved with the target alone,
every figure the median with its range): medusa:k at k, greedy and sampled at T = 1, and
the other drafts (--others) at the largest k. Prints per draft and mode: acceptance by
position (head i at position i) with 95% Wilson intervals, c (the heads' products against
one target pass), tokens per target call, the verification pass at k + 1 positions against
one, tokens/s with and without the draft, and the wall-clock speedup; the load before and
after each measurement. Run it on a quiet machine and say the load beside the numbers.

    .venv/bin/python benchmarks/bench_medusa.py [--ks 1 2 4] [--prompts story code fact]
        [--new 32] [--reps 3] [--others trimmed:16384 lookup] [--greedy-only] [--stop-off]

--stop-off measures medusa:k:0 (every head drafts, no stop) beside medusa:k (the heads'
draft-side stop at medusa.SURE), interleaved in the same run; drafts/round is the mean
number of heads a round drafted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_measured import kept_kit  # noqa: E402

from specviz.llm import medusa, store  # noqa: E402
from specviz.views import measured as mv  # noqa: E402
from specviz.views.llmpage import PRESETS  # noqa: E402
from specviz.views.measureruns import measure  # noqa: E402


def _spread(f, name: str, fmt: str = ".2f", scale: float = 1.0) -> str:
    s = f.spreads.get(name)
    if s is None:
        return "-"
    return f"{scale * s.median:{fmt}} ({scale * s.lo:{fmt}}-{scale * s.hi:{fmt}})"


def report(m) -> None:
    for d in m.drafts:
        for mode in d.modes:
            f = mv.figures(d, mode)
            s = f.s
            acc = "  ".join(f"{r['rate']:.2f} ({r['lo']:.2f}-{r['hi']:.2f})"
                            for r in mv.acceptance_rows(s) if r["rate"] is not None)
            print(f"  {d.label:16} {mode:8} tokens/call {s.tokens_per_call:.2f}  "
                  f"drafts/round {s.drafted_per_round:.2f}  "
                  f"c {_spread(f, 'c', '.3f')}  t1 {_spread(f, 't1', '.1f', 1e3)} ms  "
                  f"t(k+1) {_spread(f, 'tk1', '.1f', 1e3)} ms\n"
                  f"  {'':25} tok/s spec {_spread(f, 'spec_tps')}  alone "
                  f"{_spread(f, 'plain_tps')}  speedup {_spread(f, 'speedup')}x  "
                  f"(passes allow {_spread(f, 'formula')}x)"
                  + ("  FLAGGED: " + mv.noise_text(f) if f.c_noise or f.speedup_noise
                     else ""))
            print(f"  {'':25} acceptance by position: {acc}")
            ag = d.agreement
            if mode == "greedy" and ag is not None:
                print(f"  {'':25} greedy text the target's own: "
                      + ("yes" if ag.first is None else f"NO, from token {ag.first}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--prompts", nargs="+", default=["story", "code", "fact"])
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--others", nargs="*", default=[])
    ap.add_argument("--greedy-only", action="store_true")
    ap.add_argument("--stop-off", action="store_true",
                    help="measure medusa:k:0 (no stop) beside medusa:k")
    args = ap.parse_args()
    model, kit = store.load(), kept_kit()
    heads = medusa.load_heads()
    print(f"heads: {heads.meta.get('script')} v{heads.meta.get('script_version')}, "
          f"stop at top probability < {medusa.SURE:g} (medusa:k; medusa:k:0 none), "
          f"sha256 {heads.sha256[:12]}, held-out top-1 "
          + ", ".join(f"{t['rate']:.2f}" for t in heads.meta.get("top1", [])))
    for name in args.prompts:
        text = PRESETS[name][1]
        for k in args.ks:
            drafts = [f"medusa:{k}"] + ([f"medusa:{k}:0"] if args.stop_off else []) + (
                list(args.others) if k == max(args.ks) else [])
            m = measure(model, text, drafts, k=k, T=0.0 if args.greedy_only else 1.0,
                        max_new=args.new, kit=kit, reps=args.reps, stop_s=float("inf"))
            print(f"\n{name} prompt ({m.prompt_tokens} tokens), k = {k}, {args.new} tokens a "
                  f"decode, {m.reps} runs each, interleaved; {m.load.text()}")
            report(m)


if __name__ == "__main__":
    main()
