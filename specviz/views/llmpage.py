"""Page data for /llm (the real model's stage) and the CLI: the prompt presets and checks,
the drafts' controls, the rules the real pair plays, the pair itself and its captions.

Nothing here imports streamlit; the model is loaded once per process by the layers above.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..core.kinds import kind_of
from ..core.rules import RULES, get_rule
from ..core.trace import RoundTrace, frozen
from ..core.warp import Warp
from ..llm import store
from ..llm.draftkind import DraftError, DraftSpec
from ..llm.drafts import KINDS, Kit, draft_pair, parse_kind
from ..llm.tokenizer import show
from .llmstream import Stream
from .textpage import warped
from .transcript import RoundTranscript

PRESETS = {  # name -> (label, the prompt)
    "story": ("a story", "Once upon a time, in a small village by the sea, there lived an "
                         "old fisherman who"),
    "code": ("code", 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
                     "    if n < 2:\n        return n\n    return"),
    "fact": ("a fact", "The capital of France is Paris. The capital of Germany is Berlin. "
                       "The capital of Italy is"),
    "own": ("your own", ""),
}
PROMPT_CHARS_MAX = 1_000  # characters of a prompt typed on /llm
PROMPT_TOKENS_MAX = 256  # ... and its tokens (a prefill of 256 positions: a few seconds)
K_MAX = 8  # drafted tokens per round on /llm (a round costs k draft passes and one block)
TOP_BARS = 10  # tokens with a bar of their own in the p, q and residual charts
ARG_MAX_CHARS = 80
# The largest trimmed head a link builds: N x d f32, 84 MB at d = 640 (the whole 262,144-row
# head would be 671 MB a link). The shipped corpus holds 14,214 distinct Gemma tokens (of
# 409,483), so rows past those are ranked by id alone and add no draft a learner sees kept.
HEAD_ROWS_MAX = 32_768
# A token tree drafts every node (one draft pass a level) and the target scores them all in
# one pass with tree attention; the 262,144-row head is computed at every node scored, 168 M
# multiply-adds each, so a round's cost grows with the tree: about 3 s for 21 nodes here,
# against 1 s for a chain of 4. A round drafts at most this many tokens on /llm.
DRAFTED_MAX = 24
PLAYS_CORRECT = "This page plays the rule correct instead."
GREEDY_RULE = (  # what T = 0 plays, in words (llm.lossless.GreedyPair)
    "T = 0 is greedy decoding: p and q are one-hot at the target's and the draft's argmax, "
    "so min(1, p/q) is 1 when the drafted token is the target's argmax and 0 otherwise. A "
    "draft is kept exactly when it matches the target's argmax, the first miss is replaced "
    "by the target's argmax (norm(max(0, p - q)) is one-hot there), and the text is the "
    "target's own greedy text.")
RULES_HERE = tuple(name for name, r in RULES.items()
                   if kind_of(r).drafted(r, 1) <= DRAFTED_MAX)
ALLOWED_CONTROLS = "\n\r\t"
TAIL_TOKENS = 24  # tokens of context quoted in the round's caption
REPLACEMENT = "\ufffd"  # what a byte that is no whole UTF-8 character decodes to
MODEL_RAM_GB = 1.6  # resident memory of a process with the model loaded (README, bench_llm)


class PromptError(ValueError):
    """A prompt the page or the CLI does not run; the message says why."""


def check_prompt(text: str, *, max_chars: int) -> str:
    """The prompt itself, or PromptError: empty, too long, or holding control characters."""
    if not text.strip():
        raise PromptError("the prompt is empty: type something for the model to continue")
    if len(text) > max_chars:
        raise PromptError(f"the prompt has {len(text):,} characters; the cap is {max_chars:,}")
    for i, ch in enumerate(text):
        if ch not in ALLOWED_CONTROLS and unicodedata.category(ch) in ("Cc", "Cs", "Cn"):
            what = "an unpaired surrogate" if unicodedata.category(ch) == "Cs" else (
                "a control character" if unicodedata.category(ch) == "Cc" else
                "an unassigned code point")
            raise PromptError(f"character {i + 1} of the prompt is {what} (U+{ord(ch):04X}); "
                              "only printable text, line breaks and tabs are read")
    return text


def encode_prompt(model: store.Model, text: str, *, max_chars: int = PROMPT_CHARS_MAX,
                  max_tokens: int = PROMPT_TOKENS_MAX) -> list[int]:
    """The prompt's token ids (BOS first), checked: PromptError when it is empty, too long
    in characters or tokens, or holds text the tokenizer does not give back as it was."""
    check_prompt(text, max_chars=max_chars)
    ids = model.tokenizer.encode(text)
    if len(ids) > max_tokens:
        raise PromptError(f"the prompt is {len(ids):,} tokens; the cap is {max_tokens:,}")
    if model.tokenizer.decode(ids) != text:
        raise PromptError("the tokenizer does not map this prompt back to the same text")
    return ids


def prompt_text(preset: str, own: str) -> str:
    """The prompt in use: a preset's text, or the reader's own."""
    return own if preset == "own" else PRESETS[preset][1]


def parse(model: store.Model, kind: str, arg: str) -> DraftSpec:
    """The checked draft (DraftError says what is out of range, or past what a page
    builds: a trimmed head over HEAD_ROWS_MAX rows)."""
    spec = parse_kind(kind, arg, model.cfg)
    if spec.head is not None and spec.head > HEAD_ROWS_MAX:
        mb = spec.head * model.cfg.d * 4 / 1e6
        raise DraftError(f"a trimmed head of {spec.head:,} rows would copy {mb:,.0f} MB of the "
                         f"embedding for this link; the pages build at most {HEAD_ROWS_MAX:,} "
                         f"rows ({HEAD_ROWS_MAX * model.cfg.d * 4 / 1e6:,.0f} MB). The CLI "
                         "takes any N")
    return spec


def rule_note(rule: str, draft: str = "") -> str | None:
    """Why a rule is not played on the real model with this draft kind (None: it is); the
    page plays the rule correct instead (PLAYS_CORRECT), the CLI refuses it."""
    r = get_rule(rule)
    if rule not in RULES_HERE:
        return (f"Rule {rule} drafts {kind_of(r).drafted(r, 1)} tokens a round even at k = 1, "
                f"each a row of the real model's 262,144-token head: over the {DRAFTED_MAX} "
                "a round drafts here. It is played on the toy tables (/round, /rules).")
    if draft in KINDS and KINDS[draft].proposes and not kind_of(r).takes_proposal:
        return (f"Rule {rule} draws its siblings from the draft's q; prompt lookup proposes "
                "one chain of copied tokens and has no q. Pick another draft for it.")
    if draft == "medusa" and not kind_of(r).takes_proposal:
        return (f"Rule {rule} drafts a token tree; Medusa's heads draft one chain here, "
                "draft i from head i. Pick a chain or block rule for them.")
    return None


def play_k(rule: str, k: int, *, heads: int | None = None) -> tuple[int, str | None]:
    """The k a round of this rule plays on the real model (at most K_MAX, and at most
    DRAFTED_MAX drafted tokens a round; Medusa: at most its heads), and the note that says
    why when less than k."""
    if heads is not None and int(k) > heads:
        got, _ = play_k(rule, heads)
        return got, (f"Medusa's {heads} heads draft one token each: k = {got}, not {int(k)}.")
    r, want = get_rule(rule), int(k)
    fits = [j for j in range(1, min(want, K_MAX) + 1)
            if kind_of(r).drafted(r, j) <= DRAFTED_MAX]
    got = max(fits, default=1)
    if got == want:
        return got, None
    if want > K_MAX and got == K_MAX:
        return got, (f"k = {want} is more than the {K_MAX} drafted tokens a round of the "
                     f"real model plays here: k = {got}.")
    return got, (f"Rule {rule} at k = {want} drafts {kind_of(r).drafted(r, want)} tokens a "
                 f"round, each a node the target's one pass scores (the head alone is 168 M "
                 f"multiply-adds a node): over the {DRAFTED_MAX} a round drafts here, so "
                 f"k = {got} ({kind_of(r).drafted(r, got)} tokens).")


# ----------------------------------------------------------------------------- drafts
def corpus_ids(model: store.Model, text: str | None = None) -> np.ndarray:
    """A corpus (by default the shipped one) in Gemma token ids (no BOS), (n,) int64."""
    if text is None:
        from ..text.corpus import default_corpus
        text = default_corpus().text
    return np.asarray(model.tokenizer.encode(text, bos=False), dtype=np.int64)


def ngram_model(model: store.Model, ids: np.ndarray, order: int):
    """An n-gram model of this order over token ids (corpus_ids): an ngram:n draft."""
    from ..text.ngram import NGramCounts, Tokenizer

    counts = NGramCounts(Tokenizer("word", model.tokenizer.pieces), np.asarray(ids), order)
    return counts.model(order)


PLAIN_KIT = Kit(corpus_ids, ngram_model)  # the shipped corpus, read again every time


def stream(model: store.Model, spec: DraftSpec, prompt: Sequence[int], *, k: int, T: float,
           seed: int, rule: str, warp: Warp, kit: Kit = PLAIN_KIT) -> Stream:
    """A fresh stream of rounds of Gemma 3 270M and the draft, under the request's warp
    (T = 0: the greedy pair)."""
    base = draft_pair(model, spec, T=T or 1.0, greedy=T == 0, kit=kit)
    return Stream(warped(base, warp), prompt, k=k, seed=seed, rule=rule, settle=base.settle,
                  owner=base)


def stream_key(spec: DraftSpec, prompt: Sequence[int], *, k: int, T: float, seed: int,
               rule: str, warp: Warp) -> tuple:
    """What a stream's rounds depend on (its name in the server's store)."""
    return ("llm", spec.label, tuple(int(t) for t in prompt), int(k), float(T), int(seed),
            rule, warp)


# ----------------------------------------------------------------------------- captions
def model_caption(model: store.Model) -> str:
    c = model.cfg
    return (f"Gemma 3 270M (Q4_K_M GGUF, run in f32 NumPy): {c.n_layers} layers, width {c.d}, "
            f"vocabulary V = {c.V:,}; loaded once by this server in {model.load_s:.0f} s and "
            "shared by every visitor.")


def context_caption(model: store.Model, tr: RoundTranscript) -> str:
    """Where the current round starts (plain text; the page escapes it)."""
    ids = list(tr.context[-TAIL_TOKENS:])
    tail = model.tokenizer.decode(ids)
    if REPLACEMENT in tail:  # a stray byte piece: its name, as the text below shows it
        tail = "".join(Pieces(model.tokenizer).pieces(ids))
    cut = "…" if len(tr.context) > TAIL_TOKENS else ""
    made = len(tr.context) - tr.prompt_len
    after = f" and the {made} the rounds before it emitted" if made else ""
    return (f"Round {tr.rnd} starts after the prompt's {tr.prompt_len} tokens{after}: "
            f"'{cut}{show(tail)}'")


class Pieces:
    """The model's tokenizer as figures.textfigs reads one: decode, and each token's text."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def pieces(self, ids: Sequence[int], after: int | None = None) -> list[str]:
        """Each token's text; a byte piece that is no character alone (SentencePiece's
        byte fallback: one byte of a longer UTF-8 character) as its name, <0xE2>, not as
        the replacement character a lone byte decodes to."""
        out = []
        for i in ids:
            text = self.tokenizer.decode([int(i)])
            out.append(self.tokenizer.shown[int(i)] if REPLACEMENT in text else text)
        return out


