"""The real model's costs on this machine, measured in one run: load time and resident
memory, the target's pass at 1..9 positions (context 256), this machine's read bandwidth
and f32 matrix rate, the roofline built from those two against every pass, and one decode
step against the time to read the f32 head once.

roofline(n) = max(bytes / bandwidth, flops / rate): bytes = the f32 weights read once (the
blocks and the tied head) plus the KV cache read at context 256; flops = 2 x the
multiply-adds of n positions (blocks, attention over the context, the head at each).
bandwidth: the faster of two reads of 512 MB, the pass's one-row product and a plain read
(NumPy's max), each split over the pass's threads (blas.PASS_THREADS) as the pass splits the
head. Rate: the fastest f32 matrix rate measured, the best of a large product
(512 x 2048 x 2048) and the pass's own products at 1..9 rows (blas.rows_by on a 2048 x 640
matrix in cache, whose direct kernel here outruns the large product's), each run in
PASS_THREADS threads at once, FLOPs summed (llm.machine). That roofline is
the ideal; "kernel" is the same at the rate of the pass's n-row products, what a pass can
reach with this kernel. The decode step is set against the time to read the head once, the
faster of its one-row product and a plain read of its bytes. Bandwidth, the rates and the
passes are measured interleaved, rep by rep, and the best of the reps kept; wall time is
the headline (the layers' products split over the threads or whole, as the load's
forward.tune_split found faster here: the first line says which), and the process's CPU
time (summed over its threads: what the work cost, leaving out waits for a core or for the
slower thread) is shown beside it, every figure and pass by the same clock. Last, the work a
decode does outside the model's passes (the round engine on 262,144-token rows: softmax,
coins, residuals, draws, the trace), per round of two drafts and per token of the target
alone: a decode's wall time minus its passes', the median of the reps.

    .venv/bin/python benchmarks/bench_llm.py [--reps 5] [--context 256]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.analysis import roofline  # noqa: E402
from specviz.analysis.shape import ModelShape  # noqa: E402
from specviz.llm import blas, store  # noqa: E402
from specviz.llm.blas import BLAS_THREADS, PASS_THREADS, blas_limit, rows_by  # noqa: E402
from specviz.llm.decode import plain, speculate  # noqa: E402
from specviz.llm.drafts import Kit, draft_pair, parse_draft  # noqa: E402
from specviz.llm.forward import largest_layer_product  # noqa: E402
from specviz.llm.machine import CLOCKS, Machine, plain_read, timed  # noqa: E402
from specviz.llm.runner import Runner  # noqa: E402
from specviz.views.llmpage import corpus_ids, ngram_model  # noqa: E402

POSITIONS = tuple(range(1, 10))  # positions per pass measured (k + 1 for k = 0..8)
WAYS_AT = (1, 5, 9)  # positions at which the layers' products split and whole are compared
ROUND_DRAFTS = ("lookup", "trimmed:16384")  # drafts whose rounds are timed outside the passes
ROUND_K, ROUND_TOKENS = 3, 40  # their k and the tokens each decode generates
ROUND_PROMPT = "Once upon a time, in a small village by the sea, there lived"


def rss_mb() -> float:
    """Resident memory now (VmRSS), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def shape_of(cfg) -> ModelShape:
    """The loaded Gemma 3 as the roofline prices it: a tied head, q/k norms, four norms a layer."""
    return ModelShape("Gemma 3", cfg.n_layers, cfg.d, cfg.ffn, cfg.n_heads, cfg.n_kv, cfg.V,
                      head_size=cfg.head_dim, tied=True, qk_norm=True, norms_per_layer=4)


