"""/draft-length: the k sweep; tokens per call saturate while the cost of a round grows."""

import streamlit as st

from specviz.figures import charts, rulecharts
from specviz.views import columns, demos, pagedata
from specviz.web import files, notation, ui

app = ui.page("draft length", path="draft-length", story=("k", "c"))
s = app.settings
st.title("Draft length k: where more guessing stops paying")
notation.md(
    "Each extra drafted token is accepted only if every earlier one was, so the expected "
    "tokens per target call, **(1 − alpha^(k+1)) / (1 − alpha)**, creeps up to 1 / (1 − alpha) "
    "and stops (Leviathan et al. 2022, eq. 1). The price of a round, one target call plus k "
    "draft calls at c each, **1 + k c**, grows without limit. Their ratio, the speedup, "
    "therefore peaks at an interior k (Thm 3.8; §3.4 on choosing k)."
)
st.caption(notation.text(f"Draft in use: {pagedata.DRAFT_NAMES[s.draft]} (sidebar), context "
                         f"'{s.ctx}', c = "
                         f"{s.c:g}, seed {s.seed}; correct rule. {pagedata.PAGE_ROUNDS:,} rounds "
                         "per measured k."))
measured = pagedata.reprice(ui.cached(demos.k_sweep)(
    app.standard, c=0.0, ks=pagedata.K_POINTS, n_rounds=pagedata.PAGE_ROUNDS), s.c)
curve = ui.cached(pagedata.k_curve)(app.standard, c=s.c, ks=pagedata.K_GRID)
best = demos.best_row(measured)
best_exact = demos.best_row(curve, "speedup_exact")
k_theory, s_theory = pagedata.theory_best_k(curve[0]["alpha_eff"], s.c)

cols = st.columns(4)
cols[0].metric(notation.text("best k (measured)"), f"{best['k']} · {best['speedup']:.3f}x")
cols[1].metric(notation.text("best k (exact)"),
               f"{best_exact['k']} · {best_exact['speedup_exact']:.3f}x")
cols[2].metric(notation.text("best k (theory, Thm 3.8)"), f"{k_theory} · {s_theory:.3f}x")
cols[3].metric(notation.text("alpha_eff of the pair"), f"{curve[0]['alpha_eff']:.4f}")
ui.chart(charts.k_sweep_figure(measured, curve, best, best_exact), key="k_sweep")
st.caption(notation.text("Left: both curves are in target-call units per round; the speedup on "
                         "the right is their ratio. The star is the best measured k, the dotted "
                         "line the best exact k."))
for label, rows, cols, name in (("The measured points (table)", measured, columns.SWEEP, "sweep"),
                                ("exact and theory values for every k", curve, columns.CURVE,
                                 "curve")):
    if box := ui.folded_open(label):  # the table and its download, drawn once opened
        with box:
            ui.table(rows, cols)
            files.download_csv(rows, f"k_{name}_c{s.c:g}")

st.subheader("Dynamic draft length")
notation.md(
    "Servers rarely keep k fixed. Four policies decode the same text from the same random "
    "numbers (the uniform that drafts output position t, the coin that checks it and the draw "
    "of a rejection or bonus token there are shared), so their differences come from the "
    "policy alone. **constant**: k every round. **heuristic**: k + 2 after a round that kept "
    "every draft, k − 1 otherwise (at least 1). **confidence**: keep drafting while the "
    "draft's top probability max_x q(x) is at least a threshold. **oracle**: drafts exactly "
    "the tokens that will be kept, a bound no real policy reaches. All use the correct "
    "rule, so every text is exact (Leviathan et al. 2022, Algorithm 1, with k set per round)."
)
box, field, opened = ui.folded_fields("Each policy's tokens, calls and speedup at a "
                                      "confidence threshold (table)")
with box:
    threshold = float(field("threshold", st.slider,
                            notation.text("confidence threshold on max q")))


def policies() -> tuple:
    """The four policies' decodes and their rows, at the threshold and the sidebar's c."""
    runs = ui.cached(pagedata.dynamic_runs)(app.standard, length=pagedata.DYN_TOKENS,
                                            threshold=threshold)
    return runs, pagedata.policy_rows(runs, s.c)


if opened:
    with box:
        policy = policies()[1]
        ui.table(policy, columns.policy_columns(s.c))
        files.download_csv(policy, f"dynamic_k{s.k}_c{s.c:g}")
        st.caption(notation.text(
            f"About {pagedata.DYN_TOKENS:,} tokens per policy from context '{s.ctx}', seed "
            f"{s.seed}, starting at the sidebar's k = {s.k}; a policy drafts at most "
            f"{pagedata.dynamic_k_max(s.k)} per round. Speedup = tokens / (target calls + c x "
            "draft calls), against plain decoding's one token per target call."))
ui.chart(lambda: rulecharts.policy_k_figure(*policies(), pagedata.DYN_SHOWN_ROUNDS),
         key="dynamic_k", fold="k drafted in each round, by policy (chart)")
ui.finish(app)