def memory_note(exc: BaseException) -> str:
    return (f"Too little memory to load the model: it needs about {MODEL_RAM_GB:g} GB "
            f"resident ({type(exc).__name__}). Close other programs or use a larger machine.")


# ----------------------------------------------------------------------------- export
def export_trace(trace: RoundTrace, top: int) -> RoundTrace:
    """The round over a small vocabulary, for the offline export (which draws every token):
    the top tokens of each of its rows and every token it names, then the rest of the
    vocabulary as one token holding the rest of each row's mass."""
    rows = [r for p in trace.positions for r in (p.p_row, p.q_row)]
    rows += [r for r in (trace.rejection_row, trace.bonus_row) if r is not None]
    named = {trace.ctx, *(e.token for e in trace.emitted)}
    named |= {t for p in trace.positions for t in (p.context, p.token)}
    named |= {t for t in (trace.rejection_context, trace.bonus_context) if t is not None}
    keep = set(named)
    for r in rows:
        keep.update(int(x) for x in np.argpartition(-r, top)[:top])
    toks = sorted(keep)
    new = {t: i for i, t in enumerate(toks)}

    def row(r):
        y = np.asarray(r)[toks]
        return frozen(np.append(y, max(0.0, float(np.sum(r)) - float(y.sum()))))

    positions = tuple(replace(p, context=new[p.context], token=new[p.token],
                              p_row=row(p.p_row), q_row=row(p.q_row))
                      for p in trace.positions)
    vocab = tuple(trace.name(t) for t in toks) + (f"the other {len(trace.vocab) - len(toks):,}",)
    return replace(
        trace, ctx=new[trace.ctx], vocab=vocab, positions=positions,
        emitted=tuple(replace(e, token=new[e.token]) for e in trace.emitted),
        rejection_row=None if trace.rejection_row is None else row(trace.rejection_row),
        bonus_row=None if trace.bonus_row is None else row(trace.bonus_row),
        rejection_context=None if trace.rejection_context is None
        else new[trace.rejection_context],
        bonus_context=None if trace.bonus_context is None else new[trace.bonus_context])
