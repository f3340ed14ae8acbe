"""Turn a URL's query string into validated settings, and settings back into a query.

Pure Python (no Streamlit), so it can be fuzzed on its own. Every parameter is declared
once, in FIELDS: its default, its parser with its range (which its widget takes too) and
the pages that draw it. A value that is missing takes the default silently, and a value
that is present but invalid takes the default with a note for the page to show. Notes
never echo more than a short, sanitised piece of what arrived. Pasted texts and tables
travel as URL text (web.urlcodec).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, make_dataclass, replace
from dataclasses import field as dc_field
from urllib.parse import urlencode

from ..analysis.deploy import DEVICES_MAX
from ..analysis.drafting import DRAFT_KINDS, DRAFT_RENAMED, HEAD_LAYERS_MAX, TREE_MAX
from ..analysis.modelcfg import PRESETS, preset_names
from ..analysis.overheads import COSTS
from ..analysis.overheads import MODES as EXEC_MODES
from ..analysis.parallel import TP_MAX
from ..analysis.roofline import ACCELERATORS
from ..analysis.shape import DTYPE_BYTES, SERVED_DTYPES
from ..core.rules import RULES, reads_warp
from ..core.tables import T_MAX, T_MIN, VOCAB
from ..llm.drafts import DEFAULT_DRAFT
from ..llm.drafts import KINDS as LLM_KINDS
from ..text.ngram import LEVELS as TEXT_LEVELS
from ..text.pair import DRAFTERS as TEXT_DRAFTERS
from ..views import auditpage as AUDIT
from ..views.gallery import GALLERY_NS
from ..views.llmpage import ARG_MAX_CHARS as LLM_ARG_MAX_CHARS
from ..views.llmpage import PRESETS as LLM_PRESETS
from ..views.llmpage import PROMPT_CHARS_MAX as LLM_PROMPT_CHARS_MAX
from ..views.measured import DRAFTS as MEASURED_DRAFTS
from ..views.measured import K_MAX as M_K_MAX
from ..views.measured import NEW_MAX as M_NEW_MAX
from ..views.plan import EXAMPLES, MODEL_NAME_MAX_CHARS
from ..views.plansettings import DEFAULTS as PLAN_DEFAULTS
from ..views.plansettings import URL as PLAN_URL
from ..views.textpage import DEFAULT_PROMPT, PROMPT_MAX_CHARS
from ..views.tour import CHAPTER_MAX
from ..views.transcript import RND_MAX
from ..views.work import K_APP_MAX, N_APP_MAX, WORK_APP_MAX, WORK_REQUEST_MAX, n_cap  # noqa: F401
from . import fieldparse as F
from .fieldparse import Capped, Renamed  # noqa: F401 (the settings' callers catch it here)
from .urlcodec import TABLE_URL_MAX_CHARS

STEP_MAX = 1_000  # animation frames (a round has at most 2k + 4)
SEED_MAX = 2**31 - 1
CTX_LEN_MAX = 131_072  # context length on the roofline
BATCH_MAX = 4_096
HERE_LABEL_CHARS = 300  # /plan: a measured-here source's label
DEFAULT_KIND, _, DEFAULT_ARG = DEFAULT_DRAFT.partition(":")  # /llm's, as its two controls
ALL = ("*",)  # every page
STAGE = ("round", "text", "llm")  # the animated pages
# the pages that read the toy tables (the sidebar's editor, its context token, the warp of
# the target), those that draft from the sidebar's draft (the table or the mix, at T), those
# that play the sidebar's rule from its seed and those that price a round at its c
TABLES = ("", "round", "exactness", "acceptance", "draft-length", "cost", "roofline", "rules")
DRAFTED = tuple(p for p in TABLES if p != "acceptance")  # /acceptance sweeps its own drafts
RULED = ("", "round", "text", "llm", "exactness", "rules")
SEEDED = (*RULED, "acceptance", "draft-length")
PRICED = ("", "text", "acceptance", "draft-length", "cost", "roofline")


@dataclass(frozen=True)
class Field:
    """One URL parameter, declared once: its default, its parser (which holds the range the
    URL and the widget share) and the step of its widget; pages: the pages that read it
    (ALL: every page); shared: a control of the sidebar, drawn on those pages only and kept
    in the link on the others."""

    name: str
    default: object
    parse: Callable[[str], object]
    step: float | None = None
    pages: tuple[str, ...] = ALL
    shared: bool = False


def _on(pages: str | tuple[str, ...], *group: Field) -> tuple[Field, ...]:
    return tuple(replace(f, pages=(pages,) if isinstance(pages, str) else pages) for f in group)


def _sidebar(pages: tuple[str, ...], *group: Field) -> tuple[Field, ...]:
    return tuple(replace(f, pages=pages, shared=True) for f in group)


def _rule_fields() -> tuple[Field, ...]:
    """Each parametrised rule's parameters (the registry's Param), named <rule>_<param>; the
    warp rules read the request's warp instead (wT ... wdraft)."""
    return tuple(Field(f"{r.name}_{q.name}", int(q.default) if q.integer else float(q.default),
                       F.int_in(int(q.lo), int(q.hi)) if q.integer else F.float_in(q.lo, q.hi),
                       None if q.integer else 0.01)
                 for r in RULES.values() if not reads_warp(r) for q in r.params)


