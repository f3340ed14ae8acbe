"""Do /measured's figures repeat? Two measurements back to back, the page's own code
(views.measureruns.measure: each decode run --reps times interleaved, every figure the
median of those runs with its range), then each figure of the second against the first:
they agree when their ranges overlap. Also the candidates for the default draft: tokens per
target call on the default prompt, greedy and sampled. Prints the machine's load before
and after each measurement; run it on a quiet machine (nothing else running).

    .venv/bin/python benchmarks/bench_measured.py [--drafts trimmed:16384 skip:4,8 ...]
        [--prompt story] [--k 4] [--new 32] [--reps 5] [--T 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.analysis.spread import BUSY_PER_CPU, cpus, load_average  # noqa: E402
from specviz.llm import store  # noqa: E402
from specviz.llm.drafts import Kit, examples  # noqa: E402
from specviz.views import measured as mv  # noqa: E402
from specviz.views.llmpage import PRESETS, corpus_ids, ngram_model  # noqa: E402
from specviz.views.measureruns import measure  # noqa: E402

FIGURES = (("t1", 1e3, "target 1 (ms)"), ("tk1", 1e3, "target k+1 (ms)"),
           ("draft", 1e3, "draft (ms/token)"), ("c", 1.0, "c"),
           ("spec_tps", 1.0, "tokens/s spec"), ("plain_tps", 1.0, "tokens/s alone"),
           ("speedup", 1.0, "speedup"), ("formula", 1.0, "formula (passes)"))


def kept_kit() -> Kit:
    """The corpus's token counts and n-gram models made once for the run, not each decode."""
    kept: dict[str, object] = {}
    return Kit(corpus_ids, ngram_model,
               lambda name, make: kept[name] if name in kept else kept.setdefault(name, make()))


def table(m) -> dict:
    """(draft, mode) -> figures, each printed as median (smallest-largest)."""
    out = {}
    for d in m.drafts:
        for mode in d.modes:
            out[(d.label, mode)] = mv.figures(d, mode)
    return out


def _show(s, scale: float) -> str:
    return f"{scale * s.median:.3f} ({scale * s.lo:.3f}-{scale * s.hi:.3f})"


def compare(a: dict, b: dict) -> int:
    """Print each figure of both runs side by side; -> how many disagree."""
    bad = 0
    print(f"{'draft':18} {'mode':8} {'figure':18} {'first':>24} {'second':>24}  agree")
    for key, fa in a.items():
        fb = b.get(key)
        if fb is None:
            continue
        for name, scale, label in FIGURES:
            sa, sb = fa[name], fb[name]
            if sa is None or sb is None:
                continue
            ok = sa.overlaps(sb)
            bad += not ok
            print(f"{key[0]:18} {key[1]:8} {label:18} {_show(sa, scale):>24} "
                  f"{_show(sb, scale):>24}  "
                  f"{'yes' if ok else 'NO'}")
        for f in (fa, fb):
            if f.c_noise or f.speedup_noise:
                print(f"  flagged: {mv.noise_text(f)}")
    return bad


def settle(*, most_s: float = 180.0) -> None:
    """Wait (at most most_s) until the 1-minute load average falls to the busy line: a
    measurement run right after another would otherwise see the first one's own load."""
    line, t0 = BUSY_PER_CPU * cpus(), time.monotonic()
    while load_average() > line and time.monotonic() - t0 < most_s:
        time.sleep(5)
    print(f"settled {time.monotonic() - t0:.0f} s: load average {load_average():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drafts", nargs="+", default=list(examples()))
    ap.add_argument("--prompt", default="story", choices=[p for p in PRESETS if p != "own"])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--T", type=float, default=1.0)
    args = ap.parse_args()
    drafts = args.drafts
    model, kit, text = store.load(), kept_kit(), PRESETS[args.prompt][1]
    runs = []
    for i in (1, 2):
        settle()
        m = measure(model, text, drafts, k=args.k, T=args.T, max_new=args.new, kit=kit,
                    reps=args.reps, stop_s=float("inf"))
        print(f"measurement {i}: {m.seconds:.0f} s, {m.reps} runs of each decode. "
              f"{m.load.text()}")
        runs.append(m)
    print(f"\n{args.prompt} prompt ({runs[0].prompt_tokens} tokens), k = {args.k}, "
          f"{args.new} tokens a decode, T = {args.T:g}; tokens per target call (the same in "
          "every run: each replays the seed):")
    for d in runs[0].drafts:
        print(f"  {d.label:18} " + ", ".join(
            f"{mode} {d.summary(mode).tokens_per_call:.2f}" for mode in d.modes))
    print()
    bad = compare(table(runs[0]), table(runs[1]))
    print(f"\n{bad} figure(s) of the second measurement outside the first's range"
          + (" (the machine was busy: see the load lines)" if any(m.load.busy for m in runs)
             else ""))


if __name__ == "__main__":
    main()
