"""/audit: someone's verifier function against the exact laws, drawn as /exactness draws ours."""

import streamlit as st

from specviz.figures import charts
from specviz.views import auditpage as av
from specviz.views import columns
from specviz.web import files, guard, local, ui, urlcodec

app = ui.page("audit", path="audit")
st.title("Audit a verifier: is your speculative sampling lossless?")
ui.intro("A verifier that samples from the wrong law still writes fluent text and passes "
         "every benchmark; only counting what it emits shows the bias. "
         "Give specviz a function of the shape most implementations share, "
         "verify(drafted, q, p, rng) → emitted (the k drafts, the draft's rows q (k × V), the "
         "target's rows p (k + 1 × V), a NumPy Generator; it returns the kept drafts, then a "
         "correction or the bonus). specviz drafts from q itself on pairs chosen to expose "
         "bugs (zeros in q and p, p ≫ q, near-ties, a one-hot row, k = 1), plays many rounds "
         "and compares what comes out (the first token, the first two, tokens per round) "
         "with the exact laws of the rule (Leviathan et al. 2022, Algorithm 1) and of every "
         "known bug. From a shell: python -m specviz audit --verifier MODULE:FUNCTION.")
may_paste = local.may_run_code()
left, right = st.columns([3, 2])
with right:
    n = ui.bind("a_n", st.number_input, "n: samples a pair")
    seed = ui.bind("a_seed", st.number_input, "seed")
with left:
    src = ui.bind("a_src", st.radio, "verifier", horizontal=True,
                  format_func={"example": "a built-in example", "code": "your code"}.get) \
        if may_paste else ui.hold("a_src", "example")
    if src == "example":
        name = ui.bind("a_example", st.selectbox, "example", format_func=av.expected)
    else:
        code = ui.bind("a_code", st.text_area, "your verify (Python, run on this machine "
                       "only)", cast=lambda b: urlcodec.decode_blob(b) or av.CODE_EXAMPLE,
                       height=300)
if not may_paste:
    st.caption("This is a hosted server: it never runs code a visitor pastes. Pick a built-in "
               "example, or run specviz on your machine (SPECVIZ_LOCAL=1 streamlit run app.py, "
               "or streamlit run app.py --server.address localhost) to audit your own.")
if src == "example":
    with st.spinner(f"{int(n):,} samples on each of {len(av.PAIRS)} pairs…"):
        a = ui.cached(av.audit_example)(name, n=int(n), seed=int(seed))
else:
    try:
        with st.spinner(f"Your function, {int(n):,} samples on each of {len(av.PAIRS)} pairs…"):
            a = guard.session_memo(av.audit_code, (code,), {"n": int(n), "seed": int(seed)})
    except ValueError as exc:
        st.error(guard.plain(f"Not audited: {exc}."))
        st.stop()
getattr(st, av.tone(a))(guard.plain(f"{a.name}: {a.sentence}"))
st.caption(f"{a.calls:,} calls in {a.seconds:.1f} s; the CLI's exit status would be "
           f"{a.status} (0 lossless, 1 biased, 2 bad input, 3 too small to tell). A lossless "
           "verifier fails this audit with probability at most 1% (Bonferroni over every "
           "statistic).")
if a.comparison is not None:
    worst = av.worst_pair(a)
    pair = ui.bind("a_pair", st.selectbox, "pair drawn",
                   format_func=lambda p: p or f"{worst} (where it differs most)") or worst
    near = av.nearest(a)
    c1, c2 = st.columns(2)
    with c1:
        rows = av.first_rows(a, pair)
        ui.chart(charts.marginal_bars(rows, a.name, exact=near), key="a_first")
        files.download_csv(rows, "audit_first_token")
    with c2:
        ui.chart(charts.convergence_figure(av.convergence(a, pair)), key="a_conv",
                 caption="TV of the first two tokens of the first m samples against m. A "
                 "lossless verifier tracks the floor down; a biased one levels off at its "
                 "bias (dashed: the exact TV of the known rule it behaves like).")
    ui.table(av.check_rows(a), columns.AUDIT, fold="every statistic: TV, floor, p-value")
ui.finish(app, **({"a_code": urlcodec.url_blob(code, "function")[0]} if src == "code" else {}))