def _plan(name: str, parse: Callable[[str], object], step: float | None = None) -> Field:
    """/plan's setting `name` as its URL field: the name and the default PlanSettings
    declares (views.plansettings), the parser and the step here."""
    return Field(PLAN_URL[name], getattr(PLAN_DEFAULTS, name), parse, step)


_PLAN_MS = F.float_in(0.0, 1000.0)
_PLAN_US = F.float_in(-1.0, 1_000_000.0)  # a fixed cost in us (-1 = the mode's default)
LINK_NAME_CHARS = 40  # an interconnect's name ("NVLink 4")
_PLAN_TIMED = F.float_in(0.0, 100_000.0)
FIELDS = (
    *_sidebar(tuple(dict.fromkeys(SEEDED + PRICED)),  # drafted tokens per round
              Field("k", 4, F.int_in(1, K_APP_MAX))),
    *_sidebar(PRICED, Field("c", 0.1, F.float_in(0.0, 2.0), 0.01)),  # x one target call
    *_sidebar(DRAFTED,
              Field("draft", "table", F.choice(("table", "mix"))),  # Q, or the mix of P, junk
              Field("alpha", 0.6, F.float_in(0.0, 1.0), 0.01)),  # the mix's quality
    *_sidebar((*DRAFTED, "text"), Field("T", 1.0, F.float_in(0.05, 10.0), 0.05)),  # draft's
    *_sidebar(SEEDED, Field("seed", 0, F.int_in(0, SEED_MAX))),  # every random draw's
    *_sidebar(RULED, Field("rule", "correct", F.choice(RULES))),  # verification rule
    *_sidebar(TABLES, Field("ctx", "a", F.choice(VOCAB))),  # context token, by name
    *_on("exactness", Field("n", 60_000, F.int_in(1, N_APP_MAX), 10_000)),  # decodes per rule
    *_on(STAGE,
         Field("step", 0, F.int_in(0, STEP_MAX)),  # animation frame
         Field("rnd", 0, F.int_in(0, RND_MAX)),  # which round of the transcript (0 = the first)
         Field("speed", 1.0, F.number_choice((0.5, 1.0, 2.0, 3.0)))),  # autoplay: s per step
    *_on("acceptance", Field("tab", "alpha", F.choice(("alpha", "T")))),  # the sweep open
    *_on("cost", Field("surface", "heatmap", F.choice(("heatmap", "3d")))),  # the view open
    *_on("roofline",
         Field("preset", "Llama-2-7B", F.choice(PRESETS)),  # model shape
         Field("dtype", "fp16", F.choice(DTYPE_BYTES)),  # weight type
         Field("ctxlen", 512, F.int_in(0, CTX_LEN_MAX), 256),  # context length in tokens
         Field("batch", 1, F.int_in(1, BATCH_MAX)),  # batch size
         Field("accel", "H100 SXM", F.choice(ACCELERATORS))),  # accelerator
    # letters: leviathan (p = target) or chen (p = draft); presenter mode: 1 = large type
    *_sidebar(ALL, Field("notation", "leviathan", F.choice(("leviathan", "chen"))),
              Field("present", 0, F.int_in(0, 1))),
    *_on("tour", Field("chapter", 0, F.int_in(0, CHAPTER_MAX))),  # the chapter in focus
    *_on("rules", *_rule_fields()),
    # a token tree for every tree rule: paths [[0], [1], [0, 0]] (Medusa's choices) or a
    # branching 3-2-1; "" drafts each rule's preset
    *_sidebar(tuple(p for p in RULED if p != "llm"), Field("tree", "", F.tree())),
    # the request's sampling warp of the target (core.warp): temperature, top-k (0 = off),
    # top-p, min-p, and 1 when the draft samples from its warped row too
    *_sidebar((*TABLES, "text", "llm"),
              Field("wT", 1.0, F.float_in(0.05, 5.0), 0.05),
              Field("wtopk", 0, F.int_in(0, 4096)),
              Field("wtopp", 1.0, F.float_in(0.01, 1.0), 0.01),
              Field("wminp", 0.0, F.float_in(0.0, 1.0), 0.01),
              Field("wdraft", 0, F.int_in(0, 1))),
    *_on("rules",
         Field("rules_n", 200_000, F.number_choice(GALLERY_NS, int)),  # Monte Carlo decodes a rule
         Field("conv_given", "alpha", F.choice(("alpha", "rate", "length"))),  # the converter's
         Field("conv_value", 0.8, F.float_in(0.0, K_APP_MAX + 1), 0.01)),  # number, and what
    *_on("draft-length", Field("threshold", 0.3, F.float_in(0.0, 1.0), 0.05)),  # on max q
    *_on("roofline", Field("kv", 0, F.int_in(0, 1))),  # 1 = the pass also reads the KV cache
    *_on("text",  # the n-gram models and the prompt (the corpus cannot travel in a URL)
         Field("level", "char", F.choice(TEXT_LEVELS)),  # tokens: characters or words
         Field("order", 6, F.int_in(2, 8)),  # target n-gram order (2..8 chars, 2..4 words)
         Field("dorder", 2, F.int_in(1, 7)),  # draft order, below the target's
         Field("Tp", 1.0, F.float_in(0.05, 10.0), 0.05),  # target temperature (the draft's: T)
         Field("drafter", "ngram", F.choice(TEXT_DRAFTERS)),  # low-order n-gram, or lookup
         Field("prompt", DEFAULT_PROMPT, F.text_of(PROMPT_MAX_CHARS))),  # where the text starts
    *_on("llm",  # the real model's prompt, draft and temperature (k, seed, rule: shared)
         Field("llm_preset", "story", F.choice(LLM_PRESETS)),  # a preset, or "own": llm_prompt
         Field("llm_prompt", "", F.text_of(LLM_PROMPT_CHARS_MAX)),
         Field("llm_kind", DEFAULT_KIND, F.choice(LLM_KINDS)),  # the draft, and its parameter
         Field("llm_arg", DEFAULT_ARG, F.text_of(LLM_ARG_MAX_CHARS)),  # (layers, rows, order)
         Field("llm_T", 1.0, F.temperature(T_MIN, T_MAX), 0.05)),  # of p and q; 0: greedy
    # /plan: pasted texts travel zlib-compressed and base64url-encoded (blob: "" = none)
    *_on("plan",  # defaults: views.plansettings.PlanSettings's (_plan)
         _plan("example", F.choice(EXAMPLES)),  # when none pasted
         _plan("metrics_text", F.blob()),  # pasted metrics
         _plan("metrics_before", F.blob()),  # an earlier scrape (differenced)
         _plan("model", F.text_of(MODEL_NAME_MAX_CHARS)),  # of several ("" = the one)
         _plan("target_preset", F.choice(preset_names())),
         _plan("target_text", F.blob()),  # a pasted config.json (overrides the preset)
         _plan("draft_preset", F.choice(preset_names())),
         _plan("draft_text", F.blob()),
         _plan("gpu", F.choice(ACCELERATORS)),
         _plan("mem_gb", F.float_in(0.0, 4096.0)),  # overrides (0 = the preset's)
         _plan("bw_tbs", F.float_in(0.0, 100.0)),
         _plan("tflops", F.float_in(0.0, 100_000.0)),  # dense bf16
         _plan("fp8_tflops", F.float_in(0.0, 100_000.0)),
         _plan("context_len", F.int_in(1, CTX_LEN_MAX), 512),  # context per sequence
         _plan("target_dtype", F.choice(SERVED_DTYPES)),  # target weights
         _plan("draft_dtype", F.choice(SERVED_DTYPES)),  # draft weights
         _plan("kv_dtype", F.choice(SERVED_DTYPES)),  # KV cache
         _plan("k_max", F.int_in(1, 16)),  # longest draft priced
         _plan("k_len", F.int_in(0, 64)),  # k where the metrics lack it; 0 = none
         _plan("rounds", F.int_in(0, 10**12), 100),  # behind hand-entered rates
         _plan("batch", F.int_in(0, BATCH_MAX)),  # checked against memory; 0 = none
         _plan("draft_kind", F.choice(DRAFT_KINDS, DRAFT_RENAMED)),  # model, head, lookup
         _plan("head_layers", F.int_in(1, HEAD_LAYERS_MAX)),  # a head's layers
         _plan("tree_topk", F.int_in(1, 64)),  # SGLang tree drafting (steps 0 = a chain)
         _plan("tree_steps", F.int_in(0, 64)),
         _plan("tree_tokens", F.int_in(0, TREE_MAX)),  # verified (0 = steps + 1)
         _plan("lookup_ms", F.float_in(0.001, 1000.0), 0.05),  # n-gram lookup
         _plan("target_overhead_ms", _PLAN_MS, 0.1),  # fixed time per target, draft pass
         _plan("draft_overhead_ms", _PLAN_MS, 0.1),
         _plan("measured_target_ms", _PLAN_TIMED, 0.1),  # measured at batch 1 (0 = not)
         _plan("measured_verify_ms", _PLAN_TIMED, 0.1),
         _plan("measured_draft_ms", _PLAN_TIMED, 0.1),
         _plan("measured_c", F.float_in(0.0, 100.0), 0.01),
         _plan("here", F.text_of(HERE_LABEL_CHARS)),  # /measured's ("" = metrics)
         _plan("tp", F.int_in(1, TP_MAX)),  # tensor parallelism of the target
         _plan("draft_tp", F.int_in(0, TP_MAX)),  # of the draft (0 = as it runs)
         _plan("devices", F.int_in(0, DEVICES_MAX)),  # in the server (0 = tp)
         _plan("interconnect", F.text_of(LINK_NAME_CHARS)),  # "" = the accelerator's first
         _plan("exec_mode", F.choice(EXEC_MODES)),  # eager, CUDA graphs / compiled, none
         *(_plan(f"{cost}_us", _PLAN_US, 1.0) for cost in COSTS),  # -1 = the mode's
         _plan("measured_k", F.int_in(0, 64))),  # k of the measured verify (0 = the metrics')
    *_on("measured",  # the real model measured here
         Field("m_preset", "story", F.choice(LLM_PRESETS)),  # a preset, or "own": m_prompt
         Field("m_prompt", "The best way to learn a language is", F.text_of(LLM_PROMPT_CHARS_MAX)),
         Field("m_draft", DEFAULT_DRAFT, F.choice((*MEASURED_DRAFTS, "all"))),  # or every one
         Field("m_k", 4, F.int_in(1, M_K_MAX)),
         Field("m_T", 1.0, F.temperature(T_MIN, T_MAX), 0.05),  # 0: greedy only
         Field("m_seed", 0, F.int_in(0, SEED_MAX)),
         Field("m_new", 16, F.int_in(1, M_NEW_MAX))),  # tokens each decode generates
    *_on("audit",  # a verifier audited: a built-in example, or code pasted (local servers)
         Field("a_src", "example", F.choice(("example", "code"))),
         Field("a_example", "greedy", F.choice(AUDIT.CHOICES)),
         Field("a_code", "", F.blob()),  # the pasted function (read only where it may run)
         Field("a_n", AUDIT.N_DEFAULT, F.int_in(100, AUDIT.N_MAX), 1_000),  # samples a pair
         Field("a_seed", 0, F.int_in(0, SEED_MAX)),
         Field("a_pair", "", F.choice(("", *AUDIT.PAIRS)))),  # drawn ("": the worst one)
)


