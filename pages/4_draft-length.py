"""/draft-length: the k sweep; tokens per call saturate while the cost of a round grows."""

import pandas as pd
import streamlit as st

from specviz import demos, figures, theory, ui
from specviz import settings as S

app = ui.page("draft length")
s = app.settings
st.title("Draft length k: where more guessing stops paying")
st.markdown(
    "Each extra drafted token is accepted only if every earlier one was, so the expected "
    "tokens per target call, **(1 − alpha^(k+1)) / (1 − alpha)**, creeps up to 1 / (1 − alpha) "
    "and stops (Leviathan et al. 2022, eq. 1). The price of a round, one target call plus k "
    "draft calls at c each, **1 + k c**, grows without limit. Their ratio, the speedup, "
    "therefore peaks at an interior k (Thm 3.8; §3.4 on choosing k)."
)
st.caption(f"Draft in use: the sidebar's ({s.draft}), context '{s.ctx}', c = {s.c:g}, "
           f"seed {s.seed}; correct rule. {demos.PAGE_ROUNDS:,} rounds per measured k.")
measured = demos.reprice(ui.cached(demos.k_sweep)(
    app.P, app.Q, app.ctx, 0.0, demos.K_POINTS, demos.PAGE_ROUNDS, s.seed), s.c)
curve = ui.cached(demos.k_curve)(app.P, app.Q, app.ctx, s.c, demos.K_GRID)
best = demos.best_row(measured)
best_exact = demos.best_row(curve, "speedup_exact")
k_theory, s_theory = theory.best_k(curve[0]["alpha_eff"], s.c, S.K_APP_MAX)

cols = st.columns(4)
cols[0].metric("best k (measured)", f"{best['k']} · {best['speedup']:.3f}x")
cols[1].metric("best k (exact)", f"{best_exact['k']} · {best_exact['speedup_exact']:.3f}x")
cols[2].metric("best k (theory, Thm 3.8)", f"{k_theory} · {s_theory:.3f}x")
cols[3].metric("alpha_eff of the pair", f"{curve[0]['alpha_eff']:.4f}")
st.plotly_chart(figures.k_sweep_figure(measured, curve, best, best_exact), key="k_sweep")
st.caption("Left: both curves are in target-call units per round; the speedup on the right is "
           "their ratio. The star is the best measured k, the dotted line the best exact k.")
st.dataframe(pd.DataFrame(measured), hide_index=True)
ui.download_csv(measured, f"k_sweep_c{s.c:g}")
with st.expander("exact and theory values for every k"):
    st.dataframe(pd.DataFrame(curve), hide_index=True)
    ui.download_csv(curve, f"k_curve_c{s.c:g}")
ui.finish(app, s)
