"""The real model's draft kinds, one object each, in one registry (KINDS); a draft's pair.

  early-exit:L    the first L layers, then the final norm and the full head (self-speculative
                  decoding: Zhang et al. 2023, Draft & Verify; Elhoushi et al. 2024, LayerSkip)
  skip:i,j,...    every layer but those (layer skipping, Draft & Verify)
  trimmed:N[:L]   the first L layers (default all) and a head over the N most frequent
                  tokens of the shipped corpus only (FR-Spec, Zhao et al. 2025): q is 0 off
                  those N rows
  ngram:n         an n-gram model counted over the shipped corpus in Gemma's token ids
  lookup          prompt lookup over the context's token ids (Saxena 2023; vLLM's "ngram"
                  method)
  medusa:K[:s]    K Medusa heads on the target's own hidden state (Cai et al. 2024): head i
                  drafts the i-th token of a round, with no pass of a model, while its top
                  probability is at least s (default medusa.SURE) (llm.medusa)
What each kind holds: llm.draftkind. A new kind is one more DraftKind object in KINDS (a
model pair of its own comes from its pair()): parse_draft, the pages' controls, /measured,
the CLI and the URL fields all read the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import medusa
from .draftkind import (
    DraftError,
    DraftKind,
    DraftSpec,
    check_int,
    head_macs,
    layer_macs,
    target_macs,
)
from .gemma import Config
from .lossless import GreedyPair
from .pair import LLMPair, token_counts
from .store import Model

NGRAM_ORDER_MAX = 6  # highest n-gram draft order
# The one default of the CLI, /llm and /measured: the draft a learner sees kept on the default
# (story) prompt. At k = 4, 32 tokens, tokens per target call there: trimmed:16384 3.18
# greedy and 3.09 sampled, skip:4,8 1.88, early-exit:12 1.03-1.18, early-exit:6 1.00 (keeps
# nothing), lookup 1.07-1.14, ngram:3 1.07-1.19 (benchmarks/bench_measured.py).
DEFAULT_DRAFT = "trimmed:16384"


def check_sure(text: str) -> float:
    """Medusa's stop threshold s in [0, 1], or DraftError naming it."""
    try:
        v = float(text)
    except ValueError:
        raise DraftError(f"Medusa's stop threshold s must be a number in [0, 1]; got "
                         f"{text!r}") from None
    if not 0.0 <= v <= 1.0:  # (nan fails too)
        raise DraftError(f"Medusa's stop threshold s must lie in [0, 1]; got {text!r}")
    return v


def _every_time(name: str, make: Callable[[], object]) -> object:
    return make()


@dataclass(frozen=True)
class Kit:
    """Where the drafts' extras come from, made by the layers above (the shipped corpus is
    text's): ids(model), a corpus in the model's token ids, whose token counts make a
    trimmed head; ngram(model, ids, order), an n-gram model over such ids. keep(name, make)
    makes each once (the app: once per process) or, by default, every time."""

    ids: Callable[[Model], np.ndarray]
    ngram: Callable[[Model, np.ndarray, int], object]
    keep: Callable[[str, Callable[[], object]], object] = _every_time

    def counts(self, model: Model) -> np.ndarray:
        """How often each token id occurs in the corpus, (V,) int64."""
        return self.keep("gemma token counts",
                         lambda: token_counts(self.ids(model), V=model.cfg.V))

    def ngram_model(self, model: Model, order: int):
        return self.keep(f"gemma {order}-gram",
                         lambda: self.ngram(model, self.ids(model), order))


def _needs_kit(kit: Kit | None, what: str) -> Kit:
    if kit is None:
        raise DraftError(f"{what} needs the shipped corpus (a Kit)")
    return kit


