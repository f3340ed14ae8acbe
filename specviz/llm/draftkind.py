"""What a draft kind of the real model is: one object that holds everything about it.

A kind (early exit, layer skipping, a trimmed head, an n-gram model, prompt lookup, Medusa's
heads, and whatever comes next) is one DraftKind; llm.drafts lists them (KINDS) and every page, the
CLI and the measurements read them from there. Its parts:
  name, usage, default, examples   the kind in URLs, labels and the CLI ('trimmed'), its
                                   spec's form ('trimmed:N[:L]'), the parameter it starts
                                   from when picked, and the parameters /measured offers
  title, help                      its control's words and its parameter's
  parse(arg, cfg) -> DraftSpec     the parameter, checked against the model (DraftError)
  caption(spec, cfg)               what the draft runs, in words
  macs(spec, cfg), subset          its cost model: multiply-adds per drafted token (None: no
                                   pass of a model), and whether its pass computes a part
                                   of the target's pass only (then c < 1 up to noise)
  proposes                         it drafts a proposal (a copied chain), not from a q
  pair(model, spec, T, greedy, kit) the model pair it drafts in (llm.drafts.draft_pair)
Following transformers' candidate generators and our verification kinds (core.kinds).
"""

from __future__ import annotations

from dataclasses import dataclass

from .gemma import Config


class DraftError(ValueError):
    """A draft spec that names no draft of this model; the message says which are."""


@dataclass(frozen=True)
class DraftSpec:
    """One draft, parsed and checked: its kind (a name in llm.drafts.KINDS), its canonical
    text (parse_draft(label) gives it back) and what it runs. A kind whose draft needs
    other values subclasses it."""

    kind: str
    label: str  # 'early-exit:6', 'trimmed:16384:18', 'lookup'
    layers: tuple[int, ...] = ()  # the target's layers the draft runs, in order (() none)
    head: int | None = None  # rows of a trimmed head (None: the full vocabulary)
    order: int | None = None  # n of an n-gram draft
    heads: int | None = None  # K of Medusa's heads (llm.medusa)
    sure: float = 0.0  # Medusa's stop: head i drafts while its top probability >= sure

    def played(self, k: int) -> int:
        """The k a round of this draft plays: Medusa's K heads draft one token each, so
        at most K; any other draft plays k."""
        return k if self.heads is None else min(k, self.heads)

    def check_k(self, k: int) -> int:
        """k, or a ValueError where this draft cannot draft k tokens a round."""
        if self.played(k) != k:
            raise ValueError(f"{self.label} drafts at most {self.heads} tokens a round "
                             f"(one a head); k = {k}")
        return k

    @property
    def skipped(self) -> tuple[int, ...]:
        top = max(self.layers, default=-1)
        return tuple(i for i in range(top + 1) if i not in self.layers)


def layer_macs(cfg: Config) -> int:
    """Multiply-adds of one layer's weights at one position: q, k, v and o, then the FFN's
    gate, up and down (attention over the context is left out: a few % at short context)."""
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv * cfg.head_dim
    return cfg.d * (2 * q + 2 * kv) + 3 * cfg.d * cfg.ffn


def head_macs(cfg: Config, rows: int | None = None) -> int:
    """Multiply-adds of the head at one position: rows (default V) x d."""
    return (cfg.V if rows is None else rows) * cfg.d


def target_macs(cfg: Config) -> int:
    """The target's multiply-adds at one position: every layer, then the full head (Gemma 3
    270M: 100 M in the layers, 168 M in the head)."""
    return cfg.n_layers * layer_macs(cfg) + head_macs(cfg)


def check_int(text: str, what: str, lo: int, hi: int) -> int:
    """An integer parameter in lo..hi, or DraftError naming it."""
    try:
        v = int(text)
    except ValueError:
        raise DraftError(f"{what} must be an integer; got {text!r}") from None
    if not lo <= v <= hi:
        raise DraftError(f"{what} must lie in {lo}..{hi}; got {v}")
    return v


class DraftKind:
    """The parts every draft kind has (see the module's docstring); a kind overrides
    parse, caption and pair, and macs where the draft runs a model."""

    name = ""
    usage = ""  # the spec's form: name, or name:PARAMETER
    default = ""  # its parameter when picked ("" for a kind without one)
    examples: tuple[str, ...] = ()  # the parameters /measured offers (the default first)
    title = ""  # the control's words
    help = ""  # its parameter, in words
    subset = False  # its pass computes a part of the target's pass, nothing else
    proposes = False  # it drafts a proposal (prompt lookup), with no q of its own

    def text(self, arg: str = "") -> str:
        """The spec of this kind with parameter arg: 'early-exit:6', 'lookup'."""
        arg = str(arg).strip()
        return f"{self.name}:{arg}" if arg and self.default else self.name

    def parse(self, arg: str, cfg: Config) -> DraftSpec:
        raise NotImplementedError

    def caption(self, spec: DraftSpec, cfg: Config) -> str:
        raise NotImplementedError

    def macs(self, spec: DraftSpec, cfg: Config) -> int | None:
        """Multiply-adds per drafted token (None: the draft runs no model)."""
        return None

    def c_macs(self, spec: DraftSpec, cfg: Config) -> float | None:
        """The cost model's c: the draft's multiply-adds over the target's, per position."""
        m = self.macs(spec, cfg)
        return None if m is None else m / target_macs(cfg)

    def pair(self, model, spec: DraftSpec, *, T: float, greedy: bool, kit):
        """The model pair of the target and this draft (llm.pair.LLMPair or a subclass)."""
        raise NotImplementedError
