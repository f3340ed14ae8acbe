"""The /plan page's data, and the CLI's: read the inputs, plan, and collect what went wrong.

Every input problem becomes a message in `errors` (the page shows it, the CLI prints it); the
plan is None when an input the plan needs could not be read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..analysis import (
    acceptance,
    drafting,
    modelcfg,
    pasted,
    planner,
    plantables,
    record,
    servermetrics,
)
from ..analysis.roofline import ACCELERATORS, Accelerator, find_gpu
from .work import heavy

preset_names = modelcfg.preset_names
EXAMPLE_DIR = Path(__file__).resolve().parents[1] / "analysis" / "examples"
EXAMPLE_LABELS = {  # example file -> what it is
    "vllm_metrics.prom": "vLLM /metrics, two scrapes (Prometheus)",
    "vllm_request.json": "vLLM per-request metrics (JSON)",
    "sglang_meta_info.json": "SGLang meta_info (JSON)",
    "llamacpp_log.txt": "llama.cpp server log line",
    "hand_histogram.csv": "hand-entered histogram (CSV)",
}
EXAMPLES = tuple(EXAMPLE_LABELS)
MODEL_NAME_MAX_CHARS = 200  # a model_name label chosen on the page (Hugging Face ids are ~50)


def example_text(name: str) -> str:
    if name not in EXAMPLES:
        raise ValueError(f"unknown example {name!r}; choose one of {EXAMPLES}")
    return (EXAMPLE_DIR / name).read_text()


def accelerator(name: str, *, mem_gb: float = 0, bw_tbs: float = 0, tflops: float = 0,
                fp8_tflops: float = 0) -> Accelerator:
    """A preset with any of its numbers replaced (0 keeps the preset's)."""
    a = ACCELERATORS[find_gpu(name)]
    changes = {k: v for k, v in (("memory_bytes", mem_gb * 1e9),
                                 ("bandwidth_bytes_per_s", bw_tbs * 1e12),
                                 ("peak_macs_per_s", tflops * 1e12 / 2),
                                 ("peak_fp8_macs_per_s", fp8_tflops * 1e12 / 2)) if v > 0}
    if not changes:
        return a
    return replace(a, name=f"{a.name} (edited)", **changes)


@dataclass(frozen=True)
class DraftInputs:
    """How the server drafts (the page's and the CLI's draft options); 0 = not given."""

    kind: str = "model"  # drafting.DRAFT_KINDS
    head_layers: int = drafting.HEAD_LAYERS_DEFAULT  # a head built from the target's width
    tree_topk: int = 1  # SGLang tree drafting: topk > 1 with steps and tokens
    tree_steps: int = 0
    tree_tokens: int = 0
    lookup_ms: float = drafting.LOOKUP_S_DEFAULT * 1e3  # n-gram lookup per round
    target_overhead_ms: float = 0.0  # fixed per pass: launch, sampling, scheduling
    draft_overhead_ms: float = 0.0
    measured: planner.Measured = planner.Measured()


@dataclass
class PlanPage:
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    report: acceptance.AcceptanceReport | None = None
    plan: planner.Plan | None = None
    verdict: str = ""
    verdict_parts: list[str] = field(default_factory=list)  # the decision first
    model_lines: list[str] = field(default_factory=list)  # each model as read, a sentence each
    tables: dict[str, list[dict]] = field(default_factory=dict)  # name -> rows
    batch_note: str | None = None  # the user's batch against memory and the sweep
    models: tuple[str, ...] = ()  # a scrape's model names, where it holds several (a choice)
    alpha_ci: str = ""  # alpha's 95 % interval as shown, or why there is none


def _model(text: str, preset: str, who: str, errors: list[str]):
    try:
        if text.strip():
            return modelcfg.parse_config(text, name=who)
        return modelcfg.preset(preset)
    except modelcfg.ConfigError as exc:
        errors.append(f"{who} model: {exc}")
        return None


def _drafter(di: DraftInputs, text: str, preset: str, who: str, target,
             errors: list[str]) -> drafting.Drafter | None:
    """The drafter the inputs describe: a draft model (config or preset), a head (its own
    config when one is pasted, else the target's width and head_layers), or n-gram lookup;
    then a tree when topk > 1."""
    try:
        if di.kind == "lookup":
            d = drafting.ngram_draft(di.lookup_ms / 1e3)
        elif di.kind in drafting.HEADS and text.strip():
            shape, vocab = modelcfg.parse_head(text, name=who)
            d = drafting.head_from_config(shape, target, kind=di.kind, draft_vocab=vocab)
        elif di.kind in drafting.HEADS:
            d = drafting.head_from_target(target, kind=di.kind, layers=di.head_layers)
        else:
            shape = _model(text, preset, who, errors)
            if shape is None:
                return None
            d = drafting.model_draft(shape)
        if di.tree_steps:
            d = drafting.with_tree(d, topk=di.tree_topk, steps=di.tree_steps,
                                   verify_tokens=di.tree_tokens or di.tree_steps + 1)
        return d
    except (drafting.DraftError, modelcfg.ConfigError) as exc:
        errors.append(f"{who}: {exc}")
        return None


def _measurements(text: str, before: str, k_len: int, rounds: int, model: str,
                  notes: list[str]) -> record.Acceptance | record.Averages:
    """The measurements read; a scrape of several models, none or an absent one chosen, is
    read for its first model, with a note."""
    def read(m: str | None) -> record.Acceptance | record.Averages:
        if before.strip():
            return servermetrics.parse_scrapes(before, text, model=m)
        return servermetrics.parse_any(text, k=k_len or None, model=m, rounds=rounds or None)

    try:
        return read(model or None)
    except record.ModelChoice as exc:
        first = exc.models[0]
        names = pasted.listed(exc.models)
        notes.append(f"The scrape holds {len(exc.models):,} models ({names})"
                     + (f" and none is {model}" if model else "")
                     + f": shown is {first} (choose another under 'model').")
        return read(first)


def _batch_note(p: planner.Plan, batch: int) -> str:
    cap = p.capacity
    if batch > cap.batch_with_draft:
        fits = (f"at most {cap.batch_with_draft:,} sequences fit with the draft"
                if cap.batch_with_draft else "the draft does not fit at all")
        return (f"Batch {batch:,} does not fit in memory at context "
                f"{p.setup.context_len:,}: {fits} ({cap.batch_target_only:,} for the target "
                "alone).")
    j = batch - 1
    if j >= len(p.batches):
        return f"Batch {batch:,} is beyond the priced range (up to {p.batches[-1]:,})."
    k, s = int(p.best_k[j]), float(p.best_speedup[j])
    if s >= 1:
        return f"At your batch {batch:,}: use k = {k} for {s:.2f}x tokens/s per user."
    return f"At your batch {batch:,}: turn speculation off (the best k, {k}, gives {s:.2f}x)."


@heavy  # parses up to 2 MB of pasted text: in the app's bounded workers, with its stop check
def plan_page(*, metrics_text: str, target_text: str = "", target_preset: str = "Llama-3.1-8B",
              draft_text: str = "", draft_preset: str = "Llama-3.2-1B",
              accel: Accelerator, context_len: int = 4096, target_dtype: str = "bf16",
              draft_dtype: str = "bf16", kv_dtype: str = "bf16", k_max: int = 8,
              k_len: int = 0, rounds: int = 0, batch: int = 0, target_name: str = "target",
              draft_name: str = "draft", drafts: DraftInputs = DraftInputs(),
              metrics_before: str = "", model: str = "",
              here: planner.MeasuredHere | None = None) -> PlanPage:
    """Everything /plan shows; errors instead of exceptions for any bad input.
    metrics_before: an earlier /metrics scrape (the counters are differenced); model: one
    model_name of a scrape that holds several; here: acceptance and pass times measured on
    this machine, used instead of the metrics and the measured costs."""
    page = PlanPage()
    if here is not None:
        drafts = replace(drafts, measured=here.measured)
        page.notes.append(f"Acceptance and pass times {here.source}.")
    try:
        _read_acceptance(page, here.acceptance if here is not None else _measurements(
            metrics_text, metrics_before, k_len, rounds, model, page.notes))
    except record.MetricsError as exc:
        page.errors.append(f"Measurements: {exc}")
    target = _model(target_text, target_preset, target_name, page.errors)
    draft = (_drafter(drafts, draft_text, draft_preset, draft_name, target, page.errors)
             if target is not None or drafts.kind == "model" else None)  # a head needs it
    if page.report is None or target is None or draft is None:
        return page
    page.notes += _draft_notes(target, draft)
    setup = planner.Setup(target, draft, accel, context_len, target_dtype, draft_dtype, kv_dtype,
                          target_overhead_s=drafts.target_overhead_ms / 1e3,
                          draft_overhead_s=drafts.draft_overhead_ms / 1e3)
    try:
        page.plan = planner.plan(setup, page.report, k_max=k_max)
    except planner.PlanError as exc:
        page.errors.append(f"Memory: {exc}")
        return page
    _read_plan(page, drafts.measured, batch)
    return page


def _read_acceptance(page: PlanPage, rec) -> None:
    """The page's acceptance from a record: its analysis, alpha's interval, notes, table."""
    page.models = rec.models
    page.report = acceptance.analyse(rec)
    ci = page.report.alpha_ci
    page.alpha_ci = f"{ci[0]:.3f}-{ci[1]:.3f}" if ci else "no interval: an average"
    page.notes += list(rec.notes)
    page.tables["acceptance"] = page.report.rows


def _draft_notes(target, draft) -> list[str]:
    """What the page says of the draft: another vocabulary, acceptance measured with a
    drafter that is not a model, a tree's cost."""
    notes = []
    if draft.kind == "model" and target.vocab != draft.shape.vocab:
        notes.append(f"The vocabularies differ ({target.vocab:,} vs "
                     f"{draft.shape.vocab:,}): a draft must share the target's tokenizer.")
    if draft.kind != "model":
        what = drafting.DRAFT_KINDS[draft.kind]
        notes.append(f"The acceptance is taken as measured with {what}: "
                     "measure it with the drafter you price, since a head's or a lookup's "
                     "acceptance is not a draft model's.")
    if note := drafting.tree_note(draft):
        notes.append(note)
    return notes


def _read_plan(page: PlanPage, measured, batch: int) -> None:
    """The page's verdict, tables and batch note from its plan (page.plan)."""
    p = page.plan
    page.verdict_parts = plantables.verdict_parts(p)
    page.verdict = plantables.verdict(p)
    page.tables.update(by_batch=plantables.batch_rows(p), frontier=plantables.frontier_rows(p),
                       by_k=plantables.k_rows(p), models=plantables.model_rows(p))
    page.model_lines = [plantables.model_line(r) for r in page.tables["models"]]
    if measured.target_s > 0:
        k = measured.k or int(p.best_k[0]) or int(p.ks[0])
        page.tables["measured"] = planner.measured_rows(p, measured, k)
    if batch:
        page.batch_note = _batch_note(p, batch)
