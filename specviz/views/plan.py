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
    overheads,
    pasted,
    planner,
    plantables,
    record,
    servermetrics,
)
from ..analysis.parallel import ParallelError
from ..analysis.roofline import ACCELERATORS, Accelerator, find_gpu
from .plansettings import (  # noqa: F401 (EXAMPLE_LABELS, from_url: the page's, from here)
    DEFAULTS,
    EXAMPLE_LABELS,
    EXAMPLES,
    PlanSettings,
    from_url,
    settings_json,
)
from .work import heavy

preset_names = modelcfg.preset_names
EXAMPLE_DIR = Path(__file__).resolve().parents[1] / "analysis" / "examples"
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
    settings: PlanSettings = DEFAULTS  # what was planned


def _model(text: str, preset: str, who: str, errors: list[str]):
    try:
        if text.strip():
            return modelcfg.parse_config(text, name=who)
        return modelcfg.preset(preset)
    except modelcfg.ConfigError as exc:
        errors.append(f"{who} model: {exc}")
        return None


def _drafter(s: PlanSettings, target, errors: list[str]) -> drafting.Drafter | None:
    """The drafter the inputs describe: a draft model (config or preset), a head (its own
    config when one is pasted, else the target's width and head_layers), Medusa's heads (its
    tree: depth tree_steps, nodes tree_tokens - 1; Medusa's own where not given) or n-gram
    lookup; then a tree when topk > 1."""
    text, kind, who = s.draft_text, s.draft_kind, s.draft_name
    try:
        if kind == "lookup":
            d = drafting.ngram_draft(s.lookup_ms / 1e3)
        elif kind == "medusa":
            nodes, depth = drafting.MEDUSA_TREE
            return drafting.medusa_heads(target, depth=s.tree_steps or depth,
                                         nodes=s.tree_tokens - 1 if s.tree_tokens else nodes)
        elif kind in drafting.HEADS and text.strip():
            shape, vocab = modelcfg.parse_head(text, name=who)
            d = drafting.head_from_config(shape, target, kind=kind, draft_vocab=vocab)
        elif kind in drafting.HEADS:
            d = drafting.head_from_target(target, kind=kind, layers=s.head_layers)
        else:
            shape = _model(text, s.draft_preset, who, errors)
            if shape is None:
                return None
            d = drafting.model_draft(shape)
        if s.tree_steps:
            d = drafting.with_tree(d, topk=s.tree_topk, steps=s.tree_steps,
                                   verify_tokens=s.tree_tokens or s.tree_steps + 1)
        return d
    except (drafting.DraftError, modelcfg.ConfigError) as exc:
        errors.append(f"{who}: {exc}")
        return None