def pass_cost(cfg, n: int, ctx: int) -> tuple[float, float]:
    """(bytes, flops) of one pass over n new positions after ctx cached ones, each attending
    to all ctx + n: roofline.pass_cost in f32, flops = 2 MACs."""
    cost = roofline.pass_cost(shape_of(cfg), n, ctx + n, "fp32")
    return cost.bytes, 2.0 * cost.macs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--context", type=int, default=256)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    before = rss_mb()
    t0 = time.perf_counter()
    model = store.load()
    load_s = time.perf_counter() - t0
    gc.collect()
    after = rss_mb()
    cfg, w = model.cfg, model.weights
    print(f"load {load_s:.1f} s; resident memory {before:.0f} MB before, {after:.0f} MB after "
          f"(f32 weights {w.nbytes / 1e6:.0f} MB); BLAS threads {BLAS_THREADS} a product, "
          f"the head and the machine's figures in {PASS_THREADS} threads, the layers' "
          f"products {'split too' if blas.split_from == blas.SPLIT_BYTES else 'whole'} "
          f"(faster here: tune_split at load); "
          f"{os.cpu_count()} CPUs, load average {load0:.1f}")
    ctx = args.context
    ids = [cfg.bos] + np.random.default_rng(0).integers(1000, 50_000, ctx - 1).tolist()
    runner = Runner(w)
    runner.logits(ids, [ctx])
    machine = Machine(d=cfg.d, rows=POSITIONS)
    wall = {n: [] for n in POSITIONS}
    cpu = {n: [] for n in POSITIONS}
    head_s = {"product": [], "plain": []}  # the head read by the pass's 1-row product, by max
    # (both split over PASS_THREADS threads, as the pass splits it)
    h = np.ones((1, cfg.d), np.float32)
    chosen = blas.split_from
    ways = dict(zip(("split", "whole"), blas.split_ways(largest_layer_product(w)),
                    strict=True))  # split_from: the layers' products split, or whole
    by_way = {way: {n: [] for n in WAYS_AT} for way in ways}  # wall s

    def run(n: int) -> tuple[float, float]:
        seq = ids + list(range(1000, 1000 + n))
        runner.rollback(ctx)
        return timed(lambda: runner.logits(seq, range(ctx + 1, ctx + n + 1)))

    for _ in range(args.reps):  # the machine's figures and the passes, interleaved
        machine.sample()
        for n in POSITIONS:
            t, c = run(n)
            wall[n].append(t)
            cpu[n].append(c)
        for way, limit in ways.items():  # the layers' products split and whole, side by side
            blas.split_from = limit
            for n in WAYS_AT:
                by_way[way][n].append(run(n)[0])
        blas.split_from = chosen
        with blas_limit():
            head_s["product"].append(timed(lambda: rows_by(h, w.embed)))
            head_s["plain"].append(timed(lambda: plain_read(w.embed.tiles)))
    best = {k: tuple(min(t[c] for t in v) for c in range(2)) for k, v in head_s.items()}
    print("reading the f32 head once: " + ", ".join(
        f"{k} {1e3 * b[0]:.1f} ms wall, {1e3 * b[1]:.1f} cpu" for k, b in best.items())
        + " (the faster is the bar)")
    report(cfg, ctx, machine, {n: min(v) for n, v in wall.items()},
           {n: min(v) for n, v in cpu.items()},
           tuple(min(b[c] for b in best.values()) for c in range(2)), w.embed.nbytes)
    print(f"the layers' products split over {PASS_THREADS} threads / whole (the head split "
          "either way), wall ms: " + ", ".join(
              f"{n}: {1e3 * min(by_way['split'][n]):.1f} / {1e3 * min(by_way['whole'][n]):.1f}"
              for n in WAYS_AT)
          + f" positions (the load chose {'split' if chosen == ways['split'] else 'whole'})")
    outside_passes(model, reps=args.reps)
    print(f"(best of {args.reps} interleaved reps; load average {load0:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end)")


