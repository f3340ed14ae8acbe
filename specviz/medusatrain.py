"""`python -m specviz.medusatrain`: train the Medusa heads of Gemma 3 270M from its own text.

    python -m specviz.medusatrain [--data DIR] [--generate N] [--steps 400] [--seed 0]
                                  [--out specviz/llm/data/medusa-heads.npz]
    python -m specviz.medusatrain --eval HEADS.npz [HEADS.npz ...] [--data DIR]

The recipe of Medusa-2 and EAGLE (self-distillation): the target writes continuations of
varied prompts (stories, code, facts, the shipped corpus's docstrings), greedy and sampled
at T = 1, and the heads learn to predict its own token k + 1 ahead from its hidden state
(llm.medusafit: cross-entropy with Adam, from W1 = 0). The data is cached as batch-*.npz
files in DIR (default <cache>/specviz/medusa/data-v1): per batch, each sequence's tokens
(prompt, then continuation), where the continuation starts, and the hidden state at every
position that predicts a continuation token, f16. --generate N continues the seed's first
N prompts first (medusagen: the batches of them DIR already holds are kept, so a stopped
run goes on and a rerun makes nothing). Held out: the prompts whose hash falls in one
fifth (never trained on). Writes the heads in f16 with their rows of the output layer and
a JSON beside them (checksum, script version, data, steps, seed, seconds, held-out top-1
per head with intervals); llm.medusa loads them. --eval HEADS... scores heads already
trained (each an .npz with its JSON, checked) on DIR's held-out prompts the same way,
training nothing, and each one's top-1 minus the first's on the same positions: heads
trained on other data, or on more, side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from .llm import medusa, store
from .llm.medusafit import Adam, ce_grad, cluster_interval, top1
from .medusagen import generate

SCRIPT_VERSION = 1
HELD_OUT = 5  # one prompt in HELD_OUT (by hash) is held out
BATCH = 256  # positions a step
NEW_TOKENS = 96  # tokens the target writes a prompt
SEQS_A_BATCH = 8


def data_dir() -> Path:
    return store.model_dir() / "medusa" / "data-v1"


def held_out(prompt: np.ndarray) -> bool:
    digest = hashlib.sha256(np.asarray(prompt, dtype=np.int64).tobytes()).hexdigest()
    return int(digest[:8], 16) % HELD_OUT == 0


def load_data(directory: Path, K: int):
    """Every position of every cached sequence: hidden states H (n, d) f32, labels Y (K + 1,
    n) (the token at t + k + 1, -1 past the end), each position's sequence, and whether its
    prompt is held out."""
    H, Y, seq, out = [], [], [], []
    s_id = 0
    files = sorted(directory.glob("batch-*.npz"))
    if not files:
        raise SystemExit(f"no batch-*.npz in {directory}: run with --generate N first")
    for f in files:
        z = np.load(f)
        lens, starts, tokens, hid = z["lens"], z["starts"], z["tokens"], z["hidden"]
        off = np.concatenate([[0], np.cumsum(lens)])
        hoff = np.concatenate([[0], np.cumsum(lens - starts)])
        for s in range(len(lens)):
            toks, st = tokens[off[s]: off[s + 1]], int(starts[s])
            L = len(toks) - st
            i = np.arange(L)
            Y.append(np.stack([np.where(st + i + k < len(toks),
                                        toks[np.minimum(st + i + k, len(toks) - 1)], -1)
                               for k in range(K + 1)]))
            H.append(hid[hoff[s]: hoff[s + 1]])
            seq.append(np.full(L, s_id))
            out.append(np.full(L, held_out(toks[:st])))
            s_id += 1
    return (np.concatenate(H).astype(np.float32), np.concatenate(Y, axis=1),
            np.concatenate(seq), np.concatenate(out), len(files))


def rows_of(labels: np.ndarray, N: int) -> np.ndarray:
    """The N most frequent training labels (ties: the lower id), sorted: the heads' rows."""
    c = np.bincount(labels[labels >= 0], minlength=medusa.V_GEMMA)
    order = np.lexsort((np.arange(len(c)), -c))
    return np.sort(order[:N])


def fit_head(k, H, Y, train, E, where, *, steps, lr, rng, log):
    """Head k from W1 = 0 (the target's own head, one token ahead): cross-entropy, Adam."""
    d = H.shape[1]
    opt = Adam(np.zeros((d, d), np.float32), lr)
    lab = where[np.maximum(Y[k], 0)]
    idx = np.flatnonzero(train & (Y[k] >= 0) & (lab >= 0))
    for s in range(steps):
        b = rng.choice(idx, BATCH)
        loss, g = ce_grad(H[b], lab[b], opt.x, E)
        opt.step(g.astype(np.float32))
        if s % 50 == 0:
            log(f"head {k} step {s}: ce {loss:.3f}")
    return opt.x


def hits(Ws, H, Y, mask, E, rows) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per head (k = 1..K): whether its top-1 is the target's own token at each masked
    position with a label, and those positions' indices."""
    out = []
    for k, W in enumerate(Ws, start=1):
        m = np.flatnonzero(mask & (Y[k] >= 0))
        out.append((rows[top1(H[m], W, E)] == Y[k][m], m))
    return out


