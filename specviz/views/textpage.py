"""Page-level data for /text (speculative decoding on n-gram text): models, prompts, the
comparisons and the exactness check, as rows the page shows and figures draw.

Functions whose first parameter is `_counts` take counts that Streamlit must not hash (they
are large); the next parameter, `key`, identifies them instead, so the page can wrap them
with ui.cached; a scenario is keyed by its pair's fingerprint. Nothing here imports
streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..analysis import theory
from ..core.kinds.treeshape import Paths
from ..core.pair import ModelPair
from ..core.roundstats import RoundStats
from ..core.rules import drafted, get_rule, with_tree
from ..core.scenario import Scenario
from ..core.warp import Warp, WarpedPair
from ..text.corpus import Corpus, CorpusError, default_corpus, user_corpus  # noqa: F401 (for /text)
from ..text.ngram import NGramCounts
from ..text.pair import TextDecoder  # noqa: F401 (for /text)
from .columns import Columns
from .demos import Row, stopped_note
from .textmeasure import COMPARE_ORDERS, drafter_comparison, order_sweep, text_exactness
from .transcript import RoundTranscript, totals_metrics
from .transcript import round_cap as transcript_cap
from .work import heavy

LEVEL_LABELS = {"char": "characters", "word": "words"}
DEFAULT_PROMPT = "Return the number of "
TARGET_ORDERS = {"char": (2, 8), "word": (2, 4)}  # the target-order slider's range
DEFAULT_ORDERS = {"char": (6, 2), "word": (3, 1)}  # (target, draft)
DRAFTER_LABELS = {"ngram": "n-gram draft", "lookup": "prompt lookup"}
PAGE_TOKENS = 300  # tokens per long decode behind the page's comparisons
TOP_BARS = 12  # tokens shown in the p / q bars
PROMPT_MAX_CHARS = 2_000
EXACT_N = 5_000  # Monte Carlo decodes behind the page's exactness check (at most)
EXACT_N_MIN = 50  # ... and at least, however large the model
# One request's work on /text, in row entries computed: a round's rows (the drafted tokens
# and the k + 1 the target scores; 2k + 1 for a chain, more for a tree or multi-draft) of V
# entries, each built through (target order + draft order) levels. ~5 s on 2 busy cores.
TEXT_WORK_MAX = 3e9
# A row's fixed cost in entries (~15 us of a scalar round's work per row, at the ~1.5 ns an
# entry above): what a round costs at a small V such as the characters' (V ~ 100), where a
# chain at k = 32 took 0.75 ms a decode and the 256-node tree 3.7 ms (benchmarks/
# bench_budget.py); without it the check there was priced 8x under its time.
ROW_ENTRIES_MIN = 10_000
EXACT_TOP = 16  # cells: the top tokens (and pairs) of p, the rest lumped


LOOKUP_CAPTION = (
    "Prompt lookup (Saxena 2023) drafts by copying: it finds the last earlier place where "
    "the newest few tokens occurred and proposes what came next, with q = 1 on that token. "
    "It costs nothing to run (c = 0) but drafts only when the text repeats itself; a round "
    f"with no match drafts nothing and is plain decoding. Both decodes: {PAGE_TOKENS} tokens "
    "from the same prompt and seed.")
EXACT_CAPTION = (
    f"{EXACT_N:,} decodes from the prompt; the first two tokens each emits are binned (the "
    "target's top tokens and pairs, the rest lumped) and compared with the target's own "
    "law, computed row by row. A rule passes when its distance stays under the pass line "
    "of a perfect sampler.")
DRAFTER_COLUMNS: Columns = {
    "drafter": ("drafter", None), "acceptance": ("acceptance (kept / drafted)", "%.3f"),
    "drafted per round": ("drafted per round", "%.2f"),
    "tokens per call": ("tokens per target call", "%.3f"), "c": ("draft cost c", "%.2f"),
    "speedup": ("speedup", "%.3fx"), "rounds": ("rounds", "%d"), "tokens": ("tokens", "%d"),
}
EXACT_COLUMNS: Columns = {
    "rule": ("rule", None), "family": ("family", None), "n": ("decodes", "%d"),
    "TV to the target": ("TV to the target", "%.4f"), "floor": ("sampling floor", "%.4f"),
    "pass line": ("pass line", "%.4f"), "verdict": ("verdict", None),
}


# ----------------------------------------------------------------------------- models
def counts_max_order(target_order: int) -> int:
    """The counts hold every order the page can ask for: the target's and the compared."""
    return max(int(target_order), max(COMPARE_ORDERS))


