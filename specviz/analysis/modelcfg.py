"""A Hugging Face config.json -> roofline.ModelShape, and the shipped presets.

Fields read: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (GQA/MQA;
absent = one per query head), head_dim (absent = hidden_size / heads), intermediate_size,
vocab_size, tie_word_embeddings (absent = untied), and for mixtures of experts
num_local_experts / num_experts / n_routed_experts, num_experts_per_tok,
moe_intermediate_size (absent = intermediate_size), shared_expert_intermediate_size or
n_shared_experts. A multimodal config's text_config is used when present. A dense SwiGLU
decoder then has per layer 2 d (q_dim + d_kv) attention weights (q_dim = heads x head_dim,
d_kv = kv heads x head_dim) and 3 d ffn MLP weights, plus vocab x d for the embedding and again
for an untied head (roofline.ModelShape.params).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .roofline import ModelShape

PRESET_DIR = Path(__file__).with_name("presets")
CONFIG_MAX_CHARS = 200_000  # a config.json is a few kB
LIMITS = {  # field: (lowest, highest) accepted; outside is a typo or a unit slip
    "hidden_size": (16, 65_536),
    "num_hidden_layers": (1, 1_024),
    "num_attention_heads": (1, 1_024),
    "num_key_value_heads": (1, 1_024),
    "head_dim": (1, 4_096),
    "intermediate_size": (1, 1_048_576),
    "moe_intermediate_size": (1, 1_048_576),
    "vocab_size": (2, 4_000_000),
    "experts": (1, 4_096),
    "num_experts_per_tok": (1, 4_096),
}
MEANING = {
    "hidden_size": "the model width d",
    "num_hidden_layers": "the number of decoder layers",
    "num_attention_heads": "query heads per layer",
    "vocab_size": "the vocabulary size",
    "intermediate_size": "the MLP width",
    "num_experts_per_tok": "experts each token is routed to",
}


NAME_MAX_CHARS = 80  # of a config's _name_or_path, as its messages repeat it


class ConfigError(ValueError):
    """A config that cannot describe a decoder; the message names the field."""


def _field(cfg: dict, key: str, who: str, default: object = None) -> int:
    v = cfg.get(key, default)
    if v is None:
        raise ConfigError(f"{who}: config.json has no '{key}' ({MEANING.get(key, key)}), "
                          "which the cost model needs")
    lo, hi = LIMITS.get(key, (0, 10**7))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise ConfigError(f"{who}: '{key}' must be a whole number; got {v!r}")
    if not lo <= v <= hi:
        raise ConfigError(f"{who}: '{key}' = {int(v):,} is not a plausible value "
                          f"({lo:,}..{hi:,})")
    return int(v)


def _moe(cfg: dict, who: str, ffn: int | None) -> dict:
    """The expert fields, or {} for a dense model."""
    key = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts")
                if cfg.get(k)), None)
    if key is None:
        return {}
    e = _field(cfg, key, who)
    if e < 1 or e > LIMITS["experts"][1]:
        raise ConfigError(f"{who}: '{key}' = {e:,} is not a plausible number of experts")
    top = _field(cfg, "num_experts_per_tok", who)
    if top > e:
        raise ConfigError(f"{who}: num_experts_per_tok = {top} exceeds the {e} experts")
    expert_ffn = _field(cfg, "moe_intermediate_size", who, ffn)
    shared = cfg.get("shared_expert_intermediate_size") or 0
    if not shared and cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * expert_ffn
    return {"experts": e, "experts_per_tok": top, "expert_ffn": expert_ffn,
            "shared_ffn": int(shared)}


def shape_from_config(cfg: object, *, name: str = "model", source: str = "") -> ModelShape:
    """A ModelShape from a parsed config.json; ConfigError names a missing or absurd field."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{name}: config.json must be a JSON object")
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    d = _field(cfg, "hidden_size", name)
    layers = _field(cfg, "num_hidden_layers", name)
    heads = _field(cfg, "num_attention_heads", name)
    kv = _field(cfg, "num_key_value_heads", name, heads)
    if kv > heads or heads % kv:
        raise ConfigError(f"{name}: num_key_value_heads = {kv} must divide "
                          f"num_attention_heads = {heads}")
    head_dim = _field(cfg, "head_dim", name, d // heads)
    vocab = _field(cfg, "vocab_size", name)
    ffn_raw = cfg.get("intermediate_size")
    moe = _moe(cfg, name, ffn_raw)
    ffn = _field(cfg, "intermediate_size", name) if not moe or ffn_raw else 0
    tied = cfg.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise ConfigError(f"{name}: 'tie_word_embeddings' must be true or false; got {tied!r}")
    return ModelShape(name, layers, d, ffn, heads, kv, vocab, head_size=head_dim, tied=tied,
                      source=source or str(cfg.get("_source", "")), **moe)


def parse_config(text: str, *, name: str = "model") -> ModelShape:
    """config.json text -> ModelShape, with clear errors for JSON that is not a config."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{name}: the config is empty")
    if len(text) > CONFIG_MAX_CHARS:
        raise ConfigError(f"{name}: the config is {len(text):,} characters; the cap is "
                          f"{CONFIG_MAX_CHARS:,}")
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name}: not valid JSON ({exc})") from None
    label = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    label = str(label or name)  # the messages repeat it: cut, so they do not grow with it
    cut = label if len(label) <= NAME_MAX_CHARS else label[:NAME_MAX_CHARS] + "…"
    return shape_from_config(cfg, name=cut)


@cache
def preset_text(name: str) -> str:
    """The shipped config.json of preset `name`."""
    if name not in preset_names():
        raise ConfigError(f"unknown model preset {name!r}; choose one of {preset_names()}")
    return (PRESET_DIR / f"{name}.json").read_text()


@cache
def preset_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.json")))


def preset(name: str) -> ModelShape:
    """A shipped preset as a ModelShape (its source named in the file)."""
    return shape_from_config(json.loads(preset_text(name)), name=name)
