"""/exactness: n decodes under each rule, measured against the target's exact joint law."""

import pandas as pd
import streamlit as st

from specviz.figures import charts
from specviz.views import columns, demos, pagedata
from specviz.web import files, notation, ui
from specviz.web import settings as S

app = ui.page("exactness", path="exactness")
s = app.settings
st.title("Exactness: is the text distributed as the target's?")
notation.md(
    "We run **n** independent decodes from the context token under each verification rule, "
    "keep the first two emitted tokens, and compare their empirical joint law with the "
    "target's own two-token law by total variation (TV). Even a perfect sampler shows some TV "
    "at finite n: the **sampling floor**, the expected TV of n exact draws, shrinking like "
    "1/sqrt(n). The correct rule is exact (Leviathan et al. 2022, Thm 3.5; Chen et al. 2023, "
    "Thm 1), so it sits at the floor; each broken rule also has an **exact TV**, computed "
    "without sampling, and its Monte Carlo TV levels off there however large n grows."
)
n = ui.bind("n", st.number_input, "n: decodes per rule",
            help=f"At most {S.N_APP_MAX:,} decodes per rule (the app's cap); "
                 "10^6 takes about a second, 10^7 several.")
st.caption(notation.text(f"n is capped at {S.N_APP_MAX:,} decodes per rule; the context is "
                         f"'{s.ctx}', k = {s.k}, seed = {s.seed}. Rules run: the "
                         "correct rule and the three broken ones of the from-scratch tutorial "
                         f"({', '.join(pagedata.EXACTNESS_RULES)}) and the sidebar's rule."))
rules = pagedata.page_rules(s.rule)
n, cap_note = pagedata.capped_n(n, s.k, rules, tree=app.tree)
if cap_note:
    st.info(notation.text(cap_note))
elif n >= S.N_APP_MAX:
    st.info(notation.text(f"The cap bites: n = {S.N_APP_MAX:,} is the most one run may take here."))
with st.spinner(f"{n:,} decodes under each rule..."):
    ex = ui.cached(demos.exactness)(app.scenario, n=int(n), rules=rules)
if ex.stopped:
    st.warning(notation.text(ex.stopped))
rows = pagedata.exactness_rows(ex)

cols = st.columns(3)
cols[0].metric(notation.text("sampling floor (expected TV of n exact draws)"),
               f"{rows[0]['floor']:.5f}")
cols[1].metric(notation.text("target sampled directly, n times"), f"{ex.direct_tv:.5f}")
cols[2].metric(notation.text("pass threshold (floor + McDiarmid margin)"),
               f"{rows[0]['threshold']:.5f}")

st.subheader("TV against the sampling floor")
ui.table(rows, columns.EXACTNESS)
files.download_csv(rows, f"exactness_n{n}")
st.caption(notation.text("Threshold = floor + sqrt(ln(1/delta) / (2 n)), delta = 1e-6: by "
                         "McDiarmid's inequality an exact sampler crosses it with probability at "
                         "most 1e-6. The p-value is Pearson's chi-square goodness of fit of the "
                         "counts to the target's joint. A rule differs from the target when either "
                         f"test says so: TV above the threshold, or p below {demos.GOF_ALPHA:g}."))
ui.chart(charts.tv_bars(rows, ex.direct_tv), key="tv_bars")

if box := ui.folded_open("The sidebar's rule against the target: the first token, the first "
                         "two (charts)"):
    left, right = box.columns(2)
    with left:
        marg = pagedata.marginal_rows(ex, s.rule, app.vocab)
        ui.chart(charts.marginal_bars(marg, s.rule), key="marginal")
        files.download_csv(marg, f"marginal_{s.rule}")
    with right:
        diff = pagedata.joint_diff(ex, s.rule)
        ui.chart(charts.joint_diff_heatmap(diff, app.vocab, s.rule), key="joint_diff")
        files.download_csv(pd.DataFrame(diff, index=list(app.vocab), columns=list(app.vocab))
                           .reset_index(names="x1"), f"joint_diff_{s.rule}")
    box.caption(notation.text(f"Rule shown in the two charts above: '{s.rule}' (change it in "
                              "the sidebar)."))

st.subheader("Convergence: TV against n")
ui.chart(lambda: charts.convergence_figure(ui.cached(demos.convergence)(
    app.scenario, ns=pagedata.CONVERGENCE_NS, rules=rules), ex), key="convergence",
    fold="TV against n for each rule, beside the floor (chart)",
    caption="Each point of the sweep is an independent run (seed + its index). A lossless "
    "rule tracks the floor down; a broken rule flattens at its exact TV (dashed). The stars "
    "are this page's run at n.")
ui.finish(app, n=int(n))
