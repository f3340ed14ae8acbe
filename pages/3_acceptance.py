"""/acceptance: acceptance, tokens per call and speedup against draft quality and temperature."""

import streamlit as st

from specviz.figures import charts
from specviz.views import columns, demos, pagedata
from specviz.web import files, notation, ui

app = ui.page("acceptance", path="acceptance", story=("k", "c"))
s = app.settings
st.title("Acceptance: how draft quality turns into speed")
notation.md(
    "How often a draft token survives depends on how much the draft's law overlaps the "
    "target's: beta = sum_x min(p(x), q(x)) at each context, and alpha is its average over "
    "the text the target writes (Leviathan et al. 2022, §3.1). Treating acceptances as "
    "independent with rate alpha gives **(1 − alpha^(k+1)) / (1 − alpha)** tokens per target "
    "call (eq. 1) and a walltime speedup of that divided by **1 + k c** (Thm 3.8). Below, each "
    "point is a long decode under the correct rule; the solid line is the exact long-run value "
    "for our bigram tables, the dashed line the closed form at the exact alpha_eff."
)
st.caption(notation.text(f"k = {s.k} and c = {s.c:g} from the sidebar; context '{s.ctx}', seed "
                         f"{s.seed}. These sweeps build their own drafts from the target P, so the "
                         f"sidebar's draft is not used here. {pagedata.PAGE_ROUNDS:,} rounds per "
                         "measured point."))

SWEEPS = {  # each tab: its draft, measured points, curve grid, x axis, chart key, file name
    "alpha": ("The draft mixes the target with a junk table: q = alpha p + (1 − alpha) junk, "
              "where junk hands p's probabilities out in reversed rank order. alpha = 1 copies "
              "the target.", pagedata.ALPHA_POINTS, pagedata.ALPHA_GRID,
              dict(x_title="alpha (mix weight)"), "alpha_sweep", "alpha_sweep"),
    "T": ("The draft is the target itself at another temperature: q = temper(p, T), each row "
          "raised to 1/T and renormalised. T = 1 copies the target; both hotter and colder "
          "drafts lose acceptance.", pagedata.T_POINTS, pagedata.T_GRID,
          dict(x_title="draft temperature T (log)", log_x=True, tickvals=pagedata.T_TICKS),
          "t_sweep", "temperature_sweep"),
}
tab, containers = ui.tabs("tab", pagedata.ACCEPTANCE_TABS)
about, points, grid, axis, chart_key, file_name = SWEEPS[tab]
with dict(zip(pagedata.ACCEPTANCE_TABS, containers, strict=True))[tab]:
    notation.md(about)
    measured = pagedata.reprice(ui.cached(demos.draft_sweep)(
        app.standard, tab, points, c=0.0, n_rounds=pagedata.PAGE_ROUNDS),
        s.c, s.k)  # measured once per k; priced at the sidebar's c
    curve = ui.cached(pagedata.draft_curve)(app.standard, tab, grid, c=s.c)
    ui.chart(charts.sweep_figure(
        measured, curve, tab, title=f"Against {pagedata.ACCEPTANCE_TABS[tab]} (k = {s.k}, "
        f"c = {s.c:g})", **axis), key=chart_key)
    ui.table(measured, columns.SWEEP, fold="The measured points (table)")
    files.download_csv(measured, f"{file_name}_k{s.k}")
st.caption(notation.text("acceptance = accepted / drafted (vLLM's draft acceptance rate), which is "
                         "not alpha: acceptance stops at the first rejection. Error bars: one "
                         "standard error."))
ui.finish(app)
