"""The server's work for one step of the stage (/round, /text): the three figures a step
draws, built from the round's trace, against serialising the same figures to JSON (what
Streamlit does with every figure it sends, whatever built it), measured in this one run.

Rounds of the default tables at k = 5 (correct, greedy) and a token tree (tree_wor), and
rounds of a word 3-gram target with a 2-gram draft (1 MB of the default corpus) with bars
over its top tokens, every step of three rounds
each; the median over the steps of the time to build a step's three figures, of the time
to serialise them, their ratio, and the JSON's size.

    .venv/bin/python benchmarks/bench_stage.py [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz import default_tables  # noqa: E402
from specviz.core.scenario import Scenario  # noqa: E402
from specviz.figures import animation  # noqa: E402
from specviz.text.corpus import default_corpus  # noqa: E402
from specviz.text.ngram import train  # noqa: E402
from specviz.text.pair import TextDecoder  # noqa: E402
from specviz.views import textpage, transcript  # noqa: E402


def scenarios() -> list[tuple[str, Scenario, int | None]]:
    """(name, scenario, bars over the top tokens or None for the whole vocabulary)."""
    d = default_tables()
    dec = TextDecoder(train(default_corpus().text[:1_000_000], "word", 3), 3, 2)
    return [("tables, correct", Scenario.of(d.P, d.Q, ctx=0, k=5, seed=3), None),
            ("tables, greedy", Scenario.of(d.P, d.Q, ctx=0, k=5, seed=3, rule="greedy"), None),
            ("tables, tree_wor", Scenario.of(d.P, d.Q, ctx=0, k=3, seed=2, rule="tree_wor",
                                             tree=((0,), (1,), (0, 0))), None),
            ("text, word 3-gram", Scenario.on(dec.pair(), dec.encode("The"), k=4, seed=0),
             textpage.TOP_BARS)]


def figures(trace, step: int, top: int | None) -> list:
    return [animation.bars_figure(trace, step, top=top), animation.coin_figure(trace, step),
            animation.residual_figure(trace, step, top=top)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3, help="builds of each step (best kept)")
    args = ap.parse_args()
    print(f"{'stage':<22} {'steps':>5} {'build ms':>9} {'to_json ms':>11} {'ratio':>6} "
          f"{'JSON kB':>8}  (medians over the steps)")
    for name, sc, top in scenarios():
        build, dump, size = [], [], []
        for rnd in range(3):
            trace = transcript.round_transcript(sc, rnd=rnd).current
            for step in range(len(trace.steps)):
                b = d = float("inf")
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    figs = figures(trace, step, top)
                    t1 = time.perf_counter()
                    text = [f.to_json() for f in figs]
                    t2 = time.perf_counter()
                    b, d = min(b, t1 - t0), min(d, t2 - t1)
                build.append(b)
                dump.append(d)
                size.append(sum(map(len, text)) / 1e3)
        mb, md = statistics.median(build), statistics.median(dump)
        print(f"{name:<22} {len(build):>5} {1e3 * mb:>9.1f} {1e3 * md:>11.1f} {mb / md:>6.2f} "
              f"{statistics.median(size):>8.1f}")


if __name__ == "__main__":
    main()
