"""`python -m specviz.medusastop`: choose Medusa's stop threshold (llm.medusa.SURE) here.

    python -m specviz.medusastop [--data DIR] [--ratios 1 1.0 1.0 1.15 1.3] [--reps 15]

A round of medusa:K drafts heads 1..m, m the first head whose top probability s_i =
max_x softmax(z_i)(x) (T = 1) is below the threshold s (core.stop), and at T = 0 keeps the
leading heads whose argmax is the target's token. On the training data's held-out greedy
continuations (medusatrain's held-out prompts; the target's own greedy text, never the
benchmark's prompts), each position t stands for a round started there:
  tokens(t) = 1 + #(leading heads among 1..m that are right),
  time(t) = r(m + 1) + c (heads computed: m, and head m + 1 to see it is unsure),
r(n) = t(n) / t(1) the target's pass over n positions against one, measured here
(interleaved, medians) unless --ratios gives them, c one head's products against a pass.
s is the one that maximises sum tokens / sum time over a grid (Leviathan et al. 2022's
speedup, E / (n c + t(k+1)/t(1)), with n and k chosen by the stop). Sequences are told
greedy from sampled by the target's own argmax over their states (greedy: all of them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .llm import medusa, store
from .llm.blas import rows_by
from .llm.medusafit import residual
from .llm.runner import Runner
from .medusatrain import data_dir, load_data

GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)  # thresholds tried
C_HEAD = 0.02  # one head's products against a target pass (bench_medusa: 0.019-0.023)
GREEDY_AGREE = 0.95  # a sequence is greedy when this share of its checked tokens is the argmax
CHECKED = 24  # its first tokens checked (a sequence sampled at T = 1 strays within a few)


def stop_gain(sure: np.ndarray, hit: np.ndarray, ratios, s: float, c: float = C_HEAD):
    """Rounds at every position under threshold s. sure, hit: (K, n) each head's top
    probability and whether its argmax is the target's token; ratios: r(1..K+1).
    -> (tokens per round, drafts per round, time per round in t(1), speedup)"""
    K = len(sure)
    go = np.cumprod(sure >= s, axis=0)  # (K, n): head i drafts (all before it sure too)
    m = go.sum(axis=0)  # (n,) drafts a round
    kept = np.cumprod(hit & go.astype(bool), axis=0).sum(axis=0)  # leading right drafts
    r = np.asarray(ratios, dtype=float)
    cost = r[m] + c * np.minimum(m + 1, K)  # r[m] is r(m + 1): m drafts, m + 1 positions
    tokens = 1.0 + kept.mean()
    return tokens, m.mean(), cost.mean(), tokens / cost.mean()


def choose(sure, hit, ratios, c: float = C_HEAD) -> tuple[float, list]:
    """The grid's threshold of the largest speedup (the smallest of equal ones), and
    every row (s, tokens, drafts, time, speedup)."""
    rows = [(float(s), *stop_gain(sure, hit, ratios, s, c)) for s in GRID]
    best = max(rows, key=lambda row: (round(row[4], 6), -row[0]))
    return best[0], rows


def head_table(heads: medusa.Heads, E: np.ndarray, H: np.ndarray, *, chunk: int = 2048):
    """Each head's top probability (T = 1) and argmax token at each state H (n, d) ->
    (K, n) f64 and (K, n) token ids."""
    sure = np.empty((heads.K, len(H)))
    top = np.empty((heads.K, len(H)), dtype=np.int64)
    for i, W in enumerate(heads.W1):
        for a in range(0, len(H), chunk):
            u, _ = residual(H[a: a + chunk], W)
            z = (u @ E.T).astype(np.float64)  # (B, N)
            z -= z.max(axis=1, keepdims=True)
            sure[i, a: a + chunk] = 1.0 / np.exp(z).sum(axis=1)
            top[i, a: a + chunk] = heads.rows[np.argmax(z, axis=1)]
    return sure, top


def greedy_positions(model, H, Y, seq, mask) -> np.ndarray:
    """mask narrowed to the sequences the target wrote greedily: its argmax over the full
    head at each state is the token it wrote (GREEDY_AGREE of the first CHECKED, f16
    states)."""
    keep = mask.copy()
    for s in np.unique(seq[mask]):
        at = np.flatnonzero(mask & (seq == s))
        z = rows_by(H[at[:CHECKED]], model.weights.embed)  # (n, V)
        agree = float(np.mean(np.argmax(z, axis=1) == Y[0][at[:CHECKED]]))
        keep[at] = agree >= GREEDY_AGREE
    return keep


def pass_ratios(model, n_max: int, reps: int) -> list[float]:
    """r(n) = t(n) / t(1), n = 1..n_max: the target's pass over n new positions after a
    30-token context, medians of reps interleaved rounds."""
    run, ids = Runner(model.weights), list(range(1000, 1030 + n_max))
    run.logits(ids[:30], [30])
    times = {n: [] for n in range(1, n_max + 1)}
    for _ in range(reps):
        for n in times:
            run.rollback(30)
            t0 = time.perf_counter()
            run.logits(ids[: 30 + n], list(range(31, 31 + n)))
            times[n].append(time.perf_counter() - t0)
    t1 = float(np.median(times[1]))
    return [float(np.median(times[n])) / t1 for n in times]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz.medusastop", description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--ratios", type=float, nargs="+", default=None,
                    help="r(1..K+1), the pass over n positions against one (default: measure)")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args(argv)
    model, heads = store.load(), medusa.load_heads()
    ratios = a.ratios or pass_ratios(model, heads.K + 1, a.reps)
    if len(ratios) != heads.K + 1:
        raise SystemExit(f"--ratios needs {heads.K + 1} values, r(1..{heads.K + 1})")
    H, Y, seq, out, _ = load_data(data_dir() if a.data is None else a.data, heads.K)
    mask = out & (Y[heads.K] >= 0)  # held out, with every head's label
    greedy = greedy_positions(model, H, Y, seq, mask)
    E = model.weights.embed.rows(heads.rows).astype(np.float32)
    sure, top = head_table(heads, E, H[greedy])
    hit = top == Y[1:, greedy]
    best, rows = choose(sure, hit, ratios)
    print(f"r(n) = t(n)/t(1), n = 1..{heads.K + 1}: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"{int(greedy.sum())} held-out greedy positions of {len(np.unique(seq[greedy]))} "
          f"sequences (of {len(np.unique(seq[mask]))} held out); per head top-1 "
          + ", ".join(f"{h:.2f}" for h in hit.mean(axis=1)))
    print("   s  tokens/round  drafts/round  time/round  speedup")
    for s, tok, m, cost, sp in rows:
        if s in (0.0, best) or round(s * 100) % 5 == 0:
            print(f"{s:4.2f}  {tok:12.3f}  {m:12.2f}  {cost:10.3f}  {sp:7.3f}"
                  + ("   <- chosen" if s == best else ""))
    print(f"chosen s = {best:g} (medusa.SURE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
