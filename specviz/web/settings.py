"""Turn a URL's query string into validated settings, and settings back into a query.

Pure Python (no Streamlit), so it can be fuzzed on its own. Every parameter has a
default and a range; a value that is missing takes the default silently, and a value
that is present but invalid takes the default with a note for the page to show. Notes
never echo more than a short, sanitised piece of what arrived. Pasted texts and tables
travel as URL text (web.urlcodec).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from urllib.parse import urlencode

from ..analysis.drafting import DRAFT_KINDS, HEAD_LAYERS_MAX, TREE_MAX
from ..analysis.modelcfg import preset_names
from ..analysis.roofline import ACCELERATORS
from ..analysis.shape import DTYPE_BYTES, PRESETS, SERVED_DTYPES
from ..core.rules import RULES, reads_warp
from ..core.tables import (  # noqa: F401
    K_APP_MAX,
    N_APP_MAX,
    T_MAX,
    T_MIN,
    VOCAB,
    WORK_APP_MAX,
    WORK_REQUEST_MAX,
    n_cap,
)
from ..llm.pair import KINDS as LLM_KINDS
from ..text.ngram import LEVELS as TEXT_LEVELS
from ..text.pair import DRAFTERS as TEXT_DRAFTERS
from ..views.gallery import GALLERY_NS
from ..views.llmpage import ARG_MAX_CHARS as LLM_ARG_MAX_CHARS
from ..views.llmpage import PRESETS as LLM_PRESETS
from ..views.llmpage import PROMPT_CHARS_MAX as LLM_PROMPT_CHARS_MAX
from ..views.measured import DRAFTS as _M_DRAFTS
from ..views.measured import K_MAX as M_K_MAX
from ..views.measured import NEW_MAX as M_NEW_MAX
from ..views.plan import EXAMPLES, MODEL_NAME_MAX_CHARS
from ..views.textpage import DEFAULT_PROMPT, PROMPT_MAX_CHARS
from ..views.tour import CHAPTER_MAX
from ..views.transcript import RND_MAX
from . import fieldparse as F
from .fieldparse import Capped  # noqa: F401 (the settings' callers catch it here)
from .urlcodec import TABLE_URL_MAX_CHARS

STEP_MAX = 1_000  # animation frames (a round has at most 2k + 4)
NOTATIONS = ("leviathan", "chen")  # who is p: Leviathan et al. (p = target) or Chen et al.
CONVERT_GIVEN = ("alpha", "rate", "length")  # /rules converter: what the number is
SEED_MAX = 2**31 - 1
CTX_LEN_MAX = 131_072  # context length on the roofline
BATCH_MAX = 4_096
DRAFTS = ("table", "mix")
SPEEDS = (0.5, 1.0, 2.0, 3.0)  # autoplay: seconds per step
ACCEPTANCE_TABS = ("alpha", "T")  # /acceptance: draft quality, or temperature mismatch
SURFACE_VIEWS = ("heatmap", "3d")  # /cost: the speedup over k and c as a heatmap or in 3D


@dataclass(frozen=True)
class Settings:
    """Every control of the app; each field is one query parameter of the same name."""

    k: int = 4  # drafted tokens per round
    c: float = 0.1  # draft cost per token, as a fraction of one target call
    draft: str = "table"  # "table": the draft table Q; "mix": alpha P + (1 - alpha) junk
    alpha: float = 0.6  # draft quality when draft = "mix" (1 copies the target)
    T: float = 1.0  # draft temperature
    seed: int = 0  # every random draw follows from it
    rule: str = "correct"  # verification rule
    ctx: str = "a"  # context token, by name
    n: int = 60_000  # Monte Carlo decodes
    step: int = 0  # animation frame on /round
    rnd: int = 0  # which round of the transcript /round shows (0 = the first)
    speed: float = 1.0  # autoplay on /round and /text: seconds per step
    tab: str = "alpha"  # /acceptance: which sweep is open
    surface: str = "heatmap"  # /cost: which view of the speedup surface is open
    preset: str = "Llama-2-7B"  # roofline model shape
    dtype: str = "fp16"  # roofline weight type
    ctxlen: int = 512  # roofline context length in tokens
    batch: int = 1  # roofline batch size
    accel: str = "H100 SXM"  # roofline accelerator
    notation: str = "leviathan"  # letters: leviathan (p = target) or chen (p = draft)
    present: int = 0  # presenter mode: 1 = large type, no sidebar, high contrast
    chapter: int = 0  # the guided tour's chapter in focus (0 = the first)
    # /rules: each parametrised rule's parameter, named <rule>_<param> (defaults = registry's)
    multi_draft_m: int = 3
    typical_eps: float = 0.09
    typical_delta: float = 0.3
    lenient_l: float = 0.5
    topk_q_top_k: int = 2
    inclusive_coin_u_bits: int = 4
    tree_iid_shape: int = 1  # token trees: a preset of specviz.core.kinds.treeshape.PRESETS
    tree_wor_shape: int = 1
    tree_first_residual_shape: int = 3
    tree_wor_as_iid_shape: int = 3
    tree: str = ""  # a token tree for every tree rule, as paths [[0], [1], [0, 0]] (Medusa's
    # choices) or a branching 3-2-1; "" drafts each rule's preset
    # the request's sampling warp of the target (core.warp): temperature, top-k (0 = off),
    # top-p, min-p, and 1 when the draft samples from its warped row too
    wT: float = 1.0
    wtopk: int = 0
    wtopp: float = 1.0
    wminp: float = 0.0
    wdraft: int = 0
    rules_n: int = 200_000  # Monte Carlo decodes per rule on /rules
    conv_given: str = "alpha"  # /rules converter: what the number is
    conv_value: float = 0.8  # /rules converter: the number
    threshold: float = 0.3  # /draft-length: the confidence policy's threshold on max q
    kv: int = 0  # /roofline batch section: 1 = the pass also reads the KV cache
    # /text: the n-gram models and the prompt (the corpus itself cannot travel in a URL)
    level: str = "char"  # tokens: characters or words
    order: int = 6  # target n-gram order (2..8 for characters, 2..4 for words)
    dorder: int = 2  # draft order, below the target's
    Tp: float = 1.0  # target temperature (the draft's is T)
    drafter: str = "ngram"  # the draft: the low-order n-gram, or prompt lookup
    prompt: str = DEFAULT_PROMPT  # where the text starts
    # /llm: the real model's prompt, draft and temperature (k, seed and rule are shared)
    llm_preset: str = "story"  # a preset prompt, or "own": llm_prompt
    llm_prompt: str = ""  # the reader's own prompt
    llm_kind: str = "skip"  # the draft: a kind of specviz.llm.pair.KINDS ...
    llm_arg: str = "4,8"  # ... and its parameter (layers, head rows, order)
    llm_T: float = 1.0  # temperature of p and q alike
    # /plan: pasted texts travel zlib-compressed and base64url-encoded (blob: "" = none)
    plan_example: str = "vllm_metrics.prom"  # shipped metrics example used when none pasted
    plan_metrics: str = ""  # blob of pasted metrics text
    plan_before: str = ""  # blob of an earlier /metrics scrape (differenced with plan_metrics)
    plan_model: str = ""  # model_name read from a scrape of several models ("" = the only one)
    plan_target: str = "Llama-3.1-8B"  # target preset
    plan_target_cfg: str = ""  # blob of a pasted target config.json (overrides the preset)
    plan_draft: str = "Llama-3.2-1B"  # draft preset
    plan_draft_cfg: str = ""  # blob of a pasted draft config.json
    plan_gpu: str = "H100 SXM"  # accelerator preset
    plan_mem_gb: float = 0.0  # overrides of the preset (0 = the preset's value)
    plan_bw_tbs: float = 0.0
    plan_tflops: float = 0.0  # dense bf16
    plan_fp8_tflops: float = 0.0
    plan_ctx: int = 4096  # context tokens per sequence
    plan_tdtype: str = "bf16"  # target weights
    plan_ddtype: str = "bf16"  # draft weights
    plan_kvdtype: str = "bf16"  # KV cache
    plan_kmax: int = 8  # longest draft priced
    plan_klen: int = 0  # draft length where the metrics do not say it (llama.cpp); 0 = none
    plan_rounds: int = 0  # rounds behind hand-entered per-position rates; 0 = none
    plan_batch: int = 0  # the batch you run (0 = none): checked against memory
    plan_dkind: str = "model"  # what drafts: a model, a head on the target, n-gram lookup
    plan_hlayers: int = 1  # layers of a head built from the target's width
    plan_topk: int = 1  # SGLang tree drafting (steps 0 = a chain of k)
    plan_steps: int = 0
    plan_dtokens: int = 0  # tree tokens verified per sequence (0 = steps + 1)
    plan_lookup_ms: float = 0.1  # n-gram lookup per round
    plan_t_oh_ms: float = 0.0  # fixed time per target pass, per draft pass
    plan_d_oh_ms: float = 0.0
    plan_m_target_ms: float = 0.0  # measured at batch 1 (0 = not measured)
    plan_m_verify_ms: float = 0.0
    plan_m_draft_ms: float = 0.0
    plan_m_c: float = 0.0
    plan_here: str = ""  # a measurement of this server's /measured ("" = the metrics above)
    # /measured: the real model measured here
    m_preset: str = "story"  # a preset prompt, or "own" (m_prompt)
    m_prompt: str = "The best way to learn a language is"
    m_draft: str = "trimmed:16384"  # one of views.measured.DRAFTS, or "all"
    m_k: int = 4
    m_T: float = 1.0
    m_seed: int = 0
    m_new: int = 16  # tokens each decode generates


DEFAULTS = Settings()


PLAN_DTYPES = SERVED_DTYPES  # the planner's types, owned by shape
M_DRAFTS = (*_M_DRAFTS, "all")  # /measured: one draft, or every one in a table
HERE_LABEL_CHARS = 300  # /plan: a measured-here source's label


PARSERS = {
    "k": F.int_in(1, K_APP_MAX),
    "c": F.float_in(0.0, 2.0),
    "draft": F.choice(DRAFTS),
    "alpha": F.float_in(0.0, 1.0),
    "T": F.float_in(0.05, 10.0),
    "seed": F.int_in(0, SEED_MAX),
    "rule": F.choice(RULES),
    "ctx": F.choice(VOCAB),
    "n": F.int_in(1, N_APP_MAX),
    "step": F.int_in(0, STEP_MAX),
    "rnd": F.int_in(0, RND_MAX),
    "speed": F.float_choice(SPEEDS),
    "tab": F.choice(ACCEPTANCE_TABS),
    "surface": F.choice(SURFACE_VIEWS),
    "preset": F.choice(PRESETS),
    "dtype": F.choice(DTYPE_BYTES),
    "ctxlen": F.int_in(0, CTX_LEN_MAX),
    "batch": F.int_in(1, BATCH_MAX),
    "accel": F.choice(ACCELERATORS),
    "notation": F.choice(NOTATIONS),
    "present": F.int_in(0, 1),
    "chapter": F.int_in(0, CHAPTER_MAX),
    **{f"{r.name}_{q.name}": (F.int_in(int(q.lo), int(q.hi)) if q.integer
                              else F.float_in(q.lo, q.hi))
       for r in RULES.values() if not reads_warp(r) for q in r.params},
    "tree": F.tree(),
    "wT": F.float_in(0.05, 5.0),
    "wtopk": F.int_in(0, 4096),
    "wtopp": F.float_in(0.01, 1.0),
    "wminp": F.float_in(0.0, 1.0),
    "wdraft": F.int_in(0, 1),
    "rules_n": F.int_choice(GALLERY_NS),
    "conv_given": F.choice(CONVERT_GIVEN),
    "conv_value": F.float_in(0.0, K_APP_MAX + 1),
    "threshold": F.float_in(0.0, 1.0),
    "kv": F.int_in(0, 1),
    "level": F.choice(TEXT_LEVELS),
    "order": F.int_in(2, 8),
    "dorder": F.int_in(1, 7),
    "Tp": F.float_in(0.05, 10.0),
    "drafter": F.choice(TEXT_DRAFTERS),
    "prompt": F.text_of(PROMPT_MAX_CHARS),
    "llm_preset": F.choice(LLM_PRESETS),
    "llm_prompt": F.text_of(LLM_PROMPT_CHARS_MAX),
    "llm_kind": F.choice(LLM_KINDS),
    "llm_arg": F.text_of(LLM_ARG_MAX_CHARS),
    "llm_T": F.float_in(T_MIN, T_MAX),
    "plan_example": F.choice(EXAMPLES),
    "plan_metrics": F.blob(),
    "plan_before": F.blob(),
    "plan_model": F.text_of(MODEL_NAME_MAX_CHARS),
    "plan_target": F.choice(preset_names()),
    "plan_target_cfg": F.blob(),
    "plan_draft": F.choice(preset_names()),
    "plan_draft_cfg": F.blob(),
    "plan_gpu": F.choice(ACCELERATORS),
    "plan_mem_gb": F.float_in(0.0, 4096.0),
    "plan_bw_tbs": F.float_in(0.0, 100.0),
    "plan_tflops": F.float_in(0.0, 100_000.0),
    "plan_fp8_tflops": F.float_in(0.0, 100_000.0),
    "plan_ctx": F.int_in(1, CTX_LEN_MAX),
    "plan_tdtype": F.choice(PLAN_DTYPES),
    "plan_ddtype": F.choice(PLAN_DTYPES),
    "plan_kvdtype": F.choice(PLAN_DTYPES),
    "plan_kmax": F.int_in(1, 16),
    "plan_klen": F.int_in(0, 64),
    "plan_rounds": F.int_in(0, 10**12),
    "plan_batch": F.int_in(0, BATCH_MAX),
    "plan_dkind": F.choice(DRAFT_KINDS),
    "plan_hlayers": F.int_in(1, HEAD_LAYERS_MAX),
    "plan_topk": F.int_in(1, 64),
    "plan_steps": F.int_in(0, 64),
    "plan_dtokens": F.int_in(0, TREE_MAX),
    "plan_lookup_ms": F.float_in(0.001, 1000.0),
    "plan_t_oh_ms": F.float_in(0.0, 1000.0),
    "plan_d_oh_ms": F.float_in(0.0, 1000.0),
    "plan_m_target_ms": F.float_in(0.0, 100_000.0),
    "plan_m_verify_ms": F.float_in(0.0, 100_000.0),
    "plan_m_draft_ms": F.float_in(0.0, 100_000.0),
    "plan_m_c": F.float_in(0.0, 100.0),
    "plan_here": F.text_of(HERE_LABEL_CHARS),
    "m_preset": F.choice(LLM_PRESETS),
    "m_prompt": F.text_of(LLM_PROMPT_CHARS_MAX),
    "m_draft": F.choice(M_DRAFTS),
    "m_k": F.int_in(1, M_K_MAX),
    "m_T": F.float_in(0.05, 10.0),
    "m_seed": F.int_in(0, SEED_MAX),
    "m_new": F.int_in(1, M_NEW_MAX),
}
KEYS = tuple(f.name for f in fields(Settings))


def sanitise(value: object, limit: int = 24) -> str:
    """A short, harmless rendering of untrusted input for a note: letters, digits, . - + only."""
    s = re.sub(r"[^A-Za-z0-9.+\-]", "?", str(value))
    return s[:limit] + ("..." if len(s) > limit else "")


def parse_query(
    params: Mapping[str, object], vocab: tuple[str, ...] = VOCAB
) -> tuple[Settings, list[str]]:
    """Settings from query parameters (values are str or lists of str), and notes on fallbacks.

    Repeated keys take the last value. Unknown keys are ignored. Never raises.
    """
    values, notes = {}, []
    for key in KEYS:
        if key not in params:
            continue
        raw = params[key]
        if isinstance(raw, (list, tuple)):
            raw = raw[-1] if raw else ""
        parser = PARSERS[key] if key != "ctx" else F.choice(vocab)
        try:
            text = str(raw) if getattr(parser, "raw", False) else str(raw).strip()
            values[key] = parser(text)
        except Capped as cap:
            values[key] = cap.value
            notes.append(f"URL parameter {key}='{sanitise(raw)}' is outside its range "
                         f"({parser.range}); held at {_fmt(cap.value)}.")
        except (ValueError, TypeError, OverflowError) as exc:
            default = getattr(DEFAULTS, key)
            why = f" ({exc})" if getattr(parser, "explains", False) and str(exc) else ""
            shown = f"{key}={default}" if default != "" else f"{key} unset"
            notes.append(f"URL parameter {key}='{sanitise(raw)}' is not {parser.range}{why}; "
                         f"using the default {shown}.")
    return replace(DEFAULTS, **values), notes


def to_query(s: Settings, keys: tuple[str, ...] = KEYS) -> dict[str, str]:
    """The query parameters that reproduce s (only those that differ from the defaults)."""
    d, base = asdict(s), asdict(DEFAULTS)
    return {k: _fmt(d[k]) for k in keys if d[k] != base[k]}


def _fmt(v: object) -> str:
    """A value as URL text; floats in the shortest form that reads back to the same float."""
    if isinstance(v, float):
        s = repr(v)
        return s[:-2] if s.endswith(".0") else s
    return str(v)


# A shared link's query: the three /plan blobs (3 x 6,000) and both tables fit; the HTTP
# server refuses request lines far longer (a bare 400 before the app sees them).
URL_QUERY_MAX_CHARS = 32_000
_DROP_FIRST = ("P", "Q", "plan_metrics", "plan_before", "plan_target_cfg", "plan_draft_cfg",
               "prompt", "llm_prompt")


def fit_query(q: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """q without the parameters that make it too long for a link (a table over
    TABLE_URL_MAX_CHARS, then the largest blobs until the query fits URL_QUERY_MAX_CHARS),
    and a note for each one left out."""
    out, notes = dict(q), []
    for key in ("P", "Q"):
        if len(out.get(key, "")) > TABLE_URL_MAX_CHARS:
            notes.append(f"Table {key} is too large for a link ({len(out.pop(key)):,} "
                         f"characters; the cap is {TABLE_URL_MAX_CHARS:,}): the link keeps "
                         "every other setting.")
    for key in sorted((k for k in _DROP_FIRST if k in out), key=lambda k: -len(out[k])):
        if len(urlencode(out)) <= URL_QUERY_MAX_CHARS:
            break
        notes.append(f"Parameter {key} left out of the link: the link would pass "
                     f"{URL_QUERY_MAX_CHARS:,} characters.")
        out.pop(key)
    return out, notes
