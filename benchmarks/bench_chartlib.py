"""What a chart library costs a Streamlit page in the browser, apart from specviz.

A bare Streamlit app (written to a temporary folder) shows a title and, by its URL, nothing
more, one six-bar Plotly chart, or the same bars as a Vega-Lite chart. Headless chromium
opens each several times in one warm context (the scripts cached); the time from navigation
to the chart drawn is printed as a median with its spread. This bounds from below what any
page with a Plotly chart can reach on this machine, whatever the page does.

    .venv/bin/python benchmarks/bench_chartlib.py            # 6 loads each, first 2 dropped
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from harness import CHROMIUM, CHROMIUM_ARGS, free_port, health  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

APP = '''
import streamlit as st

kind = st.query_params.get("kind", "none")
st.title("A bare page")
bars = {"x": list("abcdef"), "y": [1, 2, 3, 2, 1, 2]}
if kind == "plotly":
    import plotly.graph_objects as go
    st.plotly_chart(go.Figure(go.Bar(**bars)))
elif kind == "dataframe":
    st.dataframe(bars)
elif kind == "table":
    st.table(bars)
elif kind == "vega":
    st.vega_lite_chart({"data": {"values": [dict(x=x, y=y) for x, y in zip(*bars.values())]},
                        "mark": "bar", "encoding": {"x": {"field": "x", "type": "nominal"},
                                                    "y": {"field": "y", "type": "quantitative"}}})
'''
DRAWN = {"none": "h1", "plotly": ".stPlotlyChart .main-svg",
         "vega": ".stVegaLiteChart svg, .stVegaLiteChart canvas",
         "dataframe": ".stDataFrame canvas", "table": ".stTable td"}


def _serve(folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    (folder / "app.py").write_text(APP)
    argv = [str(Path(sys.executable).with_name("streamlit")), "run", str(folder / "app.py"),
            "--server.port", str(port), "--server.headless", "true",
            "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if health(url, timeout=1.0):
            return proc, url
        time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("the bare Streamlit app did not start")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=6)
    ap.add_argument("--drop", type=int, default=2, help="first loads not counted")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _serve(Path(tmp))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                             headless=True)
                print(f"{'bare page with':<28} {'median':>8}  [min..max]  (loads: "
                      f"{a.loads - a.drop} of {a.loads})")
                for kind, label in (("none", "no chart"), ("plotly", "one Plotly bar chart"),
                                    ("vega", "one Vega-Lite bar chart"),
                                    ("dataframe", "one 6-row st.dataframe"),
                                    ("table", "one 6-row st.table")):
                    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                    times = []
                    for _ in range(a.loads):
                        page = ctx.new_page()
                        t0 = time.perf_counter()
                        page.goto(f"{url}/?kind={kind}")
                        page.wait_for_selector(DRAWN[kind], state="attached", timeout=60_000)
                        times.append(time.perf_counter() - t0)
                        page.close()
                    ctx.close()
                    kept = times[a.drop:]
                    print(f"{label:<28} {statistics.median(kept):6.3f} s  "
                          f"[{min(kept):.3f}..{max(kept):.3f}]")
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
