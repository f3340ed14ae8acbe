"""A Hugging Face config.json -> roofline.ModelShape, and the shipped presets.

Fields read: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (GQA/MQA;
absent = one per query head), head_dim (absent = hidden_size / heads), intermediate_size,
vocab_size, tie_word_embeddings (absent = untied), and for mixtures of experts
num_local_experts / num_experts / n_routed_experts, num_experts_per_tok,
moe_intermediate_size (absent = intermediate_size), shared_expert_intermediate_size or
n_shared_experts, first_k_dense_replace (leading dense layers), num_nextn_predict_layers (the
MTP layers a DeepSeek checkpoint ships beside the model); multi-head latent attention's
kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim (DeepSeek-V2/V3);
attention_bias, and by model_type Qwen2's q/k/v biases, Qwen3's and Gemma 3's q/k norms and
Gemma's four norms a layer. A multimodal config's text_config is used when present. A T5
config (model_type t5: d_model, d_ff, d_kv, num_heads, num_layers, num_decoder_layers,
feed_forward_proj, tie_word_embeddings absent = tied) is read as its decoder with
cross-attention and its encoder held beside it (shape.py). A dense SwiGLU
decoder then has per layer 2 d (q_dim + d_kv) attention weights (q_dim = heads x head_dim,
d_kv = kv heads x head_dim) and 3 d ffn MLP weights, plus vocab x d for the embedding and again
for an untied head (roofline.ModelShape.params).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .pasted import PasteError, read_json, show, sized, whole
from .shape import ModelShape

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
    "first_k_dense_replace": (0, 1_024),
    "kv_lora_rank": (1, 65_536),
    "q_lora_rank": (0, 65_536),
    "qk_rope_head_dim": (1, 4_096),
    "qk_nope_head_dim": (0, 4_096),
    "v_head_dim": (1, 4_096),
    "shared_expert_intermediate_size": (0, 1_048_576),
    "n_shared_experts": (0, 4_096),
    "num_nextn_predict_layers": (0, 64),
    "num_layers": (1, 1_024),
}
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")  # limit: "experts"
QKV_BIAS = ("qwen2", "qwen2_moe")  # model types with biases on q, k and v
QK_NORM = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text")  # RMSNorm on each head's q and k
FOUR_NORMS = ("gemma2", "gemma3", "gemma3_text")  # norms before and after attention and MLP
ENCODER_DECODER = ("t5", "mt5")  # read as a decoder with cross-attention (_t5)
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
              "v_head_dim")  # DeepSeek-V2/V3 multi-head latent attention
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
    """cfg[key] (or default) as a whole number within its LIMITS."""
    v = cfg.get(key, default)
    if v is None:
        raise ConfigError(f"{who}: config.json has no '{key}' ({MEANING.get(key, key)}), "
                          "which the cost model needs")
    lo, hi = LIMITS["experts" if key in EXPERT_KEYS else key]
    if whole(v) is None:
        raise ConfigError(f"{who}: '{key}' must be a whole number; got {show(v)}")
    n = whole(v, lo=lo, hi=hi)
    if n is None:
        shown = f"{int(v):,}" if abs(v) < 10**16 else show(v)
        raise ConfigError(f"{who}: '{key}' = {shown} is not a plausible value ({lo:,}..{hi:,})")
    return n


def _moe(cfg: dict, who: str, ffn: int | None) -> dict:
    """The expert fields, or {} for a dense model."""
    key = next((k for k in EXPERT_KEYS if cfg.get(k)), None)
    if key is None:
        return {}
    e = _field(cfg, key, who)
    top = _field(cfg, "num_experts_per_tok", who)
    if top > e:
        raise ConfigError(f"{who}: num_experts_per_tok = {top} exceeds the {e} experts")
    expert_ffn = _field(cfg, "moe_intermediate_size", who, ffn)
    shared = _field(cfg, "shared_expert_intermediate_size", who, 0) if cfg.get(
        "shared_expert_intermediate_size") is not None else 0
    if not shared and cfg.get("n_shared_experts") is not None:
        shared = _field(cfg, "n_shared_experts", who) * expert_ffn
    return {"experts": e, "experts_per_tok": top, "expert_ffn": expert_ffn,
            "shared_ffn": shared}


def shape_from_config(cfg: object, *, name: str = "model", source: str = "") -> ModelShape:
    """A ModelShape from a parsed config.json; ConfigError names a missing or absurd field."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{name}: config.json must be a JSON object")
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    extra = {}
    if cfg.get("model_type") in ENCODER_DECODER:
        cfg, extra = _t5(cfg, name)
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
    tied = _flag(cfg, "tie_word_embeddings", name, False)
    return ModelShape(name, layers, d, ffn, heads, kv, vocab, head_size=head_dim, tied=tied,
                      source=source or str(cfg.get("_source", "")), **moe,
                      **_attention(cfg, name, layers, moe), **extra)