def by_name(fields: tuple[Field, ...]) -> dict[str, Field]:
    """The fields by name; a name declared twice is refused."""
    out = {f.name: f for f in fields}
    if len(out) != len(fields):
        twice = sorted({f.name for f in fields if sum(g.name == f.name for g in fields) > 1})
        raise ValueError(f"a URL field is declared twice: {', '.join(twice)}")
    return out


FIELD = by_name(FIELDS)
KEYS = tuple(FIELD)
SHARED_KEYS = tuple(f.name for f in FIELDS if f.shared)  # the sidebar's, in every link
Settings = make_dataclass("Settings", [(f.name, type(f.default), dc_field(default=f.default))
                                       for f in FIELDS], frozen=True)
Settings.__module__ = __name__
Settings.__doc__ = "Every control of the app; each field is one query parameter of the same name."
DEFAULTS = Settings()


def page_keys(path: str) -> tuple[str, ...]:
    """The URL fields a page (its views.site path) draws itself, beside the sidebar's."""
    return tuple(f.name for f in FIELDS if path in f.pages and not f.shared)


def sidebar_keys(path: str) -> tuple[str, ...]:
    """The sidebar's fields a page (its views.site path) reads, so draws; the others only
    travel in its link."""
    return tuple(f.name for f in FIELDS if f.shared and (f.pages == ALL or path in f.pages))


