"""The Medusa heads' training data: Gemma 3 270M continuing varied prompts, with its states.

Prompts: short stories, code, facts (STARTERS) and windows of the shipped corpus (the
standard library's docstrings, text.corpus), in a fixed order from a seed. Each prompt is
continued NEW_TOKENS tokens twice, greedy and sampled at T = 1 (llm.decode.plain), and one
pass over the whole sequence gives the final-normed hidden state at each position that
predicts a continuation token. Written as batch-<hash>.npz files of SEQS sequences
(medusatrain reads them): lens, starts (where each continuation begins), tokens (all
sequences concatenated), hidden (the continuation positions, f16), and tops/top_ids/top_p,
the target's 64 most likely tokens at sampled positions (kept for soft labels; empty here).
A run stopped part way goes on where it stopped (generate).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .llm.decode import plain
from .llm.forward import KVCache, hidden
from .llm.runner import Runner
from .llm.store import Model
from .text.corpus import default_corpus

NEW_TOKENS = 96
SEQS = 8  # sequences a batch file
DONE = "done-seed{seed}.json"  # the batches written with a seed, in order, with their sizes
WINDOW_CHARS = (120, 400)  # a corpus prompt's length in characters
STARTERS = (
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "The dragon opened one eye and looked at the knight.",
    "She found the letter under the floorboards of her grandmother's house. It said",
    "It was the last day of summer, and the children ran down to the river",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "import numpy as np\n\ndef softmax(x):\n",
    "class Stack:\n    def __init__(self):\n",
    "for i in range(10):\n    if i % 2 == 0:\n",
    "The capital of France is Paris. The capital of Germany is Berlin. The capital of Italy is",
    "Water boils at 100 degrees Celsius at sea level. At higher altitudes,",
    "The mitochondria is the powerhouse of the cell. It",
    "Photosynthesis is the process by which plants",
    "The French Revolution began in 1789 when",
    "A prime number is a natural number greater than 1 that",
)


def prompts(n: int, *, seed: int) -> list[str]:
    """n prompts: the starters, then windows of the corpus at places drawn from seed."""
    rng = np.random.default_rng(seed)
    text = default_corpus().text
    out = list(STARTERS[:n])
    while len(out) < n:
        size = int(rng.integers(*WINDOW_CHARS))
        at = int(rng.integers(0, len(text) - size))
        window = text[at: at + size]
        cut = window.find(" ")
        out.append(window[cut + 1:].strip() or window)
    return out


def sequence(model: Model, prompt: str, *, T: float,
             seed: int) -> tuple[list[int], int, np.ndarray]:
    """The prompt's ids and its continuation, where the continuation starts, and the hidden
    states at positions start - 1 .. end - 2 (each predicts a continuation token), f16."""
    ids = model.tokenizer.encode(prompt)
    run = plain(Runner(model.weights), ids, T=T, seed=seed, max_new=NEW_TOKENS)
    toks = ids + list(run.tokens)
    w = model.weights
    h = hidden(w, toks, KVCache(w, range(w.cfg.n_layers)))
    return toks, len(ids), h[len(ids) - 1: len(toks) - 1].astype(np.float16)


def write_batch(directory: Path, seqs: list[tuple[list[int], int, np.ndarray]]) -> Path:
    lens = np.array([len(t) for t, _, _ in seqs], dtype=np.int64)
    starts = np.array([s for _, s, _ in seqs], dtype=np.int64)
    tokens = np.concatenate([np.asarray(t, dtype=np.int32) for t, _, _ in seqs])
    buf = io.BytesIO()
    np.savez(buf, lens=lens, starts=starts, tokens=tokens,
             hidden=np.concatenate([h for _, _, h in seqs]),
             tops=np.zeros(len(seqs), dtype=np.int64),
             top_ids=np.zeros((0, 64), np.int32), top_p=np.zeros((0, 64), np.float16))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"batch-{hashlib.sha256(tokens.tobytes()).hexdigest()[:20]}.npz"
    part = path.with_suffix(".part")  # whole or not at all: a run stopped mid-write
    part.write_bytes(buf.getvalue())  # leaves no batch medusatrain cannot read
    part.replace(path)
    return path


def generate(model: Model, directory: Path, *, n_prompts: int, seed: int,
             log: Callable[[str], None] = print) -> None:
    """Continue n_prompts prompts greedy and sampled, SEQS sequences a batch file. Batch b
    holds the same sequences whatever n_prompts (the prompts of fewer are the first of more,
    each sequence's seed is seed + its index), so the batches an earlier run with this seed
    wrote (listed in DONE with their sizes) are kept, not made again: a stopped run goes on
    where it stopped, and a rerun of the same command makes nothing."""
    todo = [(p, T) for p in prompts(n_prompts, seed=seed) for T in (0.0, 1.0)]
    listed = directory / DONE.format(seed=seed)
    done = json.loads(listed.read_text()) if listed.exists() else []  # [[name, seqs], ...]
    for n, b in enumerate(range(0, len(todo), SEQS)):
        size = len(todo[b: b + SEQS])
        if n < len(done) and done[n][1] == size and (directory / done[n][0]).exists():
            log(f"kept {done[n][0]} ({b + size} of {len(todo)})")
            continue
        if n < len(done):  # its file is gone or holds a shorter last batch: made again
            (directory / done[n][0]).unlink(missing_ok=True)
        seqs = [sequence(model, p, T=T, seed=seed + b + j)
                for j, (p, T) in enumerate(todo[b: b + SEQS])]
        path = write_batch(directory, seqs)
        done = done[:n] + [[path.name, size]] + done[n + 1:]
        listed.with_suffix(".part").write_text(json.dumps(done))
        listed.with_suffix(".part").replace(listed)
        log(f"wrote {path.name} ({b + size} of {len(todo)})")
