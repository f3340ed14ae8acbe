"""Speed and memory of the n-gram text models against their targets.

    .venv/bin/python benchmarks/bench_text.py

5 MB of real text: the standard library's docstrings (the default corpus, built here
without a cache) followed by the standard library's own source, cleaned, cut at 5,000,000
bytes; for the word model at V = 50,000, as much of the same text as holds 50,000
distinct words (about 10 MB; 5 MB holds only about 30,000). Every figure is measured in
this one run on this machine.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.core.scenario import Scenario  # noqa: E402
from specviz.text import corpus, ngram  # noqa: E402
from specviz.text import measure as ts  # noqa: E402
from specviz.text import pair as tp  # noqa: E402

TEXT_BYTES = 5_000_000
PROMPT = "Return the number of "


def report(name: str, value: str, target: str = "", ok: bool | None = None) -> bool:
    verdict = "" if ok is None else ("PASS" if ok else "MISS")
    print(f"  {name:<50} {value:>16}   {('target ' + target) if target else '':<18} {verdict}",
          flush=True)
    return ok is not False


def hwm_mb() -> float:
    """Peak resident memory of this process so far (Linux VmHWM), MB."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError, ValueError):
        return float("nan")


def real_text(docstrings: str, n_bytes: int = TEXT_BYTES, min_words: int = 0) -> str:
    """The docstrings, then cleaned stdlib source files in order: cut at n_bytes bytes, or
    (min_words > 0) ended with the file that brings the distinct words to min_words."""
    parts, size = [docstrings], len(docstrings.encode())
    words = set(ngram.build_tokenizer(docstrings, "word", 10**9).vocab) if min_words else set()
    for f in corpus.stdlib_files():
        if (min_words and len(words) > min_words) or (not min_words and size >= n_bytes):
            break
        try:
            t = corpus.clean(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(t)
        size += len(t.encode()) + 1
        if min_words:
            words.update(ngram.build_tokenizer(t, "word", 10**9).vocab)
    raw = "\n".join(parts).encode()
    return (raw if min_words else raw[:n_bytes]).decode("utf-8", errors="ignore")


def train_timed(text: str, level: str, order: int) -> tuple[float, ngram.NGramCounts]:
    t0 = time.perf_counter()
    counts = ngram.train(text, level, order)
    return time.perf_counter() - t0, counts


def train_peak(text: str, level: str, order: int) -> float:
    """Peak bytes allocated while training (tracemalloc sees NumPy's buffers), MB."""
    tracemalloc.start()
    ngram.train(text, level, order)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def decode_timed(counts, target: int, draft: int, drafter: str, k: int = 4,
                 n: int = 1_000) -> ts.TextDecodeStats:
    dec = tp.TextDecoder(counts, target, draft)  # fresh: no cached rows
    sc = Scenario.on(dec.pair(drafter), dec.encode(PROMPT), k=k, seed=0)
    return ts.long_text_decode(sc, length=n)


def main() -> int:
    print(f"specviz text benchmark · Python {platform.python_version()} · NumPy "
          f"{np.__version__} · {os.cpu_count()} CPUs · {platform.machine()}")
    ok = True

    print("\nDefault corpus (stdlib docstrings, parsed with ast, no cache)")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        docs = corpus.default_corpus(cache=Path(tmp))
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        corpus.default_corpus(cache=Path(tmp))
        t_read = time.perf_counter() - t0
    report("build from the stdlib's source", f"{t_build:.2f} s")
    report("read back from the cache", f"{t_read * 1e3:.1f} ms")
    report("size", f"{docs.n_bytes / 1e6:.2f} MB")

    text = real_text(docs.text)
    print(f"\nTraining on {len(text.encode()) / 1e6:.2f} MB of text "
          f"({len(text):,} characters)")
    results = {}
    for level, order in (("char", 6), ("word", 3)):
        secs, counts = train_timed(text, level, order)
        results[level] = counts
        ok &= report(f"{level}: train orders 1..{order}", f"{secs:.2f} s", "< 5 s", secs < 5.0)
        report(f"{level}: tokens / vocabulary V", f"{counts.corpus_tokens:,} / {counts.V:,}")
        ok &= report(f"{level}: counts in memory", f"{counts.nbytes / 1e6:.1f} MB", "< 300 MB",
                     counts.nbytes < 300e6)
        peak = train_peak(text, level, order)
        ok &= report(f"{level}: peak allocation while training", f"{peak:.0f} MB", "< 1 GB",
                     peak < 1_000)

    big = real_text(docs.text, min_words=ngram.MAX_VOCAB["word"])
    print(f"\nWord model at V = 50,000: {len(big.encode()) / 1e6:.1f} MB of the same text, "
          "enough to hold 50,000 distinct words (5 MB holds about 30,000)")
    secs, counts = train_timed(big, "word", 3)
    results["word50k"] = counts
    ok &= report("word: V (most frequent 49,999 + <unk>)", f"{counts.V:,}", "= 50,000",
                 counts.V == ngram.MAX_VOCAB["word"])
    report("word: train orders 1..3", f"{secs:.2f} s")
    ok &= report("word: counts in memory", f"{counts.nbytes / 1e6:.1f} MB", "< 300 MB",
                 counts.nbytes < 300e6)
    peak = train_peak(big, "word", 3)
    ok &= report("word: peak allocation while training", f"{peak:.0f} MB", "< 1 GB",
                 peak < 1_000)
    dense = 8 * counts.V**2 / 1e9
    report("    (a dense V x V float64 table would be)", f"{dense:.1f} GB")

    print("\nOne row p(. | context), computed on demand (mean of 2,000, no cache)")
    for level, order in (("char", 6), ("word", 3), ("word50k", 3)):
        counts = results[level]
        m = counts.model(order)
        ids = counts.tokenizer.encode(text[:20_000])
        t0 = time.perf_counter()
        for i in range(2_000):
            m.row(ids[: 50 + i])
        us = (time.perf_counter() - t0) / 2_000 * 1e6
        report(f"{level[:4]}: {order}-gram row over V = {counts.V:,}", f"{us:.0f} us")

    print("\n1,000 tokens of speculative decoding (k = 4, fresh decoder, no cached rows)")
    for level, target, draft in (("char", 6, 2), ("word", 3, 1), ("word50k", 3, 1)):
        for drafter in tp.DRAFTERS:
            st = decode_timed(results[level], target, draft, drafter)
            V = results[level].V
            name = (f"{level[:4]} V={V:,}: {target}-gram target, "
                    f"{f'{draft}-gram draft' if drafter == 'ngram' else 'prompt lookup'}")
            ok &= report(name, f"{st.seconds * 1e3:.0f} ms", "< 500 ms", st.seconds < 0.5)
            report("    tokens per call / acceptance (kept / drafted)",
                   f"{st.tokens_per_call:.2f} / {st.draft_acceptance_rate:.3f}")

    report("\nprocess peak resident memory (VmHWM)", f"{hwm_mb():.0f} MB")
    print("\nall targets met" if ok else "\nsome targets missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