def evaluate(Ws, H, Y, seq, mask, E, rows):
    """Held-out top-1 per head (k = 1..K) against the target's own token, with 95%
    intervals resampling sequences."""
    return [cluster_interval(hit, seq[m]) for hit, m in hits(Ws, H, Y, mask, E, rows)]


def scored(scores) -> list[dict]:
    return [{"head": k, "rate": round(r, 4), "lo": round(lo, 4), "hi": round(hi, 4)}
            for k, (r, lo, hi) in enumerate(scores, start=1)]


def score_heads(paths: list[Path], directory: Path, model, log) -> list[dict]:
    """Held-out top-1 per head of the heads in each path on directory's held-out prompts,
    and, on the same positions, each one's top-1 minus the first's (intervals resampling
    sequences for both)."""
    heads = [medusa.load_heads(p) for p in paths]
    H, Y, seq, out, n_files = load_data(directory, max(h.K for h in heads))
    res, first = [], None
    for path, hd in zip(paths, heads, strict=True):
        E = model.weights.embed.rows(hd.rows).astype(np.float32)  # (N, d)
        hs = hits(list(hd.W1), H, Y, out, E, hd.rows)
        first = first or hs
        for k, (hit, m) in enumerate(hs, start=1):
            r, lo, hi = cluster_interval(hit, seq[m])
            log(f"{path.name} on {directory.name}, held-out top-1, head {k}: "
                f"{r:.3f} ({lo:.3f}-{hi:.3f})")
        diff = [cluster_interval(hit.astype(float) - f_hit, seq[m])
                for (hit, m), (f_hit, _) in zip(hs, first, strict=False)]
        res.append({"heads": str(path), "sha256": hd.sha256,
                    "trained_on": hd.meta.get("data"), "data": str(directory.name),
                    "batches": n_files, "held_out_positions": int(out.sum()),
                    "held_out_sequences": int(len(np.unique(seq[out]))),
                    "top1": scored([cluster_interval(hit, seq[m]) for hit, m in hs]),
                    "minus_first": scored(diff)})
    return res


def train_heads(a: argparse.Namespace, model, directory: Path, *, t0: float, log) -> dict:
    """Fit a.heads heads on directory's training prompts, score them on its held-out ones,
    write them to a.out; their JSON."""
    H, Y, seq, out, n_files = load_data(directory, a.heads)
    train = ~out
    rows = rows_of(Y[1:, train].ravel(), a.rows)
    where = np.full(medusa.V_GEMMA, -1)
    where[rows] = np.arange(len(rows))
    E = model.weights.embed.rows(rows).astype(np.float32)  # (N, d)
    log(f"{n_files} batches, {len(np.unique(seq))} sequences, {len(H)} positions "
        f"({int(train.sum())} train, {int(out.sum())} held out); rows {len(rows)}")
    rng = np.random.default_rng(a.seed)
    Ws = [fit_head(k, H, Y, train, E, where, steps=a.steps, lr=a.lr, rng=rng, log=log)
          for k in range(1, a.heads + 1)]
    scores = evaluate(Ws, H, Y, seq, out, E, rows)
    seconds = time.perf_counter() - t0
    for k, (r, lo, hi) in enumerate(scores, start=1):
        log(f"held-out top-1, head {k}: {r:.3f} ({lo:.3f}-{hi:.3f})")
    meta = {
        "script": "python -m specviz.medusatrain", "script_version": SCRIPT_VERSION,
        "data": str(directory.name), "batches": n_files,
        "sequences": int(len(np.unique(seq))), "positions": int(len(H)),
        "train_positions": int(train.sum()), "held_out_positions": int(out.sum()),
        "held_out_sequences": int(len(np.unique(seq[out]))),
        "steps": a.steps, "batch": BATCH, "lr": a.lr, "seed": a.seed,
        "seconds": round(seconds, 1), "cores": os.cpu_count(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "top1": scored(scores),
    }
    medusa.save_heads(a.out, np.stack(Ws), rows, meta)
    log(f"wrote {a.out} ({a.out.stat().st_size / 1e6:.1f} MB) in {seconds:.0f} s")
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz.medusatrain", description=__doc__)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--generate", type=int, default=0, help="prompts to continue first")
    ap.add_argument("--heads", type=int, default=medusa.K_MAX)
    ap.add_argument("--rows", type=int, default=medusa.ROWS)
    ap.add_argument("--steps", type=int, default=400, help="Adam steps a head")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=medusa.HEADS_PATH)
    ap.add_argument("--eval", type=Path, nargs="+", default=None, metavar="HEADS",
                    help="score these heads on --data's held-out prompts; train nothing")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    directory = a.data or data_dir()
    model = store.load()
    if a.generate:
        generate(model, directory, n_prompts=a.generate, seed=a.seed, log=log)
    if a.eval is not None:
        print(json.dumps(score_heads(a.eval, directory, model, log), indent=1))
        return 0
    print(json.dumps(train_heads(a, model, directory, t0=t0, log=log), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