def _measurements(s: PlanSettings, notes: list[str]) -> record.Acceptance | record.Averages:
    """The measurements read (the pasted metrics, else the shipped example); a scrape of
    several models, none or an absent one chosen, is read for its first model, with a
    note."""
    text = s.metrics_text if s.metrics_text.strip() or not s.example else example_text(
        s.example)

    def read(m: str | None) -> record.Acceptance | record.Averages:
        if s.metrics_before.strip():
            return servermetrics.parse_scrapes(s.metrics_before, text, model=m)
        return servermetrics.parse_any(text, k=s.k_len or None, model=m,
                                       rounds=s.rounds or None)

    try:
        return read(s.model or None)
    except record.ModelChoice as exc:
        first = exc.models[0]
        names = pasted.listed(exc.models)
        notes.append(f"The scrape holds {len(exc.models):,} models ({names})"
                     + (f" and none is {s.model}" if s.model else "")
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


def measured_costs(s: PlanSettings) -> planner.Measured:
    """The pass times measured at batch 1, in seconds (0 = not measured), at measured_k."""
    return planner.Measured(s.measured_target_ms / 1e3, s.measured_verify_ms / 1e3,
                            s.measured_draft_ms / 1e3, s.measured_c, s.measured_k)


@heavy  # parses up to 2 MB of pasted text: in the app's bounded workers, with its stop check
def plan_page(s: PlanSettings, *, here: planner.MeasuredHere | None = None) -> PlanPage:
    """Everything /plan shows for the settings s; errors instead of exceptions for any bad
    input. here: acceptance and pass times measured on this machine, used instead of the
    metrics and the measured costs."""
    page = PlanPage(settings=s)
    costs = measured_costs(s)
    if here is not None:
        costs = here.measured
        page.notes.append(f"Acceptance and pass times {here.source}.")
    try:
        _read_acceptance(page, here.acceptance if here is not None else _measurements(
            s, page.notes))
    except record.MetricsError as exc:
        page.errors.append(f"Measurements: {exc}")
    hardware = _hardware(s, page.errors)
    target = _model(s.target_text, s.target_preset, s.target_name, page.errors)
    draft = (_drafter(s, target, page.errors)
             if target is not None or s.draft_kind == "model" else None)  # a head needs it
    if page.report is None or target is None or draft is None or hardware is None:
        return page
    page.notes += _draft_notes(target, draft)
    accel, link, fixed = hardware
    setup = planner.Setup(target, draft, accel, s.context_len, s.target_dtype, s.draft_dtype,
                          s.kv_dtype, target_overhead_s=s.target_overhead_ms / 1e3,
                          draft_overhead_s=s.draft_overhead_ms / 1e3, tp=s.tp,
                          draft_tp=s.draft_tp, devices=s.devices, link=link, costs=fixed)
    try:
        page.plan = planner.plan(setup, page.report, k_max=s.k_max)
    except planner.PlanError as exc:
        page.errors.append(f"Memory: {exc}")
        return page
    except ParallelError as exc:
        page.errors.append(f"Parallelism: {exc}")
        return page
    _read_plan(page, costs, s.batch)
    return page


def _hardware(s: PlanSettings, errors: list[str]) -> tuple | None:
    """(the accelerator, the link tensor parallelism crosses or None, the fixed costs), or
    None with a message for each that cannot be read."""
    try:
        accel = accelerator(s.gpu, mem_gb=s.mem_gb, bw_tbs=s.bw_tbs, tflops=s.tflops,
                            fp8_tflops=s.fp8_tflops)
    except ValueError as exc:
        errors.append(f"Accelerator: {exc}")
        return None
    link = None
    if s.interconnect:
        try:
            link = accel.link(s.interconnect)
        except ValueError as exc:
            errors.append(f"Interconnect: {exc}")
    try:
        fixed = overheads.overheads(s.exec_mode, **{f"{c}_us": getattr(s, f"{c}_us")
                                                    for c in overheads.COSTS})
    except overheads.OverheadError as exc:
        errors.append(f"Fixed costs: {exc}")
        return None
    return None if s.interconnect and link is None else (accel, link, fixed)


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
        tree = p.setup.draft.tree
        k = tree.steps if tree else measured.k or p.acceptance.k  # where it was measured
        page.tables["measured"] = planner.measured_rows(p, measured, k)
        page.notes.append(f"Measured pass times are compared at k = {k}, " + (
            "the tree's depth." if tree else "the draft length they were measured at."
            if measured.k else "the draft length the acceptance was measured at (give the "
            "k of your verify pass if it was another)."))
    if batch:
        page.batch_note = _batch_note(p, batch)


def page_json(page: PlanPage) -> dict:
    """The plan as JSON (the CLI's --json): its tables and verdict (plantables.to_json), the
    settings it was made from, the notes, the measured table and the batch note."""
    return {**plantables.to_json(page.plan), "settings": settings_json(page.settings),
            "notes": page.notes, "measured": page.tables.get("measured"),
            "batch_note": page.batch_note}


def link_sources(s: PlanSettings) -> str:
    """The interconnect tensor parallelism crosses and its source, where it crosses one ("":
    at tp 1, or a link the accelerator lacks: its error says so)."""
    if s.tp < 2 and s.draft_tp < 2:
        return ""
    try:
        link = ACCELERATORS[find_gpu(s.gpu)].link(s.interconnect)
    except ValueError:
        return ""
    return f"Interconnect source: {link.name}: {link.source}."
