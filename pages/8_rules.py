"""/rules: every verification rule in the registry, audited side by side; production metrics."""

import streamlit as st

from specviz.figures import methods, rulecharts
from specviz.views import columns, gallery, pagedata
from specviz.views import methods as method_rows
from specviz.web import files, notation, rulesui, ui

app = ui.page("rules", path="rules")
s = app.settings
st.title("The rules gallery: every verification rule, audited")
finding, controls = st.container(), st.container()  # the chart leads; drawn once it is run
with controls:
    n, params = rulesui.run_controls(gallery.param_specs())
n, cap_note = pagedata.capped_n(n, s.k, tuple(gallery.RULES), params, app.tree)
if cap_note:
    controls.info(notation.text(cap_note))
controls.caption(notation.text(f"Context '{s.ctx}', k = {s.k}, seed {s.seed}, the sidebar's "
                               "draft. Every rule runs on its own seeded stream, all rules "
                               "side by side."))
with st.spinner(f"{n:,} decodes under each of {len(gallery.RULES)} rules..."):
    g = ui.cached(gallery.gallery)(app.raw, n=int(n),
                                   params={**params, **gallery.warp_params(app.warp)})
rows = gallery.gallery_rows(g)
with finding:
    if g.stopped:
        st.warning(notation.text(g.stopped))
    ui.chart(rulecharts.gallery_figure(rows, g.threshold, g.n), key="gallery",
             min_width=rulecharts.GALLERY_MIN_PX)
    st.caption(notation.text(
        "Right is more acceptance, up is further from the target's law. Exact rules sit on "
        "the bottom line (their exact TV is 0 up to rounding); a rule between that line and "
        "the dashed one is biased, but n decodes cannot see it. Hover a point for its Monte "
        "Carlo TV."))
    m = st.columns(3)
    m[0].metric(notation.text("sampling floor (expected TV of n exact draws)"), f"{g.floor:.5f}")
    m[1].metric(notation.text("pass threshold (floor + McDiarmid margin)"), f"{g.threshold:.5f}")
    m[2].metric(notation.text("decodes per rule"), f"{g.n:,}")
ui.intro(
    "Speculative decoding is only as exact as the rule that checks the drafts. Every rule in "
    "specviz's registry runs on the same pair of tables: the **lossless** ones (standard "
    "rejection sampling and its exact variants, block verification and the correctly "
    "verified sampling warp among them), two that are **lossy by design** (they trade "
    "exactness for acceptance on purpose) and the **broken** ones, each a bug that shipped in "
    "a public implementation or is easy to ship. For each rule we compute the exact law of "
    "the first two emitted tokens (no sampling) and its total variation (TV) from the "
    "target's own law, then run n decodes and ask whether the Monte Carlo TV rises above the "
    "pass threshold of an exact sampler (as on /exactness). Acceptance is accepted / drafted "
    "over a long decode, computed exactly.")
st.subheader("Every rule, side by side")
if box := ui.folded_open(rulesui.GALLERY_TABLE):  # the grid and its download, once opened
    with box:
        ui.table(rows, columns.GALLERY, height=35 * (len(rows) + 1) + 3)
        files.download_csv(rows, f"rules_gallery_k{s.k}_n{g.n}")
st.caption(notation.text(
    f"Verdict: **caught** when the Monte Carlo TV exceeds the threshold "
    f"{g.threshold:.5f} or the chi-square p-value is below {gallery.GOF_ALPHA:g}; "
    "**consistent with the target** when neither happens and the exact TV is 0; **not "
    "resolvable at this n** when the rule is biased but neither test sees it at this n. 'n "
    "to resolve' is the smallest n whose threshold lies under the exact TV: from there on a "
    "biased rule is expected above the line, since its expected Monte Carlo TV is at least "
    "its exact TV (sampling noise adds to the bias, so it is often caught sooner). "
    "'This run' counts the rounds of the n audited decodes (they start at the context token); "
    "'long run' weighs contexts as a long decode visits them (exact)."))
ui.table(rows, columns.GALLERY_RUN, fold="This run's acceptance, the chi-square p-values and "
         "each rule's parameters")

st.subheader("Sampling warps")
notation.md(
    "A request that sets temperature, top-k, top-p or min-p asks for text from the warped "
    "target, so the rules audit against that law. The rules above run on the tables before "
    "the warp; the warp rules (`warped` and the four `warp_` bugs) apply "
    + ("the sidebar's warp, " + app.warp.text if not app.warp.identity else
       "their own default warp (T = 0.8, top-p = 0.9) since the sidebar's is off")
    + ". Below: what the correctly verified warp does to acceptance on these tables.")
sweep = ui.cached(method_rows.warp_sweep)(app.raw, draft=app.warp.draft)
ui.chart(lambda: methods.warp_figure(sweep), key="warps", fold="Acceptance under each warp (chart)",
         caption="Exact long-run acceptance (accepted / drafted) and alpha (the mean overlap of "
         "the warped target with the row the draft samples from). With the draft left "
         "unwarped, sharpening the target moves it away from the draft.")

st.subheader("What each rule does, and where it comes from")
rulesui.rule_notes(gallery.rule_notes(g))

st.subheader("Production metrics")
st.markdown(notation.text(  # the rule's name is kept out of the re-lettering
        "Serving systems log speculative decoding under a few names (vLLM's): the **mean "
        "acceptance length** (1 + accepted / drafts, i.e. tokens per target call), the "
        "**draft acceptance rate** (accepted / drafted), the **per-position acceptance rate** "
        "and the **acceptance histogram** (drafts accepted per round). Below, a long decode "
        "under the sidebar's rule ('") + s.rule + notation.text(
        "', with the parameters above) reports them; beside each, its exact long-run value "
        "and the i.i.d. theory at alpha = E[sum_x min(p, q)]: position i is kept with "
        "alpha^i and the histogram is a geometric law capped at k (Leviathan et al. 2022, "
        "Sec. 3.3)."))
rep = ui.cached(gallery.production)(app.scenario, params=params,
                                    n_rounds=gallery.METRICS_ROUNDS)
pm = st.columns(3)
pm[0].metric(notation.text("mean acceptance length (measured)"), f"{rep.rows[0]['measured']:.4f}")
pm[1].metric(notation.text("draft acceptance rate (measured)"), f"{rep.rows[1]['measured']:.4f}")
pm[2].metric(notation.text("alpha = E[sum min(p, q)] (exact)"), f"{rep.alpha:.4f}")
rulesui.production_table(rep)
ui.chart(lambda: rulecharts.production_figure(rep), key="production",
         fold="The production metrics by position and as a histogram (chart)")
files.download_csv(gallery.production_rows(rep), f"production_metrics_{s.rule}_k{s.k}")
st.caption(notation.text(
    "Where the exact values leave the theory, acceptance is not i.i.d. on these tables: how "
    "likely a draft is kept depends on the context it was drafted at."))

rulesui.converter(s.k)
ui.finish(app)
