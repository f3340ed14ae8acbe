"""/cost: the break-even draft cost, speedup against c, and the speedup surface over k and c."""

import streamlit as st

from specviz.figures import costcharts, surfaces
from specviz.views import columns, demos, pagedata
from specviz.web import files, notation, ui

app = ui.page("cost", path="cost", story=("k", "c"))
s = app.settings
st.title("Cost: when a draft is too dear to pay")
notation.md(
    "A round costs one target call plus k draft calls at c each, so the speedup is "
    "**tokens per call / (1 + k c)** (Leviathan et al. 2022, Thm 3.8). Setting it to 1 gives "
    "the break-even draft cost **c\\* = (tokens per call − 1) / k**: above it, speculation "
    "makes decoding slower, while the text it writes is exactly as good as before, so "
    "nothing in the output tells you."
)
cm = ui.cached(demos.cost_model)(app.standard, costs=pagedata.COST_GRID)
marks = pagedata.slow_cases(cm, (s.c, *pagedata.SLOW_COSTS))
now, *slow = marks
alpha = ui.cached(pagedata.long_run_alpha)(app.standard)

cols = st.columns(4)
cols[0].metric(notation.text("break-even c*"), f"{cm.break_even:.4f}")
cols[1].metric(notation.text(f"tokens per call (exact, k = {s.k})"),
               f"{cm.tokens_per_call:.4f}")
cols[2].metric(notation.text(f"speedup at c = {s.c:g}"), f"{now['speedup']:.3f}x",
               "slower than the target alone" if now["slower"] else None,
               delta_color="inverse" if now["slower"] else "off")
cols[3].metric(notation.text("alpha (exact, long run)"), f"{alpha:.4f}")

for r in slow:
    verdict = ("slower than decoding with the target alone, with exactly the same output: "
               "no error, no warning" if r["slower"]
               else f"still faster; it turns slower once c passes c* = {cm.break_even:.4f}")
    notation.md(f"- **A bigger draft at c = {r['c']:g}**: the same acceptance "
                f"({cm.tokens_per_call:.3f} tokens per call at k = {s.k}) gives "
                f"**{r['speedup']:.3f}x**, {verdict}.")
ui.chart(costcharts.cost_curve(cm, marks), key="cost_curve")
ui.table(cm.rows, columns.COST, fold="speedup by c (table)")
files.download_csv(cm.rows, f"cost_k{s.k}")

st.subheader("Speedup over k and c")
if box := ui.folded_open("The speedup over every k and c, as a heatmap or a 3D surface (chart)",
                         opened=ui.keep("surface") != "heatmap"):  # a link to the 3D view
    with box:
        surface = ui.cached(demos.speedup_surface)(alpha)
        notation.md(f"The closed form at the pair's exact long-run **alpha = {alpha:.4f}** "
                    "(Leviathan et al. 2022, Thm 3.8), over k = 1..32 and c = 0.001..1 on a log "
                    "axis. The vermillion line is speedup = 1 (the break-even c* at each k); the "
                    "ridge (orange on the heatmap, black dashes on the surface) is the best k at "
                    "each c; the diamond marks the sidebar's k and c.")
        point, line = pagedata.surface_point(surface, s.k, s.c), pagedata.break_even_curve(surface)
        view, (t_heat, t_3d) = ui.tabs("surface", pagedata.SURFACE_TABS)
        with t_heat if view == "heatmap" else t_3d:
            ui.chart(surfaces.surface_heatmap(surface, point, line) if view == "heatmap" else
                     surfaces.surface_3d(surface, point, line), key=f"surface_{view}")
        files.download_csv(pagedata.surface_rows(surface), "speedup_surface",
                           "Download the surface as CSV")
ui.finish(app)