def row_cost(dec: TextDecoder) -> int:
    """One row's cost in entries: V entries through both orders, plus ROW_ENTRIES_MIN."""
    return dec.V * (dec.target_order + dec.draft_order) + ROW_ENTRIES_MIN


def round_work(dec: TextDecoder, k: int, rule: str = "correct", tree: Paths = ()) -> float:
    """Row entries one round computes at worst: (drafted + k + 1) rows (2k + 1 for a chain,
    a tree's nodes + k + 1; core.rules.drafted), row_cost each."""
    return (drafted(with_tree(rule, tree), k) + int(k) + 1) * row_cost(dec)


def exact_n(dec: TextDecoder, k: int, rules: Sequence[str],
            tree: Paths = ()) -> tuple[int, str | None]:
    """Decodes per rule for the exactness check: EXACT_N, or fewer so that every rule's run
    together stays within TEXT_WORK_MAX (never under EXACT_N_MIN); and what the page says
    when the model's size or the rules' rows lowered n."""
    per_decode = sum(round_work(dec, k, r, tree) for r in rules)
    n = max(EXACT_N_MIN, min(EXACT_N, int(TEXT_WORK_MAX // max(1.0, per_decode))))
    if n >= EXACT_N:
        return n, None
    return n, (f"n = {n:,} decodes per rule, not {EXACT_N:,}: at V = {dec.V:,}, k = {k} and "
               f"orders {dec.target_order} + {dec.draft_order}, a round of the {len(rules)} "
               f"rules computes up to {per_decode:,.0f} row entries (a tree counts its nodes), "
               f"and one check may compute {TEXT_WORK_MAX:,.0f} (about 5 s). A smaller k, "
               "tree, order or vocabulary allows more.")


def round_cap(dec: TextDecoder, k: int, rnd: int, rnd_max: int, rule: str = "correct",
              tree: Paths = ()) -> tuple[int, str | None]:
    """The round index held where replaying rounds 0..rnd would pass TEXT_WORK_MAX."""
    return transcript_cap(k, rnd, rule, tree, rnd_max, row_cost=row_cost(dec),
                          budget=TEXT_WORK_MAX, model=f" for this model (V = {dec.V:,})")


def draft_order_max(target_order: int) -> int:
    """The draft stays the smaller model: orders 1..n - 1 (1 when the target is a bigram)."""
    return max(1, int(target_order) - 1)


def model_caption(corpus: Corpus, counts: NGramCounts, target: int, draft: int, T_p: float,
                  T_q: float) -> str:
    """One line on what the models were counted from and what they hold."""
    return (f"Corpus: {corpus.name}, {corpus.n_chars:,} characters, {counts.corpus_tokens:,} "
            f"tokens, vocabulary V = {counts.V:,}. Target: {target}-gram at T = {T_p:g}; "
            f"draft: {draft}-gram at T = {T_q:g} (sidebar). Counts in memory: "
            f"{counts.nbytes / 1e6:.1f} MB.")


def warped(pair: ModelPair, warp: Warp) -> ModelPair:
    """The pair under the request's sampling warp (itself when the warp changes nothing)."""
    return pair if warp.identity else WarpedPair(pair, warp)


def encode_prompt(dec: TextDecoder, prompt: str) -> tuple[tuple[int, ...], int]:
    """The prompt's token ids, and how many of them fell outside the vocabulary."""
    ids = tuple(dec.encode(prompt))
    unk = dec.counts.tokenizer.unk
    return ids, sum(1 for t in ids if t == unk)


def running_metrics(t: RoundStats, k: int, c: float, drafter: str) -> list[tuple[str, str]]:
    """(label, value) for the running totals, with the speedup tokens/call / (1 + k c)
    (Leviathan et al. 2022, Sec. 3.4); prompt lookup drafts for free, so its c is 0."""
    cost = 0.0 if drafter == "lookup" else float(c)
    s = float("nan") if not t.rounds else float(theory.speedup(t.tokens_per_call, k, cost))
    return totals_metrics(t) + [(f"speedup at c = {cost:g}", "–" if math.isnan(s) else
                                 f"{s:.3f}x")]


def context_caption(dec: TextDecoder, tr: RoundTranscript) -> str:
    """Where the current round starts (plain text for st.caption; Streamlit escapes it)."""
    return (f"Round {tr.rnd} starts after {len(tr.context):,} tokens: "
            f"'{dec.tail(list(tr.context))}'")


# ----------------------------------------------------------------------------- comparisons
def order_caption(target_order: int, k: int) -> str:
    """What the draft-order comparison holds fixed and what it measures."""
    return (f"Each bar is one decode of {PAGE_TOKENS} tokens from the prompt with the same "
            f"{target_order}-gram target, seed and k = {k}; only the draft's order changes. "
            "Acceptance = kept / drafted; beta = sum min(p, q), the chance that one draft is "
            "kept (Leviathan et al. 2022, Sec. 3.1). Speedup = tokens per call / (1 + k c) "
            "at the sidebar's c.")


def checked_rules(rule: str) -> tuple[str, ...]:
    """The rules the exactness check runs: the correct one, two broken ones, the sidebar's."""
    return tuple(dict.fromkeys(("correct", "no_resample", "greedy", rule)))


@heavy
def page_order_sweep(_counts: NGramCounts, key: str, target_order: int,
                     prompt: Sequence[int], k: int, seed: int = 0, T_p: float = 1.0,
                     T_q: float = 1.0, length: int = PAGE_TOKENS) -> list[Row]:
    """textmeasure.order_sweep over draft orders 1..5 (speedup priced later by reprice)."""
    return order_sweep(_counts, target_order, prompt, k, length, seed, T_p, T_q, 0.0)


@heavy
def page_drafters(sc: Scenario, *, length: int = PAGE_TOKENS) -> list[Row]:
    """textmeasure.drafter_comparison: the n-gram draft and prompt lookup, same prompt."""
    return drafter_comparison(sc, length=length, c=0.0)


def drafter_rows(rows: list[Row]) -> list[Row]:
    """The comparison as a table (the generated text left out)."""
    return [{"drafter": DRAFTER_LABELS[r["drafter"]], "acceptance": round(r["acceptance"], 4)
             if not math.isnan(r["acceptance"]) else None,
             "drafted per round": round(r["drafted per round"], 3),
             "tokens per call": round(r["tokens per call"], 3), "c": r["c"],
             "speedup": round(r["speedup"], 3), "rounds": r["rounds"], "tokens": r["tokens"]}
            for r in rows]


# ----------------------------------------------------------------------------- exactness
@heavy
def page_exactness(sc: Scenario, *, rules: Sequence[str], n: int = EXACT_N,
                   top: int = EXACT_TOP) -> list[Row]:
    """The first-two-token law of each rule (a tree rule drafting the scenario's tree)
    against the target's, at the prompt; a rule cut short by the time budget shows the
    decodes it ran."""
    rows = []
    for rule in rules:
        a = text_exactness(sc.replace(rule=rule), n=n, n_tokens=2, top=top)
        rows.append({"rule": rule, "family": get_rule(rule).family, "n": a.n,
                     "TV to the target": round(a.mc_tv, 4), "floor": round(a.floor, 4),
                     "pass line": round(a.threshold, 4), "chi-square p": float(a.p_value),
                     "verdict": a.verdict})
    return rows


def exact_stopped(rows: Sequence[Row], n: int) -> str | None:
    """The page's note when the time budget stopped some rule's decodes short of n."""
    return stopped_note([(str(r["rule"]), int(r["n"])) for r in rows], n)