def _t5(cfg: dict, who: str) -> tuple[dict, dict]:
    """A T5 config in the decoder's field names, and its encoder-decoder fields: the decoder's
    layers (num_decoder_layers, absent = num_layers) with cross-attention, the encoder's
    layers, a gated MLP ("gated-gelu") or not ("relu"), the embedding tied unless it says."""
    gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated")
    enc = _field(cfg, "num_layers", who)
    names = {"hidden_size": "d_model", "intermediate_size": "d_ff", "head_dim": "d_kv",
             "num_attention_heads": "num_heads"}
    out = {**cfg, **{ours: cfg.get(theirs) for ours, theirs in names.items()},
           "num_hidden_layers": cfg.get("num_decoder_layers", enc),
           "tie_word_embeddings": cfg.get("tie_word_embeddings", True)}
    return out, {"mlp_mats": 3 if gated else 2, "cross_attn": True, "encoder_layers": enc}


def _flag(cfg: dict, key: str, who: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if not isinstance(v, bool):
        raise ConfigError(f"{who}: '{key}' must be true or false; got {show(v)}")
    return v


def _attention(cfg: dict, who: str, layers: int, moe: dict) -> dict:
    """Biases, q/k norms, norms per layer, leading dense layers and MLA's widths, as the
    model's family has them (QKV_BIAS, QK_NORM, FOUR_NORMS) or the config says."""
    family = str(cfg.get("model_type", ""))
    out = {"qkv_bias": family in QKV_BIAS or _flag(cfg, "attention_bias", who, False),
           "o_bias": _flag(cfg, "attention_bias", who, False),
           "qk_norm": family in QK_NORM, "norms_per_layer": 4 if family in FOUR_NORMS else 2}
    if moe and cfg.get("first_k_dense_replace"):
        out["dense_layers"] = min(_field(cfg, "first_k_dense_replace", who), layers)
    if cfg.get("num_nextn_predict_layers"):  # the MTP module(s), not in the target's count
        out["mtp_layers"] = _field(cfg, "num_nextn_predict_layers", who)
    if cfg.get("kv_lora_rank"):
        out.update({f: _field(cfg, f, who, 0) for f in MLA_FIELDS})
        if not out["qk_rope_head_dim"] or not out["v_head_dim"]:
            raise ConfigError(f"{who}: multi-head latent attention (kv_lora_rank) needs "
                              "qk_rope_head_dim and v_head_dim")
    return out


def parse_config(text: str, *, name: str = "model") -> ModelShape:
    """config.json text -> ModelShape, with clear errors for JSON that is not a config."""
    sized(text, f"{name}: the config", CONFIG_MAX_CHARS, ConfigError)
    try:
        cfg = read_json(text)
    except PasteError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    label = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    label = str(label or name)  # the messages repeat it: cut, so they do not grow with it
    cut = label if len(label) <= NAME_MAX_CHARS else label[:NAME_MAX_CHARS] + "…"
    return shape_from_config(cfg, name=cut)


def parse_head(text: str, *, name: str = "head") -> tuple[ModelShape, int]:
    """A draft head's config.json (EAGLE checkpoints ship one) -> (its layers as a
    ModelShape, its own draft vocabulary: EAGLE-3's draft_vocab_size, 0 when absent)."""
    shape = parse_config(text, name=name)
    raw = read_json(text).get("draft_vocab_size") or 0
    vocab = whole(raw, lo=0, hi=shape.vocab)
    if vocab is None:
        raise ConfigError(f"{name}: 'draft_vocab_size' must be a whole number up to "
                          f"vocab_size = {shape.vocab:,}; got {show(raw)}")
    return shape, vocab


@cache
def preset_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.json")))


@cache
def preset_text(name: str) -> str:
    """The shipped config.json of preset `name`."""
    if name not in preset_names():
        raise ConfigError(f"unknown preset {name!r}; choose one of {preset_names()}")
    return (PRESET_DIR / f"{name}.json").read_text()


PRESETS: dict[str, ModelShape] = {  # the one catalogue: every shipped config.json, read once
    name: shape_from_config(json.loads(preset_text(name)), name=name) for name in preset_names()}


def preset(name: str) -> ModelShape:
    """A shipped preset as a ModelShape (its source named in the file); ConfigError (a
    ValueError) lists the names for any other."""
    preset_text(name)
    return PRESETS[name]