# ----------------------------------------------------------------------------- the kinds
class _CutDown(DraftKind):
    """The target cut down: some of its layers, then the full head or a trimmed one."""

    subset = True

    def macs(self, spec: DraftSpec, cfg: Config) -> int:
        return len(spec.layers) * layer_macs(cfg) + head_macs(cfg, spec.head)

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        head = "the full head" if spec.head is None else f"a head over the {spec.head:,} " \
            "most frequent tokens (q = 0 elsewhere)"
        skipped = f", skipping layers {', '.join(map(str, spec.skipped))}" if spec.skipped \
            else ""
        return (f"The draft is the same model cut down: {len(spec.layers)} of its "
                f"{cfg.n_layers} layers{skipped}, then {head}.")

    def pair(self, model, spec, *, T, greedy, kit):
        counts = None if spec.head is None else _needs_kit(kit, "a trimmed head").counts(model)
        return (GreedyPair if greedy else LLMPair)(model, spec, T=T, counts=counts)


class EarlyExit(_CutDown):
    name, usage, default, examples = "early-exit", "early-exit:L", "6", ("6", "12")
    title, help = "early exit: the first L layers", "early exit: L layers"

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        L = check_int(arg, "early-exit layers L", 1, cfg.n_layers - 1)
        return DraftSpec(self.name, f"{self.name}:{L}", tuple(range(L)))

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        """Why it fails here: the head dominates a pass, and the early layers' states are
        not what the final norm and head were trained on."""
        return super().caption(spec, cfg) + (
            f" Exiting early saves little on this model: the {cfg.V:,}-row head is "
            f"{head_macs(cfg) / 1e6:.0f} M of a pass's {target_macs(cfg) / 1e6:.0f} M "
            "multiply-adds and every draft pays it in full (c = "
            f"{self.c_macs(spec, cfg):.2f} by multiply-adds), and the final norm and head "
            "read the early layers' states badly, so the target seldom keeps its guesses.")


class Skip(_CutDown):
    name, usage, default, examples = "skip", "skip:i,j,...", "4,8", ("4,8",)
    title, help = "skip layers i, j, ...", "skip: the layers left out, as 4,8"

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        skip = {check_int(a, "a skipped layer", 0, cfg.n_layers - 1) for a in arg.split(",")}
        if len(skip) >= cfg.n_layers:
            raise DraftError("skip must leave at least one layer")
        layers = tuple(i for i in range(cfg.n_layers) if i not in skip)
        return DraftSpec(self.name, f"{self.name}:" + ",".join(map(str, sorted(skip))), layers)


class Trimmed(_CutDown):
    name, usage, default, examples = "trimmed", "trimmed:N[:L]", "16384", ("16384",)
    title = "trimmed head: the N most frequent tokens [:L layers]"
    help = "trimmed: N head rows, or N:L"

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        n, _, layers = arg.partition(":")
        N = check_int(n, "trimmed head rows N", 1, cfg.V - 1)
        L = check_int(layers, "trimmed draft layers L", 1, cfg.n_layers) if layers \
            else cfg.n_layers
        return DraftSpec(self.name, f"{self.name}:{N}:{L}", tuple(range(L)), N)


class NGram(DraftKind):
    name, usage, default, examples = "ngram", "ngram:n", "3", ("3",)
    title, help = "n-gram over Gemma tokens: order n", "n-gram: the order n"

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        n = check_int(arg, "n-gram order n", 1, NGRAM_ORDER_MAX)
        return DraftSpec(self.name, f"{self.name}:{n}", order=n)

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        return (f"A {spec.order}-gram model counted over the shipped corpus in Gemma's own "
                "token ids drafts; the target is the full model.")

    def pair(self, model, spec, *, T, greedy, kit):
        ngram = _needs_kit(kit, "an n-gram draft").ngram_model(model, spec.order)
        return (GreedyPair if greedy else LLMPair)(model, spec, T=T, ngram=ngram)


class Lookup(DraftKind):
    name, usage, default, examples = "lookup", "lookup", "", ("",)
    title, help = "prompt lookup", "prompt lookup: no parameter"
    proposes = True

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        if arg:
            raise DraftError(f"prompt lookup takes no parameter; got {arg!r}")
        return DraftSpec(self.name, self.name)

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        return ("Prompt lookup drafts by copying what followed the last earlier match of the "
                "newest tokens (q = 1 on it); with no match it drafts nothing.")

    def pair(self, model, spec, *, T, greedy, kit):
        return (GreedyPair if greedy else LLMPair)(model, spec, T=T)


