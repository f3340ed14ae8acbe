"""/rules' controls and repeated blocks: the rule parameters' sliders, each rule's notes,
the production-metrics table and the metric converter. The page reads them in order."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from ..views import columns, gallery
from . import notation, ui

CONVERT_FROM = {"alpha": "alpha", "rate": "draft acceptance rate (accepted / drafted)",
                "length": "mean acceptance length (1 + accepted / drafts)"}


RUN_CONTROLS = "Monte Carlo n and the parametrised rules' parameters"  # their fold's label
NOTES = "Each rule: what it does, its rejection law, its parameters and its source"
GALLERY_TABLE = ("Every rule's verdict at this n, exact and Monte Carlo TV, n to resolve, "
                 "acceptance (table)")


def run_controls(specs: Sequence[dict]) -> tuple[int, dict[str, dict[str, float]]]:
    """n (decodes per rule) and one slider per parameter of the parametrised rules (the URL
    field '<rule>_<name>'), three to a row, in a section drawn only once opened (ui.fold;
    closed, every field keeps its value and its place in the link). Returns n and the
    parameters by rule."""
    box, field, opened = ui.folded_fields(RUN_CONTROLS)
    with box:
        n = field("rules_n", st.select_slider, "n: Monte Carlo decodes per rule",
                  format_func=lambda v: f"{v:,}")
        params: dict[str, dict[str, float]] = {}
        cols = st.columns(3) if opened else [contextlib.nullcontext()] * 3
        for i, spec in enumerate(specs):
            # rule names are identifiers, never re-lettered (topk_q stays topk_q)
            label = f"{spec['rule']}: " + notation.text(f"{spec['name']} ({spec['help']})")
            with cols[i % 3]:
                value = field(f"{spec['rule']}_{spec['name']}", st.slider, label)
            params.setdefault(spec["rule"], {})[spec["name"]] = value
    return int(n), params


def rule_notes(notes: Sequence[dict]) -> None:
    """Each rule's note: what it does, its rejection law, its parameters and where it comes
    from; all in one section drawn only once opened (ui.fold), a rule to a paragraph."""
    if not (box := ui.folded_open(NOTES)):
        return
    for note in notes:
        params = "; ".join(f"{q['name']} = {q['value']:g} (default {q['default']:g}, range "
                           f"{q['lo']:g}..{q['hi']:g}: {q['help']})" for q in note["params"])
        box.markdown(
            f"**{note['rule']}: " + notation.text(f"{note['label']} ({note['family']}, "
                                                  f"{note['verdict']})") + "**  \n"
            + notation.text(f"{note['description'][0].upper()}{note['description'][1:]}. "
                            f"**On rejection** the token comes from: {note['reject_law']}."
                            + (f" **Parameters:** {params}." if params else "")
                            + f" **Source:** {note['source']}."))


def production_table(rep) -> None:
    """The production metrics, measured beside exact and the i.i.d. theory."""
    summary = pd.DataFrame(rep.rows)
    summary["metric"] = summary["metric"].map(notation.text)
    ui.table(summary, columns.production_columns(rep.rounds or gallery.METRICS_ROUNDS),
             fold="The production metrics: measured, exact and theory (table)")


CONVERTER = "Converter: why accepted / drafted is not alpha"


def converter(k: int) -> None:
    """Alpha, the draft acceptance rate and the mean acceptance length from any one of
    them at k (Leviathan et al. 2022, eq. 1), in a section drawn only once opened."""
    if not (box := ui.folded_open(CONVERTER)):
        ui.keep("conv_given"), ui.keep("conv_value")  # closed: the link keeps them
        return
    left, right = box.columns([1, 2])
    with left:
        given = ui.bind("conv_given", st.radio, notation.text("the number is"),
                        format_func=lambda g_: notation.text(CONVERT_FROM[g_]))
        value = ui.bind("conv_value", st.number_input, notation.text("value"))
    try:
        conv = gallery.convert_metric(float(value), k, given)
    except ValueError as exc:
        right.warning(notation.text(f"Cannot convert at k = {k}: {exc}."))
        return
    with right:
        for col, (key, value) in zip(st.columns(3), conv.items(), strict=True):
            col.metric(notation.text(key.replace("_", " ")), f"{value:.4f}")
        notation.md(
            f"At k = {k}, alpha = {conv['alpha']:.4f} means each draft that is *tried* "
            f"survives with that chance; but the server divides by every token drafted, and "
            f"position i is tried only when the i − 1 before it survived. So accepted / "
            f"drafted = alpha (1 − alpha^k) / (k (1 − alpha)) = "
            f"{conv['draft_acceptance_rate']:.4f}, and 1 + accepted / drafts = "
            f"(1 − alpha^(k+1)) / (1 − alpha) = {conv['mean_acceptance_length']:.4f} "
            "(from Leviathan et al. 2022, eq. 1). The two agree only at k = 1 (or alpha = 0 "
            "or 1)."
        )
