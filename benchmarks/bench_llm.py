"""The real model's costs on this machine, measured in one run: load time and resident
memory, the target's pass at 1..9 positions (context 256), this machine's read bandwidth
and f32 matrix rate, the roofline built from those two against every pass, and one decode
step against the time to read the f32 head once.

roofline(n) = max(bytes / bandwidth, flops / peak): bytes = the f32 weights read once (the
blocks and the tied head) plus the KV cache read at context 256; flops = 2 x the
multiply-adds of n positions (blocks, attention over the context, the head at each).

    .venv/bin/python benchmarks/bench_llm.py [--reps 5] [--context 256]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.llm import store  # noqa: E402
from specviz.llm.forward import BLAS_THREADS  # noqa: E402
from specviz.llm.runner import Runner  # noqa: E402


def rss_mb() -> float:
    """Resident memory now (VmRSS), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def best(f, reps: int) -> float:
    """The fastest of reps runs of f(), seconds: on a shared, loaded machine the minimum is
    the figure that measures the machine rather than its neighbours."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return min(out)


def bandwidth(reps: int) -> float:
    """Bytes per second read by a matrix-vector product over a 512 MB f32 matrix (the
    access pattern of the head), BLAS threads as in a pass."""
    a = np.ones((200_000, 640), np.float32)
    v = np.ones(640, np.float32)
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        return a.nbytes / best(lambda: a @ v, reps)


def peak_flops(reps: int) -> float:
    """f32 FLOP/s of a 512 x 2048 x 2048 matrix product (block-sized, compute-bound)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 2048), dtype=np.float32)
    b = rng.standard_normal((2048, 2048), dtype=np.float32)
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        return 2 * 512 * 2048 * 2048 / best(lambda: a @ b, reps)


def pass_cost(cfg, n: int, ctx: int) -> tuple[float, float]:
    """(bytes, flops) of one pass over n new positions after ctx cached ones."""
    d, hq, hk = cfg.d, cfg.n_heads * cfg.head_dim, cfg.n_kv * cfg.head_dim
    block = d * hq + 2 * d * hk + hq * d + 3 * d * cfg.ffn  # weights per block
    weights = 4 * (cfg.n_layers * block + cfg.V * d)
    kv = 4 * cfg.n_layers * 2 * (ctx + n) * hk
    attn = cfg.n_layers * 2 * (ctx + n) * hq  # q.k and p.v per position
    macs = n * (cfg.n_layers * block + attn + cfg.V * d)
    return weights + kv, 2.0 * macs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--context", type=int, default=256)
    args = ap.parse_args()
    before = rss_mb()
    t0 = time.perf_counter()
    model = store.load()
    load_s = time.perf_counter() - t0
    gc.collect()
    after = rss_mb()
    cfg, w = model.cfg, model.weights
    print(f"load {load_s:.1f} s; resident memory {before:.0f} MB before, {after:.0f} MB after "
          f"(f32 weights {w.nbytes / 1e6:.0f} MB); BLAS threads {BLAS_THREADS}")
    bw, peak = bandwidth(args.reps), peak_flops(args.reps)
    print(f"read bandwidth {bw / 1e9:.2f} GB/s; f32 matrix rate {peak / 1e9:.1f} GFLOP/s; "
          f"ridge point {peak / bw:.1f} FLOP/byte")
    ctx = args.context
    ids = [cfg.bos] + np.random.default_rng(0).integers(1000, 50_000, ctx - 1).tolist()
    runner = Runner(w)
    runner.logits(ids, [ctx])
    print(f"\n  n  pass ms  roofline ms  measured/roofline  bound   (context {ctx})")
    times = {}
    for n in range(1, 10):
        seq = ids + list(range(1000, 1000 + n))

        def one(seq=seq, n=n):
            runner.rollback(ctx)
            runner.logits(seq, range(ctx + 1, ctx + n + 1))  # logits at every new position

        times[n] = best(one, args.reps)
        b, f = pass_cost(cfg, n, ctx)
        roof = max(b / bw, f / peak)
        print(f"  {n}  {1e3 * times[n]:7.1f}  {1e3 * roof:11.1f}  {times[n] / roof:17.2f}  "
              f"{'memory' if b / bw >= f / peak else 'compute'}")
    head = w.embed
    h = np.ones(cfg.d, np.float32)
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        head_s = best(lambda: head @ h, args.reps)
    print(f"\none decode step at context {ctx}: {1e3 * times[1]:.1f} ms; reading the f32 head "
          f"once ({head.nbytes / 1e6:.0f} MB, one matrix-vector product): {1e3 * head_s:.1f} "
          f"ms; ratio {times[1] / head_s:.2f} (head bytes / bandwidth: "
          f"{1e3 * head.nbytes / bw:.1f} ms)")
    print(f"verification: {times[5] / times[1]:.2f}x a one-position pass at 5 positions, "
          f"{times[9] / times[1]:.2f}x at 9")


if __name__ == "__main__":
    main()