def outside_passes(model, *, reps: int) -> None:
    """Per round (each draft) and per token (the target alone): the decode's wall time
    minus its passes', ms, the median of reps decodes of ROUND_TOKENS tokens."""
    ids = model.tokenizer.encode(ROUND_PROMPT)
    cfg = model.cfg
    specs = {d: parse_draft(d, cfg=cfg) for d in ROUND_DRAFTS}
    kept: dict[str, object] = {}  # the trimmed head's token counts, made once, not each rep
    kit = Kit(corpus_ids, ngram_model, lambda name, make: kept[name] if name in kept
              else kept.setdefault(name, make()))
    out = {d: [] for d in (*ROUND_DRAFTS, "alone")}
    for _ in range(reps):
        for d, spec in specs.items():  # a fresh pair (its caches empty) each decode
            pair = draft_pair(model, spec, kit=kit)
            run = speculate(pair, ids, k=ROUND_K, max_new=ROUND_TOKENS)
            out[d].append(outside(run) / len(run.rounds))
        run = plain(Runner(model.weights), ids, T=1.0, max_new=ROUND_TOKENS)
        out["alone"].append(outside(run) / len(run.tokens))
    print(f"outside the passes (T = 1, k = {ROUND_K}, {ROUND_TOKENS} tokens, median of {reps}): "
          + ", ".join(f"{d} {1e3 * np.median(out[d]):.1f} ms a round" for d in ROUND_DRAFTS)
          + f"; the target alone {1e3 * np.median(out['alone']):.1f} ms a token")


def outside(run) -> float:
    """A decode's wall seconds minus those of its passes (the target's and the draft's)."""
    return run.seconds - sum(s for *_, s in run.target_passes + run.draft_passes)


def report(cfg, ctx: int, m: Machine, times: dict, cpu: dict, head_s: tuple[float, float],
           head_bytes: int) -> None:
    for c, clock in enumerate(CLOCKS):
        print(f"{clock}: read bandwidth {m.bw[c] / 1e9:.2f} GB/s; f32 matrix rate "
              f"{m.top[c] / 1e9:.1f} GFLOP/s (ridge point {m.top[c] / m.bw[c]:.1f} FLOP/byte): "
              f"the best of a large product ({m.peak[c] / 1e9:.1f}) and the pass's n-row "
              "products (rows_by, 2048 x 640 in cache), GFLOP/s: "
              + ", ".join(f"{n}: {r[c] / 1e9:.0f}" for n, r in m.rate.items()))
    print(f"\nideal = max(bytes / bandwidth, FLOPs / rate), the roofline; kernel: the same at "
          f"the rate of the pass's n-row products (context {ctx})")
    print("  n  wall ms  kernel  ratio  bound    ideal  ratio |  cpu ms  kernel  ratio  "
          "ideal  ratio")
    for n in POSITIONS:
        b, f = pass_cost(cfg, n, ctx)
        line = f"  {n}"
        for c, t in enumerate((times[n], cpu[n])):
            roof = max(b / m.bw[c], f / m.rate[n][c])
            ideal = max(b / m.bw[c], f / m.top[c])
            bound = "memory " if b / m.bw[c] >= f / m.top[c] else "compute"
            line += (f"  {1e3 * t:7.1f}  {1e3 * roof:6.1f}  {t / roof:5.2f}  "
                     + (f"{bound}  " if c == 0 else "") + f"{1e3 * ideal:5.1f}  {t / ideal:5.2f}"
                     + (" |" if c == 0 else ""))
        print(line)
    print(f"\none decode step at context {ctx}: {1e3 * times[1]:.1f} ms wall, {1e3 * cpu[1]:.1f} "
          f"ms cpu; reading the f32 head once ({head_bytes / 1e6:.0f} MB, the faster of the "
          f"pass's one-row product and a plain read): {1e3 * head_s[0]:.1f} ms wall, "
          f"{1e3 * head_s[1]:.1f} ms cpu; ratio "
          f"{times[1] / head_s[0]:.2f} wall, {cpu[1] / head_s[1]:.2f} cpu (head bytes / "
          f"bandwidth: {1e3 * head_bytes / m.bw[0]:.1f} ms)")
    print(f"verification: {times[5] / times[1]:.2f}x a one-position pass at 5 positions, "
          f"{times[9] / times[1]:.2f}x at 9")


if __name__ == "__main__":
    main()