def widget_bounds(key: str, widget: str) -> dict:
    """The bounds a widget of this kind (Streamlit's name: slider, selectbox...) takes from
    field `key`: the parser's range, so the URL and the widget cannot disagree."""
    f = FIELD[key]
    p = f.parse
    if widget in ("selectbox", "radio", "select_slider") and hasattr(p, "options"):
        return {"options": p.options}
    if widget in ("selectbox", "radio", "select_slider") and hasattr(p, "lo"):
        return {"options": tuple(range(p.lo, p.hi + 1))}  # a choice among whole numbers
    if widget in ("slider", "number_input") and hasattr(p, "lo"):
        return {"min_value": p.lo, "max_value": p.hi} | ({"step": f.step} if f.step else {})
    if widget in ("text_input", "text_area") and hasattr(p, "max_chars"):
        return {"max_chars": p.max_chars}
    return {}


def sanitise(value: object, limit: int = 24) -> str:
    """A short, harmless rendering of untrusted input for a note: letters, digits, . - + only."""
    s = re.sub(r"[^A-Za-z0-9.+\-]", "?", str(value))
    return s[:limit] + ("..." if len(s) > limit else "")


def parse_query(params: Mapping[str, object]) -> tuple[Settings, list[str]]:
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
        parser = FIELD[key].parse
        try:
            text = str(raw) if getattr(parser, "raw", False) else str(raw).strip()
            values[key] = parser(text)
        except Renamed as new:
            values[key] = new.value
            notes.append(f"URL parameter {key}='{sanitise(raw)}' is now called "
                         f"{key}={new.value}; read as that.")
        except Capped as cap:
            values[key] = cap.value
            notes.append(f"URL parameter {key}='{sanitise(raw)}' is outside its range "
                         f"({parser.range}); held at {url_text(cap.value)}.")
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
    return {k: url_text(d[k]) for k in keys if d[k] != base[k]}


def url_text(v: object) -> str:
    """A value as URL text; floats in the shortest form that reads back to the same float,
    a toggle's bool as its 0/1 field."""
    if isinstance(v, bool):
        return str(int(v))
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
