"""/plan's settings: one object, declared once, read whole by the page, the CLI and the JSON.

As the engines read a core Scenario, views.plan.plan_page reads one PlanSettings: its
defaults are declared here and nowhere else; URL names each field's query parameter
(web.settings builds /plan's URL fields from both, with their parsers and ranges); the CLI
makes one from its flags, the page from its widgets, and the JSON prints it back
(settings_json).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..analysis import drafting, overheads

EXAMPLE_LABELS = {  # shipped metrics (analysis/examples) -> what it is; the first: the default
    "vllm_metrics.prom": "vLLM /metrics, two scrapes (Prometheus)",
    "vllm_request.json": "vLLM per-request metrics (JSON)",
    "sglang_meta_info.json": "SGLang meta_info (JSON)",
    "llamacpp_log.txt": "llama.cpp server log line",
    "hand_histogram.csv": "hand-entered histogram (CSV)",
}
EXAMPLES = tuple(EXAMPLE_LABELS)


@dataclass(frozen=True)
class PlanSettings:
    """Every input of a plan: the measurements, the models and what drafts, the hardware
    and the serving, the costs measured or assumed. Texts are the pasted (or read) files;
    "" where none was given. A number 0 means "not given" where its comment says so."""

    # the measurements
    example: str = EXAMPLES[0]  # shipped metrics used when metrics_text is blank ("": none)
    metrics_text: str = ""  # server metrics, any format servermetrics reads
    metrics_before: str = ""  # an earlier /metrics scrape (counters differenced)
    model: str = ""  # the model_name to read of a scrape that holds several ("" = the first)
    k_len: int = 0  # k where the metrics lack it (0 = not given)
    rounds: int = 0  # rounds behind hand-entered rates (0 = not given)
    # the models and what drafts
    target_preset: str = "Llama-3.1-8B"
    target_text: str = ""  # a config.json (overrides the preset)
    draft_preset: str = "Llama-3.2-1B"
    draft_text: str = ""
    target_dtype: str = "bf16"
    draft_dtype: str = "bf16"
    draft_kind: str = "model"  # drafting.DRAFT_KINDS
    head_layers: int = drafting.HEAD_LAYERS_DEFAULT  # a head built from the target's width
    tree_topk: int = 1  # SGLang tree drafting: topk > 1 with steps and tokens
    tree_steps: int = 0  # 0 = a chain of k
    tree_tokens: int = 0  # tokens verified (0 = steps + 1)
    lookup_ms: float = drafting.LOOKUP_S_DEFAULT * 1e3  # n-gram lookup per round
    # the hardware and the serving
    gpu: str = "H100 SXM"  # an accelerator preset (roofline.ACCELERATORS)
    mem_gb: float = 0.0  # the preset's numbers replaced (0 = the preset's)
    bw_tbs: float = 0.0
    tflops: float = 0.0  # dense bf16
    fp8_tflops: float = 0.0
    context_len: int = 4096  # tokens of context per sequence
    kv_dtype: str = "bf16"
    k_max: int = 8  # longest draft priced
    batch: int = 0  # the user's batch, checked against memory (0 = none)
    tp: int = 1  # the target's tensor parallelism
    draft_tp: int = 0  # the draft's (0: a draft model at 1, a head at the target's)
    devices: int = 0  # accelerators in the server (0: as many as tp)
    interconnect: str = ""  # the link tensor parallelism crosses ("": the accelerator's first)
    # the costs: the execution mode's fixed costs (us; -1 = the mode's default), extra fixed
    # times a pass, and pass times measured at batch 1 (0 = not measured)
    exec_mode: str = overheads.MODE_DEFAULT  # overheads.MODES
    layer_us: float = -1.0
    pass_us: float = -1.0
    round_us: float = -1.0
    tree_us: float = -1.0
    level_us: float = -1.0
    target_overhead_ms: float = 0.0
    draft_overhead_ms: float = 0.0
    measured_target_ms: float = 0.0
    measured_verify_ms: float = 0.0
    measured_draft_ms: float = 0.0
    measured_c: float = 0.0
    measured_k: int = 0  # the k the verify pass was measured at (0: the acceptance's)
    here: str = ""  # a measured-here source's label (the page's; "" = the metrics)
    # labels in messages (the CLI: a file's stem or a preset's name)
    target_name: str = "target"
    draft_name: str = "draft"


URL: dict[str, str] = {  # field -> its URL parameter (web.settings.FIELDS)
    "example": "plan_example", "metrics_text": "plan_metrics", "metrics_before": "plan_before",
    "model": "plan_model", "k_len": "plan_klen", "rounds": "plan_rounds",
    "target_preset": "plan_target", "target_text": "plan_target_cfg",
    "draft_preset": "plan_draft", "draft_text": "plan_draft_cfg",
    "target_dtype": "plan_tdtype", "draft_dtype": "plan_ddtype", "draft_kind": "plan_dkind",
    "head_layers": "plan_hlayers", "tree_topk": "plan_topk", "tree_steps": "plan_steps",
    "tree_tokens": "plan_dtokens", "lookup_ms": "plan_lookup_ms", "gpu": "plan_gpu",
    "mem_gb": "plan_mem_gb", "bw_tbs": "plan_bw_tbs", "tflops": "plan_tflops",
    "fp8_tflops": "plan_fp8_tflops", "context_len": "plan_ctx", "kv_dtype": "plan_kvdtype",
    "k_max": "plan_kmax", "batch": "plan_batch", "target_overhead_ms": "plan_t_oh_ms",
    "draft_overhead_ms": "plan_d_oh_ms", "measured_target_ms": "plan_m_target_ms",
    "measured_verify_ms": "plan_m_verify_ms", "measured_draft_ms": "plan_m_draft_ms",
    "measured_c": "plan_m_c", "here": "plan_here", "tp": "plan_tp", "draft_tp": "plan_dtp",
    "devices": "plan_devices", "interconnect": "plan_link", "exec_mode": "plan_exec",
    "layer_us": "plan_layer_us", "pass_us": "plan_pass_us", "round_us": "plan_round_us",
    "tree_us": "plan_tree_us", "level_us": "plan_level_us", "measured_k": "plan_m_k",
}
LABELS = ("target_name", "draft_name")  # not in the URL: the page's are the defaults
TEXTS = ("metrics_text", "metrics_before", "target_text", "draft_text")  # pasted files
DEFAULTS = PlanSettings()


def from_url(values: dict) -> PlanSettings:
    """Settings from URL-named values (a page's widgets: {"plan_ctx": 4096, ...}); names
    that are not /plan's, and None (no value), are ignored; each value is cast to its
    field's type."""
    by_url = {u: f for f, u in URL.items()}
    kinds = {f.name: type(getattr(DEFAULTS, f.name)) for f in fields(PlanSettings)}
    return PlanSettings(**{by_url[k]: kinds[by_url[k]](v) for k, v in values.items()
                           if k in by_url and v is not None})


def settings_json(s: PlanSettings) -> dict:
    """The settings as JSON: every field, a pasted text as its length in characters."""
    return {k: ({"chars": len(v)} if k in TEXTS and v else v) for k, v in asdict(s).items()}