class Medusa(DraftKind):
    name, usage, default, examples = "medusa", "medusa:K[:s]", "4", ("4", "2")
    title = "Medusa: K heads on the target's own state"
    help = (f"medusa: the heads K, 1..{medusa.K_MAX}, or K:s to draft while a head's top "
            f"probability is at least s (default {medusa.SURE:g}; 0 drafts every head)")

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        k, colon, s = arg.partition(":")
        K = check_int(k, "Medusa heads K", 1, medusa.K_MAX)
        sure = check_sure(s) if colon else medusa.SURE
        label = f"{self.name}:{K}" + ("" if sure == medusa.SURE else f":{sure:.12g}")
        return DraftSpec(self.name, label, heads=K, sure=sure)

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        return (f"The target drafts for itself: {spec.heads} Medusa head"
                f"{'s' if spec.heads > 1 else ''} (Cai et al. 2024) read its own last hidden "
                "state h, the one its pass already computed, and head i proposes the token "
                "i + 1 ahead from softmax(E (SiLU(W1_i h) + h)), E the model's own output "
                f"rows over the {medusa.ROWS:,} tokens the heads were trained on. One set of "
                f"weights; drafting costs no pass (c = {self.c_macs(spec, cfg):.3f} by "
                f"multiply-adds). Trained here: {medusa.RETRAIN}.")

    def macs(self, spec: DraftSpec, cfg: Config) -> int:
        return medusa.head_macs(cfg.d, medusa.ROWS)

    def pair(self, model, spec, *, T, greedy, kit):
        heads = medusa.load_heads() if kit is None else kit.keep("medusa heads",
                                                                 medusa.load_heads)
        return (medusa.GreedyMedusaPair if greedy else medusa.MedusaPair)(
            model, spec, T=T, heads=heads)


# The registry, in the order the pages offer it. A new kind: one more object here.
KINDS: dict[str, DraftKind] = {k.name: k for k in (Trimmed(), Skip(), EarlyExit(), Lookup(),
                                                   NGram(), Medusa())}


def kind_of(spec: DraftSpec) -> DraftKind:
    """The kind a parsed draft belongs to."""
    return KINDS[spec.kind]


def usage() -> str:
    """Every kind's form, for messages and the CLI's help: 'early-exit:L, ..., lookup'."""
    return ", ".join(k.usage for k in KINDS.values())


def parse_kind(kind: str, arg: str, cfg: Config) -> DraftSpec:
    """A kind and its parameter, checked (DraftError says what is out of range)."""
    if kind not in KINDS:
        raise DraftError(f"unknown draft kind {kind!r}; use one of {', '.join(KINDS)}")
    k = KINDS[kind]
    return k.parse(str(arg).strip() if k.default else "", cfg)  # (none: it is not read)


def kind_named(spec: str) -> DraftKind:
    """The kind a draft spec names (its text before ':'), or DraftError."""
    kind = str(spec).strip().partition(":")[0]
    if kind not in KINDS:
        raise DraftError(f"unknown draft {spec!r}: use {usage()}")
    return KINDS[kind]


def parse_draft(spec: str, *, cfg: Config) -> DraftSpec:
    """'early-exit:L', 'skip:i,j', 'trimmed:N[:L]', 'ngram:n', 'lookup' or 'medusa:K[:s]',
    checked against the model."""
    return kind_named(spec).parse(str(spec).strip().partition(":")[2], cfg)


def examples() -> tuple[str, ...]:
    """Each kind's example drafts, as specs: what /measured offers."""
    return tuple(k.text(a) for k in KINDS.values() for a in k.examples)


def draft_pair(model: Model, spec: DraftSpec, *, T: float = 1.0, greedy: bool = False,
               kit: Kit | None = None) -> LLMPair:
    """The real pair for a parsed draft (greedy: a GreedyPair, p and q at their argmax);
    kit: where a trimmed head's counts and an n-gram model come from."""
    return kind_of(spec).pair(model, spec, T=T, greedy=greedy, kit=kit)
